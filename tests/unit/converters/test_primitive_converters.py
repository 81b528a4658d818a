"""Kafka's primitive converters and SimpleHeaderConverter, with the vectors of Kafka's
NumberConverterTest subclasses, BooleanConverterTest, SimpleHeaderConverterTest and ValuesTest."""

from __future__ import annotations

import datetime as dt
import decimal

import pytest

from kopycat.api.data import Date, Decimal, Schema, SchemaBuilder, Struct, Time, Timestamp
from kopycat.api.errors import DataError
from kopycat.converters.numbers import (
    BooleanConverter,
    DoubleConverter,
    FloatConverter,
    IntegerConverter,
    LongConverter,
    ShortConverter,
)
from kopycat.converters.simple_header import SimpleHeaderConverter
from kopycat.plugins import converter_class, header_converter_class, list_plugins
from kopycat.values import convert_to_string, parse_string

CASES = [
    (ShortConverter, Schema.OPTIONAL_INT16_SCHEMA, [-32768, -1, 0, 1, 32767],
     [b"\x80\x00", b"\xff\xff", b"\x00\x00", b"\x00\x01", b"\x7f\xff"]),
    (IntegerConverter, Schema.OPTIONAL_INT32_SCHEMA, [-(2 ** 31), 1, 2 ** 31 - 1],
     [b"\x80\x00\x00\x00", b"\x00\x00\x00\x01", b"\x7f\xff\xff\xff"]),
    (LongConverter, Schema.OPTIONAL_INT64_SCHEMA, [-(2 ** 63), 256, 2 ** 63 - 1],
     [b"\x80" + b"\x00" * 7, b"\x00" * 6 + b"\x01\x00", b"\x7f" + b"\xff" * 7]),
    (FloatConverter, Schema.OPTIONAL_FLOAT32_SCHEMA, [-1.5, 0.0, 1.0],
     [b"\xbf\xc0\x00\x00", b"\x00\x00\x00\x00", b"\x3f\x80\x00\x00"]),
    (DoubleConverter, Schema.OPTIONAL_FLOAT64_SCHEMA, [-1.5, 1.0],
     [b"\xbf\xf8" + b"\x00" * 6, b"\x3f\xf0" + b"\x00" * 6]),
]


@pytest.mark.parametrize(("cls", "schema", "values", "wire"), CASES, ids=lambda c: getattr(c, "__name__", ""))
def test_number_converters_write_the_bytes_of_kafkas_serializers_and_read_them_back(cls, schema, values, wire):
    converter = cls()
    converter.configure({}, False)
    assert converter.from_connect_data_batch("t", schema, values) == wire
    assert [converter.to_connect_data("t", raw) for raw in wire] == [(schema, v) for v in values]
    assert converter.to_connect_header("t", "h", converter.from_connect_header("t", "h", schema, values[0])) \
        == (schema, values[0])
    # testNullToBytes / testBytesNullToNumber
    assert converter.from_connect_data("t", schema, None) is None
    assert converter.to_connect_data("t", None) == (schema, None)


def test_number_converters_refuse_wrong_types_widths_and_ranges():
    # testSerializingIncorrectType / testDeserializingHeaderWithTooManyBytes
    with pytest.raises(DataError, match="Failed to serialize to short"):
        ShortConverter().from_connect_data("t", None, "not a valid number")
    with pytest.raises(DataError, match="Failed to serialize to integer"):
        IntegerConverter().from_connect_data("t", None, True)
    with pytest.raises(DataError, match="Size of data received by LongDeserializer is not 8"):
        LongConverter().to_connect_data("t", b"\x00" * 10)
    with pytest.raises(DataError, match="out of its range"):
        ShortConverter().from_connect_data("t", None, 40000)
    assert IntegerConverter().to_connect_data("t", b"\xff\xff\xff\xfe").value == -2


def test_boolean_converter_writes_one_byte_and_refuses_other_schemas_and_bytes():
    converter = BooleanConverter()
    assert converter.from_connect_data("t", Schema.BOOLEAN_SCHEMA, True) == b"\x01"
    assert converter.from_connect_data("t", None, False) == b"\x00"
    assert converter.to_connect_data("t", b"\x01") == (Schema.OPTIONAL_BOOLEAN_SCHEMA, True)
    assert converter.to_connect_data("t", None) == (Schema.OPTIONAL_BOOLEAN_SCHEMA, None)
    with pytest.raises(DataError, match="Invalid schema type for BooleanConverter: INT32"):
        converter.from_connect_data("t", Schema.INT32_SCHEMA, True)
    with pytest.raises(DataError, match="not compatible with objects of type str"):
        converter.from_connect_data("t", None, "true")
    with pytest.raises(DataError, match="Unexpected byte received by BooleanDeserializer: -1"):
        converter.to_connect_data("t", b"\xff")
    with pytest.raises(DataError, match="is not 1"):
        converter.to_connect_data("t", b"\x00\x01")


@pytest.mark.parametrize(("text", "schema", "value"), [
    ("true", Schema.BOOLEAN_SCHEMA, True),
    ("false", Schema.BOOLEAN_SCHEMA, False),
    ("null", None, None),
    ("42", Schema.INT8_SCHEMA, 42),
    ("-129", Schema.INT16_SCHEMA, -129),
    ("40000", Schema.INT32_SCHEMA, 40000),
    ("3000000000", Schema.INT64_SCHEMA, 3000000000),
    ("1.0", Schema.INT8_SCHEMA, 1),
    ("1e3", Schema.INT16_SCHEMA, 1000),
    ("1.5", Schema.FLOAT32_SCHEMA, 1.5),
    ("1e39", Schema.FLOAT64_SCHEMA, 1e39),
    ("99999999999999999999", Decimal.schema(0), decimal.Decimal("99999999999999999999")),
    ("2019-08-23", Date.SCHEMA, dt.date(2019, 8, 23)),
    ("14:34:54.346Z", Time.SCHEMA, dt.time(14, 34, 54, 346000)),
    ("2019-08-23T14:34:54.346Z", Timestamp.SCHEMA, dt.datetime(2019, 8, 23, 14, 34, 54, 346000, tzinfo=dt.UTC)),
    ("a string", Schema.STRING_SCHEMA, "a string"),
    ("", Schema.STRING_SCHEMA, ""),
    ("  ", Schema.STRING_SCHEMA, "  "),
    ("2019-13-45", Schema.STRING_SCHEMA, "2019-13-45"),
    ("true}", Schema.STRING_SCHEMA, "true}"),
])
def test_parse_string_types_values_as_kafkas_values_parse_string(text, schema, value):
    assert parse_string(text) == (schema, value)


def test_convert_to_string_writes_values_as_kafka_does():
    struct_schema = SchemaBuilder.struct().field("a", Schema.STRING_SCHEMA).field("b", Schema.INT32_SCHEMA).build()
    assert convert_to_string(None, None) is None
    assert convert_to_string(Schema.FLOAT64_SCHEMA, 1e10) == "1.0E10"
    assert convert_to_string(Schema.FLOAT32_SCHEMA, 0.1) == "0.1"
    assert convert_to_string(None, b"\x00\x01") == "AAE="
    assert convert_to_string(None, ["x", 1, None, True]) == '["x",1,null,true]'
    assert convert_to_string(None, {"k": 'q"\\'}) == '{"k":"q\\"\\\\"}'
    assert convert_to_string(struct_schema, Struct(struct_schema).put("a", "s").put("b", 2)) == '{"a":"s","b":2}'
    assert convert_to_string(Date.SCHEMA, dt.date(2019, 8, 23)) == "2019-08-23"
    assert convert_to_string(Time.SCHEMA, dt.time(14, 34, 54, 346000)) == "14:34:54.346Z"
    assert convert_to_string(Timestamp.SCHEMA, dt.datetime(2019, 8, 23, 14, 34, 54, 346000)) \
        == "2019-08-23T14:34:54.346Z"
    assert convert_to_string(None, decimal.Decimal("12.50")) == "12.50"


def test_simple_header_converter_round_trips_typed_values_through_utf8_text():
    converter = SimpleHeaderConverter()
    converter.configure({})
    for schema, value in [(Schema.INT8_SCHEMA, 10), (Schema.BOOLEAN_SCHEMA, True), (Schema.STRING_SCHEMA, "hi"),
                          (Timestamp.SCHEMA, dt.datetime(2019, 8, 23, 14, 34, 54, 346000, tzinfo=dt.UTC))]:
        raw = converter.from_connect_header("t", "h", schema, value)
        assert converter.to_connect_header("t", "h", raw) == (schema, value)
    assert converter.from_connect_header("t", "h", Schema.INT64_SCHEMA, 3000000000) == b"3000000000"
    assert converter.from_connect_header("t", "h", None, None) is None
    assert converter.to_connect_header("t", "h", None) == (None, None)
    assert converter.to_connect_header("t", "h", b"\xffx") == (Schema.STRING_SCHEMA, "\ufffdx")


def test_kafkas_converter_names_resolve_and_are_listed_like_kafka_lists_them():
    assert converter_class("org.apache.kafka.connect.converters.LongConverter") is LongConverter
    assert header_converter_class("org.apache.kafka.connect.storage.SimpleHeaderConverter") is SimpleHeaderConverter
    listed = {(p.class_name, p.type) for p in list_plugins()}
    assert ("org.apache.kafka.connect.converters.BooleanConverter", "converter") in listed
    assert ("org.apache.kafka.connect.converters.BooleanConverter", "header_converter") in listed
    assert ("org.apache.kafka.connect.storage.SimpleHeaderConverter", "header_converter") in listed
    assert ("org.apache.kafka.connect.storage.SimpleHeaderConverter", "converter") not in listed
    with pytest.raises(Exception, match="SimpleHeaderConverter"):
        converter_class("org.apache.kafka.connect.storage.SimpleHeaderConverter")


def test_parse_string_reads_arrays_and_maps_with_their_common_element_schema():
    # ValuesTest.shouldParseStringListWithMultipleElementTypes / shouldParseStringsWithEscapedDelimiters /
    # shouldParseStringOfMapWithShortValuesWithWhitespaceAsMap / shouldNotParseAsArrayWithoutCommas ...
    ints = parse_string("[1, 2, 3]")
    assert ints == (SchemaBuilder.array(Schema.INT8_SCHEMA).build(), [1, 2, 3])
    widened = parse_string("[1, 300, 2.5]")
    assert widened.schema.value_schema == Schema.FLOAT32_SCHEMA and widened.value == [1.0, 300.0, 2.5]
    mixed = parse_string('["x", 1]')
    assert (mixed.schema.type.name, mixed.schema.value_schema, mixed.value) == ("ARRAY", None, ["x", 1])
    keyed = parse_string('{ "a" : 1, "b" : 2 }')
    assert keyed == (SchemaBuilder.map(Schema.STRING_SCHEMA, Schema.INT8_SCHEMA).build(), {"a": 1, "b": 2})
    nested = parse_string('{"k": [1, 2], "n": null}')
    assert nested.value == {"k": [1, 2], "n": None}
    assert parse_string('{"k": null}').schema.key_schema == Schema.STRING_SCHEMA
    assert parse_string("[]").value == [] and parse_string("{}").value == {}
    for broken in ("[1,,2]", "[1 2]", "[1,2", '{"a"}', '{"a":1', "{:1}"):
        assert parse_string(broken) == (Schema.STRING_SCHEMA, broken)


def test_simple_header_converter_round_trips_arrays_and_maps():
    converter = SimpleHeaderConverter()
    schema = SchemaBuilder.map(Schema.STRING_SCHEMA, SchemaBuilder.array(Schema.INT8_SCHEMA).build()).build()
    raw = converter.from_connect_header("t", "h", schema, {"a": [1, 2], "b": []})
    assert raw == b'{"a":[1,2],"b":[]}'
    assert converter.to_connect_header("t", "h", raw).value == {"a": [1, 2], "b": []}

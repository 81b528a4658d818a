"""JsonConverter: byte compatibility with Kafka Connect's org.apache.kafka.connect.json.JsonConverter.

Golden tests take their expectations from Kafka's own JsonConverterTest (connect/json/src/test/
java/org/apache/kafka/connect/json/JsonConverterTest.java); each names the Java test it follows.
Kafka's tests compare parsed JSON trees, so each golden test checks two things: the tree equals
the one in Kafka's test, and the bytes are the compact text Kafka's serializer writes for that
tree -- keys in the order JsonConverter.asJsonSchema / convertToJson insert them (type,
items|keys,values|fields, optional, name, version, doc, parameters, default; a struct field's
own keys then "field"), numbers as Jackson prints them (Double.toString, BigDecimal.toString).
Tests for the *-ToConnect direction feed Kafka's test input bytes verbatim.
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import json
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from kopycat.api.converter import SchemaAndValue
from kopycat.api.data import Date, Decimal, Schema, SchemaBuilder, Struct, Time, Timestamp
from kopycat.api.errors import ConfigError, DataError
from kopycat.converters.json import JsonConverter
from tests.unit.api.connect_strategies import schemas_and_values, with_defaults

TOPIC = "topic"
UTC = dt.UTC
DECIMAL = "org.apache.kafka.connect.data.Decimal"


def converter(**configs: Any) -> JsonConverter:
    instance = JsonConverter()
    instance.configure({k.replace("_", "."): v for k, v in configs.items()}, is_key=False)
    return instance


def to_connect(data: str | bytes, **configs: Any) -> SchemaAndValue:
    return converter(**configs).to_connect_data(TOPIC, data.encode() if isinstance(data, str) else data)


def golden(actual: bytes | None, kafka_tree: str, compact: str) -> None:
    """``actual`` parses to Kafka's expected tree and is exactly Kafka's compact text."""
    assert actual is not None
    assert orjson.loads(actual) == orjson.loads(kafka_tree)
    assert actual == compact.encode()


def envelope_schema(actual: bytes | None, kafka_schema: str) -> Any:
    """The envelope has exactly schema and payload; the schema equals Kafka's; returns the payload."""
    tree = orjson.loads(actual or b"null")
    assert list(tree) == ["schema", "payload"]
    assert tree["schema"] == orjson.loads(kafka_schema)
    return tree["payload"]


# ---------------------------------------------------------------- Connect -> JSON (golden)

@pytest.mark.parametrize(("schema", "value", "kafka_schema", "compact"), [
    # JsonConverterTest.booleanToJson
    (Schema.BOOLEAN_SCHEMA, True, '{ "type": "boolean", "optional": false }',
     '{"schema":{"type":"boolean","optional":false},"payload":true}'),
    # JsonConverterTest.byteToJson
    (Schema.INT8_SCHEMA, 12, '{ "type": "int8", "optional": false }',
     '{"schema":{"type":"int8","optional":false},"payload":12}'),
    # JsonConverterTest.shortToJson
    (Schema.INT16_SCHEMA, 12, '{ "type": "int16", "optional": false }',
     '{"schema":{"type":"int16","optional":false},"payload":12}'),
    # JsonConverterTest.intToJson
    (Schema.INT32_SCHEMA, 12, '{ "type": "int32", "optional": false }',
     '{"schema":{"type":"int32","optional":false},"payload":12}'),
    # JsonConverterTest.longToJson
    (Schema.INT64_SCHEMA, 4398046511104, '{ "type": "int64", "optional": false }',
     '{"schema":{"type":"int64","optional":false},"payload":4398046511104}'),
    # JsonConverterTest.floatToJson (12.34f prints as 12.34: Float.toString)
    (Schema.FLOAT32_SCHEMA, 12.34, '{ "type": "float", "optional": false }',
     '{"schema":{"type":"float","optional":false},"payload":12.34}'),
    # JsonConverterTest.doubleToJson
    (Schema.FLOAT64_SCHEMA, 12.34, '{ "type": "double", "optional": false }',
     '{"schema":{"type":"double","optional":false},"payload":12.34}'),
    # JsonConverterTest.bytesToJson ("test-string" as base64)
    (Schema.BYTES_SCHEMA, b"test-string", '{ "type": "bytes", "optional": false }',
     '{"schema":{"type":"bytes","optional":false},"payload":"dGVzdC1zdHJpbmc="}'),
    # JsonConverterTest.stringToJson
    (Schema.STRING_SCHEMA, "test-string", '{ "type": "string", "optional": false }',
     '{"schema":{"type":"string","optional":false},"payload":"test-string"}'),
    # JsonConverterTest.arrayToJson
    (SchemaBuilder.array(Schema.INT32_SCHEMA).build(), [1, 2, 3],
     '{ "type": "array", "items": { "type": "int32", "optional": false }, "optional": false }',
     '{"schema":{"type":"array","items":{"type":"int32","optional":false},"optional":false},"payload":[1,2,3]}'),
    # JsonConverterTest.mapToJsonStringKeys
    (SchemaBuilder.map(Schema.STRING_SCHEMA, Schema.INT32_SCHEMA).build(), {"key1": 12, "key2": 15},
     '{ "type": "map", "keys": { "type" : "string", "optional": false }, '
     '"values": { "type" : "int32", "optional": false }, "optional": false }',
     '{"schema":{"type":"map","keys":{"type":"string","optional":false},'
     '"values":{"type":"int32","optional":false},"optional":false},"payload":{"key1":12,"key2":15}}'),
    # JsonConverterTest.mapToJsonNonStringKeys: an array of [key, value] pairs
    (SchemaBuilder.map(Schema.INT32_SCHEMA, Schema.INT32_SCHEMA).build(), {1: 12, 2: 15},
     '{ "type": "map", "keys": { "type" : "int32", "optional": false }, '
     '"values": { "type" : "int32", "optional": false }, "optional": false }',
     '{"schema":{"type":"map","keys":{"type":"int32","optional":false},'
     '"values":{"type":"int32","optional":false},"optional":false},"payload":[[1,12],[2,15]]}'),
    # JsonConverterTest.decimalToJson: 1.56 at scale 2 is the unscaled 156 = {0, -100}
    (Decimal.schema(2), decimal.Decimal("1.56"),
     '{ "type": "bytes", "optional": false, "name": "org.apache.kafka.connect.data.Decimal", '
     '"version": 1, "parameters": { "scale": "2" } }',
     '{"schema":{"type":"bytes","optional":false,"name":"org.apache.kafka.connect.data.Decimal",'
     '"version":1,"parameters":{"scale":"2"}},"payload":"AJw="}'),
    # JsonConverterTest.dateToJson: 10000 days
    (Date.SCHEMA, dt.date(1970, 1, 1) + dt.timedelta(days=10000),
     '{ "type": "int32", "optional": false, "name": "org.apache.kafka.connect.data.Date", "version": 1 }',
     '{"schema":{"type":"int32","optional":false,"name":"org.apache.kafka.connect.data.Date","version":1},'
     '"payload":10000}'),
    # JsonConverterTest.timeToJson: 14400000 ms
    (Time.SCHEMA, dt.time(4, 0),
     '{ "type": "int32", "optional": false, "name": "org.apache.kafka.connect.data.Time", "version": 1 }',
     '{"schema":{"type":"int32","optional":false,"name":"org.apache.kafka.connect.data.Time","version":1},'
     '"payload":14400000}'),
    # JsonConverterTest.timestampToJson: 4000000000 ms
    (Timestamp.SCHEMA, dt.datetime(1970, 1, 1, tzinfo=UTC) + dt.timedelta(milliseconds=4_000_000_000),
     '{ "type": "int64", "optional": false, "name": "org.apache.kafka.connect.data.Timestamp", "version": 1 }',
     '{"schema":{"type":"int64","optional":false,"name":"org.apache.kafka.connect.data.Timestamp",'
     '"version":1},"payload":4000000000}'),
], ids=lambda p: p if isinstance(p, str) and not p.startswith("{") else None)
def test_each_type_is_written_as_kafka_writes_it(schema: Schema, value: Any, kafka_schema: str, compact: str) -> None:
    actual = converter().from_connect_data(TOPIC, schema, value)
    envelope_schema(actual, kafka_schema)
    assert actual == compact.encode()


def test_schema_metadata_comes_after_optional_in_kafkas_order() -> None:
    """JsonConverterTest.testJsonSchemaMetadataTranslation."""
    schema = (SchemaBuilder.bool().required().name("bool").version(3).doc("the documentation")
              .parameter("foo", "bar").build())
    golden(converter().from_connect_data(TOPIC, schema, True),
           '{"schema": { "type": "boolean", "optional": false, "name": "bool", "version": 3, '
           '"doc": "the documentation", "parameters": { "foo": "bar" }}, "payload": true}',
           '{"schema":{"type":"boolean","optional":false,"name":"bool","version":3,'
           '"doc":"the documentation","parameters":{"foo":"bar"}},"payload":true}')
    golden(converter().from_connect_data(TOPIC, SchemaBuilder.bool().default_value(True).build(), True),
           '{"schema": { "type": "boolean", "optional": false, "default": true }, "payload": true}',
           '{"schema":{"type":"boolean","optional":false,"default":true},"payload":true}')
    golden(converter().from_connect_data(TOPIC, Schema.OPTIONAL_BOOLEAN_SCHEMA, None),
           '{"schema": { "type": "boolean", "optional": true }, "payload": null}',
           '{"schema":{"type":"boolean","optional":true},"payload":null}')


def test_struct_fields_list_their_own_keys_then_the_field_name() -> None:
    """JsonConverterTest.structToJson."""
    schema = (SchemaBuilder.struct().field("field1", Schema.BOOLEAN_SCHEMA).field("field2", Schema.STRING_SCHEMA)
              .field("field3", Schema.STRING_SCHEMA).field("field4", Schema.BOOLEAN_SCHEMA).build())
    value = (Struct(schema).put("field1", True).put("field2", "string2").put("field3", "string3")
             .put("field4", False))
    payload = envelope_schema(
        converter().from_connect_data(TOPIC, schema, value),
        '{ "type": "struct", "optional": false, "fields": [{ "field": "field1", "type": "boolean", '
        '"optional": false }, { "field": "field2", "type": "string", "optional": false }, { "field": '
        '"field3", "type": "string", "optional": false }, { "field": "field4", "type": "boolean", '
        '"optional": false }] }')
    assert payload == {"field1": True, "field2": "string2", "field3": "string3", "field4": False}
    assert converter().from_connect_data(TOPIC, schema, value) == (
        b'{"schema":{"type":"struct","fields":[{"type":"boolean","optional":false,"field":"field1"},'
        b'{"type":"string","optional":false,"field":"field2"},{"type":"string","optional":false,'
        b'"field":"field3"},{"type":"boolean","optional":false,"field":"field4"}],"optional":false},'
        b'"payload":{"field1":true,"field2":"string2","field3":"string3","field4":false}}')


def test_a_null_field_with_a_default_is_written_as_the_default() -> None:
    """JsonConverterTest.serializeFieldNullToDefault."""
    field = SchemaBuilder.string().optional().default_value("default").build()
    schema = SchemaBuilder.struct().field("field1", field).build()
    golden(converter(replace_null_with_default="true").from_connect_data(TOPIC, schema, Struct(schema)),
           '{"schema":{"type":"struct","fields":[{"field":"field1","type":"string","optional":true,'
           '"default":"default"}],"optional":false},"payload":{"field1":"default"}}',
           '{"schema":{"type":"struct","fields":[{"type":"string","optional":true,"default":"default",'
           '"field":"field1"}],"optional":false},"payload":{"field1":"default"}}')


def test_a_null_field_stays_null_without_replace_null_with_default() -> None:
    """JsonConverterTest.serializeFieldNullToNull."""
    field = SchemaBuilder.string().optional().default_value("default").build()
    schema = SchemaBuilder.struct().field("field1", field).build()
    golden(converter(replace_null_with_default="false").from_connect_data(TOPIC, schema, Struct(schema)),
           '{"schema":{"type":"struct","fields":[{"field":"field1","type":"string","optional":true,'
           '"default":"default"}],"optional":false},"payload":{"field1":null}}',
           '{"schema":{"type":"struct","fields":[{"type":"string","optional":true,"default":"default",'
           '"field":"field1"}],"optional":false},"payload":{"field1":null}}')


def test_a_null_value_with_a_default_is_written_as_the_default() -> None:
    """JsonConverterTest.serializeNullToDefault and serializeNullToNull."""
    schema = SchemaBuilder.string().optional().default_value("default").build()
    golden(converter().from_connect_data(TOPIC, schema, None),
           '{"schema":{"type":"string","optional":true,"default":"default"},"payload":"default"}',
           '{"schema":{"type":"string","optional":true,"default":"default"},"payload":"default"}')
    golden(converter(replace_null_with_default="false").from_connect_data(TOPIC, schema, None),
           '{"schema":{"type":"string","optional":true,"default":"default"},"payload":null}',
           '{"schema":{"type":"string","optional":true,"default":"default"},"payload":null}')


def test_decimal_is_base64_of_unscaled_twos_complement() -> None:
    """JsonConverterTest.decimalToJson: payload binaryValue is {0, -100}."""
    payload = orjson.loads(converter().from_connect_data(TOPIC, Decimal.schema(2), decimal.Decimal("1.56")) or b"")
    assert base64.b64decode(payload["payload"]) == bytes([0, 0x9C])
    negative = converter().from_connect_data(TOPIC, Decimal.schema(2), decimal.Decimal("-1.56")) or b""
    assert base64.b64decode(orjson.loads(negative)["payload"]) == bytes([0xFF, 0x64])


@pytest.mark.parametrize(("scale", "value", "text"), [
    (2, "1.56", "1.56"),          # JsonConverterTest.decimalToNumericJson
    (4, "1.5600", "1.5600"),      # JsonConverterTest.decimalWithTrailingZerosToNumericJson
    (10, "1E-10", "1E-10"),       # BigDecimal.toString: adjusted exponent < -6 -> scientific
    (6, "0.000001", "0.000001"),
    (-3, "1E+3", "1E+3"),         # negative scale -> scientific with an explicit +
    (2, "-123456789012345678901234567890.12", "-123456789012345678901234567890.12"),
])
def test_numeric_decimals_are_json_numbers_as_bigdecimal_prints_them(scale: int, value: str, text: str) -> None:
    actual = converter(decimal_format="NUMERIC").from_connect_data(TOPIC, Decimal.schema(scale), decimal.Decimal(value))
    assert actual is not None and actual.endswith(f',"payload":{text}}}'.encode())
    assert to_connect(actual).value == decimal.Decimal(value)


def test_decimal_format_is_case_insensitive_as_in_kafka() -> None:
    """JsonConverterConfig uses CaseInsensitiveValidString for decimal.format."""
    actual = converter(decimal_format="numeric").from_connect_data(TOPIC, Decimal.schema(2), decimal.Decimal("1.56"))
    assert actual is not None and actual.endswith(b',"payload":1.56}')


def test_a_decimal_default_follows_the_decimal_format() -> None:
    schema = Decimal.builder(2).default_value(decimal.Decimal("1.56")).build()
    assert b'"default":"AJw="' in (converter().from_connect_data(TOPIC, schema, None) or b"")
    assert b'"default":1.56' in (converter(decimal_format="NUMERIC").from_connect_data(TOPIC, schema, None) or b"")


@pytest.mark.parametrize(("value", "text"), [
    (1.0, "1.0"), (1e10, "1.0E10"), (1e7, "1.0E7"), (9999999.0, "9999999.0"), (0.001, "0.001"),
    (1e-4, "1.0E-4"), (-0.0, "-0.0"), (123456789.123, "1.23456789123E8"), (5e-324, "4.9E-324"),
    (1.7976931348623157e308, "1.7976931348623157E308"), (0.1 + 0.2, "0.30000000000000004"),
    (float("nan"), '"NaN"'), (float("inf"), '"Infinity"'), (float("-inf"), '"-Infinity"'),
])
def test_doubles_are_printed_as_java_double_to_string(value: float, text: str) -> None:
    """Jackson writes doubles with Double.toString (javadoc examples); non-finite as strings."""
    actual = converter(schemas_enable="false").from_connect_data(TOPIC, Schema.FLOAT64_SCHEMA, value)
    assert actual == text.encode()


@pytest.mark.parametrize(("value", "text"), [
    (12.34, "12.34"), (0.1, "0.1"), (1e10, "1.0E10"), (16777217.0, "1.6777216E7"),
    (3.4028234663852886e38, "3.4028235E38"), (1.401298464324817e-45, "1.4E-45"),
])
def test_floats_are_printed_as_java_float_to_string(value: float, text: str) -> None:
    actual = converter(schemas_enable="false").from_connect_data(TOPIC, Schema.FLOAT32_SCHEMA, value)
    assert actual == text.encode()


def test_control_characters_are_escaped_with_upper_case_hex_as_jackson_does() -> None:
    text = 'a\x1f\x0b\n"\\u001f é€😀'
    actual = converter(schemas_enable="false").from_connect_data(TOPIC, Schema.STRING_SCHEMA, text)
    # Outside the BMP Jackson writes an escaped surrogate pair (checked against Kafka 4.1.1).
    assert actual == '"a\\u001F\\u000B\\n\\"\\\\u001f é€\\uD83D\\uDE00"'.encode()


def test_a_null_string_map_key_is_written_as_the_text_null() -> None:
    """JsonConverter.convertToJson sets object keys with ``mapKey.asText()``: NullNode gives "null"."""
    schema = SchemaBuilder.map(Schema.OPTIONAL_STRING_SCHEMA, Schema.INT32_SCHEMA).build()
    assert converter(schemas_enable="false").from_connect_data(TOPIC, schema, {None: 1, "a": 2}) == b'{"null":1,"a":2}'


# ---------------------------------------------------------------- nulls and schemas.enable=false

def test_a_null_schema_and_null_value_is_a_tombstone() -> None:
    """JsonConverterTest.nullSchemaAndNullValueToJson and nullValueToJson."""
    assert converter(schemas_enable="true").from_connect_data(TOPIC, None, None) is None
    assert converter(schemas_enable="false").from_connect_data(TOPIC, None, None) is None
    assert converter().from_connect_data_batch(TOPIC, None, [None, None]) == [None, None]


def test_tombstone_bytes_read_as_null_schema_and_value() -> None:
    """JsonConverterTest.nullToConnect and emptyBytesToConnect."""
    assert converter().to_connect_data(TOPIC, None) == SchemaAndValue(None, None)
    assert to_connect(b"", schemas_enable="false") == SchemaAndValue(None, None)


def test_without_schemas_the_payload_is_written_alone() -> None:
    """JsonConverterTest.noSchemaToJson."""
    assert converter(schemas_enable="false").from_connect_data(TOPIC, None, True) == b"true"
    schema = SchemaBuilder.struct().field("a", Schema.INT32_SCHEMA).field("b", Schema.OPTIONAL_STRING_SCHEMA).build()
    plain = converter(schemas_enable="false")
    assert plain.from_connect_data(TOPIC, schema, Struct(schema).put("a", 1)) == b'{"a":1,"b":null}'
    assert converter(schemas_enable="false").from_connect_data(TOPIC, Schema.OPTIONAL_STRING_SCHEMA, None) == b"null"


def test_schemaless_values_are_typed_by_their_python_class() -> None:
    """JsonConverterTest.nullSchemaAndPrimitiveToJson / nullSchemaAndArrayToJson / nullSchemaAndMapToJson."""
    write = converter().from_connect_data
    assert write(TOPIC, None, True) == b'{"schema":null,"payload":true}'
    assert write(TOPIC, None, [1, "string", True]) == b'{"schema":null,"payload":[1,"string",true]}'
    assert write(TOPIC, None, {"key1": 12, "key2": "string", "key3": True}) == (
        b'{"schema":null,"payload":{"key1":12,"key2":"string","key3":true}}')
    # nullSchemaAndMapNonStringKeysToJson: any non-string key makes it [key, value] pairs
    assert write(TOPIC, None, {"string": 12, 52: "string", False: True}) == (
        b'{"schema":null,"payload":[["string",12],[52,"string"],[false,true]]}')


def test_a_decimal_without_a_schema_is_an_error() -> None:
    """JsonConverterTest.decimalToJsonWithoutSchema."""
    with pytest.raises(DataError, match="does not have corresponding schema type"):
        converter().from_connect_data(TOPIC, None, decimal.Decimal("1.56"))


def test_schemaless_json_reads_as_plain_values() -> None:
    """JsonConverterTest.noSchemaToConnect and schemalessWithEmptyFieldValueToConnect."""
    assert to_connect("true", schemas_enable="false") == SchemaAndValue(None, True)
    assert to_connect('{ "a": "", "b": null}', schemas_enable="false") == SchemaAndValue(None, {"a": "", "b": None})


# ---------------------------------------------------------------- JSON -> Connect (Kafka's inputs)

@pytest.mark.parametrize(("data", "expected"), [
    # JsonConverterTest.booleanToConnect
    ('{ "schema": { "type": "boolean" }, "payload": true }', SchemaAndValue(Schema.BOOLEAN_SCHEMA, True)),
    ('{ "schema": { "type": "boolean" }, "payload": false }', SchemaAndValue(Schema.BOOLEAN_SCHEMA, False)),
    # byteToConnect, shortToConnect, intToConnect, longToConnect
    ('{ "schema": { "type": "int8" }, "payload": 12 }', SchemaAndValue(Schema.INT8_SCHEMA, 12)),
    ('{ "schema": { "type": "int16" }, "payload": 12 }', SchemaAndValue(Schema.INT16_SCHEMA, 12)),
    ('{ "schema": { "type": "int32" }, "payload": 12 }', SchemaAndValue(Schema.INT32_SCHEMA, 12)),
    ('{ "schema": { "type": "int64" }, "payload": 4398046511104 }',
     SchemaAndValue(Schema.INT64_SCHEMA, 4398046511104)),
    # numberWithLeadingZerosToConnect
    ('{ "schema": { "type": "int8" }, "payload": 0012 }', SchemaAndValue(Schema.INT8_SCHEMA, 12)),
    ('{ "schema": { "type": "int64" }, "payload": 00000123456789 }', SchemaAndValue(Schema.INT64_SCHEMA, 123456789)),
    # floatToConnect (12.34f), doubleToConnect
    ('{ "schema": { "type": "float" }, "payload": 12.34 }', SchemaAndValue(Schema.FLOAT32_SCHEMA, 12.34000015258789)),
    ('{ "schema": { "type": "double" }, "payload": 12.34 }', SchemaAndValue(Schema.FLOAT64_SCHEMA, 12.34)),
    # bytesToConnect, stringToConnect
    ('{ "schema": { "type": "bytes" }, "payload": "dGVzdC1zdHJpbmc=" }',
     SchemaAndValue(Schema.BYTES_SCHEMA, b"test-string")),
    ('{ "schema": { "type": "string" }, "payload": "foo-bar-baz" }',
     SchemaAndValue(Schema.STRING_SCHEMA, "foo-bar-baz")),
    # arrayToConnect, mapToConnectStringKeys, mapToConnectNonStringKeys
    ('{ "schema": { "type": "array", "items": { "type" : "int32" } }, "payload": [1, 2, 3] }',
     SchemaAndValue(SchemaBuilder.array(Schema.INT32_SCHEMA).build(), [1, 2, 3])),
    ('{ "schema": { "type": "map", "keys": { "type" : "string" }, "values": { "type" : "int32" } }, '
     '"payload": { "key1": 12, "key2": 15} }',
     SchemaAndValue(SchemaBuilder.map(Schema.STRING_SCHEMA, Schema.INT32_SCHEMA).build(), {"key1": 12, "key2": 15})),
    ('{ "schema": { "type": "map", "keys": { "type" : "int32" }, "values": { "type" : "int32" } }, '
     '"payload": [ [1, 12], [2, 15] ] }',
     SchemaAndValue(SchemaBuilder.map(Schema.INT32_SCHEMA, Schema.INT32_SCHEMA).build(), {1: 12, 2: 15})),
    # nullSchemaPrimitiveToConnect
    ('{ "schema": null, "payload": null }', SchemaAndValue(None, None)),
    ('{ "schema": null, "payload": 12 }', SchemaAndValue(None, 12)),
    ('{ "schema": null, "payload": 12.24 }', SchemaAndValue(None, 12.24)),
    ('{ "schema": null, "payload": [1, "2", 3] }', SchemaAndValue(None, [1, "2", 3])),
    ('{ "schema": null, "payload": { "field1": 1, "field2": 2} }', SchemaAndValue(None, {"field1": 1, "field2": 2})),
    # testConnectSchemaMetadataTranslation
    ('{ "schema": { "type": "boolean", "optional": true }, "payload": null }',
     SchemaAndValue(Schema.OPTIONAL_BOOLEAN_SCHEMA, None)),
    ('{ "schema": { "type": "boolean", "default": true }, "payload": null }',
     SchemaAndValue(SchemaBuilder.bool().default_value(True).build(), True)),
    ('{ "schema": { "type": "boolean", "optional": false, "name": "bool", "version": 2, "doc": "the documentation", '
     '"parameters": { "foo": "bar" }}, "payload": true }',
     SchemaAndValue(SchemaBuilder.bool().required().name("bool").version(2).doc("the documentation")
                    .parameter("foo", "bar").build(), True)),
], ids=lambda p: p if isinstance(p, str) else None)
def test_kafkas_test_inputs_read_as_kafka_reads_them(data: str, expected: SchemaAndValue) -> None:
    assert to_connect(data) == expected


def test_structs_read_with_missing_optional_fields_unset() -> None:
    """JsonConverterTest.structToConnect and structWithOptionalFieldToConnect."""
    data = ('{ "schema": { "type": "struct", "fields": [{ "field": "field1", "type": "boolean" }, '
            '{ "field": "field2", "type": "string" }] }, "payload": { "field1": true, "field2": "string" } }')
    schema = SchemaBuilder.struct().field("field1", Schema.BOOLEAN_SCHEMA).field("field2", Schema.STRING_SCHEMA).build()
    assert to_connect(data) == SchemaAndValue(schema, Struct(schema).put("field1", True).put("field2", "string"))
    data = ('{ "schema": { "type": "struct", "fields": [{ "field":"optional", "type": "string", "optional": true }, '
            '{  "field": "required", "type": "string" }] }, "payload": { "required": "required" } }')
    schema = (SchemaBuilder.struct().field("optional", Schema.OPTIONAL_STRING_SCHEMA)
              .field("required", Schema.STRING_SCHEMA).build())
    assert to_connect(data) == SchemaAndValue(schema, Struct(schema).put("required", "required"))


@pytest.mark.parametrize(("data", "schema", "value"), [
    # JsonConverterTest.decimalToConnect
    ('{ "schema": { "type": "bytes", "name": "org.apache.kafka.connect.data.Decimal", "version": 1, '
     '"parameters": { "scale": "2" } }, "payload": "AJw=" }', Decimal.schema(2), decimal.Decimal("1.56")),
    # decimalToConnectOptional
    ('{ "schema": { "type": "bytes", "name": "org.apache.kafka.connect.data.Decimal", "version": 1, '
     '"optional": true, "parameters": { "scale": "2" } }, "payload": null }',
     Decimal.builder(2).optional().build(), None),
    # decimalToConnectWithDefaultValue, decimalToConnectOptionalWithDefaultValue
    ('{ "schema": { "type": "bytes", "name": "org.apache.kafka.connect.data.Decimal", "version": 1, '
     '"default": "AJw=", "parameters": { "scale": "2" } }, "payload": null }',
     Decimal.builder(2).default_value(decimal.Decimal("1.56")).build(), decimal.Decimal("1.56")),
    ('{ "schema": { "type": "bytes", "name": "org.apache.kafka.connect.data.Decimal", "version": 1, '
     '"optional": true, "default": "AJw=", "parameters": { "scale": "2" } }, "payload": null }',
     Decimal.builder(2).optional().default_value(decimal.Decimal("1.56")).build(), decimal.Decimal("1.56")),
    # numericDecimalToConnect, numericDecimalWithTrailingZerosToConnect, highPrecisionNumericDecimalToConnect
    ('{ "schema": { "type": "bytes", "name": "org.apache.kafka.connect.data.Decimal", "version": 1, '
     '"parameters": { "scale": "2" } }, "payload": 1.56 }', Decimal.schema(2), decimal.Decimal("1.56")),
    ('{ "schema": { "type": "bytes", "name": "org.apache.kafka.connect.data.Decimal", "version": 1, '
     '"parameters": { "scale": "4" } }, "payload": 1.5600 }', Decimal.schema(4), decimal.Decimal("1.5600")),
    ('{ "schema": { "type": "bytes", "name": "org.apache.kafka.connect.data.Decimal", "version": 1, '
     '"parameters": { "scale": "17" } }, "payload": 1.23456789123456789 }',
     Decimal.schema(17), decimal.Decimal("1.23456789123456789")),
    # dateToConnect, dateToConnectOptional, dateToConnectWithDefaultValue
    ('{ "schema": { "type": "int32", "name": "org.apache.kafka.connect.data.Date", "version": 1 }, '
     '"payload": 10000 }', Date.SCHEMA, dt.date(1997, 5, 19)),
    ('{ "schema": { "type": "int32", "name": "org.apache.kafka.connect.data.Date", "version": 1, '
     '"optional": true }, "payload": null }', Date.builder().optional().build(), None),
    ('{ "schema": { "type": "int32", "name": "org.apache.kafka.connect.data.Date", "version": 1, '
     '"default": 0 }, "payload": null }', Date.builder().default_value(dt.date(1970, 1, 1)).build(),
     dt.date(1970, 1, 1)),
    # timeToConnect, timeToConnectWithDefaultValue
    ('{ "schema": { "type": "int32", "name": "org.apache.kafka.connect.data.Time", "version": 1 }, '
     '"payload": 14400000 }', Time.SCHEMA, dt.time(4, 0)),
    ('{ "schema": { "type": "int32", "name": "org.apache.kafka.connect.data.Time", "version": 1, '
     '"optional": true, "default": 0 }, "payload": null }',
     Time.builder().optional().default_value(dt.time(0, 0)).build(), dt.time(0, 0)),
    # timestampToConnect, timestampToConnectOptionalWithDefaultValue
    ('{ "schema": { "type": "int64", "name": "org.apache.kafka.connect.data.Timestamp", "version": 1 }, '
     '"payload": 4000000000 }', Timestamp.SCHEMA,
     dt.datetime(1970, 1, 1, tzinfo=UTC) + dt.timedelta(milliseconds=4_000_000_000)),
    ('{ "schema": { "type": "int64", "name": "org.apache.kafka.connect.data.Timestamp", "version": 1,  '
     '"optional": true, "default": 42 }, "payload": null }',
     Timestamp.builder().optional().default_value(dt.datetime(1970, 1, 1, 0, 0, 0, 42000, tzinfo=UTC)).build(),
     dt.datetime(1970, 1, 1, 0, 0, 0, 42000, tzinfo=UTC)),
], ids=lambda p: None)
def test_logical_types_read_as_kafka_reads_them(data: str, schema: Schema, value: Any) -> None:
    assert to_connect(data) == SchemaAndValue(schema, value)


def test_a_null_payload_reads_as_the_default_unless_disabled() -> None:
    """JsonConverterTest.deserializeNullToDefault / deserializeNullToNull / deserializeFieldNull*."""
    data = '{"schema":{"type":"string","optional":true,"default":"default"},"payload":null}'
    assert to_connect(data, replace_null_with_default="true").value == "default"
    assert to_connect(data, replace_null_with_default="false").value is None
    data = ('{"schema":{"type":"struct","fields":[{"field":"field1","type":"string","optional":true,'
            '"default":"default"}],"optional":false},"payload":{"field1":null}}')
    field = SchemaBuilder.string().optional().default_value("default").build()
    schema = SchemaBuilder.struct().field("field1", field).build()
    assert to_connect(data, replace_null_with_default="true").value == Struct(schema).put("field1", "default")
    assert to_connect(data, replace_null_with_default="false").value == Struct(schema)


# ---------------------------------------------------------------- errors

def test_plain_json_with_schemas_enabled_names_what_is_expected() -> None:
    """JsonConverter.toConnectData's message when the envelope is missing."""
    with pytest.raises(DataError, match=r'requires "schema" and "payload" fields.*set schemas\.enable=false'):
        to_connect('{"a": 1}')
    with pytest.raises(DataError, match='requires "schema" and "payload"'):
        to_connect(b"")


def test_bytes_that_are_not_json_name_the_problem() -> None:
    with pytest.raises(DataError, match="serialization error"):
        to_connect(b'{"schema": {"type": "int32"}, "payload": 1')
    with pytest.raises(DataError, match="not UTF-8"):
        to_connect(b"\xff\xfe", schemas_enable="false")


def test_a_payload_that_does_not_match_its_schema_names_the_field_path() -> None:
    data = ('{"schema":{"type":"struct","fields":[{"type":"array","items":{"type":"struct","fields":'
            '[{"type":"double","optional":false,"field":"price"}],"optional":false},"optional":false,'
            '"field":"lines"}],"optional":false},"payload":{"lines":[{"price":1.0},{"price":2.5},{"price":"x"}]}}')
    with pytest.raises(DataError, match=r"lines\[2\]\.price.*expects a number, found STRING"):
        to_connect(data)
    with pytest.raises(DataError, match="Invalid null value for required INT32 field"):
        to_connect('{"schema":{"type":"int32"},"payload":null}')
    with pytest.raises(DataError, match="out of range for INT8"):
        to_connect('{"schema":{"type":"int8"},"payload":300}')
    with pytest.raises(DataError, match="not valid base64"):
        to_connect('{"schema":{"type":"bytes"},"payload":"***"}')


def test_bad_schemas_are_named_as_kafka_names_them() -> None:
    with pytest.raises(DataError, match="Schema must contain 'type' field"):
        to_connect('{"schema":{"optional":true},"payload":null}')
    with pytest.raises(DataError, match="Unknown schema type: int128"):
        to_connect('{"schema":{"type":"int128"},"payload":1}')
    with pytest.raises(DataError, match="Array schema did not specify the element type"):
        to_connect('{"schema":{"type":"array"},"payload":[]}')
    with pytest.raises(DataError, match="Schema parameters must have string values"):
        to_connect('{"schema":{"type":"int8","parameters":{"a":1}},"payload":1}')


def test_a_struct_value_that_does_not_match_names_the_field_path() -> None:
    line = SchemaBuilder.struct().name("line").field("price", Schema.FLOAT64_SCHEMA).build()
    order = SchemaBuilder.struct().name("order").field("lines", SchemaBuilder.array(line).build()).build()
    outer = SchemaBuilder.struct().field("order", order).build()
    lines = [Struct(line).put("price", 1.0), Struct(line).put("price", 2.0)]
    record = Struct(outer).put("order", Struct(order).put("lines", lines))
    lines.append(Struct(line))  # price unset, added after the put
    with pytest.raises(DataError, match=r"order\.lines\[2\]\.price"):
        converter().from_connect_data(TOPIC, outer, record)


def test_a_value_of_the_wrong_type_is_a_data_error() -> None:
    """JsonConverterTest.mismatchSchemaJson."""
    with pytest.raises(DataError, match="FLOAT64"):
        converter().from_connect_data(TOPIC, Schema.FLOAT64_SCHEMA, True)
    with pytest.raises(DataError, match="struct schemas do not match"):
        other = SchemaBuilder.struct().field("a", Schema.INT8_SCHEMA).build()
        converter().from_connect_data(TOPIC, SchemaBuilder.struct().name("x").field("a", Schema.INT8_SCHEMA).build(),
                                      Struct(other).put("a", 1))
    with pytest.raises(DataError, match="required and has no default value"):
        converter().from_connect_data(TOPIC, Schema.STRING_SCHEMA, None)


def test_a_bad_config_names_the_key_the_value_and_what_is_allowed() -> None:
    with pytest.raises(ConfigError, match=r"Invalid value HEX for configuration decimal.format.*BASE64, NUMERIC"):
        converter(decimal_format="HEX")
    with pytest.raises(ConfigError, match=r"schemas\.enable"):
        converter(schemas_enable="maybe")


# ---------------------------------------------------------------- batches, caches, round trips

def test_batches_give_the_same_bytes_and_values_as_single_records() -> None:
    schema = (SchemaBuilder.struct().field("id", Schema.INT64_SCHEMA).field("name", Schema.OPTIONAL_STRING_SCHEMA)
              .field("at", Timestamp.SCHEMA).build())
    records = [Struct(schema).put("id", i).put("name", None if i % 2 else f"n{i}")
               .put("at", dt.datetime(2024, 1, 1, tzinfo=UTC) + dt.timedelta(milliseconds=i)) for i in range(50)]
    batch_converter, single_converter = converter(), converter()
    encoded = batch_converter.from_connect_data_batch(TOPIC, schema, records)
    assert encoded == [single_converter.from_connect_data(TOPIC, schema, r) for r in records]
    mixed: list[bytes | None] = [*encoded[:3], None, b'{"schema":null,"payload":1}', *encoded[3:]]
    expected = [single_converter.to_connect_data(TOPIC, d) for d in mixed]
    assert batch_converter.to_connect_data_batch(TOPIC, mixed) == expected
    assert [r.value for r in batch_converter.to_connect_data_batch(TOPIC, encoded)] == records


def test_equivalent_schema_texts_are_cached_separately_as_in_kafka() -> None:
    """JsonConverterTest.testCacheSchemaToConnectConversion."""
    instance = converter()
    instance.to_connect_data(TOPIC, b'{ "schema": { "type": "boolean" }, "payload": true }')
    instance.to_connect_data(TOPIC, b'{ "schema": { "type": "boolean" }, "payload": true }')
    assert len(instance._schemas) == 1
    instance.to_connect_data(TOPIC, b'{ "schema": { "type": "boolean", "optional": true }, "payload": true }')
    instance.to_connect_data(TOPIC, b'{ "schema": { "type": "boolean", "optional": false }, "payload": true }')
    assert len(instance._schemas) == 3


def test_schema_cache_size_bounds_the_caches() -> None:
    """JsonConverterTest.testCacheSchemaToJsonConversion, with schemas.cache.size=1."""
    instance = converter(schemas_cache_size="1")
    instance.from_connect_data(TOPIC, SchemaBuilder.bool().build(), True)
    instance.from_connect_data(TOPIC, SchemaBuilder.bool().build(), True)
    assert len(instance._writers) == 1
    instance.from_connect_data(TOPIC, SchemaBuilder.bool().optional().build(), True)
    assert len(instance._writers) == 1


def test_an_envelope_with_a_different_schema_text_is_not_taken_for_a_cached_one() -> None:
    instance = converter()
    int32 = instance.from_connect_data(TOPIC, Schema.INT32_SCHEMA, 7) or b""
    assert instance.to_connect_data_batch(TOPIC, [int32, int32.replace(b"int32", b"int64")]) == [
        SchemaAndValue(Schema.INT32_SCHEMA, 7), SchemaAndValue(Schema.INT64_SCHEMA, 7)]
    with pytest.raises(DataError, match='requires "schema" and "payload"'):
        instance.to_connect_data_batch(TOPIC, [int32, int32[:-1] + b',"extra":1}'])


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schemas_and_values(), st.sampled_from(["BASE64", "NUMERIC"]), st.booleans())
def test_any_value_survives_a_round_trip(schema_and_value: tuple[Schema, Any], decimal_format: str,
                                         schemas_enable: bool) -> None:
    schema, value = schema_and_value
    instance = converter(decimal_format=decimal_format, schemas_enable=str(schemas_enable).lower())
    if value is None and schema.default is None and not schema.optional:
        return
    encoded = instance.from_connect_data_batch(TOPIC, schema, [value])[0]
    assert encoded is not None
    decoded = instance.to_connect_data_batch(TOPIC, [encoded])[0]
    if schemas_enable:
        assert decoded.schema == schema
        assert decoded.value == with_defaults(schema, value)
        assert instance.from_connect_data(TOPIC, decoded.schema, decoded.value) == encoded
    else:  # plain JSON: reads back as schemaless values that write the same JSON tree
        # A NUMERIC decimal past int64 reads back as an integer no Connect type holds (Kafka's
        # schemaless INT64); writing it again is a DataError, not a round trip.
        assume(all(-2**63 <= n < 2**63 for n in integers_in(json.loads(encoded))))
        assert decoded.schema is None
        assert orjson.loads(instance.from_connect_data(TOPIC, None, decoded.value) or b"null") == orjson.loads(encoded)


def integers_in(tree: Any) -> list[int]:
    """Every integer in a JSON tree (bools are not integers here)."""
    if isinstance(tree, dict):
        return [n for item in tree.values() for n in integers_in(item)]
    if isinstance(tree, list):
        return [n for item in tree for n in integers_in(item)]
    return [tree] if isinstance(tree, int) and not isinstance(tree, bool) else []


def test_characters_outside_the_bmp_are_written_as_jackson_escapes_them() -> None:
    # Jackson's UTF8JsonGenerator (COMBINE_UNICODE_SURROGATES_IN_UTF8 off, Kafka's default)
    # writes U+1F600 as an escaped surrogate pair; checked against Kafka 4.1.1's JsonConverter.
    converter = JsonConverter()
    converter.configure({"schemas.enable": "false"}, is_key=False)

    data = converter.from_connect_data("t", None, {"s": "caf\u00e9 \U0001F600"})

    assert data == b'{"s":"caf\xc3\xa9 \\uD83D\\uDE00"}'
    assert converter.to_connect_data("t", data).value == {"s": "caf\u00e9 \U0001F600"}


def test_sparse_structs_decode_nulls_as_unset_and_defaults_where_the_schema_has_them() -> None:
    schema = (SchemaBuilder.struct().name("sparse").field("id", Schema.INT64_SCHEMA)
              .field("note", Schema.OPTIONAL_STRING_SCHEMA).field("count", Schema.OPTIONAL_INT32_SCHEMA)
              .field("flag", SchemaBuilder.bool().optional().default_value(True).build()).build())
    converter = JsonConverter()
    converter.configure({"schemas.enable": "true"}, is_key=False)
    values = [Struct(schema).put("id", 1), Struct(schema).put("id", 2).put("note", "n").put("count", 3)]
    decoded = converter.to_connect_data_batch("t", converter.from_connect_data_batch("t", schema, values))
    assert [d.value.get_without_default("note") for d in decoded] == [None, "n"]
    assert [d.value.get_without_default("count") for d in decoded] == [None, 3]
    assert [d.value.get("flag") for d in decoded] == [True, True]  # null -> the default, as Kafka's
    payload = b'{"schema":' + orjson.dumps(orjson.loads(converter.from_connect_data("t", schema, values[0]))["schema"])
    with pytest.raises(DataError, match="count"):
        converter.to_connect_data("t", payload + b',"payload":{"id":1,"note":null,"count":"x","flag":null}}')


def test_schemaless_integers_beyond_64_bits_stay_exact_integers() -> None:
    # orjson alone turns them into floats; Kafka's reader wraps them (BigInteger.longValue): both lose them.
    converter = JsonConverter()
    converter.configure({"schemas.enable": "false"}, is_key=False)
    big = -1267650600228229401496703205376
    assert converter.to_connect_data("t", str(big).encode()).value == big
    assert converter.to_connect_data("t", b'{"a": [1.5, 123456789012345678901, "12345678901234567890"]}').value == {
        "a": [1.5, 123456789012345678901, "12345678901234567890"]}

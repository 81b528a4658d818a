"""Cast, after Kafka's CastTest."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal as BigDecimal

import pytest

from kopycat.api.data import Date, Decimal, Schema, SchemaBuilder, Struct, Time, Timestamp, Type
from kopycat.api.errors import ConfigError, DataError
from kopycat.api.records import SourceRecord
from kopycat.transforms import Cast

MILLIS_PER_DAY = 86_400_000
UTC = dt.timezone.utc


def cast(cls: type, spec: str, **extra) -> Cast:
    xform = cls()
    xform.configure({"spec": spec, **extra})
    return xform


@pytest.mark.parametrize("spec", ["", "foo:faketype", "foo:array", "array", "foo:bytes", "foo:int8:extra",
                                  "foo:int8,int32"])
def test_a_bad_spec_is_a_config_error_naming_spec(spec):
    # testConfigEmpty, testConfigInvalidSchemaType, testConfigInvalidTargetType, testUnsupportedTargetType,
    # testConfigInvalidMap, testConfigMixWholeAndFieldTransformation
    with pytest.raises(ConfigError) as info:
        Cast.Key().configure({"spec": spec})
    assert info.value.key == "spec"
    assert "spec" in str(info.value)


def test_unsupported_target_message_lists_the_supported_types():
    with pytest.raises(ConfigError, match=r"does not support casting to BYTES; supported types are "
                                          r"\[INT8, INT16, INT32, INT64, FLOAT32, FLOAT64, BOOLEAN, STRING\]"):
        Cast.Value().configure({"spec": "foo:bytes"})


@pytest.mark.parametrize(("cls", "record"), [
    (Cast.Value, SourceRecord(topic="topic", kafka_partition=0, key_schema=Schema.STRING_SCHEMA, key="key",
                              value_schema=Schema.STRING_SCHEMA, value=None)),
    (Cast.Value, SourceRecord(topic="topic", kafka_partition=0, key_schema=Schema.STRING_SCHEMA, key="key")),
    (Cast.Key, SourceRecord(topic="topic", kafka_partition=0, key_schema=Schema.STRING_SCHEMA,
                            value_schema=Schema.STRING_SCHEMA, value="value")),
    (Cast.Key, SourceRecord(topic="topic", kafka_partition=0, value_schema=Schema.STRING_SCHEMA, value="value")),
], ids=["null-value-with-schema", "null-value-schemaless", "null-key-with-schema", "null-key-schemaless"])
def test_a_null_key_or_value_passes_unchanged(cls, record):
    # castNullValueRecordWithSchema, castNullValueRecordSchemaless,
    # castNullKeyRecordWithSchema, castNullKeyRecordSchemaless
    assert cast(cls, "foo:int64").apply(record) == record


@pytest.mark.parametrize(("replace_null_with_default", "expected"), [(False, None), (True, "10")])
def test_a_null_field_with_default_follows_replace_null_with_default(replace_null_with_default, expected):
    # castFieldWithDefaultValueRecordWithSchema
    xform = cast(Cast.Value, "magic:string", **{"replace.null.with.default": replace_null_with_default})
    schema = SchemaBuilder.struct().field("magic", SchemaBuilder.int32().optional().default_value(10).build()).build()
    out = xform.apply(SourceRecord(topic="topic", value_schema=schema, value=Struct(schema).put("magic", None)))
    assert out.value_schema.field("magic").schema == SchemaBuilder.string().optional().default_value("10").build()
    assert out.value.get_without_default("magic") == expected


@pytest.mark.parametrize(("spec", "value", "schema", "expected"), [
    ("int8", 42, Schema.INT8_SCHEMA, 42),
    ("int16", 42, Schema.INT16_SCHEMA, 42),
    ("int32", 42, Schema.INT32_SCHEMA, 42),
    ("int64", 42, Schema.INT64_SCHEMA, 42),
    ("float32", 42, Schema.FLOAT32_SCHEMA, 42.0),
    ("float64", 42, Schema.FLOAT64_SCHEMA, 42.0),
    ("boolean", 42, Schema.BOOLEAN_SCHEMA, True),
    ("boolean", 0, Schema.BOOLEAN_SCHEMA, False),
    ("string", 42, Schema.STRING_SCHEMA, "42"),
    ("int8", 300, Schema.INT8_SCHEMA, 44),
    ("int16", -40000, Schema.INT16_SCHEMA, 25536),
])
def test_whole_int32_value_casts_with_schema(spec, value, schema, expected):
    # castWholeRecordValueWithSchemaInt8 ... castWholeRecordValueWithSchemaString (+ Java narrowing)
    out = cast(Cast.Value, spec).apply(SourceRecord(topic="topic", value_schema=Schema.INT32_SCHEMA, value=value))
    assert out.value_schema == schema
    assert out.value == expected
    assert type(out.value) is type(expected)


@pytest.mark.parametrize(("spec", "value", "expected"), [
    ("int8", 42, 42), ("int16", 42, 42), ("int32", 42, 42), ("int64", 42, 42), ("float32", 42, 42.0),
    ("float64", 42, 42.0), ("boolean", 42, True), ("boolean", 0, False), ("string", 42, "42"),
])
def test_whole_value_casts_schemaless(spec, value, expected):
    # castWholeRecordValueSchemalessInt8 ... castWholeRecordValueSchemalessString
    out = cast(Cast.Value, spec).apply(SourceRecord(topic="topic", value=value))
    assert out.value_schema is None
    assert out.value == expected
    assert type(out.value) is type(expected)


def test_whole_key_casts_with_and_without_schema():
    # castWholeRecordKeyWithSchema, castWholeRecordKeySchemaless
    xform = cast(Cast.Key, "int8")
    with_schema = xform.apply(SourceRecord(topic="topic", key_schema=Schema.INT32_SCHEMA, key=42,
                                           value_schema=Schema.STRING_SCHEMA, value="bogus"))
    assert (with_schema.key_schema, with_schema.key, with_schema.value) == (Schema.INT8_SCHEMA, 42, "bogus")
    schemaless = xform.apply(SourceRecord(topic="topic", key=42, value_schema=Schema.STRING_SCHEMA, value="bogus"))
    assert (schemaless.key_schema, schemaless.key) == (None, 42)


def test_whole_decimal_value_casts_to_its_big_decimal_string():
    # castWholeBigDecimalRecordValueWithSchemaString
    out = cast(Cast.Value, "string").apply(SourceRecord(topic="topic", value_schema=Decimal.schema(0),
                                                        value=BigDecimal(42)))
    assert (out.value_schema, out.value) == (Schema.STRING_SCHEMA, "42")


def test_whole_timestamp_value_casts_to_iso_text():
    # castWholeDateRecordValueWithSchemaString: a day + 1 ms formats as a timestamp
    value = dt.datetime(1970, 1, 2, 0, 0, 0, 1000, tzinfo=UTC)
    out = cast(Cast.Value, "string").apply(SourceRecord(topic="topic", value_schema=Timestamp.SCHEMA, value=value))
    assert out.value == "1970-01-02T00:00:00.001Z"
    assert out.value_schema == Schema.STRING_SCHEMA


def test_the_default_of_a_whole_value_schema_is_cast_too():
    # castWholeRecordDefaultValue
    schema = SchemaBuilder.float32().default_value(-42.125).build()
    out = cast(Cast.Value, "int32").apply(SourceRecord(topic="topic", value_schema=schema, value=42.125))
    assert out.value == 42
    assert out.value_schema == SchemaBuilder.int32().default_value(-42).build()


def test_an_unsupported_schemaless_type_is_a_data_error():
    # castWholeRecordValueSchemalessUnsupportedType
    with pytest.raises(DataError, match="does not support casting from ARRAY"):
        cast(Cast.Value, "int8").apply(SourceRecord(topic="topic", value=["foo"]))


def test_logical_values_cast_to_their_representation():
    # castLogicalToPrimitive (timestamp_to_float64 of Long.MAX_VALUE left out: no datetime holds it)
    xform = cast(Cast.Value, "date_to_int32:int32,timestamp_to_int64:int64,time_to_int64:int64,"
                             "decimal_to_int32:int32,timestamp_to_float64:float64,null_timestamp_to_int32:int32")
    schema = (SchemaBuilder.struct().field("date_to_int32", Date.SCHEMA).field("timestamp_to_int64", Timestamp.SCHEMA)
              .field("time_to_int64", Time.SCHEMA).field("decimal_to_int32", Decimal.schema(0))
              .field("timestamp_to_float64", Timestamp.SCHEMA)
              .field("null_timestamp_to_int32", Timestamp.builder().optional().build()).build())
    value = (Struct(schema).put("date_to_int32", dt.date(1970, 1, 2))
             .put("timestamp_to_int64", dt.datetime(1970, 1, 1, tzinfo=UTC))
             .put("time_to_int64", dt.time(0, 0, 0, 1000))
             .put("decimal_to_int32", BigDecimal(2**31))
             .put("timestamp_to_float64", dt.datetime(2017, 1, 3, 6, 30, 1, 864000, tzinfo=UTC)))
    out = xform.apply(SourceRecord(topic="topic", value_schema=schema, value=value)).value
    assert out.get("date_to_int32") == 1
    assert out.get("timestamp_to_int64") == 0
    assert out.get("time_to_int64") == 1
    assert out.get("decimal_to_int32") == -(2**31)
    assert out.get("timestamp_to_float64") == 1483425001864.0
    assert out.get("null_timestamp_to_int32") is None
    types = {f.name: (f.schema.type, f.schema.optional) for f in out.schema.fields}
    assert types == {"date_to_int32": (Type.INT32, False), "timestamp_to_int64": (Type.INT64, False),
                     "time_to_int64": (Type.INT64, False), "decimal_to_int32": (Type.INT32, False),
                     "timestamp_to_float64": (Type.FLOAT64, False), "null_timestamp_to_int32": (Type.INT32, True)}


def test_logical_values_cast_to_kafkas_date_strings():
    # castLogicalToString
    xform = cast(Cast.Value, "date:string,decimal:string,time:string,timestamp:string")
    schema = (SchemaBuilder.struct().field("date", Date.SCHEMA).field("decimal", Decimal.schema(0))
              .field("time", Time.SCHEMA).field("timestamp", Timestamp.SCHEMA).build())
    value = (Struct(schema).put("date", dt.date(1970, 1, 2)).put("decimal", BigDecimal(1982))
             .put("time", dt.time(1, 0)).put("timestamp", dt.datetime(2024, 5, 1, 12, 30, 15, 250000, tzinfo=UTC)))
    out = xform.apply(SourceRecord(topic="topic", value_schema=schema, value=value)).value
    assert [out.get(n) for n in ("date", "decimal", "time", "timestamp")] == [
        "1970-01-02", "1982", "01:00:00.000Z", "2024-05-01T12:30:15.250Z"]


def test_every_supported_field_cast_with_schema():
    # castFieldsWithSchema
    spec = ("int8:int16,int16:int32,int32:int64,int64:boolean,float32:float64,float64:boolean,boolean:int8,"
            "string:int32,bigdecimal:string,date:string,optional:int32,bytes:string")
    schema = (SchemaBuilder.struct().field("int8", Schema.INT8_SCHEMA).field("int16", Schema.OPTIONAL_INT16_SCHEMA)
              .field("int32", SchemaBuilder.int32().default_value(2).build()).field("int64", Schema.INT64_SCHEMA)
              .field("float32", Schema.FLOAT32_SCHEMA)
              .field("float64", SchemaBuilder.float64().default_value(-1.125).build())
              .field("boolean", Schema.BOOLEAN_SCHEMA).field("string", Schema.STRING_SCHEMA)
              .field("bigdecimal", Decimal.schema(0)).field("date", Date.SCHEMA)
              .field("optional", Schema.OPTIONAL_FLOAT32_SCHEMA).field("timestamp", Timestamp.SCHEMA)
              .field("bytes", Schema.BYTES_SCHEMA).build())
    value = (Struct(schema).put("int8", 8).put("int16", 16).put("int32", 32).put("int64", 64).put("float32", 32.0)
             .put("float64", -64.0).put("boolean", True).put("bigdecimal", BigDecimal(42))
             .put("date", dt.date(1970, 1, 2)).put("string", "42")
             .put("timestamp", dt.datetime(1970, 1, 1, tzinfo=UTC))
             .put("bytes", bytes([0xFE, 0xDC, 0xBA, 0x98, 0x76, 0x54, 0x32, 0x10])))
    out = cast(Cast.Value, spec).apply(SourceRecord(topic="topic", value_schema=schema, value=value)).value

    assert {f.name: out.get(f.name) for f in out.schema.fields} == {
        "int8": 8, "int16": 16, "int32": 32, "int64": True, "float32": 32.0, "float64": True, "boolean": 1,
        "string": 42, "bigdecimal": "42", "date": "1970-01-02", "optional": None,
        "timestamp": dt.datetime(1970, 1, 1, tzinfo=UTC), "bytes": "/ty6mHZUMhA="}
    fields = {f.name: f.schema for f in out.schema.fields}
    assert fields["int16"] == Schema.OPTIONAL_INT32_SCHEMA
    assert fields["int32"] == SchemaBuilder.int64().default_value(2).build()
    assert fields["float64"] == SchemaBuilder.bool().default_value(True).build()
    assert fields["optional"] == Schema.OPTIONAL_INT32_SCHEMA
    assert fields["timestamp"] == Timestamp.SCHEMA
    assert [f.name for f in out.schema.fields] == [f.name for f in schema.fields]


def test_every_supported_field_cast_schemaless():
    # castFieldsSchemaless
    xform = cast(Cast.Value, "int8:int16,int16:int32,int32:int64,int64:boolean,float32:float64,float64:boolean,"
                             "boolean:int8,string:int32")
    out = xform.apply(SourceRecord(topic="topic", value={
        "int8": 8, "int16": 16, "int32": 32, "int64": 64, "float32": 32.0, "float64": -64.0,
        "boolean": True, "string": "42"}))
    assert out.value_schema is None
    assert out.value == {"int8": 8, "int16": 16, "int32": 32, "int64": True, "float32": 32.0, "float64": True,
                         "boolean": 1, "string": 42}
    assert type(out.value["float32"]) is float and type(out.value["boolean"]) is int


@pytest.mark.parametrize(("value", "spec", "expected"), [
    (1e10, "string", "1.0E10"),
    (0.1, "float32", 0.10000000149011612),
    (3.9e9, "int32", 2147483647),
    (-3.7, "int8", -3),
    (float("nan"), "int64", 0),
    (0.5, "boolean", False),
    ("true", "boolean", True),
    ("TRUE", "boolean", True),
    ("yes", "boolean", False),
    (" 1.5 ", "float64", 1.5),
    (b"\x00\x01", "string", "AAE="),
])
def test_java_conversions(value, spec, expected):
    out = cast(Cast.Value, spec).apply(SourceRecord(topic="t", value=value)).value
    assert out == expected


def test_float32_values_print_as_java_float_to_string():
    out = cast(Cast.Value, "string").apply(SourceRecord(topic="t", value_schema=Schema.FLOAT32_SCHEMA,
                                                        value=0.10000000149011612))
    assert out.value == "0.1"


@pytest.mark.parametrize(("value", "spec"), [("300", "int8"), ("4.5", "int32"), ("abc", "float64")])
def test_unparseable_or_out_of_range_strings_are_data_errors(value, spec):
    with pytest.raises(DataError, match="out of range for requested data type"):
        cast(Cast.Value, spec).apply(SourceRecord(topic="t", value=value))


def test_a_whole_value_cast_of_a_logical_type_drops_the_logical_name():
    out = cast(Cast.Value, "int32").apply(SourceRecord(topic="t", value_schema=Date.SCHEMA, value=dt.date(1970, 1, 11)))
    assert (out.value_schema, out.value) == (Schema.INT32_SCHEMA, 10)


def test_a_schemaless_decimal_is_not_supported_as_in_kafka():
    with pytest.raises(DataError, match="not supported by Connect's data API"):
        cast(Cast.Value, "a:string").apply(SourceRecord(topic="t", value={"a": BigDecimal(1)}))


def test_struct_schemas_keep_their_name_and_are_cached():
    schema = SchemaBuilder.struct().name("Row").version(2).field("n", Schema.INT64_SCHEMA).build()
    xform = cast(Cast.Value, "n:int32")
    first = xform.apply(SourceRecord(topic="t", value_schema=schema, value=Struct(schema).put("n", 1)))
    second = xform.apply(SourceRecord(topic="t", value_schema=schema, value=Struct(schema).put("n", 2)))
    assert (first.value_schema.name, first.value_schema.version) == ("Row", 2)
    assert second.value_schema is first.value_schema
    assert second.value.get("n") == 2

"""MaskField, after Kafka's MaskFieldTest."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal as BigDecimal

import pytest

from kopycat.api.data import Date, Decimal, Schema, SchemaBuilder, Struct, Time, Timestamp
from kopycat.api.errors import ConfigError, DataError
from kopycat.api.records import SinkRecord
from kopycat.transforms import MaskField

SCHEMA = (SchemaBuilder.struct()
          .field("magic", Schema.INT32_SCHEMA).field("bool", Schema.BOOLEAN_SCHEMA)
          .field("byte", Schema.INT8_SCHEMA).field("short", Schema.INT16_SCHEMA)
          .field("int", Schema.INT32_SCHEMA).field("long", Schema.INT64_SCHEMA)
          .field("float", Schema.FLOAT32_SCHEMA).field("double", Schema.FLOAT64_SCHEMA)
          .field("string", Schema.STRING_SCHEMA).field("date", Date.SCHEMA)
          .field("time", Time.SCHEMA).field("timestamp", Timestamp.SCHEMA)
          .field("decimal", Decimal.schema(0))
          .field("array", SchemaBuilder.array(Schema.INT32_SCHEMA))
          .field("map", SchemaBuilder.map(Schema.STRING_SCHEMA, Schema.STRING_SCHEMA))
          .field("withDefault", SchemaBuilder.string().optional().default_value("default").build())
          .build())
NOW = dt.datetime(2024, 5, 1, 12, 30, tzinfo=dt.timezone.utc)
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


def values() -> dict:
    return {"magic": 42, "bool": True, "byte": 42, "short": 42, "int": 42, "long": 42, "float": 42.0,
            "double": 42.0, "string": "55.121.20.20", "date": NOW, "bigdec": BigDecimal("42.0"),
            "list": [42], "map": {"key": "value"}}


def values_with_schema() -> Struct:
    return (Struct(SCHEMA).put("magic", 42).put("bool", True).put("byte", 42).put("short", 42)
            .put("int", 42).put("long", 42).put("float", 42.0).put("double", 42.0).put("string", "hmm")
            .put("date", NOW.date()).put("time", NOW.time()).put("timestamp", NOW)
            .put("decimal", BigDecimal(42)).put("array", [1, 2, 3]).put("map", {"what": "what"})
            .put("withDefault", None))


def transform(fields: list[str], replacement: str | None = None) -> MaskField:
    xform = MaskField.Value()
    props = {"fields": fields, "replace.null.with.default": False}
    if replacement is not None:
        props["replacement"] = replacement
    xform.configure(props)
    return xform


def test_schemaless_fields_get_their_types_empty_value():
    # testSchemaless
    fields = [name for name in values() if name != "magic"]
    out = transform(fields).apply(SinkRecord(topic="", value=values())).value
    assert out == {"magic": 42, "bool": False, "byte": 0, "short": 0, "int": 0, "long": 0, "float": 0.0,
                   "double": 0.0, "string": "", "date": EPOCH, "bigdec": BigDecimal(0), "list": [], "map": {}}


def test_struct_fields_get_their_types_empty_value():
    # testWithSchema
    fields = [f.name for f in SCHEMA.fields if f.name != "magic"]
    out = transform(fields).apply(SinkRecord(topic="", value_schema=SCHEMA, value=values_with_schema()))
    expected = (Struct(SCHEMA).put("magic", 42).put("bool", False).put("byte", 0).put("short", 0)
                .put("int", 0).put("long", 0).put("float", 0.0).put("double", 0.0).put("string", "")
                .put("date", dt.date(1970, 1, 1)).put("time", dt.time(0)).put("timestamp", EPOCH)
                .put("decimal", BigDecimal(0)).put("array", []).put("map", {}))
    assert out == SinkRecord(topic="", value_schema=SCHEMA, value=expected)


def test_masked_lists_and_maps_are_fresh_objects():
    # testNullListAndMapReplacementsAreMutable
    first = transform(["array", "map"]).apply(SinkRecord(topic="", value_schema=SCHEMA, value=values_with_schema()))
    first.value.get("array").append(0)
    second = transform(["array", "map"]).apply(SinkRecord(topic="", value_schema=SCHEMA, value=values_with_schema()))
    assert second.value.get("array") == []


@pytest.mark.parametrize(("field", "replacement", "expected"), [
    ("short", "123", 123), ("byte", "123", 123), ("int", "123", 123), ("long", "123", 123),
    ("float", "123.0", 123.0), ("double", "123.0", 123.0), ("string", "123", "123"),
    ("decimal", "123", BigDecimal(123)),
])
def test_struct_fields_take_a_replacement_of_their_type(field, replacement, expected):
    # testWithSchemaAndReplacement
    out = transform([field], replacement).apply(SinkRecord(topic="", value_schema=SCHEMA, value=values_with_schema()))
    assert out.value.get(field) == expected
    assert type(out.value.get(field)) is type(expected)


@pytest.mark.parametrize(("field", "replacement", "expected"), [
    ("int", "123", 123), ("double", "123.0", 123.0), ("string", "123", "123"),
    ("bigdec", "123.0", BigDecimal("123.0")),
])
def test_schemaless_fields_take_a_replacement_of_their_type(field, replacement, expected):
    # testSchemalessWithReplacement
    out = transform([field], replacement).apply(SinkRecord(topic="", value=values())).value
    assert out[field] == expected
    assert type(out[field]) is type(expected)


def test_an_int8_replacement_narrows_as_java_does():
    out = transform(["byte"], "300").apply(SinkRecord(topic="", value_schema=SCHEMA, value=values_with_schema()))
    assert out.value.get("byte") == 44


@pytest.mark.parametrize("field", ["date", "bool", "list", "map"])
def test_schemaless_types_without_replacement_support_fail(field):
    # testSchemalessUnsupportedReplacementType
    with pytest.raises(DataError, match=f"Cannot mask field {field}"):
        transform([field], "123").apply(SinkRecord(topic="", value=values()))


@pytest.mark.parametrize("field", ["time", "timestamp", "array"])
def test_struct_types_without_replacement_support_fail(field):
    # testWithSchemaUnsupportedReplacementType
    with pytest.raises(DataError, match=f"Cannot mask field {field}"):
        transform([field], "123").apply(SinkRecord(topic="", value_schema=SCHEMA, value=values_with_schema()))


@pytest.mark.parametrize("field", ["byte", "int", "long", "double", "bigdec"])
def test_a_non_numeric_replacement_for_a_number_fails(field):
    # testReplacementTypeMismatch
    vals = values()
    with pytest.raises(DataError, match="Unable to convert foo"):
        transform([field], "foo").apply(SinkRecord(topic="", value=vals))


def test_an_empty_replacement_is_a_config_error():
    # testEmptyStringReplacementValue
    with pytest.raises(ConfigError, match="String must be non-empty"):
        MaskField.Value().configure({"fields": "short", "replacement": ""})


def test_fields_is_required_and_not_empty():
    with pytest.raises(ConfigError, match='Missing required configuration "fields"'):
        MaskField.Value().configure({})
    with pytest.raises(ConfigError, match="Empty list"):
        MaskField.Value().configure({"fields": ""})


def test_a_named_field_missing_from_a_dict_is_set_to_null_as_in_kafka():
    assert transform(["nope"]).apply(SinkRecord(topic="", value={"a": 1})).value == {"a": 1, "nope": None}


def test_null_field_values_stay_null():
    out = transform(["withDefault"]).apply(SinkRecord(topic="", value_schema=SCHEMA, value=values_with_schema()))
    assert out.value.get_without_default("withDefault") is None


def test_the_key_side_masks_the_key():
    xform = MaskField.Key()
    xform.configure({"fields": "ssn"})
    out = xform.apply(SinkRecord(topic="", key={"ssn": "123-45-6789", "id": 7}, value="v"))
    assert (out.key, out.value) == ({"ssn": "", "id": 7}, "v")

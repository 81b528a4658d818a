"""HoistField and ValueToKey, after Kafka's HoistFieldTest and ValueToKeyTest."""

from __future__ import annotations

import pytest

from kopycat.api.data import Schema, SchemaBuilder, Struct
from kopycat.api.errors import ConfigError, DataError
from kopycat.api.records import SinkRecord
from kopycat.transforms import HoistField, ValueToKey


def hoist(cls: type = HoistField.Key) -> HoistField:
    xform = cls()
    xform.configure({"field": "magic"})
    return xform


def test_hoist_wraps_a_schemaless_key_in_a_dict():
    # HoistFieldTest.schemaless
    out = hoist().apply(SinkRecord(topic="test", key=42))
    assert (out.key_schema, out.key) == (None, {"magic": 42})


def test_hoist_wraps_a_key_with_schema_in_a_struct():
    # HoistFieldTest.withSchema
    out = hoist().apply(SinkRecord(topic="test", key_schema=Schema.INT32_SCHEMA, key=42))
    expected_schema = SchemaBuilder.struct().field("magic", Schema.INT32_SCHEMA).build()
    assert out == SinkRecord(topic="test", key_schema=expected_schema, key=Struct(expected_schema).put("magic", 42))


def test_hoisted_schemaless_dict_is_mutable_and_schemas_are_cached():
    # HoistFieldTest.testSchemalessMapIsMutable
    xform = hoist()
    out = xform.apply(SinkRecord(topic="test", key=420)).key
    out["k"] = "v"
    assert out == {"magic": 420, "k": "v"}
    first = xform.apply(SinkRecord(topic="t", key_schema=Schema.INT32_SCHEMA, key=1))
    second = xform.apply(SinkRecord(topic="t", key_schema=Schema.INT32_SCHEMA, key=2))
    assert second.key_schema is first.key_schema


def test_hoist_value_side_keeps_the_key():
    out = hoist(HoistField.Value).apply(SinkRecord(topic="t", key="k", value_schema=Schema.STRING_SCHEMA, value="v"))
    assert out.key == "k"
    assert out.value.get("magic") == "v"


def test_hoist_a_null_into_a_required_schema_fails_validation():
    with pytest.raises(DataError, match="magic"):
        hoist().apply(SinkRecord(topic="t", key_schema=Schema.INT32_SCHEMA, key=None))


def value_to_key(fields: str, **extra) -> ValueToKey:
    xform = ValueToKey()
    xform.configure({"fields": fields, **extra})
    return xform


def test_value_to_key_schemaless():
    # ValueToKeyTest.schemaless
    out = value_to_key("a,b").apply(SinkRecord(topic="", value={"a": 1, "b": 2, "c": 3}))
    assert (out.key_schema, out.key) == (None, {"a": 1, "b": 2})
    assert out.value == {"a": 1, "b": 2, "c": 3}


def test_value_to_key_with_schema():
    # ValueToKeyTest.withSchema
    schema = (SchemaBuilder.struct().field("a", Schema.INT32_SCHEMA).field("b", Schema.INT32_SCHEMA)
              .field("c", Schema.INT32_SCHEMA).build())
    value = Struct(schema).put("a", 1).put("b", 2).put("c", 3)
    out = value_to_key("a,b").apply(SinkRecord(topic="", value_schema=schema, value=value))
    key_schema = SchemaBuilder.struct().field("a", Schema.INT32_SCHEMA).field("b", Schema.INT32_SCHEMA).build()
    assert out == SinkRecord(topic="", key_schema=key_schema, key=Struct(key_schema).put("a", 1).put("b", 2),
                             value_schema=schema, value=value)


def test_value_to_key_key_fields_follow_the_configured_order():
    schema = SchemaBuilder.struct().field("a", Schema.INT32_SCHEMA).field("b", Schema.STRING_SCHEMA).build()
    value = Struct(schema).put("a", 1).put("b", "x")
    out = value_to_key("b,a").apply(SinkRecord(topic="", value_schema=schema, value=value))
    assert [f.name for f in out.key_schema.fields] == ["b", "a"]


def test_value_to_key_missing_field_is_a_data_error():
    # ValueToKeyTest.nonExistingField
    schema = SchemaBuilder.struct().field("a", Schema.INT32_SCHEMA).build()
    with pytest.raises(DataError, match="^Field does not exist: not_exist$"):
        value_to_key("not_exist").apply(SinkRecord(topic="", value_schema=schema, value=Struct(schema).put("a", 1)))


@pytest.mark.parametrize(("replace_null_with_default", "expected"), [(False, None), (True, 42)])
def test_value_to_key_replace_null_with_default(replace_null_with_default, expected):
    # ValueToKeyTest.testReplaceNullWithDefaultConfig
    xform = value_to_key("optional_with_default", **{"replace.null.with.default": replace_null_with_default})
    with_default = SchemaBuilder.int32().optional().default_value(42).build()
    schema = SchemaBuilder.struct().field("optional_with_default", with_default).build()
    value = Struct(schema).put("optional_with_default", None)
    out = xform.apply(SinkRecord(topic="", value_schema=schema, value=value))
    assert out.key.get_without_default("optional_with_default") == expected


def test_value_to_key_needs_fields():
    with pytest.raises(ConfigError, match="Empty list"):
        value_to_key("")


def test_value_to_key_on_a_tombstone_fails_as_in_kafka():
    with pytest.raises(DataError, match="found: null"):
        value_to_key("a").apply(SinkRecord(topic="", value=None))

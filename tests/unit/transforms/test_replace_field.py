"""ReplaceField, after Kafka's ReplaceFieldTest."""

from __future__ import annotations

import logging

import pytest

from kopycat.api.data import Schema, SchemaBuilder, Struct
from kopycat.api.errors import ConfigError
from kopycat.api.records import SinkRecord
from kopycat.transforms import ReplaceField

SCHEMA = (SchemaBuilder.struct().field("dont", Schema.STRING_SCHEMA).field("abc", Schema.INT32_SCHEMA)
          .field("foo", Schema.BOOLEAN_SCHEMA).field("etc", Schema.STRING_SCHEMA).build())


def configured(props: dict, cls: type = ReplaceField.Value) -> ReplaceField:
    xform = cls()
    xform.configure(props)
    return xform


def full_value() -> Struct:
    return Struct(SCHEMA).put("dont", "whatever").put("abc", 42).put("foo", True).put("etc", "etc")


@pytest.mark.parametrize("schema", [None, SCHEMA], ids=["schemaless", "with-schema"])
def test_a_tombstone_passes_through(schema):
    # tombstoneSchemaless / tombstoneWithSchema
    xform = configured({"include": "abc,foo", "renames": "abc:xyz,foo:bar"})
    record = SinkRecord(topic="test", kafka_partition=0, value_schema=schema, value=None)
    assert xform.apply(record) is record


def test_schemaless_exclude_and_rename():
    # schemaless
    xform = configured({"exclude": "dont", "renames": "abc:xyz,foo:bar"})
    out = xform.apply(SinkRecord(topic="test", kafka_partition=0,
                                 value={"dont": "whatever", "abc": 42, "foo": True, "etc": "etc"}))
    assert out.value == {"xyz": 42, "bar": True, "etc": "etc"}


def test_with_schema_include_and_rename():
    # withSchema
    xform = configured({"include": "abc,foo", "renames": "abc:xyz,foo:bar"})
    out = xform.apply(SinkRecord(topic="test", kafka_partition=0, value_schema=SCHEMA, value=full_value()))
    expected_schema = (SchemaBuilder.struct().field("xyz", Schema.INT32_SCHEMA)
                       .field("bar", Schema.BOOLEAN_SCHEMA).build())
    assert out == SinkRecord(topic="test", kafka_partition=0, value_schema=expected_schema,
                             value=Struct(expected_schema).put("xyz", 42).put("bar", True))


def test_exclude_takes_precedence_over_include_and_order_follows_the_schema():
    xform = configured({"include": "etc,abc,dont", "exclude": "dont"})
    out = xform.apply(SinkRecord(topic="t", value_schema=SCHEMA, value=full_value()))
    assert [f.name for f in out.value_schema.fields] == ["abc", "etc"]
    assert (out.value.get("abc"), out.value.get("etc")) == (42, "etc")


def test_the_struct_schema_keeps_name_and_version_and_is_cached():
    schema = SchemaBuilder.struct().name("com.example.Row").version(3).field("a", Schema.INT32_SCHEMA).build()
    xform = configured({"renames": "a:b"})
    first = xform.apply(SinkRecord(topic="t", value_schema=schema, value=Struct(schema).put("a", 1)))
    second = xform.apply(SinkRecord(topic="t", value_schema=schema, value=Struct(schema).put("a", 2)))
    assert (first.value_schema.name, first.value_schema.version) == ("com.example.Row", 3)
    assert second.value_schema is first.value_schema
    assert second.value.get("b") == 2


@pytest.mark.parametrize(("replace_null_with_default", "expected"), [(False, None), (True, 42)])
@pytest.mark.parametrize("side", ["Key", "Value"])
def test_replace_null_with_default_on_key_and_value(side, replace_null_with_default, expected):
    # testReplaceNullWithDefaultConfigOnValue / testReplaceNullWithDefaultConfigOnKey
    xform = configured({"include": "abc", "renames": "abc:optional_with_default",
                        "replace.null.with.default": str(replace_null_with_default).lower()},
                       getattr(ReplaceField, side))
    schema = SchemaBuilder.struct().field("abc", SchemaBuilder.int32().optional().default_value(42).build()).build()
    struct = Struct(schema).put("abc", None)
    if side == "Key":
        out = xform.apply(SinkRecord(topic="test", key_schema=schema, key=struct)).key
    else:
        out = xform.apply(SinkRecord(topic="test", value_schema=schema, value=struct)).value
    assert len(out.schema.fields) == 1
    assert out.get_without_default("optional_with_default") == expected


@pytest.mark.parametrize("renames", ["abc", "abc:xyz:extra", "abc:"])
def test_a_rename_that_is_not_one_colon_pair_is_a_config_error(renames):
    with pytest.raises(ConfigError, match="Invalid rename mapping") as info:
        configured({"renames": renames})
    assert info.value.key == "renames"


def test_deprecated_whitelist_and_blacklist_still_work(caplog):
    with caplog.at_level(logging.WARNING):
        xform = configured({"whitelist": "abc,foo,dont", "blacklist": "dont"})
    out = xform.apply(SinkRecord(topic="t", value={"dont": 1, "abc": 2, "foo": 3, "etc": 4}))
    assert out.value == {"abc": 2, "foo": 3}
    assert "whitelist is deprecated" in caplog.text


def test_include_wins_over_deprecated_whitelist():
    xform = configured({"include": "abc", "whitelist": "foo"})
    assert xform.apply(SinkRecord(topic="t", value={"abc": 1, "foo": 2})).value == {"abc": 1}

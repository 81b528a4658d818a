"""ExtractField and V2 field paths, after Kafka's ExtractFieldTest and SingleFieldPathTest."""

from __future__ import annotations

import pytest

from kopycat.api.data import Schema, SchemaBuilder, Struct
from kopycat.api.errors import ConfigError, DataError
from kopycat.api.records import SinkRecord
from kopycat.transforms import ExtractField, FieldSyntaxVersion, SingleFieldPath

V2 = {"field.syntax.version": "V2"}
FOO = SchemaBuilder.struct().field("foo", Schema.INT32_SCHEMA).build()
NESTED = SchemaBuilder.struct().field("magic", FOO).build()


def key_xform(props: dict) -> ExtractField:
    xform = ExtractField.Key()
    xform.configure(props)
    return xform


def test_schemaless_key_field_is_extracted():
    # schemaless
    out = key_xform({"field": "magic"}).apply(SinkRecord(topic="test", key={"magic": 42}))
    assert (out.key_schema, out.key) == (None, 42)


def test_schemaless_nested_path_is_extracted_with_v2():
    # schemalessAndNestedPath
    out = key_xform({"field": "magic.foo", **V2}).apply(SinkRecord(topic="test", key={"magic": {"foo": 42}}))
    assert (out.key_schema, out.key) == (None, 42)


def test_v1_reads_a_dotted_name_as_one_field():
    out = key_xform({"field": "magic.foo"}).apply(SinkRecord(topic="test", key={"magic.foo": 1, "magic": {"foo": 2}}))
    assert out.key == 1


def test_a_null_schemaless_key_stays_null():
    # nullSchemaless
    out = key_xform({"field": "magic"}).apply(SinkRecord(topic="test", key=None))
    assert (out.key_schema, out.key) == (None, None)


def test_struct_key_field_is_extracted_with_its_schema():
    # withSchema
    schema = SchemaBuilder.struct().field("magic", Schema.INT32_SCHEMA).build()
    record = SinkRecord(topic="test", key_schema=schema, key=Struct(schema).put("magic", 42))
    out = key_xform({"field": "magic"}).apply(record)
    assert out == SinkRecord(topic="test", key_schema=Schema.INT32_SCHEMA, key=42)


def test_struct_nested_path_is_extracted_with_v2():
    # withSchemaAndNestedPath
    key = Struct(NESTED).put("magic", Struct(FOO).put("foo", 42))
    out = key_xform({"field": "magic.foo", **V2}).apply(SinkRecord(topic="test", key_schema=NESTED, key=key))
    assert (out.key_schema, out.key) == (Schema.INT32_SCHEMA, 42)


def test_a_null_struct_key_gets_the_fields_schema():
    # testNullWithSchema
    schema = SchemaBuilder.struct().field("magic", Schema.INT32_SCHEMA).optional().build()
    out = key_xform({"field": "magic"}).apply(SinkRecord(topic="test", key_schema=schema, key=None))
    assert (out.key_schema, out.key) == (Schema.INT32_SCHEMA, None)


@pytest.mark.parametrize(("props", "key"), [
    ({"field": "nonexistent"}, {"magic": 42}),
    ({"field": "magic.nonexistent", **V2}, {"magic": {"foo": 42}}),
])
def test_a_missing_schemaless_field_gives_null(props, key):
    # nonExistentFieldSchemalessShouldReturnNull, nonExistentNestedFieldSchemalessShouldReturnNull
    assert key_xform(props).apply(SinkRecord(topic="test", key=key)).key is None


def test_a_missing_struct_field_is_an_error_naming_it():
    # nonExistentFieldWithSchemaShouldFail, nonExistentNestedFieldWithSchemaShouldFail
    schema = SchemaBuilder.struct().field("magic", Schema.INT32_SCHEMA).build()
    with pytest.raises(DataError, match="^Unknown field: nonexistent$"):
        key_xform({"field": "nonexistent"}).apply(
            SinkRecord(topic="t", key_schema=schema, key=Struct(schema).put("magic", 1)))
    key = Struct(NESTED).put("magic", Struct(FOO).put("foo", 42))
    with pytest.raises(DataError, match="^Unknown field: magic.nonexistent$"):
        key_xform({"field": "magic.nonexistent", **V2}).apply(SinkRecord(topic="t", key_schema=NESTED, key=key))


@pytest.mark.parametrize(("replace_null_with_default", "expected"), [(False, None), (True, 42)])
@pytest.mark.parametrize("side", ["Key", "Value"])
def test_unset_optional_field_follows_replace_null_with_default(side, replace_null_with_default, expected):
    # testUnsetOptionalKey, testUnsetOptionalField
    xform = getattr(ExtractField, side)()
    xform.configure({"field": "optional_with_default", "replace.null.with.default": replace_null_with_default})
    with_default = SchemaBuilder.int32().optional().default_value(42).build()
    schema = SchemaBuilder.struct().field("optional_with_default", with_default).build()
    struct = Struct(schema).put("optional_with_default", None)
    record = (SinkRecord(topic="t", key_schema=schema, key=struct) if side == "Key"
              else SinkRecord(topic="t", value_schema=schema, value=struct))
    out = xform.apply(record)
    assert (out.key if side == "Key" else out.value) == expected


def test_an_unknown_syntax_version_is_a_config_error():
    with pytest.raises(ConfigError, match="field.syntax.version"):
        key_xform({"field": "a", "field.syntax.version": "V3"})


@pytest.mark.parametrize(("path", "steps"), [
    ("..", ("", "", "")), ("foo..", ("foo", "", "")), (".bar.", ("", "bar", "")), ("..baz", ("", "", "baz")),
    ("foobarbaz", ("foobarbaz",)), ("foo.bar.baz", ("foo", "bar", "baz")), ("foo`bar`baz", ("foo`bar`baz",)),
    ("`foo.bar.baz`", ("foo.bar.baz",)), ("foo.`bar.baz`", ("foo", "bar.baz")),
    ("`foo.bar`.baz", ("foo.bar", "baz")), ("foo.`bar`.baz", ("foo", "bar", "baz")),
    ("foo.``bar.baz`", ("foo", "`bar.baz")), ("foo.`bar.baz``", ("foo", "bar.baz`")),
    ("foo.`ba`r.baz`", ("foo", "ba`r.baz")), ("foo.ba`r.baz", ("foo", "ba`r", "baz")),
    ("foo.``bar``.baz", ("foo", "`bar`", "baz")), ("``foo.bar.baz``", ("`foo.bar.baz`",)),
    ("foo.`bar\\`.baz`", ("foo", "bar`.baz")), ("foo.`bar.`baz`", ("foo", "bar.`baz")),
    ("foo.`bar\\`.`baz`", ("foo", "bar`.`baz")), ("foo.`bar\\\\`.\\`baz`", ("foo", "bar\\`.\\`baz")),
])
def test_v2_paths_split_as_kafka_splits_them(path, steps):
    # FieldPathNotationTest: shouldIncludeEmptyFieldNames ... shouldBuildV2AndEscapeBackticks
    assert SingleFieldPath(path, FieldSyntaxVersion.V2).steps == steps


@pytest.mark.parametrize("path", ["foo.bar.baz", "foo`bar`", "foo.`bar.baz`"])
def test_v1_paths_are_one_step(path):
    # FieldPathNotationTest.shouldBuildV1WithDotsAndBacktickPair
    assert SingleFieldPath(path, FieldSyntaxVersion.V1).steps == (path,)


@pytest.mark.parametrize(("path", "position"), [
    ("`foo.bar.baz", 0), ("foo.`bar.baz", 4), ("foo.bar.`baz", 8), ("foo.bar.`baz\\`", 8),
])
def test_v2_paths_with_an_unclosed_backtick_are_config_errors(path, position):
    # FieldPathNotationTest.shouldFailV2WhenIncompleteBackticks
    with pytest.raises(ConfigError) as info:
        SingleFieldPath(path, FieldSyntaxVersion.V2)
    assert str(info.value) == (f"Incomplete backtick pair in path: [{path}], consider adding a backslash "
                               f"before backtick at position {position} to escape it")

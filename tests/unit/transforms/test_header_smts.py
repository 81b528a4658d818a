"""DropHeaders, InsertHeader, HeaderFrom and SetSchemaMetadata, after Kafka's DropHeadersTest,
InsertHeaderTest, HeaderFromTest and SetSchemaMetadataTest."""

from __future__ import annotations

import pytest

from kopycat.api.data import Schema, SchemaBuilder, Struct
from kopycat.api.errors import ConfigError, DataError
from kopycat.api.records import Headers, SinkRecord, SourceRecord
from kopycat.transforms import DropHeaders, HeaderFrom, InsertHeader, SetSchemaMetadata
from kopycat.transforms.registry import TRANSFORMATIONS


def configured(cls, **configs):
    xform = cls()
    xform.configure(configs)
    return xform


def record(value=None, value_schema=None, headers=(), key=None, key_schema=None):
    return SourceRecord(topic="topic", kafka_partition=0, key_schema=key_schema, key=key,
                        value_schema=value_schema, value=value, timestamp=0, headers=Headers(headers))


def test_drop_headers_removes_every_header_named_and_keeps_the_rest_in_order():
    # DropHeadersTest.dropExistingHeader / dropExistingHeaderWithMultipleValues / dropNonExistingHeader
    xform = configured(DropHeaders, headers="dropped-header,other")
    original = record(headers=[("keep", 1), ("dropped-header", "a"), ("keep2", 2), ("dropped-header", "b")])
    out = xform.apply_batch([original, record(headers=[("keep", 3)])])
    assert [list(r.headers) for r in out] == [list(Headers([("keep", 1), ("keep2", 2)])), list(Headers([("keep", 3)]))]
    assert len(original.headers) == 4


def test_drop_headers_requires_a_non_empty_list():
    # DropHeadersTest.configRejectsEmptyList
    with pytest.raises(ConfigError, match="headers"):
        configured(DropHeaders, headers="")


@pytest.mark.parametrize(("literal", "schema", "value"), [
    ("inserted-value", Schema.STRING_SCHEMA, "inserted-value"),
    ("42", Schema.INT8_SCHEMA, 42),
    ("true", Schema.BOOLEAN_SCHEMA, True),
])
def test_insert_header_appends_the_parsed_literal(literal, schema, value):
    # InsertHeaderTest.insertionWithExistingOtherHeader / insertionWithExistingSameHeader
    xform = configured(InsertHeader, header="inserted", **{"value.literal": literal})
    original = record(headers=[("inserted", "existing"), ("other", 1)])
    out = xform.apply(original)
    assert list(out.headers)[-1] == ("inserted", value, schema)
    assert [h.key for h in out.headers] == ["inserted", "other", "inserted"]
    assert len(original.headers) == 2


def test_insert_header_requires_both_keys():
    # InsertHeaderTest.configRejectsNullHeaderKey / configRejectsNullHeaderValue
    with pytest.raises(ConfigError, match="header"):
        configured(InsertHeader, **{"value.literal": "x"})
    with pytest.raises(ConfigError, match="value.literal"):
        configured(InsertHeader, header="h")


SCHEMA = SchemaBuilder.struct().field("field1", Schema.STRING_SCHEMA).field("field2", Schema.INT32_SCHEMA) \
    .field("field3", SchemaBuilder(Schema.INT32_SCHEMA.type).optional().default_value(7).build()).build()


@pytest.mark.parametrize("operation", ["move", "copy"])
def test_header_from_moves_or_copies_struct_fields_with_their_schemas(operation):
    # HeaderFromTest.data: withSchema, "move"/"copy" of two fields to headers
    xform = configured(HeaderFrom.Value, fields="field1,field3", headers="h1,h3", operation=operation)
    value = Struct(SCHEMA).put("field1", "a").put("field2", 2)
    out = xform.apply(record(value, SCHEMA, headers=[("h1", "old")]))
    assert list(out.headers) == list(Headers([("h1", "old"), ("h1", "a", Schema.STRING_SCHEMA),
                                              ("h3", 7, SCHEMA.field("field3").schema)]))
    if operation == "copy":
        assert out.value_schema is SCHEMA and out.value is value
    else:
        assert [f.name for f in out.value_schema.fields] == ["field2"]
        assert out.value.get("field2") == 2


def test_header_from_schemaless_keys_and_missing_fields():
    # HeaderFromTest.data: schemaless key, move
    xform = configured(HeaderFrom.Key, fields="a,absent", headers="ha,hx", operation="move")
    out = xform.apply(record(key={"a": 1, "b": 2}))
    assert out.key == {"b": 2}
    assert list(out.headers) == list(Headers([("ha", 1), ("hx", None)]))


def test_header_from_refuses_mismatched_lists_bad_operations_and_non_structs():
    # HeaderFromTest.invalidConfigExtraHeaderConfig / invalidConfigExtraFieldConfig
    with pytest.raises(ConfigError, match="'fields' config must have the same number of elements as 'headers'"):
        configured(HeaderFrom.Value, fields="a,b", headers="h", operation="copy")
    with pytest.raises(ConfigError, match="operation"):
        configured(HeaderFrom.Value, fields="a", headers="h", operation="cut")
    xform = configured(HeaderFrom.Value, fields="a", headers="h", operation="copy")
    with pytest.raises(DataError, match="Only Struct objects supported for \\[header copy\\]"):
        xform.apply(record({"a": 1}, SCHEMA))
    with pytest.raises(DataError, match="field 'a' is not in the schema"):
        xform.apply(record(Struct(SCHEMA).put("field1", "x").put("field2", 1), SCHEMA))


def test_set_schema_metadata_renames_and_versions_the_schema_and_rebuilds_structs():
    # SetSchemaMetadataTest.schemaNameUpdate / schemaVersionUpdate / schemaNameAndVersionUpdateWithStruct
    xform = configured(SetSchemaMetadata.Value, **{"schema.name": "foo", "schema.version": "42"})
    value = Struct(SCHEMA).put("field1", "a").put("field2", 2)
    out = xform.apply(SinkRecord(topic="", kafka_partition=0, value_schema=SCHEMA, value=value, kafka_offset=0))
    assert (out.value_schema.name, out.value_schema.version) == ("foo", 42)
    assert out.value.schema is out.value_schema
    assert [out.value.get(name) for name in ("field1", "field2", "field3")] == ["a", 2, 7]
    key_xform = configured(SetSchemaMetadata.Key, **{"schema.name": "k"})
    out = key_xform.apply(record(key_schema=SchemaBuilder.array(Schema.INT8_SCHEMA).version(3).build(), key=[1]))
    assert (out.key_schema.name, out.key_schema.version, out.key_schema.value_schema, out.key) \
        == ("k", 3, Schema.INT8_SCHEMA, [1])


def test_set_schema_metadata_passes_null_without_schema_and_refuses_schemaless_values():
    # SetSchemaMetadataTest.valueSchemaRequired / ignoreRecordWithNullValue
    xform = configured(SetSchemaMetadata.Value, **{"schema.name": "foo"})
    tombstone = record()
    assert xform.apply(tombstone) is tombstone
    with pytest.raises(DataError, match="Schema required for \\[updating schema metadata\\]"):
        xform.apply(record({"a": 1}))
    with pytest.raises(ConfigError, match="Neither schema name nor version configured"):
        configured(SetSchemaMetadata.Value)


def test_the_new_smts_answer_to_kafkas_class_names():
    for name in ("DropHeaders", "InsertHeader", "Flatten$Value", "HeaderFrom$Key", "SetSchemaMetadata$Value",
                 "TimestampConverter$Key"):
        assert TRANSFORMATIONS.resolve("transforms.x.type", f"org.apache.kafka.connect.transforms.{name}")

"""Flatten, after Kafka's FlattenTest."""

from __future__ import annotations

import pytest

from kopycat.api.data import Schema, SchemaBuilder, Struct
from kopycat.api.errors import DataError
from kopycat.api.records import SourceRecord
from kopycat.transforms import Flatten


def flatten(cls=Flatten.Value, **configs):
    xform = cls()
    xform.configure(configs)
    return xform


def test_nested_structs_flatten_with_the_delimiter():
    # FlattenTest.testNestedStruct
    supported = (SchemaBuilder.struct().field("int8", Schema.INT8_SCHEMA).field("string", Schema.STRING_SCHEMA)
                 .field("bytes", Schema.BYTES_SCHEMA).build())
    one = SchemaBuilder.struct().field("B", supported).build()
    two = SchemaBuilder.struct().field("A", one).build()
    value = Struct(two).put("A", Struct(one).put("B", Struct(supported).put("int8", 8).put("string", "s")
                                                  .put("bytes", b"b")))
    out = flatten(delimiter="#").apply(SourceRecord(topic="t", value_schema=two, value=value))
    assert [f.name for f in out.value_schema.fields] == ["A#B#int8", "A#B#string", "A#B#bytes"]
    assert [out.value.get(f) for f in out.value_schema.fields] == [8, "s", b"b"]


def test_nested_maps_flatten_and_arrays_and_nulls_stay():
    # FlattenTest.testNestedMapWithDelimiter / testSchemalessArray / testOptionalFieldMap
    value = {"A": {"B": {"int8": 8, "string": "s", "null": None}}, "list": [{"x": 1}], "top": 1.5}
    out = flatten(delimiter="#").apply(SourceRecord(topic="t", value=value))
    assert out.value == {"A#B#int8": 8, "A#B#string": "s", "A#B#null": None, "list": [{"x": 1}], "top": 1.5}


def test_key_side_flattens_the_key():
    # FlattenTest.testKey
    out = flatten(Flatten.Key).apply(SourceRecord(topic="t", key={"A": {"B": 12}}, value={"A": {"B": 1}}))
    assert (out.key, out.value) == ({"A.B": 12}, {"A": {"B": 1}})


def test_optional_parents_make_children_optional_and_null_parents_give_null_leaves():
    # FlattenTest.testOptionalStruct / testOptionalNestedStruct / testOptionalFieldStruct
    inner = SchemaBuilder.struct().field("opt_int32", Schema.OPTIONAL_INT32_SCHEMA) \
        .field("req", Schema.INT32_SCHEMA).build()
    optional_inner = SchemaBuilder.struct().field("opt_int32", Schema.OPTIONAL_INT32_SCHEMA) \
        .field("req", Schema.INT32_SCHEMA).optional().build()
    outer = SchemaBuilder.struct().field("B", optional_inner).field("C", inner).build()
    value = Struct(outer).put("C", Struct(inner).put("req", 3))
    out = flatten().apply(SourceRecord(topic="t", value_schema=outer, value=value))
    schema = out.value_schema
    assert [(f.name, f.schema.optional) for f in schema.fields] == [
        ("B.opt_int32", True), ("B.req", True), ("C.opt_int32", True), ("C.req", False)]
    assert [out.value.get(f) for f in schema.fields] == [None, None, None, 3]


def test_defaults_come_from_parent_defaults():
    # FlattenTest.testOptionalAndDefaultValuesNested
    inner = SchemaBuilder.struct().field("x", Schema.OPTIONAL_STRING_SCHEMA).optional().build()
    default = Struct(inner).put("x", "from-parent")
    parent = SchemaBuilder.struct().field("x", Schema.OPTIONAL_STRING_SCHEMA).optional().default_value(default).build()
    outer = SchemaBuilder.struct().field("p", parent).build()
    out = flatten().apply(SourceRecord(topic="t", value_schema=outer, value=Struct(outer)))
    assert out.value_schema.field("p.x").schema.default == "from-parent"
    assert out.value.get("p.x") == "from-parent"


def test_null_values_pass_and_maps_with_schema_or_structs_without_are_refused():
    # FlattenTest.tombstoneEventWithSchemaShouldPassThrough / testUnsupportedTypeInMap / topLevelMapRequired
    tombstone = SourceRecord(topic="t", value_schema=SchemaBuilder.struct().optional().build())
    assert flatten().apply(tombstone) is tombstone
    map_schema = SchemaBuilder.struct().field("m", SchemaBuilder.map(Schema.STRING_SCHEMA,
                                                                       Schema.STRING_SCHEMA).build()).build()
    with pytest.raises(DataError, match="does not support MAP for record with schemas \\(for field m\\)"):
        flatten().apply(SourceRecord(topic="t", value_schema=map_schema, value=Struct(map_schema).put("m", {})))
    with pytest.raises(DataError, match="Only Map objects supported"):
        flatten().apply(SourceRecord(topic="t", value=42))
    with pytest.raises(DataError, match="for field a.s"):
        flatten().apply(SourceRecord(topic="t", value={"a": {"s": Struct(map_schema)}}))


def test_updated_schemas_are_cached_per_input_schema():
    # FlattenTest.testSchemaCache (via identity of the result)
    schema = SchemaBuilder.struct().field("a", SchemaBuilder.struct().field("b", Schema.INT32_SCHEMA).build()).build()
    xform = flatten()
    first, second = (xform.apply(SourceRecord(topic="t", value_schema=schema,
                                              value=Struct(schema).put("a", Struct(schema.field("a").schema)
                                                                      .put("b", n))))
                     for n in (1, 2))
    assert first.value_schema is second.value_schema
    assert (first.value.get("a.b"), second.value.get("a.b")) == (1, 2)


def test_array_fields_keep_their_element_schema_and_values():
    # FlattenTest.testArrayWithSchema
    inner = SchemaBuilder.struct().field("xs", SchemaBuilder.array(Schema.INT32_SCHEMA).build()).optional().build()
    outer = SchemaBuilder.struct().field("in", inner).build()
    out = flatten().apply(SourceRecord(topic="t", value_schema=outer,
                                       value=Struct(outer).put("in", Struct(inner).put("xs", [1, 2]))))
    field = out.value_schema.field("in.xs")
    assert (field.schema.value_schema, field.schema.optional, out.value.get("in.xs")) == (Schema.INT32_SCHEMA, True,
                                                                                         [1, 2])

"""SchemaProjector: Kafka's rules for projecting a value onto a compatible schema.

Cases follow Kafka's connect/api/src/test/java/org/apache/kafka/connect/data/SchemaProjectorTest;
each test names the Java test it mirrors. Failures must name the field path (Kopycat's addition).
"""

from __future__ import annotations

import datetime as dt
import decimal
from typing import Any

import pytest

from kopycat.api.data import Date, Decimal, Schema, SchemaBuilder, Struct, Time, Timestamp, Type
from kopycat.api.errors import DataError
from kopycat.api.schema_projector import SchemaProjector

project = SchemaProjector.project

NUMERIC = [Schema.INT8_SCHEMA, Schema.INT16_SCHEMA, Schema.INT32_SCHEMA, Schema.INT64_SCHEMA,
           Schema.FLOAT32_SCHEMA, Schema.FLOAT64_SCHEMA]
OPTIONAL_NUMERIC = [Schema.OPTIONAL_INT8_SCHEMA, Schema.OPTIONAL_INT16_SCHEMA, Schema.OPTIONAL_INT32_SCHEMA,
                    Schema.OPTIONAL_INT64_SCHEMA, Schema.OPTIONAL_FLOAT32_SCHEMA, Schema.OPTIONAL_FLOAT64_SCHEMA]
NUMERIC_VALUES = [127, 255, 32767, 327890, 1.25, 1.2345]
LOGICAL = [Decimal.schema(2), Date.SCHEMA, Time.SCHEMA, Timestamp.SCHEMA]


@pytest.mark.parametrize(("source", "value", "target"), [
    (Schema.BOOLEAN_SCHEMA, False, Schema.BOOLEAN_SCHEMA),
    (Schema.BYTES_SCHEMA, b"\x01\x02", Schema.BYTES_SCHEMA),
    (Schema.STRING_SCHEMA, "abc", Schema.STRING_SCHEMA),
    (Schema.BOOLEAN_SCHEMA, False, Schema.OPTIONAL_BOOLEAN_SCHEMA),
    (Schema.BYTES_SCHEMA, b"\x01\x02", Schema.OPTIONAL_BYTES_SCHEMA),
    (Schema.STRING_SCHEMA, "abc", Schema.OPTIONAL_STRING_SCHEMA),
], ids=repr)
def test_primitive_values_project_unchanged_onto_their_type(source: Schema, value: Any, target: Schema) -> None:
    """testPrimitiveTypeProjection, the passing half."""
    projected = project(source, value, target)
    assert projected == value and type(projected) is type(value)


@pytest.mark.parametrize("source", [Schema.OPTIONAL_BOOLEAN_SCHEMA, Schema.OPTIONAL_BYTES_SCHEMA,
                                    Schema.OPTIONAL_STRING_SCHEMA], ids=repr)
def test_an_optional_source_cannot_project_onto_a_required_target_without_default(source: Schema) -> None:
    """testPrimitiveTypeProjection, the failing half: even a non-null value fails, as in Kafka."""
    target = SchemaBuilder(source.type).build()
    value = {Type.BOOLEAN: False, Type.BYTES: b"\x01", Type.STRING: "abc"}[source.type]
    with pytest.raises(DataError, match="the value: the source schema is optional but the target schema is "
                                        "required and has no default value"):
        project(source, value, target)


def test_numbers_promote_up_the_numeric_ladder() -> None:
    """testNumericTypeProjection: INT8 -> INT16 -> INT32 -> INT64 -> FLOAT32 -> FLOAT64, optional targets too."""
    for i, (source, value) in enumerate(zip(NUMERIC, NUMERIC_VALUES, strict=True)):
        for targets in (NUMERIC, OPTIONAL_NUMERIC):
            for target in targets[i:]:
                projected = project(source, value, target)
                assert projected == value
                want = float if target.type in (Type.FLOAT32, Type.FLOAT64) else int
                assert type(projected) is want, (source, target)


def test_numbers_never_demote_and_never_become_boolean_bytes_or_string() -> None:
    """testNumericTypeProjection's failures, plus the way down the ladder (Kafka refuses it too)."""
    for i, source in enumerate(NUMERIC):
        for target in NUMERIC[:i] + [Schema.BOOLEAN_SCHEMA, Schema.BYTES_SCHEMA, Schema.STRING_SCHEMA]:
            with pytest.raises(DataError, match=f"schema type mismatch, source type {source.type.name} and "
                                                f"target type {target.type.name}"):
                project(source, 1, target)


@pytest.mark.parametrize(("source", "target_type", "value", "default", "expected"), [
    (Schema.OPTIONAL_BOOLEAN_SCHEMA, Type.BOOLEAN, False, True, False),
    (Schema.OPTIONAL_BYTES_SCHEMA, Type.BYTES, b"\x01\x02", b"\x03\x04", b"\x01\x02"),
    (Schema.OPTIONAL_STRING_SCHEMA, Type.STRING, "abc", "def", "abc"),
    (Schema.OPTIONAL_INT8_SCHEMA, Type.INT16, 12, 127, 12),
    (Schema.OPTIONAL_INT8_SCHEMA, Type.INT64, 12, 127890, 12),
    (Schema.OPTIONAL_INT16_SCHEMA, Type.FLOAT32, 12, 3.45, 12.0),
    (Schema.OPTIONAL_INT32_SCHEMA, Type.FLOAT64, 12, 3.4567, 12.0),
    (Schema.OPTIONAL_INT64_SCHEMA, Type.FLOAT32, 12, 3.45, 12.0),
    (Schema.OPTIONAL_FLOAT32_SCHEMA, Type.FLOAT64, 12.345, 3.4567, 12.345),
], ids=lambda v: v.name if isinstance(v, Type) else None)
@pytest.mark.parametrize("optional", [True, False], ids=["optional target", "required target"])
def test_an_optional_source_projects_onto_a_target_with_a_default(
        source: Schema, target_type: Type, value: Any, default: Any, expected: Any, optional: bool) -> None:
    """testPrimitiveOptionalProjection (verifyOptionalProjection): null becomes the default on a required target."""
    builder = SchemaBuilder(target_type)
    target = (builder.optional() if optional else builder).default_value(default).build()
    assert project(source, value, target) == expected
    assert project(source, None, target) == (None if optional else default)


def test_a_struct_gains_a_field_with_its_default() -> None:
    """testStructAddField."""
    source = SchemaBuilder.struct().field("field", Schema.INT32_SCHEMA).build()
    target = (SchemaBuilder.struct().field("field", Schema.INT32_SCHEMA)
              .field("field2", SchemaBuilder.int32().default_value(123).build()).build())
    projected = project(source, Struct(source).put("field", 1), target)
    assert projected.schema == target
    assert projected.values() == (1, 123)
    incompatible = (SchemaBuilder.struct().field("field", Schema.INT32_SCHEMA)
                    .field("field2", Schema.INT32_SCHEMA).build())
    with pytest.raises(DataError, match="field field2: the field is required, has no default value and is missing"):
        project(source, Struct(source).put("field", 1), incompatible)


def test_a_struct_loses_the_fields_its_target_lacks() -> None:
    """testStructRemoveField."""
    source = (SchemaBuilder.struct().field("field", Schema.INT32_SCHEMA)
              .field("field2", Schema.INT32_SCHEMA).build())
    target = SchemaBuilder.struct().field("field", Schema.INT32_SCHEMA).build()
    projected = project(source, Struct(source).put("field", 1).put("field2", 234), target)
    assert projected.values() == (1,)
    with pytest.raises(DataError, match="field2 is not a valid field name"):
        projected.get("field2")


def test_a_null_optional_struct_becomes_the_targets_default_struct() -> None:
    """testStructDefaultValue."""
    source = (SchemaBuilder.struct().optional().field("field", Schema.INT32_SCHEMA)
              .field("field2", Schema.INT32_SCHEMA).build())
    builder = SchemaBuilder.struct().field("field", Schema.INT32_SCHEMA).field("field2", Schema.INT32_SCHEMA)
    default = Struct(builder.build()).put("field", 12).put("field2", 345)
    target = builder.default_value(default).build()
    assert project(source, None, target) == default
    projected = project(source, Struct(source).put("field", 45).put("field2", 678), target)
    assert projected.values() == (45, 678)


def test_nested_structs_arrays_and_maps_project_field_by_field() -> None:
    """testNestedSchemaProjection."""
    flat = SchemaBuilder.struct().field("field", Schema.INT32_SCHEMA).build()
    flat_target = (SchemaBuilder.struct().field("field", Schema.INT32_SCHEMA)
                   .field("field2", SchemaBuilder.int32().default_value(123).build()).build())

    def nested(inner: Schema) -> Schema:
        return (SchemaBuilder.struct().field("first", Schema.INT32_SCHEMA).field("second", Schema.STRING_SCHEMA)
                .field("array", SchemaBuilder.array(Schema.INT32_SCHEMA).build())
                .field("map", SchemaBuilder.map(Schema.INT32_SCHEMA, Schema.STRING_SCHEMA).build())
                .field("nested", inner).build())

    source, target = nested(flat), nested(flat_target)
    value = (Struct(source).put("first", 1).put("second", "abc").put("array", [1, 2]).put("map", {5: "def"})
             .put("nested", Struct(flat).put("field", 113)))
    projected = project(source, value, target)
    assert projected.values()[:4] == (1, "abc", [1, 2], {5: "def"})
    assert projected.get("nested").schema == flat_target
    assert projected.get("nested").values() == (113, 123)
    projected.validate()  # every value fits the target schema


def test_a_failure_deep_inside_names_the_field_path() -> None:
    """Kopycat's messages name the path, through structs and array elements."""
    line = SchemaBuilder.struct().name("line").field("sku", Schema.STRING_SCHEMA).build()
    line_target = (SchemaBuilder.struct().name("line").field("sku", Schema.STRING_SCHEMA)
                   .field("qty", Schema.INT32_SCHEMA).build())

    def order(item: Schema) -> Schema:
        return SchemaBuilder.struct().name("order").field("lines", SchemaBuilder.array(item).build()).build()

    value = Struct(order(line)).put("lines", [Struct(line).put("sku", "a")])
    with pytest.raises(DataError, match=r"field lines\[\]\.qty: the field is required, has no default value and "
                                        r"is missing from the source schema line"):
        project(order(line), value, order(line_target))


@pytest.mark.parametrize(("schema", "value"), [
    (Decimal.schema(2), decimal.Decimal("1.56")),
    (Date.SCHEMA, dt.date(1972, 9, 27)),
    (Time.SCHEMA, dt.time(0, 0, 0, 231_000)),
    (Timestamp.SCHEMA, dt.datetime(1970, 1, 1, 0, 0, 34, 567_000, tzinfo=dt.UTC)),
], ids=lambda v: v.name if isinstance(v, Schema) else None)
def test_logical_values_project_unchanged_onto_the_same_logical_type(schema: Schema, value: Any) -> None:
    """testLogicalTypeProjection, the passing half."""
    assert project(schema, value, schema) is value


@pytest.mark.parametrize("logical", LOGICAL, ids=lambda s: s.name)
def test_logical_types_project_onto_nothing_else(logical: Schema) -> None:
    """testLogicalTypeProjection, the failing half: to/from plain types and wrongly named ones."""
    named = SchemaBuilder.int32().name("invalidLogicalTypeName").build()
    with pytest.raises(DataError, match="type mismatch"):
        project(logical, None, Schema.BOOLEAN_SCHEMA)
    with pytest.raises(DataError, match="type mismatch|name mismatch"):
        project(logical, None, named)
    with pytest.raises(DataError, match="type mismatch"):
        project(Schema.BOOLEAN_SCHEMA, None, logical)


def test_a_decimal_does_not_project_onto_another_scale() -> None:
    with pytest.raises(DataError, match=r"schema parameters not equal, source parameters \{'scale': '2'\} and "
                                        r"target parameters \{'scale': '3'\}"):
        project(Decimal.schema(2), decimal.Decimal("1.56"), Decimal.schema(3))


def test_arrays_project_element_by_element_with_promotion_and_defaults() -> None:
    """testArrayProjection."""
    source = SchemaBuilder.array(Schema.INT32_SCHEMA).build()
    assert project(source, [1, 2, 3], source) == [1, 2, 3]
    optional = SchemaBuilder.array(Schema.INT32_SCHEMA).optional().build()
    target = SchemaBuilder.array(Schema.INT32_SCHEMA).default_value([1, 2, 3]).build()
    assert project(optional, [4, 5], target) == [4, 5]
    assert project(optional, None, target) == [1, 2, 3]
    promoted = SchemaBuilder.array(Schema.FLOAT64_SCHEMA).default_value([1.0, 2.0]).build()
    projected = project(optional, [4, 5], promoted)
    assert projected == [4.0, 5.0] and all(type(v) is float for v in projected)
    assert project(optional, None, promoted) == [1.0, 2.0]
    with pytest.raises(DataError, match="optional but the target schema is required and has no default"):
        project(optional, None, SchemaBuilder.array(Schema.INT32_SCHEMA).build())
    with pytest.raises(DataError, match=r"field value\[\]: schema type mismatch, source type INT32 and target "
                                        r"type BOOLEAN"):
        project(source, [1], SchemaBuilder.array(Schema.BOOLEAN_SCHEMA).build())


def test_maps_project_keys_and_values_with_promotion_and_defaults() -> None:
    """testMapProjection."""
    source = SchemaBuilder.map(Schema.INT32_SCHEMA, Schema.INT32_SCHEMA).optional().build()
    target = SchemaBuilder.map(Schema.INT32_SCHEMA, Schema.INT32_SCHEMA).default_value({1: 2}).build()
    assert project(source, {3: 4}, target) == {3: 4}
    assert project(source, None, target) == {1: 2}
    promoted = (SchemaBuilder.map(Schema.INT64_SCHEMA, Schema.FLOAT32_SCHEMA).default_value({3: 4.5}).build())
    projected = project(source, {3: 4}, promoted)
    assert projected == {3: 4.0} and type(projected[3]) is float
    assert project(source, None, promoted) == {3: 4.5}
    with pytest.raises(DataError, match="no default value"):
        project(source, None, SchemaBuilder.map(Schema.INT32_SCHEMA, Schema.INT32_SCHEMA).build())
    with pytest.raises(DataError, match=r"field value\.<key>: schema type mismatch"):
        project(source, {3: 4}, SchemaBuilder.map(Schema.BOOLEAN_SCHEMA, Schema.STRING_SCHEMA).optional().build())


def test_names_and_parameters_must_match() -> None:
    """testMaybeCompatible."""
    source = SchemaBuilder.int32().name("source").build()
    with pytest.raises(DataError, match="schema name mismatch, source name source and target name target"):
        project(source, 12, SchemaBuilder.int32().name("target").build())
    with pytest.raises(DataError, match="schema name mismatch"):
        project(source, 34, SchemaBuilder.int32().parameters({"key": "value"}).build())
    with pytest.raises(DataError, match=r"parameters not equal, source parameters none and target parameters "
                                        r"\{'key': 'value'\}"):
        project(Schema.INT32_SCHEMA, 34, SchemaBuilder.int32().parameters({"key": "value"}).build())


def test_a_missing_field_takes_its_default_or_null_if_optional() -> None:
    """testProjectMissingDefaultValuedStructField, testProjectMissingOptionalStructField."""
    source = SchemaBuilder.struct().build()
    with_default = SchemaBuilder.struct().field("id", SchemaBuilder.int64().default_value(42).build()).build()
    assert project(source, Struct(source), with_default).get_without_default("id") == 42
    optional = SchemaBuilder.struct().field("id", Schema.OPTIONAL_INT64_SCHEMA).build()
    assert project(source, Struct(source), optional).values() == (None,)


def test_a_missing_required_field_fails() -> None:
    """testProjectMissingRequiredField."""
    source = SchemaBuilder.struct().build()
    target = SchemaBuilder.struct().field("id", Schema.INT64_SCHEMA).build()
    with pytest.raises(DataError, match="field id: the field is required"):
        project(source, Struct(source), target)


def test_an_unset_source_field_projects_its_sources_default() -> None:
    """projectStruct reads the source with Struct.get, which answers the default for an unset field."""
    source = SchemaBuilder.struct().field("n", SchemaBuilder.int32().default_value(7).build()).build()
    target = SchemaBuilder.struct().field("n", SchemaBuilder.int64().default_value(9).build()).build()
    assert project(source, Struct(source), target).values() == (7,)


def test_map_keys_are_promoted_too() -> None:
    source = SchemaBuilder.map(Schema.INT32_SCHEMA, Schema.STRING_SCHEMA).build()
    target = SchemaBuilder.map(Schema.FLOAT64_SCHEMA, Schema.STRING_SCHEMA).build()
    (key,) = project(source, {3: "x"}, target)
    assert key == 3.0 and type(key) is float


def test_a_null_nested_value_projects_even_when_its_contents_could_not() -> None:
    """As in Kafka, a null value is never looked into: only a present one fails on its fields."""
    inner = SchemaBuilder.struct().optional().field("a", Schema.INT32_SCHEMA).build()
    inner_target = (SchemaBuilder.struct().optional().field("a", Schema.INT32_SCHEMA)
                    .field("b", Schema.INT32_SCHEMA).build())
    source = SchemaBuilder.struct().field("inner", inner).build()
    target = SchemaBuilder.struct().field("inner", inner_target).build()
    assert project(source, Struct(source), target).values() == (None,)
    with pytest.raises(DataError, match="field inner.b: the field is required"):
        project(source, Struct(source).put("inner", Struct(inner).put("a", 1)), target)

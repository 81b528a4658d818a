"""Connect schemas <-> Arrow types: the fixed mapping, lossless round trips, foreign Arrow types."""

from __future__ import annotations

import datetime as dt
import decimal
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings

from kopycat.api.arrow import (
    from_arrow_field,
    from_arrow_schema,
    from_arrow_type,
    to_arrow_field,
    to_arrow_schema,
    to_arrow_type,
)
from kopycat.api.data import Date, Decimal, Schema, SchemaBuilder, Struct, Time, Timestamp, Type
from kopycat.api.errors import DataError
from tests.unit.api.connect_strategies import schemas, schemas_and_values, structs

UTC = dt.UTC


@pytest.mark.parametrize(("schema", "arrow_type"), [
    (Schema.INT8_SCHEMA, pa.int8()), (Schema.INT16_SCHEMA, pa.int16()), (Schema.INT32_SCHEMA, pa.int32()),
    (Schema.INT64_SCHEMA, pa.int64()), (Schema.FLOAT32_SCHEMA, pa.float32()),
    (Schema.FLOAT64_SCHEMA, pa.float64()), (Schema.BOOLEAN_SCHEMA, pa.bool_()),
    (Schema.STRING_SCHEMA, pa.string()), (Schema.BYTES_SCHEMA, pa.binary()),
    (Decimal.schema(2), pa.decimal128(38, 2)),
    (Decimal.builder(4).parameter("connect.decimal.precision", "10").build(), pa.decimal128(10, 4)),
    (Decimal.builder(2).parameter("connect.decimal.precision", "50").build(), pa.decimal256(50, 2)),
    (Date.SCHEMA, pa.date32()), (Time.SCHEMA, pa.time32("ms")),
    (Timestamp.SCHEMA, pa.timestamp("ms", tz="UTC")),
], ids=lambda p: str(p))
def test_every_connect_type_maps_to_its_arrow_type(schema: Schema, arrow_type: pa.DataType) -> None:
    assert to_arrow_type(schema) == arrow_type


def test_containers_map_to_list_map_and_struct_with_nullability_from_optional() -> None:
    schema = (SchemaBuilder.struct()
              .field("tags", SchemaBuilder.array(Schema.OPTIONAL_STRING_SCHEMA).build())
              .field("counts", SchemaBuilder.map(Schema.STRING_SCHEMA, Schema.INT64_SCHEMA).optional().build())
              .build())
    arrow = to_arrow_schema(schema)
    assert arrow.field("tags").type == pa.list_(pa.field("item", pa.string(), nullable=True))
    assert not arrow.field("tags").nullable
    assert arrow.field("counts").type == pa.map_(pa.string(), pa.field("value", pa.int64(), nullable=False))
    assert arrow.field("counts").nullable


def test_optional_schemas_are_nullable_fields() -> None:
    assert to_arrow_field("a", Schema.OPTIONAL_INT32_SCHEMA).nullable
    assert not to_arrow_field("a", Schema.INT32_SCHEMA).nullable


def test_name_doc_version_parameters_and_default_survive_a_round_trip() -> None:
    schema = (SchemaBuilder.struct().name("shop.Order").version(3).doc("an order").parameter("k", "v")
              .field("id", SchemaBuilder.int64().doc("key").build())
              .field("price", Decimal.builder(2).optional().default_value(decimal.Decimal("1.50")).build())
              .field("at", Timestamp.builder().default_value(dt.datetime(2020, 1, 1, tzinfo=UTC)).build())
              .field("day", Date.builder().optional().build())
              .field("blob", SchemaBuilder.bytes().default_value(b"\x00\xff").build())
              .field("by_key", SchemaBuilder.map(Schema.OPTIONAL_INT32_SCHEMA, Schema.FLOAT32_SCHEMA).build())
              .optional().build())
    arrow = to_arrow_schema(schema)
    assert arrow.metadata[b"connect.name"] == b"shop.Order"
    assert arrow.field("price").metadata[b"connect.default"] == b'"1.50"'
    assert from_arrow_schema(arrow) == schema


def test_a_struct_default_survives_a_round_trip() -> None:
    point = SchemaBuilder.struct().field("x", Schema.INT32_SCHEMA).field("y", Schema.OPTIONAL_INT32_SCHEMA).build()
    schema = SchemaBuilder.struct().field(
        "p", SchemaBuilder.struct().field("x", Schema.INT32_SCHEMA).field("y", Schema.OPTIONAL_INT32_SCHEMA)
        .default_value(Struct(point).put("x", 1)).build()).build()
    assert from_arrow_schema(to_arrow_schema(schema)) == schema


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schemas())
def test_any_schema_survives_connect_to_arrow_to_connect(schema: Schema) -> None:
    field = to_arrow_field("f", schema)
    assert from_arrow_field(field) == schema


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(structs())
def test_any_struct_survives_as_an_arrow_schema(schema: Schema) -> None:
    arrow = to_arrow_schema(schema)
    assert from_arrow_schema(arrow) == schema
    assert to_arrow_schema(from_arrow_schema(arrow)) == arrow


def _arrow_value(schema: Schema, value: Any) -> Any:
    """A Connect value as pyarrow takes it: structs as dicts, maps as (key, value) pairs."""
    if value is None:
        return None
    if schema.type is Type.ARRAY:
        return [_arrow_value(schema.value_schema, v) for v in value]
    if schema.type is Type.MAP:
        return [(_arrow_value(schema.key_schema, k), _arrow_value(schema.value_schema, v)) for k, v in value.items()]
    if schema.type is Type.STRUCT:
        return {f.name: _arrow_value(f.schema, value.get(f.name)) for f in schema.fields}
    return value


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schemas_and_values())
def test_values_of_a_schema_fit_its_arrow_type_and_read_back_equal(schema_and_value: tuple[Schema, Any]) -> None:
    schema, value = schema_and_value
    array = pa.array([_arrow_value(schema, value)], type=to_arrow_type(schema))
    assert array.to_pylist() == [_arrow_value(schema, value)]


@pytest.mark.parametrize(("arrow_type", "expected"), [
    (pa.uint8(), Schema.OPTIONAL_INT16_SCHEMA), (pa.uint16(), Schema.OPTIONAL_INT32_SCHEMA),
    (pa.uint32(), Schema.OPTIONAL_INT64_SCHEMA), (pa.large_string(), Schema.OPTIONAL_STRING_SCHEMA),
    (pa.large_binary(), Schema.OPTIONAL_BYTES_SCHEMA), (pa.float16(), Schema.OPTIONAL_FLOAT32_SCHEMA),
    (pa.date64(), Date.builder().optional().build()),
    (pa.time64("us"), Time.builder().optional().build()),
    (pa.timestamp("ns"), Timestamp.builder().optional().build()),
    (pa.uint64(), Decimal.builder(0).parameter("connect.decimal.precision", "20").optional().build()),
    (pa.decimal128(10, 2), Decimal.builder(2).parameter("connect.decimal.precision", "10").optional().build()),
    (pa.dictionary(pa.int8(), pa.string()), Schema.OPTIONAL_STRING_SCHEMA),
    (pa.large_list(pa.int32()), SchemaBuilder.array(Schema.OPTIONAL_INT32_SCHEMA).optional().build()),
], ids=lambda p: str(p))
def test_arrow_types_from_elsewhere_map_to_the_nearest_connect_schema(arrow_type: pa.DataType,
                                                                       expected: Schema) -> None:
    assert from_arrow_type(arrow_type) == expected


def test_an_arrow_type_without_a_connect_equivalent_is_named_in_the_error() -> None:
    with pytest.raises(DataError, match="duration"):
        from_arrow_type(pa.duration("s"))


def test_only_a_struct_schema_becomes_an_arrow_schema() -> None:
    with pytest.raises(DataError, match="STRUCT"):
        to_arrow_schema(Schema.INT32_SCHEMA)

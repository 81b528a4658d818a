"""Hypothesis strategies for random Connect schemas and values that fit them.

Shared by the Arrow mapping and the JsonConverter property tests. Values are the ones a
round trip can keep exactly: millisecond times, 32-bit floats for FLOAT32, no NaN (NaN is never
equal to itself), map keys of hashable, non-float types.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from hypothesis import strategies as st

from kopycat.api.data import (
    Date,
    Decimal,
    Schema,
    SchemaBuilder,
    Struct,
    Time,
    Timestamp,
    Type,
)

UTC = dt.UTC
_INT_BITS = {Type.INT8: 8, Type.INT16: 16, Type.INT32: 32, Type.INT64: 64}
_PRIMITIVES = [Type.INT8, Type.INT16, Type.INT32, Type.INT64, Type.FLOAT32, Type.FLOAT64,
               Type.BOOLEAN, Type.STRING, Type.BYTES]
_KEY_TYPES = [Type.INT8, Type.INT16, Type.INT32, Type.INT64, Type.BOOLEAN, Type.STRING, Type.BYTES]
_names = st.text(st.characters(codec="utf-8"), min_size=1, max_size=8)


def _metadata(builder: SchemaBuilder, draw: Any) -> SchemaBuilder:
    if draw(st.booleans()):
        builder.name(draw(st.from_regex(r"[a-z][a-z0-9_.]{0,12}", fullmatch=True)))
    if draw(st.booleans()):
        builder.version(draw(st.integers(1, 9)))
    if draw(st.booleans()):
        builder.doc(draw(st.text(max_size=12)))
    for key, value in draw(st.dictionaries(st.text(min_size=1, max_size=5), st.text(max_size=5), max_size=2)).items():
        builder.parameter(key, value)
    if draw(st.booleans()):
        builder.optional()
    return builder


@st.composite
def primitive_schemas(draw: Any, types: list[Type] = _PRIMITIVES, allow_default: bool = True) -> Schema:
    """A primitive schema, sometimes named/documented/optional, sometimes with a default."""
    schema_type = draw(st.sampled_from(types))
    builder = _metadata(SchemaBuilder(schema_type), draw)
    if allow_default and draw(st.integers(0, 4)) == 0:
        builder.default_value(draw(_non_null(builder.build())))
    return builder.build()


def _required(schema: Schema) -> Schema:
    return Schema(schema.type, False, None, schema.name, schema.version, schema.doc, schema.parameters)


@st.composite
def logical_schemas(draw: Any) -> Schema:
    """Decimal (any scale), Date, Time or Timestamp, optional or not."""
    kind = draw(st.sampled_from(["decimal", "date", "time", "timestamp"]))
    builder = {"decimal": lambda: Decimal.builder(draw(st.integers(-3, 8))), "date": Date.builder,
               "time": Time.builder, "timestamp": Timestamp.builder}[kind]()
    if draw(st.booleans()):
        builder.optional()
    return builder.build()


def _containers(children: st.SearchStrategy[Schema]) -> st.SearchStrategy[Schema]:
    arrays = st.builds(lambda s, o: _optional(SchemaBuilder.array(s), o), children, st.booleans())
    maps = st.builds(lambda k, v, o: _optional(SchemaBuilder.map(k, v), o), _KEYS, children, st.booleans())
    return st.one_of(arrays, maps, structs(children))


def _optional(builder: SchemaBuilder, optional: bool) -> Schema:
    return (builder.optional() if optional else builder).build()


@st.composite
def structs(draw: Any, children: st.SearchStrategy[Schema] | None = None) -> Schema:
    """A STRUCT schema of 1-5 uniquely named fields."""
    field_schemas = draw(st.lists(children if children is not None else _NESTED, min_size=1, max_size=5))
    names = draw(st.lists(_names, min_size=len(field_schemas), max_size=len(field_schemas), unique=True))
    builder = SchemaBuilder.struct()
    for name, schema in zip(names, field_schemas, strict=True):
        builder.field(name, schema)
    return _metadata(builder, draw).build()


_LEAVES = st.one_of(primitive_schemas(), logical_schemas())
_KEYS = st.one_of(primitive_schemas(_KEY_TYPES, allow_default=False).map(_required), logical_schemas().map(_required))
_NESTED = st.recursive(_LEAVES, _containers, max_leaves=4)
_SCHEMAS = st.recursive(_LEAVES, _containers, max_leaves=8)


def schemas() -> st.SearchStrategy[Schema]:
    """Any Connect schema: primitives, logical types, arrays, maps and structs, nested."""
    return _SCHEMAS


_LEAF_VALUES: dict[Type, st.SearchStrategy[Any]] = {
    **{t: st.integers(-(2 ** (bits - 1)), 2 ** (bits - 1) - 1) for t, bits in _INT_BITS.items()},
    Type.FLOAT32: st.floats(width=32, allow_nan=False), Type.FLOAT64: st.floats(allow_nan=False),
    Type.BOOLEAN: st.booleans(), Type.STRING: st.text(max_size=12), Type.BYTES: st.binary(max_size=12),
}
_LOGICAL_VALUES: dict[str, st.SearchStrategy[Any]] = {
    Date.LOGICAL_NAME: st.dates(),
    Time.LOGICAL_NAME: st.times().map(lambda t: t.replace(microsecond=t.microsecond // 1000 * 1000)),
    Timestamp.LOGICAL_NAME: st.datetimes(timezones=st.just(UTC)).map(
        lambda t: t.replace(microsecond=t.microsecond // 1000 * 1000)),
}
_UNSCALED = st.integers(-(10**20), 10**20)


def values(schema: Schema) -> st.SearchStrategy[Any]:
    """Values that fit ``schema`` (None sometimes, when optional)."""
    return _value(schema)


@st.composite
def _value(draw: Any, schema: Schema, allow_null: bool = True) -> Any:
    if allow_null and schema.optional and draw(st.booleans()):
        return None
    if schema.name == Decimal.LOGICAL_NAME:
        return Decimal.from_unscaled(draw(_UNSCALED), Decimal.scale(schema))
    if schema.name in _LOGICAL_VALUES:
        return draw(_LOGICAL_VALUES[schema.name])
    if schema.type in _LEAF_VALUES:
        return draw(_LEAF_VALUES[schema.type])
    size = draw(st.integers(0, 3))
    if schema.type is Type.ARRAY:
        return [draw(_value(schema.value_schema)) for _ in range(size)]
    if schema.type is Type.MAP:
        return {draw(_value(schema.key_schema, allow_null=False)): draw(_value(schema.value_schema))
                for _ in range(size)}
    struct = Struct(schema)
    for field in schema.fields:
        struct.put(field, draw(_value(field.schema)))
    return struct


def _non_null(schema: Schema) -> st.SearchStrategy[Any]:
    return _value(schema, allow_null=False)


@st.composite
def schemas_and_values(draw: Any) -> tuple[Schema, Any]:
    """A schema and one value for it."""
    schema = draw(schemas())
    return schema, draw(values(schema))


def with_defaults(schema: Schema, value: Any) -> Any:
    """What a value reads back as when nulls are replaced by defaults (``replace.null.with.default``)."""
    if value is None:
        return schema.default
    if schema.type is Type.ARRAY:
        return [with_defaults(schema.value_schema, v) for v in value]
    if schema.type is Type.MAP:
        return {k: with_defaults(schema.value_schema, v) for k, v in value.items()}
    if schema.type is Type.STRUCT:
        result = Struct(schema)
        for field in schema.fields:
            result.put(field, with_defaults(field.schema, value.get_without_default(field)))
        return result
    return value

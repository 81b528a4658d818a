"""JsonConverter.from_arrow_array over generated nested schemas: structs in structs, arrays of structs,
structs holding arrays, maps, optional and required at every level, nulls at every level, defaults,
empty arrays, strings needing escapes, decimals and timestamps inside.

The record path is ``from_connect_data_batch`` over the values the columns hold (what the runner's
fallback hands it); the column path must give the same bytes for every record, or None. The shapes
generated here are all supported: None must not happen at all.
"""

from __future__ import annotations

import datetime as dt
import random
from typing import Any

import pyarrow as pa
import pytest

from kopycat.api.arrow_values import from_arrow_array, to_arrow_batch
from kopycat.api.data import Date, Decimal, Schema, SchemaBuilder, Struct, Timestamp, Type
from kopycat.converters.json import JsonConverter
from tests.support.connect_values import TEXTS

CONFIGS = [{}, {"schemas.enable": "false"}, {"decimal.format": "NUMERIC"}, {"replace.null.with.default": "false"}]
LEAVES = [Schema.INT32_SCHEMA, Schema.OPTIONAL_INT64_SCHEMA, Schema.OPTIONAL_STRING_SCHEMA, Schema.STRING_SCHEMA,
          Schema.OPTIONAL_FLOAT64_SCHEMA, Schema.OPTIONAL_BOOLEAN_SCHEMA, Schema.OPTIONAL_BYTES_SCHEMA,
          Decimal.builder(2).optional().build(), Decimal.builder(4).build(),
          Timestamp.builder().optional().build(), Date.SCHEMA,
          SchemaBuilder.int32().optional().default_value(7).build(),
          SchemaBuilder.string().default_value('d "q"').build()]


def converter(configs: dict[str, str]) -> JsonConverter:
    result = JsonConverter()
    result.configure({"schemas.enable": "true", **configs}, is_key=False)
    return result


def random_schema(rng: random.Random, depth: int, kinds: tuple[Type, ...]) -> Schema:
    """A leaf, or (above depth 0) a struct, array or map of random schemas, optional half the time."""
    kind = rng.choice(kinds) if depth > 0 and rng.random() < 0.6 else None
    if kind is None:
        return rng.choice(LEAVES)
    if kind is Type.STRUCT:
        builder = SchemaBuilder.struct().name(f"s{rng.randrange(1 << 30)}")
        for index in range(rng.randrange(1, 4)):
            builder.field(f"f{index}", random_schema(rng, depth - 1, kinds))
    elif kind is Type.ARRAY:
        builder = SchemaBuilder.array(random_schema(rng, depth - 1, kinds))
    else:
        key = rng.choice([Schema.STRING_SCHEMA, Schema.INT32_SCHEMA])
        builder = SchemaBuilder.map(key, random_schema(rng, depth - 1, kinds))
    return builder.optional().build() if rng.random() < 0.5 else builder.build()


def random_value(schema: Schema, rng: random.Random) -> Any:
    """A value of ``schema``: None often where allowed (optional or with a default)."""
    if (schema.optional or schema.default is not None) and rng.random() < 0.25:
        return None
    if schema.type is Type.STRUCT:
        return Struct.of_values(schema, [random_value(field.schema, rng) for field in schema.fields])
    if schema.type is Type.ARRAY:
        return [random_value(schema.value_schema, rng) for _ in range(rng.choice([0, 0, 1, 2, 3]))]
    if schema.type is Type.MAP:
        count = rng.choice([0, 1, 2, 3])
        keys = rng.sample(TEXTS, count) if schema.key_schema.type is Type.STRING else rng.sample(range(-9, 9), count)
        return {key: random_value(schema.value_schema, rng) for key in keys}
    return _leaf(schema, rng)


def _leaf(schema: Schema, rng: random.Random) -> Any:
    if schema.name == Decimal.LOGICAL_NAME:
        return Decimal.from_unscaled(rng.randrange(-10**12, 10**12), Decimal.scale(schema))
    if schema.name == Timestamp.LOGICAL_NAME:
        return dt.datetime(1970, 1, 1, tzinfo=dt.UTC) + dt.timedelta(milliseconds=rng.randrange(-10**12, 10**13))
    if schema.name == Date.LOGICAL_NAME:
        return dt.date(1970, 1, 1) + dt.timedelta(days=rng.randrange(-10**5, 10**5))
    makers = {Type.INT32: lambda: rng.randrange(-(1 << 31), 1 << 31),
              Type.INT64: lambda: rng.randrange(-(1 << 63), 1 << 63),
              Type.STRING: lambda: rng.choice(TEXTS), Type.FLOAT64: lambda: rng.choice([0.1, -0.0, 1e300, 5e-324]),
              Type.BOOLEAN: lambda: rng.random() < 0.5, Type.BYTES: lambda: rng.randbytes(rng.randrange(5))}
    return makers[schema.type]()


def random_column(rng: random.Random, kinds: tuple[Type, ...]) -> tuple[Schema, pa.StructArray]:
    """A top-level struct schema (optional half the time) and a sliced column of its values, with
    null top-level values when optional."""
    builder = SchemaBuilder.struct().name("top")
    for index in range(rng.randrange(1, 5)):
        builder.field(f"c{index}", random_schema(rng, 3, kinds))
    schema = builder.optional().build() if rng.random() < 0.5 else builder.build()
    structs = [random_value(schema, rng) for _ in range(40)]
    placeholder = structs[0] if structs[0] is not None else Struct.of_values(schema, [
        random_value(field.schema, rng) for field in schema.fields])
    array = to_arrow_batch(schema, [placeholder if s is None else s for s in structs]).to_struct_array()
    if None in structs:
        array = pa.StructArray.from_arrays([array.field(i) for i in range(array.type.num_fields)],
                                           fields=list(array.type), mask=pa.array([s is None for s in structs]))
    return schema, array.slice(3, 33)


def check(kinds: tuple[Type, ...], seed: int) -> tuple[int, int]:
    """(columns encoded, columns answered None) over 60 generated columns and every config."""
    rng = random.Random(seed)
    encoded = declined = 0
    for _ in range(60):
        schema, array = random_column(rng, kinds)
        for configs in CONFIGS:
            records = converter(configs).from_connect_data_batch("t", schema, from_arrow_array(schema, array))
            columns = converter(configs).from_arrow_array("t", schema, array)
            if columns is None:
                declined += 1
                continue
            encoded += 1
            assert columns.to_pylist() == records, f"{schema} {configs}"
    return encoded, declined


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_nested_structs_encode_as_columns_to_the_record_paths_bytes(seed: int) -> None:
    encoded, declined = check((Type.STRUCT,), seed)
    assert (encoded, declined) == (60 * len(CONFIGS), 0)


def test_a_null_struct_whose_required_fields_hold_nulls_is_its_null_text() -> None:
    inner = SchemaBuilder.struct().name("inner").optional().field("id", Schema.INT64_SCHEMA).build()
    schema = SchemaBuilder.struct().field("before", inner).field("n", Schema.INT32_SCHEMA).build()
    ids = pa.array([1, None, 3], pa.int64())  # the null id sits under a null struct
    before = pa.StructArray.from_arrays([ids], names=["id"], mask=pa.array([False, True, False]))
    array = pa.StructArray.from_arrays([before, pa.array([1, 2, 3], pa.int32())], names=["before", "n"])
    columns = converter({"schemas.enable": "false"}).from_arrow_array("t", schema, array)
    assert columns is not None
    assert columns.to_pylist() == [b'{"before":{"id":1},"n":1}', b'{"before":null,"n":2}',
                                   b'{"before":{"id":3},"n":3}']


def test_a_null_nested_struct_in_a_required_field_without_default_takes_the_record_path() -> None:
    inner = SchemaBuilder.struct().name("inner").field("id", Schema.INT64_SCHEMA).build()
    schema = SchemaBuilder.struct().field("after", inner).build()
    after = pa.StructArray.from_arrays([pa.array([1, 2], pa.int64())], names=["id"], mask=pa.array([False, True]))
    array = pa.StructArray.from_arrays([after], names=["after"])
    assert converter({}).from_arrow_array("t", schema, array) is None


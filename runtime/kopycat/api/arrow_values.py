"""Connect values as Arrow columns: the columnar hand-over for Parquet sinks and Spark.

:mod:`kopycat.api.arrow` maps schemas; this module maps *values* of a STRUCT schema, a whole
batch at a time, column by column (one ``pa.array`` call per column, never per record):

    batch = to_arrow_batch(value_schema, [record.value for record in records])
    values = from_arrow_array(value_schema, batch.to_struct_array())  # and back

Values keep their Connect meaning: Decimal as ``decimal.Decimal``, Date as ``datetime.date``,
Time as ``datetime.time``, Timestamp as ``datetime.datetime`` (naive taken as UTC, as the data
model says). A field left unset takes its schema's default, as ``Struct.get`` answers; nested
structs become Arrow structs and maps Arrow maps.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pyarrow as pa

from kopycat.api.arrow import to_arrow_schema
from kopycat.api.data import Schema, Struct, Type
from kopycat.api.errors import DataError

__all__ = ["from_arrow_array", "struct_dict", "to_arrow_batch"]

_Plain = Callable[[Any], Any]


def to_arrow_batch(schema: Schema, structs: Sequence[Struct],
                   arrow_schema: pa.Schema | None = None) -> pa.RecordBatch:
    """One record batch holding ``structs`` (all of ``schema``), a column per field.

    ``arrow_schema`` saves recomputing :func:`~kopycat.api.arrow.to_arrow_schema` when the
    caller converts many batches of one schema. A value Arrow cannot hold (an int out of
    range, a wrong type that slipped past validation) raises :class:`DataError` naming the field.
    """
    if arrow_schema is None:
        arrow_schema = to_arrow_schema(schema)
    rows = [struct.values() for struct in structs]
    columns = list(zip(*rows, strict=True)) if rows else [() for _ in schema.fields]
    arrays = []
    for field, arrow_field, column in zip(schema.fields, arrow_schema, columns, strict=True):
        values = _with_defaults(field.schema, column)
        plain = _plainer(field.schema)
        if plain is not None:
            values = [None if value is None else plain(value) for value in values]
        try:
            arrays.append(pa.array(values, type=arrow_field.type, from_pandas=False))
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError) as exc:
            raise DataError(f"Field {field.name} does not fit Arrow type {arrow_field.type}: {exc}") from exc
    return pa.RecordBatch.from_arrays(arrays, schema=arrow_schema)


def _with_defaults(schema: Schema, column: Sequence[Any]) -> Sequence[Any]:
    default = schema.default
    if default is None:
        return column
    return [default if value is None else value for value in column]


def _plainer(schema: Schema) -> _Plain | None:
    """How to turn a value of ``schema`` into what ``pa.array`` takes; None when it takes it as is."""
    if schema.type is Type.STRUCT:
        fields = [(field.name, field.index, field.schema.default, _plainer(field.schema))
                  for field in schema.fields]
        return lambda struct: struct_dict(struct, fields)
    return _container(schema, _plainer, list, dict.items)


def _container(schema: Schema, inner: Callable[[Schema], _Plain | None], make_map: Callable[[Any], Any],
               entries: Callable[[Any], Any]) -> _Plain | None:
    """An ARRAY's or MAP's conversion from its elements' (``inner``); None for other types or when
    the elements need none. A map is read through ``entries`` and made by ``make_map`` from pairs."""
    if schema.type is Type.ARRAY:
        element = inner(schema.value_schema)
        if element is None:
            return None
        return lambda values: [None if v is None else element(v) for v in values]
    if schema.type is Type.MAP:
        key, value = inner(schema.key_schema), inner(schema.value_schema)
        return lambda mapping: make_map((k if key is None or k is None else key(k),
                                         v if value is None or v is None else value(v))
                                        for k, v in entries(mapping))
    return None


def struct_dict(struct: Struct, fields: list[tuple[str, int, Any, _Plain | None]]) -> dict[str, Any]:
    """A struct as a dict by ``(name, index, default, convert)`` field plans: unset fields take their
    default, and non-null values go through ``convert`` when there is one (Arrow's and Avro's rows)."""
    values = struct.values()
    out: dict[str, Any] = {}
    for name, index, default, plain in fields:
        value = values[index]
        if value is None:
            value = default
        out[name] = value if value is None or plain is None else plain(value)
    return out


def from_arrow_array(schema: Schema, array: pa.Array) -> list[Any]:
    """The Connect values of an Arrow array of ``schema`` (the reverse of :func:`to_arrow_batch`).

    Structs become :class:`Struct`, maps dicts; Timestamp values come back UTC-aware, which
    every consumer of the data model reads as the naive UTC value it may have started from.
    """
    rebuild = _rebuilder(schema)
    values = array.to_pylist()
    if rebuild is None:
        return values
    return [None if value is None else rebuild(value) for value in values]


def _rebuilder(schema: Schema) -> _Plain | None:
    """How to turn what ``to_pylist`` gives for ``schema`` into the Connect value; None: as is."""
    if schema.type is Type.STRUCT:
        fields = [(field.name, _rebuilder(field.schema)) for field in schema.fields]
        trusted = Struct.of_values

        def rebuild_struct(row: dict[str, Any]) -> Struct:
            return trusted(schema, [row[name] if convert is None or row[name] is None else convert(row[name])
                                    for name, convert in fields])
        return rebuild_struct
    return _container(schema, _rebuilder, dict, iter)

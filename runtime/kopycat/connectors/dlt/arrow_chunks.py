"""What a dlt resource yields, as Connect schemas and Arrow columns for a SourceRecordBatch.

A dlt resource yields Python dicts (``sql_database`` with ``backend="sqlalchemy"``, ``rest_api``,
most hand-written resources), lists of them, or Arrow tables (``backend="pyarrow"``,
``filesystem`` readers); ``pandas`` frames are Arrow's too. Everything becomes one Arrow table
per chunk: a table as it comes (no Python object per row), dict rows gathered by
:class:`RowChunker` and converted by ``pa.Table.from_pylist`` (its type inference is the schema,
as dlt infers a schema from the first rows it sees).

:func:`connect_columns` maps the table's Arrow schema to a Connect STRUCT schema
(:func:`kopycat.api.from_arrow_schema`: naive timestamps are UTC, any unit becomes Connect's
milliseconds, a column of nulls only is an optional STRING) and casts the columns to the Arrow
types Connect's schema maps back to, which the engine's converters encode a column at a time.
The primary key hint's columns, taken from the same arrays, are the key.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from kopycat.api import DataError, Schema, SchemaBuilder, from_arrow_schema, to_arrow_type

__all__ = ["Columns", "RowChunker", "connect_columns"]


@dataclass(frozen=True, slots=True)
class Columns:
    """One chunk of a resource: its value (and key) schema and StructArrays, row i being row i."""

    value_schema: Schema
    values: pa.StructArray
    key_schema: Schema | None
    keys: pa.StructArray | None

    def __len__(self) -> int:
        return len(self.values)


class RowChunker:
    """Turns a resource's items into Arrow tables: each table as it is, dict rows in tables of ``max_rows``.

    ``whole`` says whether the table last yielded was an item of the resource as it came (an Arrow
    table or frame), not rows gathered by the chunker: then dlt's state, read when it is yielded,
    covers exactly the rows yielded so far.
    """

    def __init__(self, resource: str, max_rows: int) -> None:
        self.resource = resource
        self.max_rows = max_rows
        self.whole = False

    def tables(self, items: Iterable[Any]) -> Iterator[pa.Table]:
        rows: list[dict[str, Any]] = []
        for item in items:
            if isinstance(item, dict):
                rows.append(item)
                if len(rows) >= self.max_rows:
                    self.whole = False
                    yield self._from_rows(rows)
                    rows = []
                continue
            if rows:
                self.whole = False
                yield self._from_rows(rows)
                rows = []
            table = self._table(item)
            if table.num_rows:
                self.whole = True
                yield table
        if rows:
            self.whole = False
            yield self._from_rows(rows)

    def _table(self, item: Any) -> pa.Table:
        if isinstance(item, pa.Table):
            return item
        if isinstance(item, pa.RecordBatch):
            return pa.Table.from_batches([item])
        if type(item).__name__ == "DataFrame" and hasattr(item, "to_dict"):
            return pa.Table.from_pandas(item, preserve_index=False)
        raise DataError(f"dlt resource {self.resource!r} yielded a {type(item).__name__}; a resource must yield "
                        f"dicts, lists of dicts, Arrow tables or pandas frames")

    def _from_rows(self, rows: list[dict[str, Any]]) -> pa.Table:
        try:
            return pa.Table.from_pylist(rows)
        except (pa.ArrowException, TypeError, ValueError) as exc:
            raise DataError(f"dlt resource {self.resource!r}: its rows do not make one Arrow table ({exc}); a "
                            f"field changes type between rows") from exc


def connect_columns(table: pa.Table, primary_key: Sequence[str], resource: str) -> Columns:
    """The table's rows as Connect-typed StructArrays; ``primary_key``'s columns as the key."""
    table = table.combine_chunks()
    columns = [_plain(column.combine_chunks() if column.num_chunks else pa.array([], column.type))
               for column in table.columns]
    arrow_fields = [pa.field(field.name, column.type, nullable=field.nullable or column.null_count > 0)
                    for field, column in zip(table.schema, columns, strict=True)]
    try:
        schema = from_arrow_schema(pa.schema(arrow_fields))
        target = to_arrow_type(schema)
        arrays = [column.cast(target.field(index).type, safe=False) for index, column in enumerate(columns)]
    except (DataError, pa.ArrowException) as exc:
        raise DataError(f"dlt resource {resource!r}: its columns have no Kafka Connect schema ({exc}); cast "
                        f"them in the resource (add_map) or pick another backend") from exc
    values = pa.StructArray.from_arrays(arrays, fields=list(target))
    if not primary_key:
        return Columns(schema, values, None, None)
    missing = [name for name in primary_key if schema.field(name) is None]
    if missing:
        raise DataError(f"dlt resource {resource!r}: primary key columns {missing} are not among its columns "
                        f"({', '.join(table.column_names)})")
    builder = SchemaBuilder.struct()
    for name in primary_key:
        builder.field(name, schema.field(name).schema)
    key_schema = builder.build()
    key_type = to_arrow_type(key_schema)
    keys = pa.StructArray.from_arrays([arrays[table.column_names.index(name)] for name in primary_key],
                                      fields=list(key_type))
    return Columns(schema, values, key_schema, keys)


def _plain(column: pa.Array) -> pa.Array:
    """A dictionary column decoded, a column of nulls only as strings: types Connect has."""
    if pa.types.is_dictionary(column.type):
        return column.dictionary_decode()
    if pa.types.is_null(column.type):
        return pa.nulls(len(column), pa.string())
    return column

"""Debezium's change events for one table: key, value and envelope schemas, and the source block.

As Debezium 3.6's ``TableSchemaBuilder``, ``Envelope`` (via ``SchemaFactory``) and
``PostgresSourceInfoStructMaker``: the key is a struct of the primary key columns named
``<prefix>.<schema>.<table>.Key``; the row is the optional struct ``<prefix>.<schema>.<table>.Value``;
the envelope ``<prefix>.<schema>.<table>.Envelope`` (version 2) has fields ``before``, ``after``,
``source``, ``transaction``, ``op``, ``ts_ms``, ``ts_us``, ``ts_ns`` in that order; the source
block is ``io.debezium.connector.postgresql.Source``. Column DEFAULTs are the field schemas'
``default`` (:mod:`.defaults`); column comments, which Debezium puts there as ``doc``, are not read yet.
"""

from __future__ import annotations

import datetime as dt
import decimal
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final, NamedTuple

from kopycat.api.data import Date, Decimal, Schema, SchemaBuilder, Struct, Time, Timestamp, Type
from kopycat.connectors.postgres_cdc.config import DEBEZIUM_VERSION
from kopycat.connectors.postgres_cdc.defaults import default_value
from kopycat.connectors.postgres_cdc.pgoutput import UNCHANGED_TOAST
from kopycat.connectors.postgres_cdc.values import ColumnType, column_type

__all__ = ["SOURCE_SCHEMA", "TRANSACTION_SCHEMA", "ColumnInfo", "SourcePosition", "TableEvents"]

_SNAPSHOT_VALUES: Final = "true,first,first_in_data_collection,last_in_data_collection,last,false,incremental"
SOURCE_SCHEMA: Final = (
    SchemaBuilder.struct().name("io.debezium.connector.postgresql.Source").version(1)
    .field("version", Schema.STRING_SCHEMA)
    .field("connector", Schema.STRING_SCHEMA)
    .field("name", Schema.STRING_SCHEMA)
    .field("ts_ms", Schema.INT64_SCHEMA)
    .field("snapshot", SchemaBuilder.string().name("io.debezium.data.Enum").version(1)
           .parameter("allowed", _SNAPSHOT_VALUES).default_value("false").optional())
    .field("db", Schema.STRING_SCHEMA)
    .field("sequence", Schema.OPTIONAL_STRING_SCHEMA)
    .field("ts_us", Schema.OPTIONAL_INT64_SCHEMA)
    .field("ts_ns", Schema.OPTIONAL_INT64_SCHEMA)
    .field("schema", Schema.STRING_SCHEMA)
    .field("table", Schema.STRING_SCHEMA)
    .field("txId", Schema.OPTIONAL_INT64_SCHEMA)
    .field("lsn", Schema.OPTIONAL_INT64_SCHEMA)
    .field("xmin", Schema.OPTIONAL_INT64_SCHEMA)
    .field("origin", Schema.OPTIONAL_STRING_SCHEMA)
    .field("origin_lsn", Schema.OPTIONAL_INT64_SCHEMA)
    .build())
TRANSACTION_SCHEMA: Final = (
    SchemaBuilder.struct().optional().name("event.block").version(1)
    .field("id", Schema.STRING_SCHEMA)
    .field("total_order", Schema.INT64_SCHEMA)
    .field("data_collection_order", Schema.INT64_SCHEMA)
    .build())


@dataclass(frozen=True)
class ColumnInfo:
    name: str
    type_oid: int
    modifier: int
    optional: bool
    default: str | None = None  # the DEFAULT expression, pg_get_expr(adbin, adrelid)


class SourcePosition(NamedTuple):
    """Where an event comes from: the source block's changing fields (Debezium's ``SourceInfo``).

    A named tuple: one is made per change, and a tuple is the cheapest immutable record to build.
    """

    ts_us: int  # commit time (streaming) or snapshot time, Unix epoch microseconds
    tx_id: int | None
    lsn: int | None
    last_commit_lsn: int | None = None
    snapshot: str | None = None  # None while streaming: the schema default "false" is written


class TableEvents:
    """Builds one table's keys and change events; rebuilt when the table's columns change."""

    def __init__(self, prefix: str, dbname: str, schema: str, table: str, columns: Sequence[ColumnInfo],
                 key_columns: Sequence[str], *, decimal_mode: str, time_mode: str) -> None:
        self.prefix, self.dbname, self.schema_name, self.table = prefix, dbname, schema, table
        self.topic = f"{prefix}.{schema}.{table}"
        self.collection = f"{schema}.{table}"  # Debezium's TableId as transaction metadata names it
        self.columns = tuple(columns)
        self.types = types = [column_type(c.type_oid, c.modifier, decimal_mode=decimal_mode, time_mode=time_mode)
                              for c in columns]
        self.converters = [t.convert for t in types]
        value = SchemaBuilder.struct().name(f"{self.topic}.Value")
        for column, kind in zip(columns, types, strict=True):
            value.field(column.name, _field(kind, column))
        self.value_schema = value.optional().build()
        self.struct_fields = [f for f in self.value_schema.fields if f.schema.type is Type.STRUCT]
        self.fallbacks = [(f.index, _fallback(f.schema)) for f in self.value_schema.fields if not f.schema.optional]
        by_name = {c.name: (i, kind) for i, (c, kind) in enumerate(zip(columns, types, strict=True))}
        self.key_index = [by_name[name][0] for name in key_columns if name in by_name]
        self.key_schema: Schema | None = None
        if self.key_index:
            key = SchemaBuilder.struct().name(f"{self.topic}.Key")
            for index in self.key_index:
                key.field(columns[index].name, _field(types[index], columns[index]))
            self.key_schema = key.build()
        self.envelope_schema = (
            SchemaBuilder.struct().name(f"{self.topic}.Envelope").version(2)
            .field("before", self.value_schema).field("after", self.value_schema)
            .field("source", SOURCE_SCHEMA).field("transaction", TRANSACTION_SCHEMA)
            .field("op", Schema.STRING_SCHEMA).field("ts_ms", Schema.OPTIONAL_INT64_SCHEMA)
            .field("ts_us", Schema.OPTIONAL_INT64_SCHEMA).field("ts_ns", Schema.OPTIONAL_INT64_SCHEMA)
            .build())

    def row(self, texts: Sequence[object] | None) -> list[Any] | None:
        """Column texts (None for NULL) -> the Connect values in column order."""
        if texts is None:
            return None
        values = [None if t is None or t is UNCHANGED_TOAST else convert(t)  # type: ignore[arg-type]
                  for convert, t in zip(self.converters, texts, strict=True)]
        for index, fallback in self.fallbacks:  # a key-only old row leaves required columns unset
            if values[index] is None:
                values[index] = fallback
        for field in self.struct_fields:  # a struct value takes its field's schema (optional or not)
            if values[field.index] is not None:
                values[field.index] = Struct.of_values(field.schema, list(values[field.index].values()))
        return values

    def key(self, values: Sequence[Any] | None) -> Struct | None:
        if self.key_schema is None or values is None:
            return None
        return Struct.of_values(self.key_schema, [values[i] for i in self.key_index])

    def source(self, where: SourcePosition) -> Struct:
        ts_us, tx_id, lsn, last_commit, snapshot = where
        values = [DEBEZIUM_VERSION, "postgresql", self.prefix, ts_us // 1000, snapshot, self.dbname,
                  _sequence(last_commit, lsn), ts_us, ts_us * 1000, self.schema_name, self.table, tx_id, lsn,
                  None, None, None]
        return Struct.of_values(SOURCE_SCHEMA, values)

    def envelope(self, op: str, before: Sequence[Any] | None, after: Sequence[Any] | None,
                 where: SourcePosition, transaction: Struct | None = None) -> Struct:
        """The change event: ``op`` is c, u, d or r; ``ts_*`` is now, when the event is made; ``transaction``
        is the block of ``provide.transaction.metadata``.

        A list from :meth:`row` becomes the row struct's values as it is (one change's rows are made
        for its event alone); another sequence is copied."""
        now_ns = time.time_ns()
        value_schema = self.value_schema
        return Struct.of_values(self.envelope_schema, [
            None if before is None else Struct.of_values(value_schema, _as_list(before)),
            None if after is None else Struct.of_values(value_schema, _as_list(after)),
            self.source(where), transaction, op, now_ns // 1_000_000, now_ns // 1000, now_ns])


def _as_list(values: Sequence[Any]) -> list[Any]:
    return values if values.__class__ is list else list(values)  # type: ignore[return-value]


def _fallback(schema: Schema) -> Any:
    """What Debezium's ``JdbcValueConverters`` put in a required column it has no value for: its default,
    else a zero of its type."""
    if schema.default is not None:
        return schema.default
    if schema.name == Decimal.LOGICAL_NAME:
        return decimal.Decimal(0)
    if schema.name in _LOGICAL_FALLBACKS:
        return _LOGICAL_FALLBACKS[schema.name]
    return {Type.STRING: "", Type.BYTES: b"", Type.BOOLEAN: False, Type.FLOAT32: 0.0,
            Type.FLOAT64: 0.0}.get(schema.type, 0 if schema.type.name.startswith("INT") else None)


_LOGICAL_FALLBACKS: Final = {Date.LOGICAL_NAME: dt.date(1970, 1, 1), Time.LOGICAL_NAME: dt.time(0),
                             Timestamp.LOGICAL_NAME: dt.datetime(1970, 1, 1, tzinfo=dt.UTC)}


def _field(kind: ColumnType, column: ColumnInfo) -> Schema:
    """The column's field schema: optional when nullable, with its DEFAULT as Debezium maps it."""
    builder = kind.builder()
    if column.optional:
        builder.optional()
    default = default_value(column.type_oid, column.modifier, column.default, kind)
    if default is not None:
        builder.default_value(default)
    return builder.build()


def _sequence(last_commit: int | None, lsn: int | None) -> str:
    """Debezium's ``sequence``: ``["<last commit lsn>","<lsn>"]``, JSON with nulls."""
    first = "null" if last_commit is None else f'"{last_commit}"'
    second = "null" if lsn is None else f'"{lsn}"'
    return f"[{first},{second}]"

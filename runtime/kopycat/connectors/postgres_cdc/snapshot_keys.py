"""The incremental snapshot's primary-key values: the Java class of each key column and its value.

A chunk's bounds are stored in the offset as the Java objects Debezium 3.6's
``PostgresConnection.getColumnValue`` returns for the key columns (see :mod:`java_keys`), and bound
again as query parameters when the next chunk is read. :func:`key_kinds` maps each key column's
type to that class and refuses a table whose key has a type the offsets cannot carry;
:func:`key_values` turns a row's key texts (the ``::text`` of a session in UTC) into the values.
"""

from __future__ import annotations

import datetime as dt
import decimal
import uuid
from collections.abc import Callable, Sequence
from typing import Final

from kopycat.connectors.postgres_cdc.events import TableEvents
from kopycat.connectors.postgres_cdc.java_keys import JavaKind, KeyValue
from kopycat.connectors.postgres_cdc.values import (
    BPCHAR,
    DATE,
    INT2,
    INT4,
    INT8,
    NUMERIC,
    TEXT,
    TIMESTAMP,
    TIMESTAMPTZ,
    UUID,
    VARCHAR,
)

__all__ = ["UnsupportedKeyError", "key_kinds", "key_values"]

_KINDS: Final[dict[int, JavaKind]] = {
    INT2: "Integer", INT4: "Integer", INT8: "Long", TEXT: "String", VARCHAR: "String", BPCHAR: "String",
    UUID: "UUID", DATE: "Date", NUMERIC: "Decimal",
    TIMESTAMP: "String", TIMESTAMPTZ: "String",  # Debezium reads both with getString (no Julian calendar)
}
_TYPE_NAMES: Final = "int2, int4, int8, text, varchar, char, uuid, date, numeric, timestamp and timestamptz"
_PARSE: Final[dict[JavaKind, Callable[[str], KeyValue]]] = {
    "Integer": int, "Long": int, "String": str, "UUID": uuid.UUID, "Date": dt.date.fromisoformat,
    "Decimal": decimal.Decimal,
}


class UnsupportedKeyError(ValueError):
    """A table the incremental snapshot cannot read in key order; the message names table, column, type and fix."""


def key_kinds(table: TableEvents, type_name: Callable[[int], str]) -> list[JavaKind]:
    """The Java class of each primary-key column, or :class:`UnsupportedKeyError`.

    ``type_name`` names a type oid for the message. A key the offsets cannot carry is refused
    rather than read with a guessed serialization: a Debezium taking over such an offset would
    fail to read it or read on from the wrong key.
    """
    if not table.key_index:
        raise UnsupportedKeyError(f"table {table.collection} has no primary key, so it cannot be read in key "
                                  f"order: give it one (ALTER TABLE {table.collection} ADD PRIMARY KEY (...)), or "
                                  f"snapshot it with snapshot.mode=initial under a new slot.name")
    kinds = []
    for index in table.key_index:
        column = table.columns[index]
        if column.type_oid not in _KINDS:
            raise UnsupportedKeyError(
                f"table {table.collection}: primary key column {column.name} has type {type_name(column.type_oid)} "
                f"(oid {column.type_oid}); incremental snapshots store keys of types {_TYPE_NAMES} only, as "
                f"Debezium's offsets hold them. Snapshot this table with snapshot.mode=initial under a new "
                f"slot.name, or give it a primary key of one of those types")
        kinds.append(_KINDS[column.type_oid])
    return kinds


def key_values(texts: Sequence[object], key_index: Sequence[int], kinds: Sequence[JavaKind]) -> list[KeyValue]:
    """A row's key as the Java-side values, from its columns' texts."""
    return [_PARSE[kind](str(texts[i])) for i, kind in zip(key_index, kinds, strict=True)]

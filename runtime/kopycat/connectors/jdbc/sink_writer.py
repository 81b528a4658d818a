"""Writes a put()'s records to their tables in batches, inside the caller's transaction.

Follows Confluent's ``JdbcDbWriter`` (one buffer per destination table, all flushed before the
commit) and ``BufferedRecords`` (a buffer holds rows for one statement; when the statement
changes, because the schema changed or a delete follows an upsert, the pending rows are
flushed first, so the database sees the same order of effects as the topic: an upsert then a
tombstone of the same key ends deleted). Each flush is one ``executemany`` of at most
``batch.size`` dict rows.

Tombstones (null values) delete by key when ``delete.enabled``; otherwise they are skipped with
a warning logged once per table. Confluent's sink fails the task on a tombstone when deletes
are off (its ``RecordValidator``); skipping is kinder to compacted topics and still not silent.

Database errors are sorted here: transient ones (lost connections, deadlocks, a locked SQLite
file) become :class:`WriteFailed` with ``retriable=True``; the rest carry the records of the
failed statement so the task can name the bad one.
"""

from __future__ import annotations

import logging
import operator
from collections.abc import Mapping, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from kopycat.api.data import Struct
from kopycat.api.errors import ConnectError, DataError
from kopycat.api.records import SinkRecord
from kopycat.connectors.jdbc.sink_config import (
    DELETE_ENABLED_CONFIG,
    TABLE_NAME_FORMAT_CONFIG,
    JdbcSinkSettings,
)
from kopycat.connectors.jdbc.sink_plan import WritePlan, delete_plan, write_plan
from kopycat.connectors.jdbc.sink_rows import describe_record
from kopycat.connectors.jdbc.sink_schema import DbStructure, TableId

__all__ = ["JdbcDbWriter", "WriteFailed", "is_retriable"]

log = logging.getLogger(__name__)

_RETRIABLE_SQLITE = ("locked", "busy")


class WriteFailed(ConnectError):
    """A statement failed in the database; ``records`` are those of the failed executemany."""

    def __init__(self, message: str, *, retriable: bool, records: Sequence[SinkRecord],
                 table_id: TableId | None, cause: BaseException) -> None:
        super().__init__(message)
        self.retriable = retriable
        self.records = list(records)
        self.table_id = table_id
        self.cause = cause


def is_retriable(exc: BaseException) -> bool:
    """Whether a database error is transient: connection lost, deadlock, lock wait, busy file."""
    if isinstance(exc, sa.exc.DBAPIError) and exc.connection_invalidated:
        return True
    if isinstance(exc, sa.exc.InterfaceError | sa.exc.TimeoutError):
        return True
    if isinstance(exc, sa.exc.OperationalError):
        if exc.orig is not None and type(exc.orig).__module__.startswith("sqlite3"):
            return any(word in str(exc.orig).lower() for word in _RETRIABLE_SQLITE)
        return True
    return False


def _kind_key(record: SinkRecord) -> tuple[Any, ...]:
    """What a plan depends on besides the table: the schemas, or a schemaless record's field names."""
    key = record.key
    key_shape = (record.key_schema if record.key_schema is not None
                 else tuple(key) if isinstance(key, Mapping) else type(key))
    value = record.value
    value_shape = (record.value_schema if record.value_schema is not None
                   else tuple(value) if isinstance(value, Mapping) else None)
    return key_shape, value_shape


class _TableBuffer:
    """Pending rows of one table for one plan at a time (Confluent's ``BufferedRecords``)."""

    def __init__(self, writer: JdbcDbWriter, table_id: TableId) -> None:
        self.writer = writer
        self.table_id = table_id
        self.plan: WritePlan | None = None
        self.records: list[SinkRecord] = []

    def add(self, conn: Connection, record: SinkRecord, plan: WritePlan) -> None:
        if plan is not self.plan:
            self.flush(conn)
            self.plan = plan
        self.records.append(record)
        if len(self.records) >= self.writer.settings.batch_size:
            self.flush(conn)

    def flush(self, conn: Connection) -> None:
        plan, records = self.plan, self.records
        if plan is None or not records:
            return
        self.records = []
        rows = list(map(plan.row, records))
        if plan.key_positions is not None:
            key = operator.itemgetter(*plan.key_positions)
            rows = list({key(row): row for row in rows}.values())
        try:
            if plan.staged is not None:
                plan.staged.write(conn, rows)
            else:
                binds = plan.binds
                conn.execute(plan.statement, [dict(zip(binds, row, strict=True)) for row in rows])
        except sa.exc.DBAPIError as exc:
            raise WriteFailed(f"Writing {len(rows)} row(s) to table '{self.table_id}' failed: {_first_line(exc)}",
                              retriable=is_retriable(exc), records=records, table_id=self.table_id,
                              cause=exc) from exc


class JdbcDbWriter:
    """Writes batches of records to their tables; caches plans per table and schema pair.

    Not thread-safe: one per task. :meth:`forget` after a rolled-back transaction.
    """

    def __init__(self, settings: JdbcSinkSettings) -> None:
        self.settings = settings
        self.structure = DbStructure(settings)
        self._plans: dict[tuple[Any, ...], WritePlan | None] = {}
        self._warned_tombstones: set[TableId] = set()

    def forget(self) -> None:
        """Drop cached tables and plans: DDL of a rolled-back transaction may be gone."""
        self._plans.clear()
        self.structure.forget()

    def write(self, conn: Connection, records: Sequence[SinkRecord]) -> None:
        """Write every record through ``conn`` (the caller commits or rolls back)."""
        buffers: dict[TableId, _TableBuffer] = {}
        by_topic: dict[str, _TableBuffer] = {}  # topics may share a table; a str hashes cheaper than a TableId
        shape: tuple[Any, ...] = ()
        plan: WritePlan | None = None
        for record in records:
            buffer = by_topic.get(record.topic)
            if buffer is None:
                table_id = self.table_id(record)
                buffer = buffers.get(table_id) or buffers.setdefault(table_id, _TableBuffer(self, table_id))
                by_topic[record.topic] = buffer
            table_id = buffer.table_id
            key_schema, value_schema = record.key_schema, record.value_schema
            # A run of records of one shape (the usual batch) reuses the last plan without hashing schemas.
            struct = value_schema is not None and record.value.__class__ is Struct
            if not (struct and shape and shape[0] is table_id and shape[1] is key_schema
                    and shape[2] is value_schema):
                plan = self._plan(conn, table_id, record)
                shape = (table_id, key_schema, value_schema) if struct else ()
            if plan is not None:
                buffer.add(conn, record, plan)
        for buffer in buffers.values():
            buffer.flush(conn)

    def table_id(self, record: SinkRecord) -> TableId:
        """The destination table of a record: ``table.name.format`` with ``${topic}`` replaced."""
        name = self.settings.table_name_format.replace("${topic}", record.topic)
        if not name:
            raise ConnectError(f"The destination table name for topic '{record.topic}' is empty using "
                               f"{TABLE_NAME_FORMAT_CONFIG}={self.settings.table_name_format!r}")
        return TableId.parse(name)

    def _plan(self, conn: Connection, table_id: TableId, record: SinkRecord) -> WritePlan | None:
        tombstone = record.value is None
        if tombstone and not self.settings.delete_enabled:
            if table_id not in self._warned_tombstones:
                self._warned_tombstones.add(table_id)
                log.warning("Skipping tombstones (null values) for table %s, first at %s: %s=false. Set "
                            "%s=true (with pk.mode=record_key) to delete rows by key", table_id,
                            describe_record(record), DELETE_ENABLED_CONFIG, DELETE_ENABLED_CONFIG)
            return None
        if not tombstone:
            _check_value(record)
        cache_key = (table_id, tombstone, *_kind_key(record))
        if cache_key not in self._plans:
            maker = delete_plan if tombstone else write_plan
            plan = maker(conn, self.structure, self.settings, table_id, record)
            if plan is None:  # a tombstone for a table that is not there: nothing to delete
                return None
            self._plans[cache_key] = plan
        return self._plans[cache_key]


def _check_value(record: SinkRecord) -> None:
    """Values must be structs with schemas, or maps (schemaless: the table must exist)."""
    value, schema = record.value, record.value_schema
    if schema is not None and schema.type.name == "STRUCT" and isinstance(value, Struct):
        return
    if schema is None and isinstance(value, Mapping):
        return
    kind = schema.type.name if schema is not None else type(value).__name__
    raise DataError(f"The record at {describe_record(record)} has a {kind} value; the JDBC sink writes struct "
                    f"values with a schema (or maps, into an existing table). With JSON use "
                    f"value.converter=org.apache.kafka.connect.json.JsonConverter and "
                    f"value.converter.schemas.enable=true, and produce records with schemas")


def _first_line(exc: BaseException) -> str:
    orig = getattr(exc, "orig", None)
    text = str(orig if orig is not None else exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__

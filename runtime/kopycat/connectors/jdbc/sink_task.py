"""The JDBC sink task: each put() is one database transaction holding rows and offsets.

Follows Confluent's ``JdbcSinkTask`` (writer per task, ``max.retries`` / ``retry.backoff.ms`` for
transient database errors: ``context.timeout`` then ``RetriableError`` so the engine hands the
same batch again) and adds exactly-once through the ``kopycat_offsets`` table (see
:mod:`kopycat.connectors.jdbc.sink_offsets`): ``open`` seeks to the stored offsets, ``put``
commits rows and next offsets together, ``pre_commit`` returns what the database holds.

A windowed run (an Airflow backfill, :mod:`kopycat.api.window`) re-writes the window's rows and
leaves ``kopycat_offsets`` alone: it neither seeks to the stored offsets nor moves them, so the
live runs resume where they were. Re-written rows must replace themselves, so a windowed run
needs ``insert.mode`` upsert or update (a primary key); with plain inserts it fails at start.

A record that does not fit its table fails the whole put(): the transaction rolls back, so
nothing of the batch and no offset is written, and the :class:`DataError` names the record's
topic/partition/offset, the table, the column and the value. To find that record after a
failed ``executemany``, the failed statement's records are tried one by one in transactions
that are always rolled back (only on this error path).
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Collection, Mapping, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy import Engine

from kopycat.api.data import Struct
from kopycat.api.errors import ConfigError, ConnectError, DataError, RetriableError
from kopycat.api.records import SinkRecord, TopicPartition
from kopycat.api.task import SinkTask
from kopycat.api.window import TimeWindow
from kopycat.connectors.jdbc.connection import connect_engine, redacted_url
from kopycat.connectors.jdbc.sink_config import (
    INSERT_MODE_CONFIG,
    MAX_RETRIES_CONFIG,
    JdbcSinkSettings,
    parse_sink_config,
)
from kopycat.connectors.jdbc.sink_offsets import OffsetsTable
from kopycat.connectors.jdbc.sink_rows import describe_record, short
from kopycat.connectors.jdbc.sink_writer import JdbcDbWriter, WriteFailed, is_retriable

__all__ = ["JdbcSinkTask"]

log = logging.getLogger(__name__)

_SQLITE_COLUMN = re.compile(r"constraint failed: (?:\S+\.)?(\w+)")


class JdbcSinkTask(SinkTask):
    """Writes records to tables, exactly once per (topic, partition, offset).

    Not thread-safe beyond the SinkTask contract: every call but ``stop`` comes from the
    engine's one task thread.
    """

    def __init__(self) -> None:
        self.settings: JdbcSinkSettings | None = None
        self._engine: Engine | None = None
        self._writer: JdbcDbWriter | None = None
        self._offsets: OffsetsTable | None = None
        self._stored: dict[TopicPartition, int] = {}   # next offsets the database holds
        self._windowed = False  # a backfill run: writes rows, never reads or moves kopycat_offsets
        self._remaining_retries = 0

    # ------------------------------------------------------------------ lifecycle

    def start(self, props: Mapping[str, str]) -> None:
        settings = self.settings = parse_sink_config(props)
        self._windowed = TimeWindow.of(props) is not None
        if self._windowed and settings.insert_mode == "insert":
            raise ConfigError.for_key(INSERT_MODE_CONFIG, settings.insert_mode,
                                      "a windowed (backfill) run writes the window's rows again; use "
                                      "insert.mode=upsert with a pk.mode so they replace themselves")
        self._engine = connect_engine(settings.values)
        self._offsets = OffsetsTable(settings.connector_name)
        self._ensure_offsets_table(self._engine, self._offsets)
        self._writer = JdbcDbWriter(settings)
        self._remaining_retries = settings.max_retries
        log.info("JDBC sink task of %s writing to %s (insert.mode=%s, pk.mode=%s)", settings.connector_name,
                 redacted_url(settings.values), settings.insert_mode, settings.pk_mode)

    @staticmethod
    def _ensure_offsets_table(engine: Engine, offsets: OffsetsTable, attempts: int = 5) -> None:
        """Create ``kopycat_offsets``; tasks starting together may race to create it, so try again."""
        for attempt in range(1, attempts + 1):
            try:
                with engine.begin() as conn:
                    offsets.ensure(conn)
                return
            except sa.exc.DBAPIError as exc:
                if attempt == attempts:
                    raise ConnectError(f"Cannot create the offsets table kopycat_offsets: {_orig(exc)}. Create "
                                       f"it yourself or grant the user CREATE on the database") from exc
                time.sleep(0.2 * attempt)

    def open(self, partitions: Collection[TopicPartition]) -> None:
        """Seek every partition with stored offsets to them: the database, not the group, decides."""
        if self._windowed:  # the window placed the consumer; the live offsets stay as they are
            return
        with self._running_engine().connect() as conn:
            stored = self._offsets_table().read(conn, partitions)
        self._stored.update(stored)
        if stored:
            log.info("Resuming from offsets stored in the database: %s",
                     ", ".join(f"{tp.topic}-{tp.partition}@{offset}" for tp, offset in sorted(stored.items())))
            self.context.offset(stored)

    def close(self, partitions: Collection[TopicPartition]) -> None:
        for tp in partitions:
            self._stored.pop(TopicPartition(*tp), None)

    def stop(self) -> None:
        engine, self._engine = self._engine, None
        if engine is not None:
            engine.dispose()

    # ------------------------------------------------------------------ writes

    def put(self, records: Sequence[SinkRecord]) -> None:
        fresh = self._not_yet_written(records)
        if not fresh:
            return
        next_offsets: dict[TopicPartition, int] = {}
        for record in fresh:
            next_offsets[record.topic_partition] = record.original_kafka_offset + 1  # type: ignore[operator]
        writer, engine = self._running_writer(), self._running_engine()
        try:
            with engine.begin() as conn:
                writer.write(conn, fresh)
                if not self._windowed:
                    self._offsets_table().write(conn, next_offsets)
        except WriteFailed as exc:
            writer.forget()
            if exc.retriable:
                raise self._retry(exc, fresh) from exc
            raise self._explain(exc) from exc.cause
        except RetriableError as exc:  # DDL raced with another task's
            writer.forget()
            raise self._retry(exc, fresh) from exc
        except (DataError, ConnectError):
            writer.forget()
            raise
        except sa.exc.DBAPIError as exc:  # DDL, reflection, the offsets row or the commit
            writer.forget()
            if is_retriable(exc):
                raise self._retry(exc, fresh) from exc
            raise ConnectError(f"Writing {_span(fresh)} failed in the database: {exc.orig}; nothing of the "
                               f"batch was written") from exc
        self._stored.update(next_offsets)
        self._remaining_retries = self._settings().max_retries

    def pre_commit(self, current_offsets: Mapping[TopicPartition, int]) -> Mapping[TopicPartition, int]:
        """The offsets the database holds; records skipped since (filtered, tolerated) are stored first.

        Every put() committed before returning, so ``current_offsets`` are all written: a
        partition ahead of the stored offset only passed records that produced no rows.
        """
        if self._windowed:
            return {}
        ahead = {TopicPartition(*tp): offset for tp, offset in current_offsets.items()
                 if offset > self._stored.get(TopicPartition(*tp), -1)}
        if ahead:
            with self._running_engine().begin() as conn:
                self._offsets_table().write(conn, ahead)
            self._stored.update(ahead)
        return {tp: self._stored[TopicPartition(*tp)] for tp in current_offsets
                if TopicPartition(*tp) in self._stored}

    def _not_yet_written(self, records: Sequence[SinkRecord]) -> Sequence[SinkRecord]:
        """Drop records below the stored offsets (should the engine deliver them despite the seek)."""
        stored = self._stored
        if not stored:
            return records
        return [r for r in records if r.original_kafka_offset >= stored.get(r.topic_partition, -1)]  # type: ignore[operator]

    def _retry(self, exc: BaseException, records: Sequence[SinkRecord]) -> ConnectError:
        """RetriableError after context.timeout, until max.retries; then a ConnectError (Confluent's)."""
        settings = self._settings()
        cause = exc.cause if isinstance(exc, WriteFailed) else exc
        if self._remaining_retries <= 0:
            return ConnectError(f"Writing {_span(records)} failed {settings.max_retries + 1} time(s) on a transient "
                                f"database error; giving up ({MAX_RETRIES_CONFIG}={settings.max_retries}): "
                                f"{_orig(cause)}. Check the database, then restart the task")
        self._remaining_retries -= 1
        log.warning("Writing %s failed on a transient database error, %d retries left, retrying in %d ms: %s",
                    _span(records), self._remaining_retries, settings.retry_backoff_ms, _orig(cause))
        self.context.timeout(settings.retry_backoff_ms)
        return RetriableError(f"Transient database error writing {_span(records)}: {_orig(cause)}")

    def _explain(self, failure: WriteFailed) -> DataError:
        """Find the record of a failed statement that the database refuses, by itself."""
        writer, engine = self._running_writer(), self._running_engine()
        for record in failure.records:
            try:
                with engine.connect() as conn:
                    transaction = conn.begin()
                    try:
                        writer.write(conn, [record])
                    finally:
                        transaction.rollback()
            except WriteFailed as exc:
                return DataError(_bad_record_message(record, exc))
            except DataError as exc:
                return exc
            finally:
                writer.forget()
        return DataError(f"Writing {_span(failure.records)} to table '{failure.table_id}' failed: "
                         f"{_orig(failure.cause)}. Each record alone fits, so the batch conflicts with itself "
                         f"or with rows already there (a duplicate key with insert.mode=insert?); nothing of "
                         f"the batch was written. Use insert.mode=upsert or fix the records")

    # ------------------------------------------------------------------ state

    def _settings(self) -> JdbcSinkSettings:
        if self.settings is None:
            raise ConnectError("JdbcSinkTask used before start()")
        return self.settings

    def _running_engine(self) -> Engine:
        if self._engine is None:
            raise ConnectError("JdbcSinkTask is not running: start() it first (or it was stopped)")
        return self._engine

    def _running_writer(self) -> JdbcDbWriter:
        if self._writer is None:
            raise ConnectError("JdbcSinkTask used before start()")
        return self._writer

    def _offsets_table(self) -> OffsetsTable:
        if self._offsets is None:
            raise ConnectError("JdbcSinkTask used before start()")
        return self._offsets


def _orig(exc: BaseException | None) -> str:
    orig = getattr(exc, "orig", None)
    text = str(orig if orig is not None else exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _span(records: Sequence[SinkRecord]) -> str:
    """``topic 't' partition 0 offsets 5-9; ...`` for messages."""
    spans: dict[TopicPartition, list[int]] = {}
    for record in records:
        offset = record.original_kafka_offset or 0
        span = spans.setdefault(record.topic_partition, [offset, offset])
        span[0], span[1] = min(span[0], offset), max(span[1], offset)
    return "; ".join(f"topic '{tp.topic}' partition {tp.partition} offsets {a}-{b}"
                     for tp, (a, b) in sorted(spans.items()))


def _failed_column(exc: WriteFailed) -> str | None:
    orig = getattr(exc.cause, "orig", None)
    diag = getattr(orig, "diag", None)
    column = getattr(diag, "column_name", None)
    if column:
        return str(column)
    found = _SQLITE_COLUMN.search(str(orig or ""))
    return found.group(1) if found else None


def _bad_record_message(record: SinkRecord, exc: WriteFailed) -> str:
    column = _failed_column(exc)
    value: Any = record.value
    where = ""
    if column is not None:
        field_value = value.get(column) if isinstance(value, Struct) and value.schema.field(column) else (
            value.get(column) if isinstance(value, Mapping) else None)
        where = f" column '{column}' value {short(field_value)};"
    return (f"The record at {describe_record(record)} does not fit table '{exc.table_id}':{where} the database "
            f"says: {_orig(exc.cause)}. Record value: {short(value, 200)}. Fix the record (or the table); "
            f"nothing of this batch was written (the transaction was rolled back)")

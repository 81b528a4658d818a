"""Copy tables (or a query) into Kafka: Confluent's ``JdbcSourceTask``.

The task gets its tables in the ``tables`` config (quoted, comma separated, from the
connector's ``task_configs``), reflects each with SQLAlchemy, checks the mode's columns
(present, NOT NULL when ``validate.non.null``, of a mapped type), reads each table's stored
offset (v1 partition first, then the legacy v0 one, as Confluent does) and polls the tables in
turn: one result open at a time, ``batch.max.rows`` rows per ``poll``, each table due again
``poll.interval.ms`` after its last run finished. A read's rows come back as one
:class:`~kopycat.api.record_batch.SourceRecordBatch` of Arrow columns (as records where columns
cannot hold them exactly); PostgreSQL tables are read straight into Arrow when the run keeps the
batches as columns (``SourceTaskContext.takes_columns``).

``poll`` never blocks longer than ~200 ms when nothing is due (it returns None), so a ``stop``
from another thread is answered promptly. In a bounded run (an Airflow copy task) it raises
:class:`~kopycat.api.bounded.RunComplete` once every table was read to the end of a query
started in this run: what was in the tables when the run read them is copied, and the run ends
at once instead of waiting ``idle_ms`` to learn the same from empty polls.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from sqlalchemy import Connection, Engine, MetaData, Table
from sqlalchemy.exc import DBAPIError, NoSuchTableError, OperationalError
from sqlalchemy.types import DateTime, Float, Integer, Numeric

from kopycat.api.bounded import RunComplete, is_bounded_run
from kopycat.api.errors import ConfigError, ConnectError, RetriableError
from kopycat.api.record_batch import SourceRecordBatch
from kopycat.api.records import SourceRecord
from kopycat.api.task import SourceTask
from kopycat.api.window import TimeWindow
from kopycat.connectors.jdbc.connection import connect_engine, redacted_url
from kopycat.connectors.jdbc.source_config import (
    INCREMENTING_COLUMN_NAME_CONFIG,
    MODE_BULK,
    MODE_CONFIG,
    MODE_INCREMENTING,
    MODE_TIMESTAMP,
    TABLES_FETCHED_CONFIG,
    TIMESTAMP_COLUMN_NAME_CONFIG,
    TIMESTAMP_INITIAL_CURRENT,
    VALIDATE_NON_NULL_CONFIG,
    SourceSettings,
)
from kopycat.connectors.jdbc.source_offsets import (
    QUERY_PARTITION,
    Instant,
    partition_v0,
    partition_v1,
    read_offset,
)
from kopycat.connectors.jdbc.source_schema import RowMapping, table_mapping
from kopycat.connectors.jdbc.table_monitor import TableId, parse_tables
from kopycat.connectors.jdbc.table_querier import (
    BulkQuerier,
    IncrementalQuerier,
    Source,
    TableQuerier,
    TimestampQuerier,
    database_now,
)

__all__ = ["JdbcSourceTask", "TableDescription", "describe_table", "engine_for"]

log = logging.getLogger(__name__)

MAX_WAIT_S: Final = 0.2
"""The longest poll() waits when nothing is due, so bounded runs and stop() are answered quickly."""


def engine_for(settings: SourceSettings) -> Engine:
    """An engine on connection.url; SQLite connections may be closed from stop()'s thread.

    A source reads an existing database: a SQLite file that does not exist is refused, not created.
    """
    url = str(settings.values["connection.url"])
    kwargs: dict[str, Any] = {}
    if url.startswith(("sqlite", "jdbc:sqlite")):
        kwargs["connect_args"] = {"check_same_thread": False}
    return connect_engine(settings.values, create_sqlite_file=False, **kwargs)


@dataclass(frozen=True)
class TableDescription:
    """A reflected table with the columns the mode uses, resolved and checked."""

    table_id: TableId
    table: Table
    mapping: RowMapping
    incrementing_column: str | None
    timestamp_columns: tuple[str, ...]

    @property
    def naive_timestamps(self) -> bool:
        return not any(getattr(self.table.c[name].type, "timezone", False)
                       for name in self.timestamp_columns)


def describe_table(connection: Connection, table_id: TableId, settings: SourceSettings
                   ) -> TableDescription:
    """Reflect ``table_id`` and check it against the mode; raises ConfigError naming the fix."""
    try:
        table = Table(table_id.table, MetaData(), schema=table_id.schema, autoload_with=connection)
    except NoSuchTableError:
        raise ConfigError(f"Table {table_id.unquoted} does not exist (any more): it was dropped, "
                          f"or the connection's user cannot see it") from None
    columns = list(table.columns)
    names = [column.name for column in columns]
    incrementing = _incrementing_column(table_id, table, settings) if settings.uses_incrementing else None
    stamps = tuple(_column(table_id, names, name, TIMESTAMP_COLUMN_NAME_CONFIG)
                   for name in settings.timestamp_columns) if settings.uses_timestamp else ()
    _check_offset_columns(table_id, table, incrementing, stamps, settings)
    key_columns = [c.name for c in table.primary_key.columns] if settings.key_mode == "primary_key" else []
    if settings.key_mode == "primary_key" and not key_columns:
        raise ConfigError(f"Table {table_id.unquoted} has no primary key, so record.key.mode="
                          f"primary_key cannot key its records: add one, leave the table out, or "
                          f"use record.key.mode=none with the ValueToKey transform", key="record.key.mode")
    mapping = table_mapping(table_id.table, columns, numeric_mapping=settings.numeric_mapping,
                            timezone=None if settings.timezone_is_utc else settings.timezone,
                            sqlite=connection.dialect.name == "sqlite", key_columns=key_columns)
    return TableDescription(table_id, table, mapping, incrementing, stamps)


def _column(table_id: TableId, names: Sequence[str], wanted: str, key: str) -> str:
    """The column called ``wanted``: exactly, else the one case-insensitive match (as Confluent)."""
    if wanted in names:
        return wanted
    matches = [name for name in names if name.lower() == wanted.lower()]
    if len(matches) == 1:
        return matches[0]
    raise ConfigError(f"{key}={wanted!r}, but table {table_id.unquoted} has no such column; its "
                      f"columns are {', '.join(names)}: fix {key}, or leave the table out", key=key)


def _incrementing_column(table_id: TableId, table: Table, settings: SourceSettings) -> str:
    names = [column.name for column in table.columns]
    if settings.incrementing_column:
        name = _column(table_id, names, settings.incrementing_column, INCREMENTING_COLUMN_NAME_CONFIG)
    else:  # Confluent's findDefaultAutoIncrementingColumn
        auto = [c.name for c in table.columns if c.autoincrement is True]
        keys = list(table.primary_key.columns)
        if not auto and len(keys) == 1 and isinstance(keys[0].type, Integer):
            auto = [keys[0].name]
        if not auto:
            raise ConfigError(f"Table {table_id.unquoted} has no auto-incremented column to use in "
                              f"mode {settings.mode}; its columns are {', '.join(names)}: set "
                              f"{INCREMENTING_COLUMN_NAME_CONFIG}", key=INCREMENTING_COLUMN_NAME_CONFIG)
        name = auto[0]
    column_type = table.c[name].type
    integral_numeric = (isinstance(column_type, Numeric) and not isinstance(column_type, Float)
                        and column_type.scale in (0, None))
    if not isinstance(column_type, Integer) and not integral_numeric:
        raise ConfigError(f"Incrementing column {name!r} of table {table_id.unquoted} has type "
                          f"{column_type!r}; it must be an integer: set "
                          f"{INCREMENTING_COLUMN_NAME_CONFIG} to an integer column",
                          key=INCREMENTING_COLUMN_NAME_CONFIG)
    return name


def _check_offset_columns(table_id: TableId, table: Table, incrementing: str | None,
                          stamps: Sequence[str], settings: SourceSettings) -> None:
    for name in stamps:
        if not isinstance(table.c[name].type, DateTime):
            raise ConfigError(f"Timestamp column {name!r} of table {table_id.unquoted} has type "
                              f"{table.c[name].type!r}, not a timestamp: fix "
                              f"{TIMESTAMP_COLUMN_NAME_CONFIG}", key=TIMESTAMP_COLUMN_NAME_CONFIG)
    if not settings.validate_non_null:
        return
    if incrementing is not None and table.c[incrementing].nullable and not table.c[incrementing].primary_key:
        raise ConfigError(f"Cannot make incremental queries using incrementing column {incrementing} "
                          f"on {table_id.unquoted} because this column is nullable: make it NOT "
                          f"NULL, or set {VALIDATE_NON_NULL_CONFIG}=false", key=VALIDATE_NON_NULL_CONFIG)
    if stamps and all(table.c[name].nullable for name in stamps):
        raise ConfigError(f"Cannot make incremental queries using timestamp columns "
                          f"{','.join(stamps)} on {table_id.unquoted} because all of these columns "
                          f"are nullable: make one NOT NULL, or set {VALIDATE_NON_NULL_CONFIG}=false",
                          key=VALIDATE_NON_NULL_CONFIG)


class JdbcSourceTask(SourceTask):
    """Polls its tables (or the query) in turn (Confluent's ``JdbcSourceTask``).

    Thread-safety: ``poll`` runs on the engine's thread; ``stop`` may come from another and
    takes the same lock, so it closes the connection between two reads, never during one.
    """

    def __init__(self) -> None:
        self._settings: SourceSettings | None = None
        self._engine: Engine | None = None
        self._connection: Connection | None = None
        self._queriers: list[TableQuerier] = []
        self._bounded = False  # an Airflow copy task: the run ends once every table was read
        self._lock = threading.Lock()
        self._stopping = threading.Event()

    def start(self, props: Mapping[str, str]) -> None:
        settings = self._settings = SourceSettings.parse(props)
        self._bounded = is_bounded_run(props)
        window = TimeWindow.of(props)
        tables = parse_tables(settings.tables)
        if not tables and not settings.query:
            fetched = str(props.get(TABLES_FETCHED_CONFIG, "false")).lower() == "true"
            log.warning("JDBC source task has no tables to copy%s", "" if fetched else
                        " yet (the connector has not listed them)")
            return
        self._stopping.clear()
        self._engine = engine_for(settings)
        self._connection = self._engine.connect()
        try:
            self._queriers = self._build_queriers(settings, tables, window)
        except BaseException:
            self._close()
            raise
        log.info("JDBC source task reading %s from %s in mode %s%s",
                 ", ".join(q.source.name for q in self._queriers), redacted_url(settings.values),
                 settings.mode, f" for window {window}" if window else "")

    def _build_queriers(self, settings: SourceSettings, tables: list[TableId],
                        window: TimeWindow | None) -> list[TableQuerier]:
        connection = self._connection
        assert connection is not None
        if window is not None and settings.mode == MODE_INCREMENTING:
            names = ", ".join(t.unquoted for t in tables) or "the query"
            raise ConfigError(f"Cannot copy a time window of {names} in {MODE_CONFIG}="
                              f"{MODE_INCREMENTING}: rows have no time to select by. Use mode "
                              f"timestamp or timestamp+incrementing with {TIMESTAMP_COLUMN_NAME_CONFIG}, "
                              f"or run without a window", key=MODE_CONFIG)
        if settings.query:
            source = Source("query", settings.topic_prefix, dict(QUERY_PARTITION), query=settings.query,
                            suffix=settings.query_suffix)
            offsets = {} if window or settings.mode == MODE_BULK else self._offsets([("query", [source.partition])])
            queriers = [self._querier(settings, source, None, offsets.get("query"), window, naive=True)]
        else:
            described = [describe_table(connection, table, settings) for table in tables]
            wanted = [(d.table_id.unquoted, [partition_v1(d.table_id.unquoted), partition_v0(d.table_id.table)])
                      for d in described]
            offsets = {} if window or settings.mode == MODE_BULK else self._offsets(wanted)
            queriers = [self._querier(settings, self._table_source(settings, d), d,
                                      offsets.get(d.table_id.unquoted), window, naive=d.naive_timestamps)
                        for d in described]
        connection.commit()
        for querier in queriers:  # reading straight into Arrow pays off only when the batches stay columns
            querier.prefer_arrow = self.context.takes_columns
        return queriers

    @staticmethod
    def _table_source(settings: SourceSettings, described: TableDescription) -> Source:
        table_id = described.table_id
        partition = partition_v0(table_id.table) if settings.mode == MODE_BULK else partition_v1(table_id.unquoted)
        return Source(table_id.unquoted, settings.topic_prefix + table_id.table, partition,
                      table=described.table, mapping=described.mapping, suffix=settings.query_suffix)

    def _offsets(self, wanted: list[tuple[str, list[dict[str, str]]]]) -> dict[str, Mapping[str, Any]]:
        """The stored offset of each source: the first of its partitions that has one."""
        partitions = [partition for _, candidates in wanted for partition in candidates]
        found = self.context.offset_reader.offsets(partitions)
        stored = iter(offset for _, offset in found)
        result: dict[str, Mapping[str, Any]] = {}
        for name, candidates in wanted:
            offsets = [next(stored) for _ in candidates]
            offset = next((o for o in offsets if o is not None), None)
            if offset is not None:
                log.info("Resuming %s from offset %s", name, offset)
                result[name] = offset
        return result

    def _querier(self, settings: SourceSettings, source: Source, described: TableDescription | None,
                 offset: Mapping[str, Any] | None, window: TimeWindow | None, *, naive: bool) -> TableQuerier:
        if settings.mode == MODE_BULK:
            return BulkQuerier(source, window)
        timestamp, incrementing = read_offset(offset, source.name)
        if offset is None and settings.uses_timestamp and settings.timestamp_initial is not None:
            timestamp = self._initial_timestamp(settings)
        columns = described.timestamp_columns if described else settings.timestamp_columns
        common: dict[str, Any] = {
            "timestamp_columns": columns, "timestamp": timestamp, "window": window,
            "delay_ms": settings.timestamp_delay_ms, "zone": settings.timezone,
            "naive_timestamps": naive}
        if settings.mode == MODE_TIMESTAMP:
            return TimestampQuerier(source, **common)
        column = described.incrementing_column if described else settings.incrementing_column
        return IncrementalQuerier(source, incrementing_column=column, incrementing=incrementing, **common)

    def _initial_timestamp(self, settings: SourceSettings) -> Instant:
        """timestamp.initial: epoch ms, or -1 for the database's current time."""
        if settings.timestamp_initial == TIMESTAMP_INITIAL_CURRENT:
            assert self._connection is not None
            return Instant.of(database_now(self._connection), settings.timezone)
        return Instant.from_millis(int(settings.timestamp_initial or 0))

    def poll(self) -> list[SourceRecord | SourceRecordBatch] | None:
        """What the next due table gives: its rows as one batch of Arrow columns per read, or as
        records where columns cannot hold them exactly."""
        settings = self._settings
        if settings is None:
            raise ConnectError("JdbcSourceTask.poll() called before start()")
        with self._lock:
            if self._stopping.is_set() or self._connection is None:
                wait_s = MAX_WAIT_S
            else:
                tried: set[int] = set()  # each due table once per poll: every table gets a turn
                while (querier := self._next_due(settings, tried)) is not None:
                    tried.add(id(querier))
                    records = self._read(querier, settings)
                    if records:
                        return records
                    if self._stopping.is_set():
                        return None
                if self._bounded and self._read_to_end():
                    raise RunComplete
                wait_s = self._wait_s(settings)
        self._stopping.wait(wait_s)
        return None

    def _read(self, querier: TableQuerier, settings: SourceSettings) -> list[Any]:
        assert self._connection is not None
        try:
            return querier.read(self._connection, settings.batch_max_rows)
        except OperationalError as exc:
            self._recover(querier)
            raise RetriableError(f"Reading {querier.source.name} from {redacted_url(settings.values)} "
                                 f"failed, will retry: {exc.orig}") from None
        except DBAPIError as exc:
            self._recover(querier)
            raise ConnectError(f"Reading {querier.source.name} failed: {exc.orig}. Check the table "
                               f"or the query (query.suffix too)") from None

    def _recover(self, querier: TableQuerier) -> None:
        """Drop the failed read; the next poll runs the query again from the offsets so far."""
        assert self._connection is not None
        try:
            self._connection.rollback()
        except DBAPIError:
            log.debug("Rollback after a failed read failed too", exc_info=True)
        querier.abandon()

    def _next_due(self, settings: SourceSettings, tried: set[int]) -> TableQuerier | None:
        """The querier mid-result, else the longest-waiting due one not ``tried`` in this poll.

        In a bounded run a table read to its end is not due again: the run copies each table's
        rows as one query finds them, however short ``poll.interval.ms`` is.
        """
        for querier in self._queriers:
            if querier.querying and id(querier) not in tried:
                return querier
        interval_s = math.inf if self._bounded else settings.poll_interval_ms / 1000
        now = time.monotonic()
        due = [q for q in self._queriers if not q.done and id(q) not in tried
               and (q.last_update == 0.0 or q.last_update + interval_s <= now)]
        return min(due, key=lambda q: (q.last_update, q.source.name)) if due else None

    def _read_to_end(self) -> bool:
        """Every table's query of this run has returned its last row (a window's tables are done)."""
        return all(q.done or (q.last_update > 0.0 and not q.querying) for q in self._queriers)

    def _wait_s(self, settings: SourceSettings) -> float:
        pending = [q.last_update for q in self._queriers if not q.done]
        if not pending:
            return MAX_WAIT_S
        return max(0.0, min(MAX_WAIT_S, min(pending) + settings.poll_interval_ms / 1000 - time.monotonic()))

    def stop(self) -> None:
        self._stopping.set()
        with self._lock:
            self._close()

    def _close(self) -> None:
        for querier in self._queriers:
            querier.done = True
        connection, engine, self._connection, self._engine = self._connection, self._engine, None, None
        if connection is not None:
            try:
                connection.close()
            except DBAPIError:
                log.debug("Closing the connection failed", exc_info=True)
        if engine is not None:
            engine.dispose()

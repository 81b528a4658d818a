"""Reading one table (or the query) a batch at a time: Confluent's ``TableQuerier`` family.

A querier runs its query when due, keeps the result open across ``poll`` calls (a server-side
cursor on PostgreSQL), hands out ``batch.max.rows`` rows per call, and when the result is
exhausted commits the read transaction and waits ``poll.interval.ms`` before the next run:

- :class:`BulkQuerier` (``BulkTableQuerier``): ``SELECT * FROM t``; v0 partition, null offset.
- :class:`IncrementalQuerier` (``TimestampIncrementingTableQuerier``) with the WHERE clauses of
  ``TimestampIncrementingCriteria``: incrementing ``inc > ? ORDER BY inc``; timestamp+incrementing
  ``ts < ? AND ((ts = ? AND inc > ?) OR ts > ?) ORDER BY ts, inc``, where ``ts`` is the COALESCE
  of the timestamp columns and the end bound is the database's time minus
  ``timestamp.delay.interval.ms``.
- :class:`TimestampQuerier` (``TimestampTableQuerier``): ``ts > ? AND ts < ? ORDER BY ts``; a
  row's offset moves to its timestamp only once the next row's timestamp is larger (or the
  result ends), so a restart inside a run of equal timestamps re-reads that run, never skips it.

A window (Airflow backfill, :class:`kopycat.api.window.TimeWindow`) replaces the offset bounds
by ``start <= ts < end``, runs once and is done.
"""

from __future__ import annotations

import datetime as dt
import logging
import time
from collections.abc import Callable, Iterable, Sequence
from functools import partial
from itertools import repeat
from typing import Any

from sqlalchemy import Connection, Table, and_, bindparam, func, or_, select, text
from sqlalchemy.engine import CursorResult
from sqlalchemy.sql.expression import ColumnElement, Executable
from sqlalchemy.types import DateTime

from kopycat.api.errors import ConnectError, DataError
from kopycat.api.record_batch import SourceRecordBatch
from kopycat.api.records import SourceRecord
from kopycat.api.window import TimeWindow
from kopycat.connectors.jdbc.arrow_result import (
    ArrowResult,
    ArrowRows,
    adopt_columns,
    arrow_readable,
    column_values,
    literal_sql,
)
from kopycat.connectors.jdbc.source_columns import arrow_columns
from kopycat.connectors.jdbc.source_offsets import INCREMENTING_FIELD, Instant, offset_map
from kopycat.connectors.jdbc.source_schema import RowMapping, infer_query_mapping

__all__ = ["BulkQuerier", "IncrementalQuerier", "Source", "TableQuerier", "TimestampQuerier"]

log = logging.getLogger(__name__)


class Source:
    """What a querier reads: a reflected table, or the ``query`` text (then ``table`` is None)."""

    def __init__(self, name: str, topic: str, partition: dict[str, str], *, table: Table | None = None,
                 query: str | None = None, mapping: RowMapping | None = None, suffix: str = "") -> None:
        self.name = name
        self.topic = topic
        self.partition = partition
        self.table = table
        self.query = query
        self.mapping = mapping
        self.suffix = suffix

    def column(self, name: str) -> Any:
        """A column of the table as a SQL expression, or a quoted name in query mode."""
        if self.table is not None:
            return self.table.c[name]
        return text(_quote(name))

    def select(self, where: ColumnElement[bool] | None = None, order: Sequence[Any] = ()) -> Executable:
        if self.table is None:
            raise AssertionError("query sources build text statements")
        statement = select(self.table)
        if where is not None:
            statement = statement.where(where)
        if order:
            statement = statement.order_by(*order)
        return statement.suffix_with(self.suffix) if self.suffix else statement


_Offsets = Callable[[], Iterable[dict[str, Any] | None]]
"""Gives each row's source offset, in order: called only when the rows become records."""


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


class TableQuerier:
    """Runs one source's query and turns its rows into records; not thread-safe (the task locks)."""

    def __init__(self, source: Source) -> None:
        self.source = source
        self.last_update = 0.0  # monotonic seconds of the last finished run; 0: due now
        self.done = False       # a window run that finished: never due again
        self._result: CursorResult[Any] | ArrowResult | None = None
        self._connection: Connection | None = None
        self._mapping = source.mapping
        self.prefer_arrow = True  # read into Arrow where the database allows: the run takes columns

    @property
    def querying(self) -> bool:
        return self._result is not None

    def read(self, connection: Connection, max_rows: int) -> list[Any]:
        """The next up to ``max_rows`` rows, as a SourceRecordBatch (or records where columns cannot
        hold them), starting the query first if it is not running."""
        if self._result is None:
            self._connection = connection
            self._result = self._execute(connection)
        rows = self._result.fetchmany(max_rows)
        exhausted = len(rows) < max_rows
        if rows and self._mapping is None:
            self._mapping = self._infer(list(self._result.keys()), rows)
        records = self._records(rows, exhausted) if rows or exhausted else []
        if exhausted:
            self.finish(time.monotonic())
        return records

    def finish(self, now: float) -> None:
        """Close the result and end the read transaction; the next run is due from ``now``."""
        result, connection, self._result, self._connection = self._result, self._connection, None, None
        if result is not None:
            result.close()
        if connection is not None and connection.in_transaction():
            connection.commit()
        self.last_update = now

    def abandon(self) -> None:
        """Forget the open result after a failed read (the caller rolled back); rerun when due. An Arrow
        result is closed: its ADBC connection is its own, which no rollback ends."""
        result, self._result, self._connection = self._result, None, None
        if isinstance(result, ArrowResult):
            result.close()

    def _infer(self, names: list[str], rows: Sequence[Any]) -> RowMapping:
        return infer_query_mapping(names, rows, None)

    def _execute(self, connection: Connection) -> CursorResult[Any] | ArrowResult:
        raise NotImplementedError

    def _run(self, connection: Connection, statement: Executable,
             params: dict[str, Any] | None = None) -> CursorResult[Any] | ArrowResult:
        """The statement's result: read into Arrow by ADBC where that gives the same columns (the
        columnar path on PostgreSQL, when ``prefer_arrow``), else a streaming SQLAlchemy cursor."""
        if self.prefer_arrow and self._arrow_reads(connection):
            url = connection.engine.url.set(drivername="postgresql").render_as_string(hide_password=False)
            return ArrowResult(url, literal_sql(statement, params, connection))
        return connection.execution_options(stream_results=True).execute(statement, params or {})

    def _arrow_reads(self, connection: Connection) -> bool:
        return self.source.table is not None and arrow_readable(connection, self._mapping)

    def _records(self, rows: Sequence[Any], exhausted: bool) -> list[Any]:
        raise NotImplementedError

    def _build(self, rows: Sequence[Any], last: dict[str, Any] | None, offsets: _Offsets) -> list[Any]:
        """The rows as one SourceRecordBatch ending at ``last`` (the last row's offset), or as records
        where a column cannot be built exactly. ``offsets`` gives each row's own offset; it is called
        only when records are made (the batch's ``record_factory``)."""
        mapping = self._mapping
        assert mapping is not None
        if not rows:
            return []
        if isinstance(rows, ArrowRows):
            columns = adopt_columns(mapping, rows.batch)
        else:
            columns = arrow_columns(mapping, rows)
        make = partial(self._record_list, mapping, rows, offsets)
        if columns is None:
            return make()
        return [SourceRecordBatch(self.source.partition, last, self.source.topic, mapping.schema,
                                  columns[0], mapping.key_schema, columns[1], record_factory=make)]

    def _record_list(self, mapping: RowMapping, rows: Sequence[Any], offsets: _Offsets) -> list[SourceRecord]:
        """The rows as records, each with its own offset (as Confluent's querier makes them)."""
        values = mapping.values(_tuples(rows))
        structs = mapping.structs(values)
        topic, partition, schema = self.source.topic, self.source.partition, mapping.schema
        record = SourceRecord.of  # positional: cheaper than keyword construction per row
        if mapping.key_schema is None:
            return [record(partition, offset, topic, None, None, None, schema, struct)
                    for struct, offset in zip(structs, offsets(), strict=False)]
        key_schema = mapping.key_schema
        return [record(partition, offset, topic, None, key_schema, key, schema, struct)
                for struct, key, offset in zip(structs, mapping.keys(values), offsets(), strict=False)]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.source.name})"


class BulkQuerier(TableQuerier):
    """The whole table (or query) every run; records carry the v0 partition and a null offset."""

    def __init__(self, source: Source, window: TimeWindow | None = None) -> None:
        super().__init__(source)
        self._once = window is not None

    def _execute(self, connection: Connection) -> CursorResult[Any] | ArrowResult:
        statement = text(str(self.source.query) + _suffix(self.source.suffix)) \
            if self.source.table is None else self.source.select()
        return self._run(connection, statement)

    def _records(self, rows: Sequence[Any], exhausted: bool) -> list[Any]:
        if exhausted and self._once:
            self.done = True
        return self._build(rows, None, partial(repeat, None))


def _suffix(suffix: str) -> str:
    return f" {suffix}" if suffix else ""


class IncrementalQuerier(TableQuerier):
    """Incrementing, or timestamp+incrementing: each record's offset is its own row's values."""

    def __init__(self, source: Source, *, timestamp_columns: Sequence[str], incrementing_column: str | None,
                 timestamp: Instant | None, incrementing: int | None, delay_ms: int,
                 zone: dt.tzinfo, naive_timestamps: bool, window: TimeWindow | None = None) -> None:
        super().__init__(source)
        self.timestamp_columns = tuple(timestamp_columns)
        self.incrementing_column = incrementing_column
        self.timestamp = timestamp        # the offset so far (None: from the epoch)
        self.incrementing = incrementing  # None: from -1
        self.delay_ms = delay_ms
        self.zone = zone
        self.naive_timestamps = naive_timestamps
        self.window = window
        self._ts_indexes: tuple[int, ...] = ()
        self._inc_index: int | None = None
        if source.table is not None:
            names = [column.name for column in source.table.columns]
            self._ts_indexes = tuple(names.index(c) for c in self.timestamp_columns)
            self._inc_index = names.index(incrementing_column) if incrementing_column else None

    # ---------------------------------------------------------------- the query

    def _execute(self, connection: Connection) -> CursorResult[Any] | ArrowResult:
        statement, params = self._statement(), self._parameters(connection)
        log.debug("Querying %s with %s", self.source.name, params)
        return self._run(connection, statement, params)

    def _coalesced(self) -> Any:
        columns = [self.source.column(name) for name in self.timestamp_columns]
        return columns[0] if len(columns) == 1 else func.coalesce(*columns)

    def _statement(self) -> Executable:
        if self.source.table is None:
            return self._query_statement()
        ts = self._coalesced() if self.timestamp_columns else None
        inc = self.source.column(self.incrementing_column) if self.incrementing_column else None
        bind = _binder(ts.type if ts is not None else None)
        if self.window is not None:
            assert ts is not None
            return self.source.select(and_(ts >= bind("start"), ts < bind("end")),
                                      [ts] if inc is None else [ts, inc])
        if ts is not None and inc is not None:
            return self.source.select(
                and_(ts < bind("end"), or_(and_(ts == bind("begin"), inc > bindparam("last")),
                                           ts > bind("begin"))), [ts, inc])
        if ts is not None:
            return self.source.select(and_(ts > bind("begin"), ts < bind("end")), [ts])
        assert inc is not None
        return self.source.select(inc > bindparam("last"), [inc])

    def _query_statement(self) -> Executable:
        """Confluent appends the same criteria to the user's query text."""
        names = [_quote(c) for c in self.timestamp_columns]
        ts = names[0] if len(names) == 1 else f"COALESCE({', '.join(names)})"
        inc = _quote(self.incrementing_column) if self.incrementing_column else None
        if self.window is not None:
            where = f" WHERE {ts} >= :start AND {ts} < :end ORDER BY {ts}" + (f", {inc}" if inc else "")
        elif self.timestamp_columns and inc:
            where = (f" WHERE {ts} < :end AND (({ts} = :begin AND {inc} > :last) OR {ts} > :begin)"
                     f" ORDER BY {ts}, {inc} ASC")
        elif self.timestamp_columns:
            where = f" WHERE {ts} > :begin AND {ts} < :end ORDER BY {ts} ASC"
        else:
            where = f" WHERE {inc} > :last ORDER BY {inc} ASC"
        statement = text(str(self.source.query) + where + _suffix(self.source.suffix))
        binds = [bindparam(name, type_=DateTime(timezone=not self.naive_timestamps))
                 for name in ("start", "end", "begin") if f":{name}" in where]
        return statement.bindparams(*binds)

    def _parameters(self, connection: Connection) -> dict[str, Any]:
        if self.window is not None:
            return {"start": self._bound(Instant.from_millis(self.window.start_ms)),
                    "end": self._bound(Instant.from_millis(self.window.end_ms))}
        params: dict[str, Any] = {}
        if self.incrementing_column:
            params["last"] = -1 if self.incrementing is None else self.incrementing
        if self.timestamp_columns:
            params["begin"] = self._bound(self.timestamp or Instant(0, 0))
            end = database_now(connection) - dt.timedelta(milliseconds=self.delay_ms)
            params["end"] = self._bound(Instant.of(end, self.zone))
        return params

    def _bound(self, instant: Instant) -> dt.datetime:
        """A bound value for the timestamp columns: naive in db.timezone for naive columns."""
        value = instant.to_datetime()
        return value.astimezone(self.zone).replace(tzinfo=None) if self.naive_timestamps else value

    # ---------------------------------------------------------------- the rows

    def _infer(self, names: list[str], rows: Sequence[Any]) -> RowMapping:
        """Query mode: find the offset columns among the result's columns."""
        lowered = [name.lower() for name in names]

        def index(column: str) -> int:
            if column in names:
                return names.index(column)
            if lowered.count(column.lower()) == 1:
                return lowered.index(column.lower())
            raise ConnectError(f"The query's result has no column {column!r} (columns: "
                               f"{', '.join(names)}): fix timestamp.column.name / "
                               f"incrementing.column.name or the query")
        self._ts_indexes = tuple(index(c) for c in self.timestamp_columns)
        self._inc_index = index(self.incrementing_column) if self.incrementing_column else None
        return infer_query_mapping(names, rows, None if self.zone is dt.UTC else self.zone)

    def _row_timestamp(self, row: Sequence[Any]) -> Instant | None:
        if len(self._ts_indexes) == 1:
            value = row[self._ts_indexes[0]]
            if type(value) is dt.datetime:
                return Instant.of(value, self.zone)
        for index in self._ts_indexes:
            value = row[index]
            if value is not None:
                if isinstance(value, str):
                    value = dt.datetime.fromisoformat(value)
                return Instant.of(value, self.zone)
        return None

    def _last_offset(self, rows: Sequence[Any]) -> dict[str, Any] | None:
        """Columns: only the last row's offset is needed (a batch commits as a whole), and the
        incrementing column is checked at once; None when it needs the row by row checks."""
        incrementing = self.incrementing
        if self._inc_index is not None:
            values = column_values(rows, self._inc_index)
            if set(map(type, values)) != {int}:
                return None  # a null or another class: the loop names the row
            incrementing = values[-1]
        if not self._ts_indexes:
            self.incrementing = incrementing
            return {INCREMENTING_FIELD: incrementing}
        self.timestamp, self.incrementing = self._row_timestamp(rows[-1]), incrementing
        return offset_map(self.timestamp, self.incrementing)

    def _row_incrementing(self, row: Sequence[Any]) -> int:
        assert self._inc_index is not None
        value = row[self._inc_index]
        if value is None:
            raise DataError(f"Null value in incrementing column {self.incrementing_column!r} of "
                            f"{self.source.name}: make the column NOT NULL or pick another one")
        number = int(value)
        if number != value:
            raise DataError(f"Incrementing column {self.incrementing_column!r} of {self.source.name} "
                            f"holds {value!r}, not an integer")
        return number

    def _records(self, rows: Sequence[Any], exhausted: bool) -> list[Any]:
        if exhausted and self.window is not None:
            self.done = True
        if not rows:
            return []
        timestamp, incrementing = self.timestamp, self.incrementing
        last = self._last_offset(rows)
        if last is not None:  # each row's offset only if the batch is sent as records
            return self._build(rows, last, lambda: self._row_offsets(_tuples(rows), timestamp, incrementing)[0])
        offsets, self.timestamp, self.incrementing = self._row_offsets(rows, timestamp, incrementing)
        return self._build(rows, offsets[-1], offsets.copy)

    def _row_offsets(self, rows: Sequence[Any], timestamp: Instant | None, incrementing: int | None
                     ) -> tuple[list[dict[str, Any] | None], Instant | None, int | None]:
        """Each row's offset, checking the incrementing column row by row (a bad value names its
        row), from the offset before ``rows``; and the offset after them."""
        offsets: list[dict[str, Any] | None] = []
        append, row_timestamp = offsets.append, self._row_timestamp
        if not self._ts_indexes:  # incrementing only: the cheapest and most common loop
            index = self._inc_index
            assert index is not None
            for row in rows:
                value = row[index]
                incrementing = value if type(value) is int else self._row_incrementing(row)
                append({INCREMENTING_FIELD: incrementing})
        else:
            for row in rows:
                timestamp = row_timestamp(row)
                if self._inc_index is not None:
                    incrementing = self._row_incrementing(row)
                append(offset_map(timestamp, incrementing))
        return offsets, timestamp, incrementing


class TimestampQuerier(IncrementalQuerier):
    """Timestamp only: an offset moves to a row's timestamp once no equal one can follow.

    Keeps the last row of each batch back until the next batch (or the end of the result)
    shows whether the next timestamp is larger, as ``TimestampTableQuerier`` looks ahead.
    """

    def __init__(self, source: Source, **kwargs: Any) -> None:
        super().__init__(source, incrementing_column=None, incrementing=None, **kwargs)
        self._held: Any = None

    def finish(self, now: float) -> None:
        self._held = None
        super().finish(now)

    def _arrow_reads(self, connection: Connection) -> bool:
        """The cursor's rows: the last row of each read is held back for the next, as rows."""
        return False

    def abandon(self) -> None:
        self._held = None
        super().abandon()

    def _records(self, rows: Sequence[Any], exhausted: bool) -> list[Any]:
        pending = ([self._held] if self._held is not None else []) + list(rows)
        self._held = None if exhausted or not pending else pending.pop()
        stamps = [self._row_timestamp(row) for row in pending]
        following = stamps[1:] + [None if self._held is None else self._row_timestamp(self._held)]
        offsets: list[dict[str, Any] | None] = []
        current = offset_map(self.timestamp, None)
        for stamp, after in zip(stamps, following, strict=False):  # no rows pending: following holds one
            if stamp is None or after is None or stamp < after:
                self.timestamp = stamp if stamp is not None else self.timestamp
                current = offset_map(self.timestamp, None)
            offsets.append(current)
        if exhausted and self.window is not None:
            self.done = True
        return self._build(pending, offsets[-1], offsets.copy) if pending else []


def _tuples(rows: Sequence[Any]) -> Sequence[Any]:
    """Fetched rows as tuples: Arrow rows made all at once rather than one lookup per row."""
    return rows.all() if isinstance(rows, ArrowRows) else rows


def _binder(column_type: Any) -> Any:
    def bind(name: str) -> Any:
        return bindparam(name, type_=column_type) if column_type is not None else bindparam(name)
    return bind


def database_now(connection: Connection) -> dt.datetime:
    """The database's clock (Confluent's ``currentTimeOnDB``), UTC-aware; SQLite: this host's."""
    if connection.dialect.name == "postgresql":
        value = connection.execute(text("SELECT CURRENT_TIMESTAMP")).scalar_one()
        if isinstance(value, dt.datetime):
            return value if value.tzinfo is not None else value.replace(tzinfo=dt.UTC)
    return dt.datetime.now(dt.UTC)

"""The incremental snapshot: tables read in primary-key chunks between watermarks, interleaved with the WAL.

Debezium 3.6's ``SignalBasedIncrementalSnapshotChangeEventSource`` (DBLog): an ``execute-snapshot``
signal queues tables; each chunk inserts a ``<id>-open`` row into the signal table, reads the next
``incremental.snapshot.chunk.size`` rows by primary key (up to the key that was largest when the
table's snapshot began), and inserts a ``<id>-close`` row (the insert_insert watermarking
strategy). The change stream decodes those rows in commit order: while the window between them is
open, each streamed change of the table drops its key from the chunk (the log holds a newer row);
after the close row's commit the chunk's remaining rows become ``op: "r"`` events (source
``snapshot: "incremental"``) and the next chunk is read. Every offset stored while a snapshot runs
carries Debezium's keys (``incremental_snapshot_collections``, ``incremental_snapshot_primary_key``:
the key of the last ``r`` event, ``incremental_snapshot_maximum_key``,
``incremental_snapshot_correlation_id``), so a restarted task, Kopycat's or Debezium's, reads on
from the last key sent; watermarks of a chunk from before the restart no longer match and are ignored.

An ``additional-conditions`` filter of the signal limits a table's chunks (and its maximum key) to
the rows it matches; it is stored parenthesized in ``incremental_snapshot_collections``, as
Debezium's ``DataCollection.getAdditionalCondition`` stores it. ``pause-snapshot`` lets the chunk in
flight finish and reads no more until ``resume-snapshot``; streaming goes on. Debezium keeps the
pause in memory only, so its restart resumes the snapshot; Kopycat also stores
``incremental_snapshot_paused: true`` while paused (Debezium ignores the key), because every
scheduled run is a restart and a pause must outlast it. An execute-snapshot signal of ``"type":
"blocking"`` (Debezium's ``doBlockingSnapshot``) reads its tables whole at the commit of the
signal's transaction, before the stream reads on; a run cut inside it resumes it (see
:mod:`blocking_snapshot`).
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Final

import psycopg

from kopycat.api.data import Struct
from kopycat.api.errors import ConnectError
from kopycat.api.record_batch import SourceRecordBatch
from kopycat.api.records import SourceRecord
from kopycat.connectors.postgres_cdc.blocking_snapshot import BlockingSnapshot
from kopycat.connectors.postgres_cdc.config import CdcSettings
from kopycat.connectors.postgres_cdc.events import SourcePosition, TableEvents
from kopycat.connectors.postgres_cdc.java_keys import JavaKeyError, JavaKind, KeyValue, read_keys, write_keys
from kopycat.connectors.postgres_cdc.pgoutput import Relation
from kopycat.connectors.postgres_cdc.replication import PostgresSource
from kopycat.connectors.postgres_cdc.signals import (
    EXECUTE_SNAPSHOT,
    PAUSE_SNAPSHOT,
    RESUME_SNAPSHOT,
    STOP_SNAPSHOT,
    WINDOW_CLOSE,
    WINDOW_OPEN,
    Signal,
    SignalError,
    SignalTable,
    additional_conditions,
    snapshot_collections,
    snapshot_type,
)
from kopycat.connectors.postgres_cdc.snapshot_keys import UnsupportedKeyError, key_kinds, key_values

__all__ = ["COLLECTIONS_KEY", "INCREMENTAL", "MAXIMUM_KEY", "PAUSED_KEY", "PRIMARY_KEY", "IncrementalSnapshot"]

log = logging.getLogger(__name__)

COLLECTIONS_KEY: Final = "incremental_snapshot_collections"
PRIMARY_KEY: Final = "incremental_snapshot_primary_key"
MAXIMUM_KEY: Final = "incremental_snapshot_maximum_key"
CORRELATION_KEY: Final = "incremental_snapshot_correlation_id"
PAUSED_KEY: Final = "incremental_snapshot_paused"
"""Kopycat's own key, present only while paused: Debezium keeps its pause in memory."""
_CONDITION: Final = f"{COLLECTIONS_KEY}_additional_condition"
_OFFSET_KEYS: Final = (PRIMARY_KEY, MAXIMUM_KEY, COLLECTIONS_KEY, CORRELATION_KEY, PAUSED_KEY)
INCREMENTAL: Final = "INCREMENTAL"
"""The ``snapshot`` of an ``r`` event's offset: a streaming position, not an unfinished initial snapshot."""
_READ_OFFSET: Final = {"snapshot": INCREMENTAL, "last_snapshot_record": False, "snapshot_completed": False}


class IncrementalSnapshot:
    """One task's incremental snapshot context (``AbstractIncrementalSnapshotContext``) and its chunk reads."""

    def __init__(self, settings: CdcSettings, partition: dict[str, Any], captured: Sequence[str],
                 stored: Mapping[str, Any] | None, *, columnar: bool = False) -> None:
        assert settings.signal_table is not None
        self.settings, self.partition, self.captured = settings, partition, list(captured)
        self.columnar = columnar  # a blocking snapshot's chunks may be batches of columns
        self.signals = SignalTable(*settings.signal_table)
        self.db: PostgresSource | None = None
        self.collections: list[str] = []  # the table being read first, as Debezium's queue
        self.conditions: dict[str, str] = {}  # a table's additional condition as stored: "(filter)"
        self.correlation: str | None = None
        self.sent: list[KeyValue] | None = None  # key of the last r event: where a restart reads on
        self.position: list[KeyValue] | None = None  # end of the chunk read last
        self.maximum: list[KeyValue] | None = None
        self.paused = False
        self.chunk_id: str | None = None
        self.window_open = self.in_flight = False  # in flight: a chunk's close watermark is still to come
        self.window: dict[tuple[Any, ...], tuple[list[KeyValue], list[Any]]] = {}  # event key -> (key, row)
        self.table: TableEvents | None = None
        self.kinds: list[JavaKind] = []
        self.blocking = BlockingSnapshot(settings.jvm_zone)  # tables read whole at the signal's commit
        self.close_due = False  # the current chunk's close row is in the transaction being decoded
        self.start_due = False  # a signal queued tables while no chunk was in flight
        self.end = 0  # the WAL position past the last watermark written: the stream must read to it
        self.chunks = self.events = 0
        self.stored_state: tuple[Any, ...] | None = None
        self.stored_keys: dict[str, Any] = {}
        self.blocking.load(stored)
        self._load(stored or {})

    # ------------------------------------------------------------------ offsets

    def _load(self, stored: Mapping[str, Any]) -> None:
        """``AbstractIncrementalSnapshotContext.init``: the queue and keys of a stored offset."""
        if not stored.get(COLLECTIONS_KEY):
            return
        try:
            items = json.loads(stored[COLLECTIONS_KEY])
            self.collections = [item[f"{COLLECTIONS_KEY}_id"] for item in items]
            self.conditions = {item[f"{COLLECTIONS_KEY}_id"]: f"({item[_CONDITION]})" for item in items
                               if item.get(_CONDITION)}  # Debezium's reload parenthesizes once more
            zone = self.settings.jvm_zone
            self.sent = self.position = read_keys(stored[PRIMARY_KEY], zone) if stored.get(PRIMARY_KEY) else None
            self.maximum = read_keys(stored[MAXIMUM_KEY], zone) if stored.get(MAXIMUM_KEY) else None
        except (ValueError, KeyError, TypeError, JavaKeyError) as exc:
            raise ConnectError(f"The stored offset's incremental snapshot state cannot be read ({exc}): "
                               f"{COLLECTIONS_KEY}={stored.get(COLLECTIONS_KEY)!r}, {PRIMARY_KEY}="
                               f"{stored.get(PRIMARY_KEY)!r}: store the offset without the incremental_snapshot_* "
                               f"keys to drop that snapshot, then insert a new execute-snapshot signal") from None
        self.correlation = stored.get(CORRELATION_KEY)
        self.paused = stored.get(PAUSED_KEY) is True
        self.start_due = bool(self.collections)
        log.info("Incremental snapshot of %s %s after key %s", self.collections,
                 "stays paused" if self.paused else "resumes", self.sent)

    def store(self, offset: dict[str, Any]) -> dict[str, Any]:
        """``offset`` with the snapshot's keys while one runs, without them otherwise (every offset: keep it cheap)."""
        if not self.collections:
            if COLLECTIONS_KEY in offset:  # an offset carried over from when a snapshot ran
                for key in _OFFSET_KEYS:
                    offset.pop(key, None)
            return offset
        state = (self.sent, self.maximum, self.collections, self.correlation, self.paused)
        if self.stored_state != state:
            self.stored_state, self.stored_keys = _copy(state), self._keys()
        offset.update(self.stored_keys)
        return offset

    def _keys(self) -> dict[str, Any]:
        kinds = self.kinds or self._kinds(self._events(self.collections[0])) or []
        collections = [{f"{COLLECTIONS_KEY}_id": name, _CONDITION: self.conditions.get(name),
                        f"{COLLECTIONS_KEY}_surrogate_key": None} for name in self.collections]
        zone = self.settings.jvm_zone
        keys = {PRIMARY_KEY: write_keys(self.sent, kinds, zone), MAXIMUM_KEY: write_keys(self.maximum, kinds, zone),
                COLLECTIONS_KEY: json.dumps(collections, separators=(",", ":")), CORRELATION_KEY: self.correlation}
        return {**keys, PAUSED_KEY: True} if self.paused else keys

    # ------------------------------------------------------------------ the change stream's hooks

    def relation(self, relation: Relation) -> int:
        """The signal table's oid once its relation was decoded (-1 before)."""
        self.signals.relation(relation)
        return self.signals.oid

    def signal(self, values: Sequence[object]) -> None:
        """A row inserted into the signal table, decoded in commit order."""
        signal = self.signals.signal(values)
        if signal.type == WINDOW_OPEN:
            self.window_open = self.window_open or signal.id == f"{self.chunk_id}-open"
        elif signal.type == WINDOW_CLOSE:
            if signal.id == f"{self.chunk_id}-close":
                self.window_open, self.in_flight, self.close_due = False, False, True
        elif signal.type in (PAUSE_SNAPSHOT, RESUME_SNAPSHOT):
            self._pause(signal)
        elif signal.type in (EXECUTE_SNAPSHOT, STOP_SNAPSHOT):
            try:
                self._act(signal)
            except SignalError as exc:
                log.warning("Signal ignored: %s", exc)
        else:
            log.warning("Signal %s of type %r ignored: Kopycat runs %s, %s, %s and %s", signal.id, signal.type,
                        EXECUTE_SNAPSHOT, STOP_SNAPSHOT, PAUSE_SNAPSHOT, RESUME_SNAPSHOT)

    def _pause(self, signal: Signal) -> None:
        """``pauseSnapshot``/``resumeSnapshot``: only a running snapshot pauses; resuming reads the next chunk
        unless the chunk in flight will (its close watermark is still to come)."""
        paused = signal.type == PAUSE_SNAPSHOT
        if not self.collections or self.paused == paused:
            log.info("Signal %s (%s) ignored: the incremental snapshot is %s", signal.id, signal.type,
                     "not running" if not self.collections else "already " + ("paused" if paused else "running"))
            return
        log.info("Signal %s: incremental snapshot of %s %s", signal.id, self.collections,
                 "paused" if paused else "resumed")
        self.paused = paused
        self.start_due = not paused and not self.in_flight

    def _act(self, signal: Signal) -> None:
        names = snapshot_collections(signal, self.captured)
        if signal.type == EXECUTE_SNAPSHOT and snapshot_type(signal) == "blocking":
            if additional_conditions(signal, names):
                raise SignalError(f"signal {signal.id}: additional-conditions are supported for incremental "
                                  f"snapshots only: drop them, or send \"type\": \"incremental\"")
            log.info("Signal %s: blocking snapshot of %s at its commit", signal.id, names)
            self.blocking.queue(names)
            return
        if signal.type == EXECUTE_SNAPSHOT:
            conditions = additional_conditions(signal, names)
            names = [n for n in names if n not in self.collections and self._readable(n)]
            log.info("Signal %s: incremental snapshot of %s (filters %s)", signal.id, names, conditions)
            if not self.collections and names:
                self.start_due, self.correlation = True, signal.id
            self.collections += names
            self.conditions.update({n: f"({conditions[n]})" for n in names if n in conditions})
            return
        log.info("Signal %s: incremental snapshot of %s stopped", signal.id, names)
        current = self.collections[0] if self.collections else None
        self.collections = [n for n in self.collections if n not in names]
        self.conditions = {n: c for n, c in self.conditions.items() if n in self.collections}
        if current is not None and current not in self.collections:
            self._reset()
            self.start_due = bool(self.collections)

    def seen(self, table: TableEvents, texts: Sequence[object] | None) -> None:
        """A streamed change inside the open window: the log has a newer row than the chunk (DBLog).

        ``texts`` is the change's row as decoded from the WAL; only its key columns are converted.
        """
        if texts is not None and self.table is not None and table.collection == self.table.collection:
            self.window.pop(_window_key(table, texts), None)

    def committed(self, offset: Mapping[str, Any], xid: int) -> Iterator[SourceRecord | SourceRecordBatch]:
        """After each commit: the closed chunk's rows as ``r`` events, then the next chunk's read."""
        if self.close_due:
            self.close_due = False
            yield from self._emit(offset, xid)
            self.start_due = True
        if self.blocking.tables:
            yield from self.blocking.records(self._db(), self._events, self.partition, offset,
                                             columnar=self.columnar, batch_rows=self.settings.max_batch)
        self.resume()

    def resume_blocking(self) -> Iterator[SourceRecord | SourceRecordBatch]:
        """The rest of a blocking snapshot a cut run left, before the stream reads on from its signal."""
        if self.blocking.resumed is not None:  # else no connection: most runs have nothing to resume
            yield from self.blocking.records(self._db(), self._events, self.partition, self.blocking.resumed,
                                             columnar=self.columnar, batch_rows=self.settings.max_batch)

    def resume(self) -> None:
        """Read a chunk if one is due: after a signal, a closed chunk, or a restart mid-snapshot
        (Debezium's ``init`` reads a new chunk from the stored key); none while paused."""
        if self.start_due:
            self.start_due = False
            if self.paused:
                log.info("Incremental snapshot of %s is paused after key %s", self.collections, self.sent)
                return
            self.read_chunk()

    # ------------------------------------------------------------------ chunks

    def read_chunk(self) -> None:
        """``readChunk``: open watermark, the next rows of the current table, close watermark."""
        if not self.collections:
            return
        chunk = self.chunk_id = str(uuid.uuid4())  # the close row keeps it when the snapshot ends in between
        opened = datetime.now(UTC).isoformat().replace("+00:00", "Z")
        self._watermark(f"{chunk}-open", WINDOW_OPEN, f'{{"openWindowTimestamp": "{opened}"}}')
        while self.collections and not self._read_rows():
            self._next_table()
        self.in_flight = bool(self.collections)
        self.chunk_id = chunk if self.in_flight else None  # a finished table's reset cleared it
        closed = datetime.now(UTC).isoformat().replace("+00:00", "Z")
        self._watermark(f"{chunk}-close", WINDOW_CLOSE,
                        f'{{"openWindowTimestamp": "{opened}", "closeWindowTimestamp": "{closed}"}}')
        self.end = self._db().current_lsn()

    def _read_rows(self) -> bool:
        """The next chunk of the current table into the window; False when the table is done."""
        name = self.collections[0]
        table = self.table = self._events(name)
        kinds = self._kinds(table)
        if kinds is None:
            return False
        self.kinds = kinds
        relation = f'"{table.schema_name}"."{table.table}"'
        names = [f'{relation}."{table.columns[i].name}"' for i in table.key_index]  # the columns, not the texts
        keys = ", ".join(names)
        columns = ", ".join(f'"{c.name}"::text' for c in table.columns)
        select = f"SELECT {columns} FROM {relation}"
        condition = self.conditions.get(name)
        if self.maximum is None:
            row = self._maximum_row(name, select, names, condition)
            if row is None:
                return False
            self.maximum = key_values(row, table.key_index, kinds)
        marks = ", ".join(["%s"] * len(table.key_index))
        where, params = f"({keys}) <= ({marks})", list(self.maximum)
        if self.position is not None:
            where, params = f"({keys}) > ({marks}) AND {where}", [*self.position, *params]
        if condition:
            where += f" AND {condition}"
        rows = self._db().conn.execute(
            f"{select} WHERE {where} ORDER BY {keys} LIMIT {self.settings.chunk_size}", params).fetchall()
        if not rows:
            log.info("Incremental snapshot of table %s done", name)
            return False
        self.window = {}
        for texts in rows:
            values = table.row(texts) or []
            self.window[_window_key(table, texts)] = (key_values(texts, table.key_index, kinds), values)
        self.position = next(reversed(self.window.values()))[0]
        self.chunks += 1
        return True

    def _maximum_row(self, name: str, select: str, names: list[str], condition: str | None) -> Any:
        """The row of the largest key (among those the table's filter matches); None if no row or a bad filter.

        A filter PostgreSQL rejects skips the table, as Debezium does when its maximum-key query fails.
        """
        where = f" WHERE {condition}" if condition else ""
        try:
            row = self._db().conn.execute(
                f"{select}{where} ORDER BY {', '.join(n + ' DESC' for n in names)} LIMIT 1").fetchone()
        except psycopg.Error as exc:
            problem = str(exc).strip().splitlines()[0]
            log.error("Incremental snapshot skips %s: its additional-conditions filter %s fails (%s); insert a new "
                      "execute-snapshot signal with a filter PostgreSQL accepts for that table", name, condition,
                      problem)
            return None
        if row is None:
            log.info("Incremental snapshot: table %s has no rows%s", name, f" matching {condition}" * bool(condition))
        return row

    def _readable(self, name: str) -> bool:
        """Whether an execute-snapshot signal may queue ``name``: a table whose key the offsets can carry."""
        return self._kinds(self._events(name)) is not None

    def _kinds(self, table: TableEvents) -> list[JavaKind] | None:
        """The Java class of each key column; None (logged as an error naming table, column, type and fix)
        when the offsets cannot carry the key. Not raised: a signal anyone may insert must not stop the
        capture, and a failed task would decode the same signal again after every restart."""
        try:
            return key_kinds(table, self._type_name)
        except UnsupportedKeyError as exc:
            log.error("Incremental snapshot refuses %s", exc)
            return None

    def _type_name(self, oid: int) -> str:
        row = self._db().conn.execute("SELECT format_type(%s, NULL)", (oid,)).fetchone()
        return str(row[0]) if row else f"oid {oid}"

    def _next_table(self) -> None:
        self.collections.pop(0)
        self._reset()
        if not self.collections:
            log.info("Incremental snapshot completed: %d chunks, %d events", self.chunks, self.events)
            self.correlation = None

    def _reset(self) -> None:
        self.sent = self.position = self.maximum = None
        self.table, self.window, self.window_open, self.chunk_id, self.kinds = None, {}, False, None, []

    def _emit(self, offset: Mapping[str, Any], xid: int) -> Iterator[SourceRecord]:
        table = self.table
        if table is None:
            return
        ts_us = time.time_ns() // 1000
        where = SourcePosition(ts_us, xid, offset.get("lsn"), offset.get("lsn_commit"), "incremental")
        offset = {**offset, **_READ_OFFSET}  # as Debezium's r events: the snapshot keys of its SourceInfo
        for key, values in self.window.values():
            self.sent = key
            self.events += 1
            yield SourceRecord.of(self.partition, self.store(dict(offset)), table.topic, None, table.key_schema,
                                  table.key(values), table.envelope_schema, table.envelope("r", None, values, where))
        self.window = {}

    def _watermark(self, row_id: str, kind: str, data: str) -> None:
        schema, name = self.signals.schema, self.signals.table
        try:
            self._db().conn.execute(f'INSERT INTO "{schema}"."{name}" VALUES (%s, %s, %s)',
                                    (row_id, kind, data))
        except psycopg.Error as exc:
            problem = str(exc).strip().splitlines()[0]
            raise ConnectError(
                f"signal.data.collection={schema}.{name}: the incremental snapshot cannot write its watermark "
                f"({problem}): create the table with CREATE TABLE \"{schema}\".\"{name}\" (id VARCHAR(42) "
                f"PRIMARY KEY, type VARCHAR(32) NOT NULL, data VARCHAR(2048)); and GRANT INSERT ON it to "
                f"{self.settings.user}") from exc

    def _events(self, name: str) -> TableEvents:
        schema, _, table = name.partition(".")
        columns, key = self._db().table_columns(schema, table)
        return TableEvents(self.settings.prefix, self.settings.dbname, schema, table, columns, key,
                           decimal_mode=self.settings.decimal_mode, time_mode=self.settings.time_mode)

    def _db(self) -> PostgresSource:
        """Its own autocommit connection: each watermark commits at once, each chunk reads a fresh snapshot."""
        if self.db is None:
            self.db = PostgresSource(self.settings)
        return self.db

    def close(self) -> None:
        if self.db is not None:
            self.db.close()
            self.db = None


def _window_key(table: TableEvents, texts: Sequence[object]) -> tuple[Any, ...]:
    """A row's key columns converted as its event's key (the same for a chunk's row and a WAL change);
    a struct value (a NUMERIC without precision: ``VariableScaleDecimal``) as the tuple of its fields."""
    converters = table.converters
    key = [None if texts[i] is None else converters[i](texts[i]) for i in table.key_index]  # type: ignore[arg-type]
    return tuple(tuple(v.values()) if isinstance(v, Struct) else v for v in key)


def _copy(state: tuple[Any, ...]) -> tuple[Any, ...]:
    """The state's lists copied: the snapshot mutates them in place."""
    return tuple(list(item) if isinstance(item, list) else item for item in state)

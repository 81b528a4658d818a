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
from kopycat.api.records import SourceRecord
from kopycat.connectors.postgres_cdc.config import CdcSettings
from kopycat.connectors.postgres_cdc.events import SourcePosition, TableEvents
from kopycat.connectors.postgres_cdc.java_keys import JavaKeyError, JavaKind, read_keys, write_keys
from kopycat.connectors.postgres_cdc.pgoutput import Relation
from kopycat.connectors.postgres_cdc.replication import PostgresSource
from kopycat.connectors.postgres_cdc.signals import (
    EXECUTE_SNAPSHOT,
    STOP_SNAPSHOT,
    WINDOW_CLOSE,
    WINDOW_OPEN,
    Signal,
    SignalError,
    SignalTable,
    snapshot_collections,
)
from kopycat.connectors.postgres_cdc.values import BPCHAR, INT2, INT4, INT8, TEXT, VARCHAR

__all__ = ["COLLECTIONS_KEY", "INCREMENTAL", "MAXIMUM_KEY", "PRIMARY_KEY", "IncrementalSnapshot"]

log = logging.getLogger(__name__)

COLLECTIONS_KEY: Final = "incremental_snapshot_collections"
PRIMARY_KEY: Final = "incremental_snapshot_primary_key"
MAXIMUM_KEY: Final = "incremental_snapshot_maximum_key"
CORRELATION_KEY: Final = "incremental_snapshot_correlation_id"
_OFFSET_KEYS: Final = (PRIMARY_KEY, MAXIMUM_KEY, COLLECTIONS_KEY, CORRELATION_KEY)
INCREMENTAL: Final = "INCREMENTAL"
"""The ``snapshot`` of an ``r`` event's offset: a streaming position, not an unfinished initial snapshot."""
_READ_OFFSET: Final = {"snapshot": INCREMENTAL, "last_snapshot_record": False, "snapshot_completed": False}
_JAVA_KINDS: Final[dict[int, JavaKind]] = {INT2: "Integer", INT4: "Integer", INT8: "Long", TEXT: "String",
                                            VARCHAR: "String", BPCHAR: "String"}


class IncrementalSnapshot:
    """One task's incremental snapshot context (``AbstractIncrementalSnapshotContext``) and its chunk reads."""

    def __init__(self, settings: CdcSettings, partition: dict[str, Any], captured: Sequence[str],
                 stored: Mapping[str, Any] | None) -> None:
        assert settings.signal_table is not None
        self.settings, self.partition, self.captured = settings, partition, list(captured)
        self.signals = SignalTable(*settings.signal_table)
        self.db: PostgresSource | None = None
        self.collections: list[str] = []  # the table being read first, as Debezium's queue
        self.correlation: str | None = None
        self.sent: list[Any] | None = None  # key of the last r event: where a restart reads on
        self.position: list[Any] | None = None  # end of the chunk read last
        self.maximum: list[Any] | None = None
        self.chunk_id: str | None = None
        self.window_open = False
        self.window: dict[tuple[Any, ...], list[Any]] = {}
        self.table: TableEvents | None = None
        self.close_due = False  # the current chunk's close row is in the transaction being decoded
        self.start_due = False  # a signal queued tables while no chunk was in flight
        self.end = 0  # the WAL position past the last watermark written: the stream must read to it
        self.chunks = self.events = 0
        self.stored_state: tuple[Any, ...] | None = None
        self.stored_keys: dict[str, Any] = {}
        self._load(stored or {})

    # ------------------------------------------------------------------ offsets

    def _load(self, stored: Mapping[str, Any]) -> None:
        """``AbstractIncrementalSnapshotContext.init``: the queue and keys of a stored offset."""
        if not stored.get(COLLECTIONS_KEY):
            return
        try:
            self.collections = [item[f"{COLLECTIONS_KEY}_id"] for item in json.loads(stored[COLLECTIONS_KEY])]
            self.sent = self.position = read_keys(stored[PRIMARY_KEY]) if stored.get(PRIMARY_KEY) else None
            self.maximum = read_keys(stored[MAXIMUM_KEY]) if stored.get(MAXIMUM_KEY) else None
        except (ValueError, KeyError, TypeError, JavaKeyError) as exc:
            raise ConnectError(f"The stored offset's incremental snapshot state cannot be read ({exc}): "
                               f"{COLLECTIONS_KEY}={stored.get(COLLECTIONS_KEY)!r}, {PRIMARY_KEY}="
                               f"{stored.get(PRIMARY_KEY)!r}: store the offset without the incremental_snapshot_* "
                               f"keys to drop that snapshot, then insert a new execute-snapshot signal") from None
        self.correlation = stored.get(CORRELATION_KEY)
        self.start_due = bool(self.collections)
        log.info("Incremental snapshot of %s resumes after key %s", self.collections, self.sent)

    def store(self, offset: dict[str, Any]) -> dict[str, Any]:
        """``offset`` with the snapshot's keys while one runs, without them otherwise (every offset: keep it cheap)."""
        if not self.collections:
            if COLLECTIONS_KEY in offset:  # an offset carried over from when a snapshot ran
                for key in _OFFSET_KEYS:
                    offset.pop(key, None)
            return offset
        state = (self.sent, self.maximum, self.collections, self.correlation)
        if self.stored_state != state:
            self.stored_state, self.stored_keys = _copy(state), self._keys()
        offset.update(self.stored_keys)
        return offset

    def _keys(self) -> dict[str, Any]:
        table = self.table or self._events(self.collections[0])
        kinds = [_JAVA_KINDS.get(table.columns[i].type_oid, "String") for i in table.key_index]
        collections = [{f"{COLLECTIONS_KEY}_id": name, f"{COLLECTIONS_KEY}_additional_condition": None,
                        f"{COLLECTIONS_KEY}_surrogate_key": None} for name in self.collections]
        return {PRIMARY_KEY: write_keys(self.sent, kinds), MAXIMUM_KEY: write_keys(self.maximum, kinds),
                COLLECTIONS_KEY: json.dumps(collections, separators=(",", ":")), CORRELATION_KEY: self.correlation}

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
                self.window_open, self.close_due = False, True
        elif signal.type in (EXECUTE_SNAPSHOT, STOP_SNAPSHOT):
            try:
                self._act(signal)
            except SignalError as exc:
                log.warning("Signal ignored: %s", exc)
        else:
            log.warning("Signal %s of type %r ignored: Kopycat runs %s and %s", signal.id, signal.type,
                        EXECUTE_SNAPSHOT, STOP_SNAPSHOT)

    def _act(self, signal: Signal) -> None:
        names = snapshot_collections(signal, self.captured)
        if signal.type == EXECUTE_SNAPSHOT:
            log.info("Signal %s: incremental snapshot of %s", signal.id, names)
            if not self.collections:
                self.start_due, self.correlation = True, signal.id
            self.collections += [n for n in names if n not in self.collections]
            return
        log.info("Signal %s: incremental snapshot of %s stopped", signal.id, names)
        current = self.collections[0] if self.collections else None
        self.collections = [n for n in self.collections if n not in names]
        if current is not None and current not in self.collections:
            self._reset()
            self.start_due = bool(self.collections)

    def seen(self, table: TableEvents, key: Struct | None) -> None:
        """A streamed change inside the open window: the log has a newer row than the chunk (DBLog)."""
        if key is not None and self.table is not None and table.collection == self.table.collection:
            self.window.pop(key.values(), None)

    def committed(self, offset: Mapping[str, Any], xid: int) -> Iterator[SourceRecord]:
        """After each commit: the closed chunk's rows as ``r`` events, then the next chunk's read."""
        if self.close_due:
            self.close_due = False
            yield from self._emit(offset, xid)
            self.start_due = True
        self.resume()

    def resume(self) -> None:
        """Read a chunk if one is due: after a signal, a closed chunk, or a restart mid-snapshot
        (Debezium's ``init`` reads a new chunk from the stored key)."""
        if self.start_due:
            self.start_due = False
            self.read_chunk()

    # ------------------------------------------------------------------ chunks

    def read_chunk(self) -> None:
        """``readChunk``: open watermark, the next rows of the current table, close watermark."""
        if not self.collections:
            return
        self.chunk_id = str(uuid.uuid4())
        opened = datetime.now(UTC).isoformat().replace("+00:00", "Z")
        self._watermark("-open", WINDOW_OPEN, f'{{"openWindowTimestamp": "{opened}"}}')
        while self.collections and not self._read_rows():
            self._next_table()
        closed = datetime.now(UTC).isoformat().replace("+00:00", "Z")
        self._watermark("-close", WINDOW_CLOSE,
                        f'{{"openWindowTimestamp": "{opened}", "closeWindowTimestamp": "{closed}"}}')
        self.end = self._db().current_lsn()

    def _read_rows(self) -> bool:
        """The next chunk of the current table into the window; False when the table is done."""
        name = self.collections[0]
        table = self.table = self._events(name)
        if not self._supported(table):
            return False
        relation = f'"{table.schema_name}"."{table.table}"'
        names = [f'{relation}."{table.columns[i].name}"' for i in table.key_index]  # the columns, not the texts
        keys = ", ".join(names)
        columns = ", ".join(f'"{c.name}"::text' for c in table.columns)
        select = f"SELECT {columns} FROM {relation}"
        db = self._db()
        if self.maximum is None:
            row = db.conn.execute(f"{select} ORDER BY {', '.join(n + ' DESC' for n in names)} LIMIT 1").fetchone()
            if row is None:
                log.info("Incremental snapshot: table %s is empty", name)
                return False
            self.maximum = [(table.row(row) or [])[i] for i in table.key_index]
        marks = ", ".join(["%s"] * len(table.key_index))
        where, params = f"({keys}) <= ({marks})", list(self.maximum)
        if self.position is not None:
            where, params = f"({keys}) > ({marks}) AND {where}", [*self.position, *params]
        rows = db.conn.execute(f"{select} WHERE {where} ORDER BY {keys} LIMIT {self.settings.chunk_size}",
                               params).fetchall()
        if not rows:
            log.info("Incremental snapshot of table %s done", name)
            return False
        self.window = {}
        for texts in rows:
            values = table.row(texts) or []
            self.window[tuple(values[i] for i in table.key_index)] = values
        self.position = list(next(reversed(self.window)))
        self.chunks += 1
        return True

    def _supported(self, table: TableEvents) -> bool:
        """A primary key of integer or text columns: what Debezium's offsets can carry here."""
        if not table.key_index:
            log.warning("Incremental snapshot skips %s: it has no primary key (give it one)", table.collection)
            return False
        odd = [table.columns[i] for i in table.key_index if table.columns[i].type_oid not in _JAVA_KINDS]
        if odd:
            log.warning("Incremental snapshot skips %s: primary key column %s has type oid %d; only int2, int4, "
                        "int8, text, varchar and char keys are supported (snapshot it with snapshot.mode=initial "
                        "under a new slot.name instead)", table.collection, odd[0].name, odd[0].type_oid)
            return False
        return True

    def _next_table(self) -> None:
        self.collections.pop(0)
        self._reset()
        if not self.collections:
            log.info("Incremental snapshot completed: %d chunks, %d events", self.chunks, self.events)
            self.correlation = None

    def _reset(self) -> None:
        self.sent = self.position = self.maximum = None
        self.table, self.window, self.window_open, self.chunk_id = None, {}, False, None

    def _emit(self, offset: Mapping[str, Any], xid: int) -> Iterator[SourceRecord]:
        table = self.table
        if table is None:
            return
        ts_us = time.time_ns() // 1000
        where = SourcePosition(ts_us, xid, offset.get("lsn"), offset.get("lsn_commit"), "incremental")
        offset = {**offset, **_READ_OFFSET}  # as Debezium's r events: the snapshot keys of its SourceInfo
        for key, values in self.window.items():
            self.sent = list(key)
            self.events += 1
            yield SourceRecord.of(self.partition, self.store(dict(offset)), table.topic, None, table.key_schema,
                                  table.key(values), table.envelope_schema, table.envelope("r", None, values, where))
        self.window = {}

    def _watermark(self, suffix: str, kind: str, data: str) -> None:
        schema, name = self.signals.schema, self.signals.table
        try:
            self._db().conn.execute(f'INSERT INTO "{schema}"."{name}" VALUES (%s, %s, %s)',
                                    (f"{self.chunk_id}{suffix}", kind, data))
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


def _copy(state: tuple[Any, ...]) -> tuple[Any, ...]:
    """The state's lists copied: the snapshot mutates them in place."""
    return tuple(list(item) if isinstance(item, list) else item for item in state)

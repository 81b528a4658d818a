"""A blocking snapshot that a cut run resumes: its tables in primary-key order, its progress in the offsets.

An ``execute-snapshot`` signal of ``"type": "blocking"`` (Debezium 3.6's
``ChangeEventSourceCoordinator.doBlockingSnapshot``) reads its tables whole after the commit of the
signal's transaction, while the stream waits; each ``r`` event's offset is that commit's streaming
offset with ``snapshot: "BLOCKING"`` (Debezium's ``SnapshotType``) and ``snapshot_completed``
false until the last row.

Debezium does not resume a blocking snapshot cut short: its restart finds ``snapshot: BLOCKING``,
which ``CommonOffsetContext.isInitialSnapshotRunning`` does not count as a snapshot to redo
(DBZ-7903), and streams on after the signal: the rest of the tables never arrive unless someone
signals again. Kopycat does better, because each scheduled run is a restart and a bounded run may
end inside any snapshot: the ``r`` events' offsets also carry Kopycat's own keys (Debezium ignores
them, as it ignores ``incremental_snapshot_paused``):

- ``blocking_snapshot_collections``: the JSON list of the tables still to read, the current first;
- ``blocking_snapshot_primary_key``: the key of the last ``r`` event of the current table, as the
  incremental snapshot stores its keys (:mod:`java_keys`); null for a table whose key the offsets
  cannot carry (no primary key, or a type :mod:`snapshot_keys` refuses).

Tables are read in primary-key order, so the next run, before it streams, reads the current table
after that key and then the others: every row arrives as an ``r`` event at least once (a table
without such a key is read again from its start), and the stream reads on from the signal's
commit, so each change made since then arrives once, after the snapshot. Rows are read as of the
resumed run, as Debezium's blocking snapshot reads them as of its own start: a row changed
in between arrives as its newer ``r`` event, and the stream then replays that change.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import tzinfo
from typing import Any, Final

from kopycat.api.errors import ConnectError
from kopycat.api.record_batch import SourceRecordBatch
from kopycat.api.records import SourceRecord
from kopycat.connectors.postgres_cdc.events import TableEvents
from kopycat.connectors.postgres_cdc.java_keys import JavaKeyError, JavaKind, KeyValue, read_keys, write_keys
from kopycat.connectors.postgres_cdc.replication import PostgresSource
from kopycat.connectors.postgres_cdc.snapshot import BLOCKING, snapshot_records
from kopycat.connectors.postgres_cdc.snapshot_keys import UnsupportedKeyError, key_kinds, key_values

__all__ = ["COLLECTIONS_KEY", "PRIMARY_KEY", "BlockingSnapshot", "without_progress"]

log = logging.getLogger(__name__)

COLLECTIONS_KEY: Final = "blocking_snapshot_collections"
PRIMARY_KEY: Final = "blocking_snapshot_primary_key"


def without_progress(offset: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """``offset`` without the blocking snapshot's keys: the streaming position it was taken at."""
    if offset is None:
        return None
    return {k: v for k, v in offset.items() if k not in (COLLECTIONS_KEY, PRIMARY_KEY)}


class BlockingSnapshot:
    """The tables a blocking snapshot still reads and where the current one stands (one task's)."""

    def __init__(self, zone: tzinfo) -> None:
        self.zone = zone  # the JVM zone java.sql.Date keys are written in (see java_keys)
        self.tables: list[str] = []  # queued by a signal of the transaction being decoded, or left by a cut run
        self.after: list[KeyValue] | None = None  # the stored key in tables[0]: a resumed read starts past it
        self.resumed: dict[str, Any] | None = None  # the streaming offset a cut run left: resume before streaming
        self.remaining = ""  # the JSON of the tables still to read, the current first
        self.kinds: list[JavaKind] | None = None  # the current table's key classes; None: no storable key

    def load(self, stored: Mapping[str, Any] | None) -> None:
        """The snapshot a run cut short left in its last ``r`` event's offset (nothing once it completed)."""
        if not stored or stored.get("snapshot") != BLOCKING or stored.get("snapshot_completed") \
                or not stored.get(COLLECTIONS_KEY):
            return
        try:
            tables = json.loads(stored[COLLECTIONS_KEY])
            after = read_keys(stored[PRIMARY_KEY], self.zone) if stored.get(PRIMARY_KEY) else None
            if not isinstance(tables, list) or not all(isinstance(t, str) for t in tables):
                raise ValueError("not a list of table names")
        except (ValueError, TypeError, JavaKeyError) as exc:
            raise ConnectError(f"The stored offset's blocking snapshot state cannot be read ({exc}): "
                               f"{COLLECTIONS_KEY}={stored.get(COLLECTIONS_KEY)!r}, {PRIMARY_KEY}="
                               f"{stored.get(PRIMARY_KEY)!r}: store the offset without the blocking_snapshot_* keys "
                               f"to drop that snapshot, then insert a new execute-snapshot signal") from None
        self.tables, self.after, self.resumed = tables, after, without_progress(stored)
        log.info("Blocking snapshot of %s resumes after key %s, before the stream reads on", tables, after)

    def queue(self, names: Sequence[str]) -> None:
        self.tables += [n for n in names if n not in self.tables]

    def records(self, db: PostgresSource, events_of: Callable[[str], TableEvents], partition: dict[str, Any],
                offset: Mapping[str, Any], *, columnar: bool, batch_rows: int
                ) -> Iterator[SourceRecord | SourceRecordBatch]:
        """Every queued table's rows as ``r`` events at ``offset`` (a streaming position), in key order
        (``columnar`` and ``batch_rows``: as :func:`.snapshot.snapshot_records` takes them)."""
        names = list(self.tables)
        log.info("Blocking snapshot of %s: the stream waits until it is read", names)
        yield from snapshot_records(db, [events_of(n) for n in names], partition, offset.get("lsn") or 0, [],
                                    streamed=dict(offset), progress=self, columnar=columnar, batch_rows=batch_rows)
        self.tables, self.after, self.resumed = [], None, None

    # ------------------------------------------------------------------ snapshot_records' hooks

    def select(self, table: TableEvents, columns: str) -> tuple[str, list[KeyValue]]:
        """The query of ``table``: in key order, past the stored key when it is the table a cut run was in."""
        relation = f'"{table.schema_name}"."{table.table}"'
        current = self.tables.index(table.collection) if table.collection in self.tables else 0
        after, self.after = (self.after if current == 0 else None), None
        self.remaining = json.dumps(self.tables[current:], separators=(",", ":"))
        self.kinds = _kinds(table)
        if self.kinds is None:
            return f"SELECT {columns} FROM {relation}", []
        keys = ", ".join(f'{relation}."{table.columns[i].name}"' for i in table.key_index)  # not the ::text outputs
        if after is None:
            return f"SELECT {columns} FROM {relation} ORDER BY {keys}", []
        marks = ", ".join(["%s"] * len(after))
        return f"SELECT {columns} FROM {relation} WHERE ({keys}) > ({marks}) ORDER BY {keys}", list(after)

    def progress_of(self, table: TableEvents) -> Callable[[Sequence[Any]], dict[str, Any]]:
        """The keys of the offset after each row of ``table`` (the table :meth:`select` just read): the tables
        left and the row's key. Bound now: a chunk's records may be made after the next table's select."""
        remaining, kinds, zone = self.remaining, self.kinds, self.zone

        def keys(texts: Sequence[Any]) -> dict[str, Any]:
            key = None if kinds is None else key_values(texts, table.key_index, kinds)
            return {COLLECTIONS_KEY: remaining, PRIMARY_KEY: write_keys(key, kinds or [], zone)}
        return keys


def _kinds(table: TableEvents) -> list[JavaKind] | None:
    """The key's Java classes; None (logged) when the offsets cannot carry it: a cut run reads it again."""
    try:
        return key_kinds(table, lambda oid: f"oid {oid}")
    except UnsupportedKeyError as exc:
        log.info("Blocking snapshot reads %s in no key order (a run cut inside it reads it again from its start): %s",
                 table.collection, exc)
        return None

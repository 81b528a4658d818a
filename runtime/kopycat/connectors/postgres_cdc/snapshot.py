"""The initial snapshot: every captured table read once as ``r`` events, consistent with the slot.

The slot is created first; then one REPEATABLE READ transaction reads ``pg_current_snapshot()``,
the WAL position, and the tables. A transaction that committed after the slot's consistent point
but is visible to that snapshot is in both the snapshot and the WAL: :class:`SnapshotHorizon`
tells the change stream to skip it, so each change arrives once. Debezium gets the same effect
from the replication protocol's exported snapshot. Source blocks mark records as Debezium does
(``first``, ``first_in_data_collection``, ``true``, ``last_in_data_collection``, ``last``) and
offsets carry ``snapshot``, ``last_snapshot_record`` and ``snapshot_completed``.

A blocking snapshot (an ``execute-snapshot`` signal of ``"type": "blocking"``) reads its tables the
same way at the commit of the signal's transaction, while the stream waits: its records' offsets
are that commit's streaming offset with ``snapshot: "BLOCKING"``, so a restart streams on after the
signal; a :class:`SnapshotProgress` (:mod:`.blocking_snapshot`) orders the tables' queries and adds
each row's progress to its offset, so a cut run resumes after the last key sent.

When the run sends batches as columns, each chunk of rows fetched from a table
:mod:`.snapshot_columns` can type is one
:class:`~kopycat.api.record_batch.SourceRecordBatch` (no Python object per event); its offset is
its last record's and its ``record_factory`` makes the record path's records, with their own
marks and offsets, for runs that need records. Other tables and chunks are records, as before.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, Final, Protocol

from kopycat.api.record_batch import SourceRecordBatch
from kopycat.api.records import SourceRecord
from kopycat.connectors.postgres_cdc.events import SourcePosition, TableEvents
from kopycat.connectors.postgres_cdc.pgoutput import parse_lsn
from kopycat.connectors.postgres_cdc.replication import PostgresSource
from kopycat.connectors.postgres_cdc.snapshot_columns import MIN_ROWS, SnapshotColumns

__all__ = ["BLOCKING", "COLUMN_ROWS", "RECORD_ROWS", "SnapshotHorizon", "SnapshotProgress", "snapshot_records"]

BLOCKING = "BLOCKING"
"""The ``snapshot`` of a blocking snapshot's offsets (Debezium's ``SnapshotType``): a streaming position."""
RECORD_ROWS: Final = 2000
"""Rows fetched at a time for the record path."""
COLUMN_ROWS: Final = 10_000
"""Rows fetched at a time for the columnar path, one batch each: Arrow's fixed cost per batch is
then a small share, and a batch's memory stays bounded (a poll returns it alone)."""


@dataclass(frozen=True)
class SnapshotHorizon:
    """Which transactions the snapshot saw: xid < xmin, or xmin <= xid < xmax and not in progress."""

    xmin: int
    xmax: int
    in_progress: frozenset[int]
    lsn: int  # no transaction committing at or after this WAL position is visible

    def saw(self, xid: int, commit_lsn: int) -> bool:
        if commit_lsn >= self.lsn:
            return False
        return xid < self.xmin or (xid < self.xmax and xid not in self.in_progress)


class SnapshotProgress(Protocol):
    """How a resumable (blocking) snapshot reads each table and what each record's offset adds."""

    def select(self, table: TableEvents, columns: str) -> tuple[str, list[Any]]: ...

    def progress_of(self, table: TableEvents) -> Callable[[Sequence[Any]], dict[str, Any]]: ...


def snapshot_records(source: PostgresSource, tables: list[TableEvents], partition: dict[str, Any],
                     slot_lsn: int, horizon_out: list[SnapshotHorizon], streamed: Mapping[str, Any] | None = None,
                     *, progress: SnapshotProgress | None = None, columnar: bool = False,
                     batch_rows: int = COLUMN_ROWS) -> Iterator[SourceRecord | SourceRecordBatch]:
    """Read every table in one snapshot; appends the snapshot's horizon to ``horizon_out`` first.

    ``streamed``: the streaming offset a blocking snapshot's records carry (None: an initial snapshot);
    ``progress``: its queries and the offset keys after each row (all but the last record carry them).
    ``columnar`` (the run sends batches as columns): a chunk of a table :class:`SnapshotColumns`
    takes is one :class:`SourceRecordBatch` at its last record's offset, whose ``record_factory``
    makes the records the record path makes. A chunk is held until the next one is read: only
    that tells whether its last row ends its table or the snapshot (its mark and its offset).
    ``batch_rows`` (``max.batch.size``) caps a batch's rows below :data:`COLUMN_ROWS`, so a poll
    holds no more events with columns than without, and a run bounded by a record count stops as
    near its bound.
    """
    fetch = min(COLUMN_ROWS, batch_rows)
    columnar = columnar and fetch >= MIN_ROWS
    conn = source.conn
    with conn.transaction():
        conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        row = conn.execute("SELECT pg_current_snapshot()::text, pg_current_wal_lsn()::text, "
                           "txid_current()").fetchone()
        assert row is not None
        xmin, xmax, xip = row[0].split(":")
        horizon_out.append(SnapshotHorizon(int(xmin) & 0xFFFFFFFF, int(xmax) & 0xFFFFFFFF,
                                           frozenset(int(x) & 0xFFFFFFFF for x in xip.split(",") if x),
                                           parse_lsn(row[1])))
        events = _Events(partition, slot_lsn, int(row[2]), time.time_ns() // 1000, streamed)
        held: _Chunk | None = None
        for table_index, table in enumerate(tables):
            builder = SnapshotColumns.of(table) if columnar else None
            columns = ", ".join(f'"{c.name}"::text' for c in table.columns)
            with conn.cursor(name=f"kopycat_snapshot_{table_index}") as cursor:
                query, params = (f'SELECT {columns} FROM "{table.schema_name}"."{table.table}"', []) \
                    if progress is None else progress.select(table, columns)
                keys_of = None if progress is None else progress.progress_of(table)
                cursor.execute(query, params)
                mark = "first" if held is None else "first_in_data_collection"
                while rows := cursor.fetchmany(fetch if builder else RECORD_ROWS):
                    if held is not None:
                        yield from events.items(held, final=False)
                    held, mark = _Chunk(table, builder, rows, mark, keys_of), "true"
            if held is not None and held.table is table:
                held.ends_table = True
        if held is not None:
            yield from events.items(held, final=True)


class _Chunk:
    """Rows fetched together from one table: their texts, and what their marks depend on."""

    __slots__ = ("builder", "ends_table", "first", "keys_of", "rows", "table")

    def __init__(self, table: TableEvents, builder: SnapshotColumns | None, rows: list[Any], first: str,
                 keys_of: Callable[[Sequence[Any]], dict[str, Any]] | None) -> None:
        self.table, self.builder, self.rows, self.keys_of = table, builder, rows, keys_of
        self.first = first  # the first row's mark: first, first_in_data_collection or true
        self.ends_table = False  # its last row is its table's last

    def last_mark(self, final: bool) -> str:
        """The last row's mark: ``last`` for the snapshot's last record, ``last_in_data_collection``
        for a table's last row that marks neither its table's nor the snapshot's start."""
        mark = self.first if len(self.rows) == 1 else "true"
        if final:
            return "last"
        return "last_in_data_collection" if self.ends_table and mark == "true" else mark


class _Events:
    """The snapshot's records and batches: offsets and source blocks as Debezium's snapshot writes them."""

    def __init__(self, partition: dict[str, Any], slot_lsn: int, tx_id: int, ts_us: int,
                 streamed: Mapping[str, Any] | None) -> None:
        self.partition, self.slot_lsn, self.tx_id, self.ts_us = partition, slot_lsn, tx_id, ts_us
        self.streamed = streamed

    def items(self, chunk: _Chunk, *, final: bool) -> Iterator[SourceRecord | SourceRecordBatch]:
        """A chunk's events: one batch of columns where it can be, else one record per row."""
        rows, table = chunk.rows, chunk.table
        last_mark = chunk.last_mark(final)
        envelopes = None if chunk.builder is None or len(rows) < MIN_ROWS else chunk.builder.envelopes(
            rows, chunk.first, last_mark, self.ts_us, self.tx_id, self.slot_lsn)
        if envelopes is None:
            yield from self.records(chunk, final)
            return
        yield SourceRecordBatch(self.partition, self.offset(chunk, rows[-1], last=final), table.topic,
                                table.envelope_schema,
                                envelopes.values, table.key_schema, envelopes.keys,
                                record_factory=partial(self.records_of, chunk, final))

    def records_of(self, chunk: _Chunk, final: bool) -> list[SourceRecord]:
        """A batch's ``record_factory``: its chunk's records."""
        return list(self.records(chunk, final))

    def records(self, chunk: _Chunk, final: bool) -> Iterator[SourceRecord]:
        """One record per row, each with its own mark and offset (a dict of its own, as before chunks)."""
        table, last = chunk.table, len(chunk.rows) - 1
        for index, texts in enumerate(chunk.rows):
            mark = chunk.last_mark(final) if index == last else chunk.first if index == 0 else "true"
            values = table.row(texts) or []
            where = SourcePosition(self.ts_us, self.tx_id, self.slot_lsn, None, mark)
            yield SourceRecord.of(self.partition, self.offset(chunk, texts, last=final and index == last),
                                  table.topic, None,
                                  table.key_schema, table.key(values), table.envelope_schema,
                                  table.envelope("r", None, values, where))

    def offset(self, chunk: _Chunk, texts: Sequence[Any], *, last: bool) -> dict[str, Any]:
        """The offset of the record of row ``texts``: with the progress after it, unless it ends the snapshot."""
        if self.streamed is not None:
            keys = chunk.keys_of(texts) if chunk.keys_of is not None and not last else {}
            return {**self.streamed, **keys, "last_snapshot_record": last, "snapshot": BLOCKING,
                    "snapshot_completed": last}
        return {"last_snapshot_record": last, "lsn": self.slot_lsn, "txId": self.tx_id, "ts_usec": self.ts_us,
                "snapshot": "INITIAL", "snapshot_completed": last}

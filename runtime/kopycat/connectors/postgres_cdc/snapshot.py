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
signal (a blocking snapshot cut short is not resumed: signal it again).
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from kopycat.api.records import SourceRecord
from kopycat.connectors.postgres_cdc.events import SourcePosition, TableEvents
from kopycat.connectors.postgres_cdc.pgoutput import parse_lsn
from kopycat.connectors.postgres_cdc.replication import PostgresSource

__all__ = ["BLOCKING", "SnapshotHorizon", "SnapshotProgress", "snapshot_records"]

BLOCKING = "BLOCKING"
"""The ``snapshot`` of a blocking snapshot's offsets (Debezium's ``SnapshotType``): a streaming position."""


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

    def progress(self, table: TableEvents, texts: Sequence[Any]) -> dict[str, Any]: ...


def snapshot_records(source: PostgresSource, tables: list[TableEvents], partition: dict[str, Any],
                     slot_lsn: int, horizon_out: list[SnapshotHorizon],
                     streamed: Mapping[str, Any] | None = None,
                     progress: SnapshotProgress | None = None) -> Iterator[SourceRecord]:
    """Read every table in one snapshot; appends the snapshot's horizon to ``horizon_out`` first.

    ``streamed``: the streaming offset a blocking snapshot's records carry (None: an initial snapshot);
    ``progress``: its queries and the offset keys after each row (all but the last record carry them).
    """
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
        tx_id, ts_us = int(row[2]), time.time_ns() // 1000
        # held back: only the next row tells its mark
        pending: tuple[TableEvents, list[Any], str, dict[str, Any] | None] | None = None
        first = True
        for table_index, table in enumerate(tables):
            columns = ", ".join(f'"{c.name}"::text' for c in table.columns)
            with conn.cursor(name=f"kopycat_snapshot_{table_index}") as cursor:
                query, params = (f'SELECT {columns} FROM "{table.schema_name}"."{table.table}"', []) \
                    if progress is None else progress.select(table, columns)
                cursor.execute(query, params)
                table_first = True
                while rows := cursor.fetchmany(2000):
                    for texts in rows:
                        if pending is not None:
                            yield _record(*pending, partition, slot_lsn, tx_id, ts_us, streamed, last=False)
                        mark = "first" if first else "first_in_data_collection" if table_first else "true"
                        keys = None if progress is None else progress.progress(table, texts)
                        pending, first, table_first = (table, table.row(texts) or [], mark, keys), False, False
            if pending is not None and pending[0] is table and pending[2] == "true":
                pending = (table, pending[1], "last_in_data_collection", pending[3])
        if pending is not None:
            yield _record(pending[0], pending[1], "last", None, partition, slot_lsn, tx_id, ts_us, streamed,
                          last=True)


def _record(table: TableEvents, values: list[Any], mark: str, keys: dict[str, Any] | None, partition: dict[str, Any],
            slot_lsn: int, tx_id: int, ts_us: int, streamed: Mapping[str, Any] | None, *, last: bool) -> SourceRecord:
    where = SourcePosition(ts_us, tx_id, slot_lsn, None, mark)
    if streamed is not None:
        offset = {**streamed, **(keys or {}), "last_snapshot_record": last, "snapshot": BLOCKING,
                  "snapshot_completed": last}
    else:
        offset = {"last_snapshot_record": last, "lsn": slot_lsn, "txId": tx_id, "ts_usec": ts_us,
                  "snapshot": "INITIAL", "snapshot_completed": last}
    return SourceRecord.of(partition, offset, table.topic, None, table.key_schema, table.key(values),
                           table.envelope_schema, table.envelope("r", None, values, where))

"""The CDC task: an optional initial snapshot, then the WAL to the planned end (or forever).

Debezium's ``PostgresConnectorTask`` in Kopycat's shape. ``poll()`` returns the next change
records; in a bounded run (an Airflow copy task, ``kopycat run``) it reads the WAL up to the LSN
the plan fixed and then raises :class:`RunComplete`. The slot is confirmed in :meth:`commit`,
which the engine calls after Kafka acknowledged every record polled so far and their offsets were
stored: the slot never runs ahead of what Kafka holds (the acked-prefix rule of every source).
Under ``exactly.once.source.support`` the engine calls :meth:`commit` after the Kafka transaction
holding the records and their offsets committed, so the slot is confirmed only past committed changes.

A windowed run (an Airflow backfill, :class:`~kopycat.api.window.TimeWindow`) is refused: the
slot released the WAL of a past window once a run copied it, so no log holds it any more.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator, Mapping

from kopycat import __version__
from kopycat.api.bounded import RunComplete, is_bounded_run
from kopycat.api.errors import ConfigError
from kopycat.api.record_batch import SourceRecordBatch
from kopycat.api.task import SourceItem, SourceTask
from kopycat.api.window import WINDOW_START_MS_CONFIG, TimeWindow
from kopycat.connectors.postgres_cdc.blocking_snapshot import without_progress
from kopycat.connectors.postgres_cdc.change_stream import ChangeStream, table_events_for
from kopycat.connectors.postgres_cdc.config import CdcSettings
from kopycat.connectors.postgres_cdc.events import TableEvents
from kopycat.connectors.postgres_cdc.heartbeat import Heartbeat
from kopycat.connectors.postgres_cdc.incremental_snapshot import INCREMENTAL, IncrementalSnapshot
from kopycat.connectors.postgres_cdc.pgoutput import Relation, parse_lsn
from kopycat.connectors.postgres_cdc.replication import PostgresSource
from kopycat.connectors.postgres_cdc.snapshot import BLOCKING, SnapshotHorizon, snapshot_records
from kopycat.connectors.postgres_cdc.transactions import TransactionMetadata
from kopycat.read_ahead import read_ahead

__all__ = ["PostgresCdcTask"]

log = logging.getLogger(__name__)

FETCHES_AHEAD = 3
"""The slot's chunks read ahead (:func:`kopycat.read_ahead.read_ahead`) while the task builds and produces.

Each chunk is a ``FETCH`` round trip (:meth:`.replication.PostgresSource.peek`); on one thread the
task waited through every one of them, a third of a loaded streaming run. psycopg waits for the
server with the GIL released, and the connection stays usable by the task's thread between two
fetches (a relation's catalog lookup, the slot's confirmation). With one chunk ahead, the next
fetch began only once the task took the previous one."""


class PostgresCdcTask(SourceTask):
    """One task per connector: a replication slot has one reader."""

    def __init__(self) -> None:
        self.stopping = threading.Event()
        self.source: PostgresSource | None = None
        self.heartbeat: Heartbeat | None = None
        self.snapshot: IncrementalSnapshot | None = None
        self.confirmable: int | None = None  # the lsn_commit of the last record poll() returned

    def version(self) -> str:
        return __version__

    def start(self, props: Mapping[str, str]) -> None:
        refuse_window(props)
        self.settings = settings = CdcSettings.parse(props)
        self.bounded = is_bounded_run(props)
        self.partition = {"server": settings.prefix}
        self.source = source = PostgresSource(settings)
        source.check_ready()
        tables = source.captured_tables()
        signals = [settings.signal_table] if settings.signal_table and settings.signal_table not in tables else []
        source.ensure_publication(tables + signals)  # a filtered publication must carry the signal table's rows
        stored = self.context.offset_reader.offset(self.partition)
        slot_lsn = source.slot_position()
        if slot_lsn is None:
            slot_lsn = source.create_slot()
        self.slot_lsn = slot_lsn
        log.info("Task for %s: slot %s at %s, stored offset %s", settings.prefix, settings.slot, slot_lsn, stored)
        self.end_lsn = parse_lsn(settings.end_lsn) if settings.end_lsn else source.current_lsn()
        self.horizons: list[SnapshotHorizon] = []
        # an r event's offset of an incremental or blocking snapshot (Kopycat's or Debezium's) is a streaming position
        streamed = stored if stored and stored.get("snapshot") in (None, False, INCREMENTAL, BLOCKING) else None
        self.heartbeat = heartbeat = Heartbeat(settings, self.partition)
        if settings.signal_table:
            self.snapshot = IncrementalSnapshot(settings, self.partition, [f"{s}.{t}" for s, t in tables], streamed,
                                                columnar=self.context.takes_columns)
        streamed = without_progress(streamed)  # a heartbeat must not carry a cut blocking snapshot's progress on
        transactions = TransactionMetadata(settings.prefix, settings.transaction_topic, self.partition, streamed) \
            if settings.transaction_metadata else None
        self.stream = ChangeStream(self.partition, streamed, self._table_for, settings.tombstones,
                                   self._seen_by_snapshot, transactions=transactions, heartbeat=heartbeat,
                                   snapshot=self.snapshot, columnar=self.context.takes_columns)
        redo = stored is None or (streamed is None and not stored.get("snapshot_completed"))
        self.items: Iterator[SourceItem | None] = self._run(settings.snapshot_mode == "initial" and redo, tables)

    def _run(self, snapshot: bool, tables: list[tuple[str, str]]) -> Iterator[SourceItem | None]:
        source = self.source
        assert source is not None
        if snapshot:
            events = [self._events(schema, table) for schema, table in tables]
            yield from snapshot_records(source, events, self.partition, self.slot_lsn, self.horizons,
                                        columnar=self.context.takes_columns, batch_rows=self.settings.max_batch)
            if self.horizons:
                self.end_lsn = max(self.end_lsn, self.horizons[0].lsn)
        if self.snapshot is not None:
            yield from self.snapshot.resume_blocking()
            self.snapshot.resume()
        while not self.stopping.is_set():
            yield from self.stream.records(read_ahead(source.peek(self.end_lsn), f"{self.settings.slot}-read-ahead",
                                                      FETCHES_AHEAD))
            if self.snapshot is not None and self.snapshot.end > self.end_lsn:
                self.end_lsn = self.snapshot.end  # a chunk's watermarks lie past the end: read on to them
                continue
            yield from self.stream.idle(self.end_lsn, final=self.bounded)
            if self.bounded:
                return
            yield None  # caught up: poll() returns what it has, so the worker can commit, pause or stop
            if self.stopping.wait(self.settings.poll_interval_s):
                return
            self.end_lsn = source.current_lsn()

    def _events(self, schema: str, table: str) -> TableEvents:
        assert self.source is not None
        columns, key = self.source.table_columns(schema, table)
        return TableEvents(self.settings.prefix, self.settings.dbname, schema, table, columns, key,
                           decimal_mode=self.settings.decimal_mode, time_mode=self.settings.time_mode)

    def _table_for(self, relation: Relation) -> TableEvents | None:
        if not self.settings.captures(relation.namespace, relation.name):
            return None
        assert self.source is not None
        return table_events_for(relation, self.source.table_columns(relation.namespace, relation.name),
                                self.settings.prefix, self.settings.dbname, self.settings.decimal_mode,
                                self.settings.time_mode)

    def _seen_by_snapshot(self, xid: int, commit_lsn: int) -> bool:
        return any(h.saw(xid, commit_lsn) for h in self.horizons)

    def poll(self) -> list[SourceItem] | None:
        """Up to ``max.batch.size`` changes (a batch of columns counts its rows), ending early when caught up."""
        batch: list[SourceItem] = []
        size, limit = 0, self.settings.max_batch
        for item in self.items:
            if item is None:
                break
            batch.append(item)
            size += len(item) if item.__class__ is SourceRecordBatch else 1
            if size >= limit:
                break
        if not batch:
            if self.bounded:
                raise RunComplete
            return None
        commit = batch[-1].source_offset.get("lsn_commit") if batch[-1].source_offset else None
        if commit is not None:
            self.confirmable = commit
        return batch

    def commit(self) -> None:
        """Kafka holds every record polled so far and their offsets are stored: confirm the slot."""
        if self.confirmable is None or self.source is None or self.confirmable <= self.slot_lsn:
            return
        self.source.advance(self.confirmable)
        self.slot_lsn = self.confirmable
        log.debug("Confirmed replication slot %s to %s", self.settings.slot, self.confirmable)

    def stop(self) -> None:
        """Called after the last poll and commit (or from another thread): end the wait, close the connection."""
        self.stopping.set()
        if self.heartbeat is not None:
            self.heartbeat.close()
        if self.snapshot is not None:
            self.snapshot.close()
        if self.source is not None:
            self.source.close()


def refuse_window(props: Mapping[str, str]) -> None:
    """A backfill of a past window cannot be served from the log: say why and what to run instead.

    Debezium has no windows either; re-snapshotting would not give the window's changes (only
    today's rows, under a new offset), so the run fails before it connects.
    """
    window = TimeWindow.of(props)
    if window is None:
        return
    raise ConfigError(
        f"{WINDOW_START_MS_CONFIG}={window.start_ms}: PostgreSQL CDC cannot copy the past window "
        f"[{window.start_ms}, {window.end_ms}) ms again: the replication slot released that window's "
        f"write-ahead log once a run had copied its changes to Kafka, and no log holds it any more. "
        f"Fix: do not backfill this DAG (or give its task group window='never'); the scheduled runs "
        f"copy every change exactly once from the stored offset. To copy the tables' current rows "
        f"again, run the connector under a new slot.name and topic.prefix with snapshot.mode=initial",
        key=WINDOW_START_MS_CONFIG)

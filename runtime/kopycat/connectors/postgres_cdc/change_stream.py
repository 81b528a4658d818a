"""Turn decoded pgoutput messages into Debezium change records with resumable offsets.

Offsets are Debezium's ``PostgresOffsetContext`` keys under the partition ``{"server": <prefix>}``:
``lsn`` (the change's WAL position), ``lsn_proc``, ``lsn_commit`` (the last commit fully processed),
``txId``, ``ts_usec`` and ``messageType``. The last change of a transaction carries the offset
*after* its commit (``lsn`` = ``lsn_proc`` = ``lsn_commit`` = the commit's end), the position
Debezium stores after a commit (a heartbeat there, ``messageType`` COMMIT), so a run that ends on a
transaction boundary leaves an offset the slot can be confirmed to exactly, and Debezium's
``WalPositionLocator`` resuming from it replays the next transaction from its BEGIN. Kopycat
resuming skips every transaction that committed at or before the stored ``lsn_commit`` and, inside
the transaction in flight, the changes at or before the stored ``lsn``, as that locator does.

Changes are held as the pgoutput bytes read until their commit. A run of at least
:data:`COLUMNAR_MIN` changes of one table (deletes only without tombstones: a batch holds one event
per change) is then built as columns (:mod:`.columns`)
and returned as one :class:`~kopycat.api.record_batch.SourceRecordBatch` whose offset is its last
change's (the runner commits a batch as a whole; its ``record_factory`` makes the same records
with their own offsets for the record path); anything else is built change by change. A run may
span consecutive committed transactions (many small ones, as OLTP writes): it is held past a
commit until another table's change, a delete, :data:`RUN_TARGET` changes, a due heartbeat or the
end of what was read closes it, so its offset is still the one Debezium stores after its last record.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from functools import partial
from itertools import groupby
from typing import Any, Final

from kopycat.api.data import Struct
from kopycat.api.record_batch import SourceRecordBatch
from kopycat.api.records import SourceRecord
from kopycat.connectors.postgres_cdc.columns import TableColumns
from kopycat.connectors.postgres_cdc.events import ColumnInfo, SourcePosition, TableEvents
from kopycat.connectors.postgres_cdc.heartbeat import Heartbeat
from kopycat.connectors.postgres_cdc.incremental_snapshot import IncrementalSnapshot
from kopycat.connectors.postgres_cdc.pgoutput import (
    CHANGE_KINDS,
    Begin,
    Commit,
    Delete,
    Insert,
    Relation,
    Update,
    decode,
    relation_oid,
)
from kopycat.connectors.postgres_cdc.transactions import TransactionMetadata

__all__ = ["COLUMNAR_MIN", "RUN_TARGET", "ChangeStream", "table_events_for"]

COLUMNAR_MIN: Final = 64
"""The fewest changes of one table in a row that are built as columns: Arrow's fixed cost per batch
(tens of kernel calls) pays off only over many rows."""

RUN_TARGET: Final = 4000
"""A run holding this many changes at a commit is closed there: enough rows for a batch to pay its
fixed cost (the columns' and JsonConverter's kernel calls per field: 3.5-4.2 µs/change of building
and encoding at 1,000, 2.8-3.1 at 4,000, no less at 6,000), few enough to bound what a poll holds
back across small transactions (about 15 MB of encoded events in the bench's table)."""

TableLookup = Callable[[Relation], TableEvents | None]


class ChangeStream:
    """Stateful over one task's life: the resume position and each relation's event builder.

    With ``transactions`` every change gets its own offset and the transaction's END record carries
    the commit's; ``heartbeat`` is consulted at each commit and by :meth:`idle`; ``snapshot`` (with
    ``signal.data.collection``) gets the signal table's inserts, the keys of changes inside its
    window, every offset to add its state to, and each commit to emit a closed chunk after.
    ``columnar`` (the run sends batches as columns) builds long runs of a table's changes as columns,
    joining consecutive transactions' runs up to ``run_target`` changes.
    """

    def __init__(self, partition: dict[str, Any], stored: Mapping[str, Any] | None, lookup: TableLookup,
                 tombstones: bool, skip_xid: Callable[[int, int], bool] | None = None, *,
                 transactions: TransactionMetadata | None = None, heartbeat: Heartbeat | None = None,
                 snapshot: IncrementalSnapshot | None = None, columnar: bool = False,
                 run_target: int = RUN_TARGET) -> None:
        self.partition, self.lookup, self.tombstones = partition, lookup, tombstones
        self.columnar, self.run_target = columnar, run_target
        self.run: list[_Held] = []  # committed changes of one table's open run, held for the next commit
        self.columns: dict[TableEvents, TableColumns | None] = {}  # each table's, made on its first long run
        self.snapshot, self.signal_oid = snapshot, -1
        self.transactions, self.heartbeat = transactions, heartbeat
        stored = stored or {}
        self.last_commit: int | None = stored.get("lsn_commit")
        self.last_offset: dict[str, Any] | None = dict(stored) if stored else None  # what a heartbeat carries
        self.resume_tx: int | None = None
        self.resume_lsn = 0
        if stored.get("lsn") is not None and stored.get("txId") is not None and _inside_transaction(stored):
            self.resume_tx, self.resume_lsn = int(stored["txId"]), int(stored["lsn"])
        self.skip_xid = skip_xid  # a transaction the initial snapshot already saw
        self.tables: dict[int, TableEvents | None] = {}

    def records(self, messages: Iterable[tuple[int, int, bytes]]) -> Iterator[SourceRecord | SourceRecordBatch]:
        """The change records (and batches) of ``messages`` (lsn, xid, pgoutput bytes), in commit order."""
        begin: Begin | None = None
        transaction: _Transaction | None = None
        skip = False
        held: list[_Held] = []
        tables = self.tables
        for lsn, _xid, data in messages:
            if data[0] in CHANGE_KINDS:  # most messages: tested first, decoded only when needed now
                if begin is None or skip or (begin.xid == self.resume_tx and lsn <= self.resume_lsn):
                    continue
                table = tables.get(relation_oid(data))
                if self.snapshot is not None:
                    self._watch_snapshot(table, decode(data))  # type: ignore[arg-type]
                if table is None:
                    continue
                if self.transactions is None:
                    held.append((lsn, table, data, transaction))  # type: ignore[arg-type]
                else:
                    block = self.transactions.event(table.collection, lsn)
                    offset = self.transactions.store(self._offset(lsn, None, begin))
                    yield from self._records(table, decode(data), lsn, begin, block, offset)  # type: ignore[arg-type]
                continue
            message = decode(data)
            if isinstance(message, Relation):
                self.tables[message.oid] = self.lookup(message)
                self.columns.clear()
                if self.snapshot is not None:
                    self.signal_oid = self.snapshot.relation(message)
            elif isinstance(message, Begin):
                begin, held = message, []
                transaction = _Transaction(message, self.last_commit)
                skip = (self.last_commit is not None and message.final_lsn < self.last_commit) or (
                    self.skip_xid is not None and self.skip_xid(message.xid, message.final_lsn))
                if not skip and self.transactions is not None:
                    started = self.transactions.begin(message.xid, lsn, message.commit_ts_us,
                                                      self._offset(lsn, None, message, "BEGIN"))
                    if started is not None:
                        yield started
            elif isinstance(message, Commit):
                if begin is not None and not skip:
                    yield from self._commit(begin, message, held)
                    if self.snapshot is not None:
                        yield from self.snapshot.committed(self.last_offset or {}, begin.xid)
                begin, held = None, []
        yield from self._close_run()  # the end of what was read: nothing is held past it

    def _commit(self, begin: Begin, commit: Commit, held: list[_Held]) -> Iterator[SourceRecord | SourceRecordBatch]:
        """Held changes (the last one with the commit's offset), a due heartbeat, then the END record."""
        commit_offset = self._offset(commit.end_lsn, commit.end_lsn, begin, "COMMIT")
        beat = self.heartbeat is not None and self.heartbeat.due()
        if held:
            held[-1][3].close(held[-1][0], dict(commit_offset))  # as it is now, for a later record_factory
        yield from self._held_records(held, close=beat or self.snapshot is not None)
        self.last_commit, self.last_offset = commit.end_lsn, commit_offset
        in_flight = commit_offset if self.transactions is None else self.transactions.store(dict(commit_offset))
        if beat:  # Debezium's commitMessage beats before the END
            yield from _present(self.heartbeat.beat(in_flight))  # type: ignore[union-attr]
        if self.transactions is not None:
            yield self.transactions.end(begin.xid, commit.end_lsn, commit.commit_ts_us, in_flight)

    def idle(self, position: int, *, final: bool = False) -> Iterator[SourceRecord]:
        """A heartbeat while nothing is left before ``position`` (every commit starting before it is read).

        The offset moves to ``position`` (the slot may be confirmed there: a transaction committing
        later is still decoded whole); ``final`` beats at once if it moved, so a bounded run confirms
        an idle slot even when it lasted less than the interval.
        """
        if self.heartbeat is None or not self.heartbeat.enabled:
            return
        moved = self.last_commit is None or position > self.last_commit
        if moved:
            self.last_commit = position
            self.last_offset = {**(self.last_offset or {}), "lsn": position, "lsn_proc": position,
                                "lsn_commit": position, "messageType": "COMMIT"}
        if self.snapshot is not None and self.last_offset is not None:  # a snapshot may have ended since
            self.last_offset = self.snapshot.store(dict(self.last_offset))
        if self.heartbeat.due() or (final and moved):
            yield from _present(self.heartbeat.beat(self.last_offset))

    def _offset(self, lsn: int, commit: int | None, begin: Begin, kind: str = "") -> dict[str, Any]:
        offset: dict[str, Any] = {"lsn_proc": lsn, "lsn": lsn, "txId": begin.xid, "ts_usec": begin.commit_ts_us}
        last_commit = commit if commit is not None else self.last_commit
        if last_commit is not None:
            offset["lsn_commit"] = last_commit
        if kind:
            offset["messageType"] = kind
        return offset if self.snapshot is None else self.snapshot.store(offset)

    def _held_records(self, held: list[_Held], close: bool) -> Iterator[SourceRecord | SourceRecordBatch]:
        """A committed transaction's changes, per run of one table's changes that may be column rows
        (see :meth:`_run_key`) or of others: a long run as one batch of columns where it can be,
        the others change by change. The open run continues into this transaction; this
        transaction's last run stays open for the next one unless ``close``, its changes cannot be
        column rows or it reached ``run_target``."""
        run_key = self._run_key
        for key, group in groupby(held, run_key):
            if self.run and run_key(self.run[0]) != key:
                yield from self._close_run()
            self.run.extend(group)
        if close or not (self.columnar and self.run and run_key(self.run[0])[1]) or len(self.run) >= self.run_target:
            yield from self._close_run()

    def _run_key(self, change: _Held) -> tuple[TableEvents, bool]:
        """A held change's table, and whether it may be a column row: an insert, an update, and a
        delete unless a tombstone follows it (a batch holds one event per change)."""
        return change[1], change[2][0] != _DELETE or not self.tombstones

    def _close_run(self) -> Iterator[SourceRecord | SourceRecordBatch]:
        """The open run's changes: as one batch of columns where it can be, else change by change."""
        run, self.run = self.run, []
        if not run:
            return
        batch = self._batch(run) if self.columnar and self._run_key(run[0])[1] and len(run) >= COLUMNAR_MIN else None
        if batch is None:
            yield from self._run_records(run)
        else:
            yield batch

    def _batch(self, run: list[_Held]) -> SourceRecordBatch | None:
        """A run's events as columns, at its last change's offset; None where they must be records."""
        table = run[0][1]
        if table not in self.columns:
            self.columns[table] = TableColumns.of(table)
        columns = self.columns[table]
        if columns is None:
            return None
        segments = [(tx.begin.commit_ts_us, tx.begin.xid, tx.last_commit, len(list(changes)))
                    for tx, changes in groupby(run, _transaction_of)]
        envelopes = columns.envelopes([data for _, _, data, _ in run], [lsn for lsn, _, _, _ in run], segments)
        if envelopes is None:
            return None
        lsn, table, _, tx = run[-1]
        offset = _change_offset(envelopes.last_op, lsn, tx.begin, tx.last_commit, tx.final_at(lsn))
        return SourceRecordBatch(self.partition, offset, table.topic, table.envelope_schema, envelopes.values,
                                 table.key_schema, envelopes.keys, record_factory=partial(self._run_record_list, run))

    def _run_record_list(self, run: list[_Held]) -> list[SourceRecord]:
        return list(self._run_records(run))

    def _run_records(self, run: list[_Held]) -> Iterator[SourceRecord]:
        """A run's changes built one by one in one loop; each change gets its final offset dict at
        once (its transaction's commit offset for the transaction's last change)."""
        partition, tombstones, record_of, event = self.partition, self.tombstones, SourceRecord.of, _event
        for lsn, table, data, tx in run:
            begin = tx.begin
            where = SourcePosition(begin.commit_ts_us, begin.xid, lsn, tx.last_commit)
            op, key, value = event(table, decode(data), where, None)  # type: ignore[arg-type]
            offset = _change_offset(op, lsn, begin, tx.last_commit, tx.final_at(lsn))
            yield record_of(partition, offset, table.topic, None, table.key_schema, key, table.envelope_schema, value)
            if op == "d" and tombstones:
                yield record_of(partition, offset, table.topic, None, table.key_schema, key, None, None)

    def _watch_snapshot(self, table: TableEvents | None, message: Insert | Update | Delete) -> None:
        """At read time: a signal row goes to the incremental snapshot, and a change inside its open
        window drops the key's row from the chunk (DBLog: the log has a newer version of it). Only
        the key columns' texts are converted here; the row is decoded once, at the commit."""
        snapshot = self.snapshot
        assert snapshot is not None
        if message.relation_oid == self.signal_oid and message.__class__ is Insert:
            snapshot.signal(message.new)  # type: ignore[union-attr]
        if table is None or not snapshot.window_open:
            return
        if message.__class__ is Delete:
            snapshot.seen(table, message.old)
            return
        snapshot.seen(table, message.new)  # type: ignore[union-attr]
        if message.__class__ is Update and message.old is not None:  # type: ignore[union-attr]
            snapshot.seen(table, message.old)  # type: ignore[union-attr]  # the key may have changed: its old row is gone

    def _records(self, table: TableEvents, message: Insert | Update | Delete, lsn: int, begin: Begin,
                 block: Struct, offset: dict[str, Any]) -> list[SourceRecord]:
        """A change's record (and a delete's tombstone) at ``offset``, built as it is read (with
        ``provide.transaction.metadata``, where every change has its own offset)."""
        where = SourcePosition(begin.commit_ts_us, begin.xid, lsn, self.last_commit)
        op, key, value = _event(table, message, where, block)
        offset = {"messageType": _MESSAGE_TYPES[op], **offset}
        record = SourceRecord.of(self.partition, offset, table.topic, None, table.key_schema, key,
                                 table.envelope_schema, value)
        if op == "d" and self.tombstones:
            return [record, SourceRecord.of(self.partition, offset, table.topic, None, table.key_schema, key,
                                            None, None)]
        return [record]


class _Transaction:
    """What a held change's event and offset take from its transaction: its BEGIN, the commit
    before it and, once committed, the commit's offset its last change carries."""

    __slots__ = ("begin", "final", "last_commit", "last_lsn")

    def __init__(self, begin: Begin, last_commit: int | None) -> None:
        self.begin, self.last_commit = begin, last_commit
        self.last_lsn, self.final = -1, None  # type: int, dict[str, Any] | None

    def close(self, last_lsn: int, final: dict[str, Any]) -> None:
        self.last_lsn, self.final = last_lsn, final

    def final_at(self, lsn: int) -> dict[str, Any] | None:
        """The commit's offset for the transaction's last change, None for the others."""
        return self.final if lsn == self.last_lsn else None


_Held = tuple[int, TableEvents, bytes, _Transaction]
"""A change of a transaction, as read: (lsn, its table, the pgoutput message, its transaction); built at the commit."""


def _transaction_of(change: _Held) -> _Transaction:
    return change[3]


_DELETE: Final = ord("D")


def _change_offset(op: str, lsn: int, begin: Begin, last_commit: int | None,
                   final: dict[str, Any] | None) -> dict[str, Any]:
    """A held change's offset: its own position, or ``final`` (the commit's, keeping COMMIT first in order)."""
    if final is not None:
        return {"messageType": _MESSAGE_TYPES[op], **final}
    offset = {"messageType": _MESSAGE_TYPES[op], "lsn_proc": lsn, "lsn": lsn, "txId": begin.xid,
              "ts_usec": begin.commit_ts_us}
    if last_commit is not None:
        offset["lsn_commit"] = last_commit
    return offset


def _event(table: TableEvents, message: Insert | Update | Delete, where: SourcePosition,
           block: Struct | None) -> tuple[str, Struct | None, Struct]:
    """(op, key, envelope) of one change, as Debezium's ``PostgresChangeRecordEmitter``."""
    kind = message.__class__
    if kind is Update:
        op, after = "u", table.row(message.new)  # type: ignore[union-attr]
        before = None if message.old is None or message.old_is_key_only else table.row(message.old)  # type: ignore[union-attr]
    elif kind is Insert:
        op, before, after = "c", None, table.row(message.new)  # type: ignore[union-attr]
    else:
        op, before, after = "d", table.row(message.old), None
    return op, table.key(after if after is not None else before), table.envelope(op, before, after, where, block)


_MESSAGE_TYPES: Final = {"c": "INSERT", "u": "UPDATE", "d": "DELETE"}


def _present(record: SourceRecord | None) -> Iterator[SourceRecord]:
    if record is not None:
        yield record


def _inside_transaction(stored: Mapping[str, Any]) -> bool:
    """Whether the stored offset is a change inside its transaction, not the position after a commit.

    Debezium's ``messageType`` says so (its ``WalPositionLocator`` reads it the same way): a change's
    ``lsn`` may equal ``lsn_commit`` when its record starts where the previous commit ended.
    """
    kind = stored.get("messageType")
    if kind is not None:
        return kind in ("INSERT", "UPDATE", "DELETE")
    return stored.get("lsn") != stored.get("lsn_commit")


def table_events_for(relation: Relation, catalog: tuple[list[ColumnInfo], list[str]], prefix: str, dbname: str,
                     decimal_mode: str, time_mode: str) -> TableEvents:
    """A relation's event builder: its columns' types from the WAL, nullability, DEFAULTs and key from the catalog."""
    columns, key = catalog
    known = {c.name: c for c in columns}
    infos = [ColumnInfo(c.name, c.type_oid, c.type_modifier, known[c.name].optional if c.name in known else True,
                        known[c.name].default if c.name in known else None) for c in relation.columns]
    return TableEvents(prefix, dbname, relation.namespace, relation.name, infos, key,
                       decimal_mode=decimal_mode, time_mode=time_mode)

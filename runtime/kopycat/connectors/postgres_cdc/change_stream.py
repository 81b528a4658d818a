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
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from kopycat.api.records import SourceRecord
from kopycat.connectors.postgres_cdc.events import ColumnInfo, SourcePosition, TableEvents
from kopycat.connectors.postgres_cdc.pgoutput import Begin, Commit, Delete, Insert, Relation, Update, decode

__all__ = ["ChangeStream", "table_events_for"]

TableLookup = Callable[[Relation], TableEvents | None]


class ChangeStream:
    """Stateful over one task's life: the resume position and each relation's event builder."""

    def __init__(self, partition: dict[str, Any], stored: Mapping[str, Any] | None, lookup: TableLookup,
                 tombstones: bool, skip_xid: Callable[[int, int], bool] | None = None) -> None:
        self.partition, self.lookup, self.tombstones = partition, lookup, tombstones
        stored = stored or {}
        self.last_commit: int | None = stored.get("lsn_commit")
        self.resume_tx: int | None = None
        self.resume_lsn = 0
        if stored.get("lsn") is not None and stored.get("txId") is not None and _inside_transaction(stored):
            self.resume_tx, self.resume_lsn = int(stored["txId"]), int(stored["lsn"])
        self.skip_xid = skip_xid  # a transaction the initial snapshot already saw
        self.tables: dict[int, TableEvents | None] = {}

    def records(self, messages: Iterable[tuple[int, int, bytes]]) -> Iterator[SourceRecord]:
        """The change records of ``messages`` (lsn, xid, pgoutput bytes), in commit order."""
        begin: Begin | None = None
        skip = False
        held: list[tuple[int, Callable[[dict[str, Any]], list[SourceRecord]]]] = []
        for lsn, _xid, data in messages:
            message = decode(data)
            if isinstance(message, Relation):
                self.tables[message.oid] = self.lookup(message)
            elif isinstance(message, Begin):
                begin, held = message, []
                skip = (self.last_commit is not None and message.final_lsn < self.last_commit) or (
                    self.skip_xid is not None and self.skip_xid(message.xid, message.final_lsn))
            elif isinstance(message, Commit):
                if begin is not None and not skip:
                    commit_offset = self._offset(message.end_lsn, message.end_lsn, begin, "COMMIT")
                    for index, (_, make) in enumerate(held):
                        last = index == len(held) - 1
                        yield from make(commit_offset if last else self._offset(held[index][0], None, begin))
                    self.last_commit = message.end_lsn
                begin, held = None, []
            elif begin is not None and not skip and isinstance(message, Insert | Update | Delete):
                if begin.xid == self.resume_tx and lsn <= self.resume_lsn:
                    continue
                made = self._change(message, lsn, begin)
                if made is not None:
                    held.append((lsn, made))

    def _offset(self, lsn: int, commit: int | None, begin: Begin, kind: str = "") -> dict[str, Any]:
        offset: dict[str, Any] = {"lsn_proc": lsn, "lsn": lsn, "txId": begin.xid, "ts_usec": begin.commit_ts_us}
        last_commit = commit if commit is not None else self.last_commit
        if last_commit is not None:
            offset["lsn_commit"] = last_commit
        if kind:
            offset["messageType"] = kind
        return offset

    def _change(self, message: Insert | Update | Delete, lsn: int,
                begin: Begin) -> Callable[[dict[str, Any]], list[SourceRecord]] | None:
        table = self.tables.get(message.relation_oid)
        if table is None:
            return None
        where = SourcePosition(begin.commit_ts_us, begin.xid, lsn, self.last_commit)
        if isinstance(message, Insert):
            op, before, after = "c", None, table.row(message.new)
        elif isinstance(message, Update):
            op, after = "u", table.row(message.new)
            before = None if message.old is None or message.old_is_key_only else table.row(message.old)
        else:
            op, before, after = "d", table.row(message.old), None
        kind = {"c": "INSERT", "u": "UPDATE", "d": "DELETE"}[op]
        key = table.key(after if after is not None else before)
        value = table.envelope(op, before, after, where)
        partition, tombstones = self.partition, self.tombstones

        def make(offset: dict[str, Any]) -> list[SourceRecord]:
            offset = {"messageType": kind, **offset}  # a transaction's last change keeps COMMIT
            out = [SourceRecord(source_partition=partition, source_offset=offset, topic=table.topic,
                                key_schema=table.key_schema, key=key, value_schema=table.envelope_schema,
                                value=value)]
            if op == "d" and tombstones:
                out.append(SourceRecord(source_partition=partition, source_offset=offset, topic=table.topic,
                                        key_schema=table.key_schema, key=key))
            return out
        return make


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
    """A relation's event builder: its columns' types from the WAL, nullability and key from the catalog."""
    columns, key = catalog
    optional = {c.name: c.optional for c in columns}
    infos = [ColumnInfo(c.name, c.type_oid, c.type_modifier, optional.get(c.name, True)) for c in relation.columns]
    return TableEvents(prefix, dbname, relation.namespace, relation.name, infos, key,
                       decimal_mode=decimal_mode, time_mode=time_mode)

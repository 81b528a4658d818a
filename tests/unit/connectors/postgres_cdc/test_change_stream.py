"""The change stream emits each change once in commit order and resumes exactly from a stored offset."""

from __future__ import annotations

import struct
from typing import Any

from kopycat.connectors.postgres_cdc.change_stream import ChangeStream
from kopycat.connectors.postgres_cdc.events import ColumnInfo, TableEvents
from kopycat.connectors.postgres_cdc.pgoutput import Relation

PARTITION = {"server": "shop"}
OID = struct.pack("!I", 7)


def relation() -> bytes:
    column = struct.pack("!b", 1) + b"id\0" + struct.pack("!Ii", 23, -1)
    return b"R" + OID + b"public\0items\0d" + struct.pack("!h", 1) + column


def begin(final_lsn: int, xid: int) -> bytes:
    return b"B" + struct.pack("!qqI", final_lsn, 0, xid)


def commit(commit_lsn: int, end_lsn: int) -> bytes:
    return b"C" + struct.pack("!bqqq", 0, commit_lsn, end_lsn, 0)


def insert(row_id: int) -> bytes:
    text = str(row_id).encode()
    return b"I" + OID + b"N" + struct.pack("!h", 1) + b"t" + struct.pack("!i", len(text)) + text


def lookup(_relation: Relation) -> TableEvents:
    return TableEvents("shop", "db", "public", "items", [ColumnInfo("id", 23, -1, False)], ["id"],
                       decimal_mode="precise", time_mode="adaptive")


# Two transactions: xid 10 inserts 1 and 2 (commit ends at 300), xid 11 inserts 3 (commit ends at 500).
WAL = [(100, 10, relation()), (100, 10, begin(290, 10)), (100, 10, insert(1)), (200, 10, insert(2)),
       (300, 10, commit(290, 300)), (400, 11, begin(490, 11)), (400, 11, insert(3)), (500, 11, commit(490, 500))]


def ids_and_offsets(stored: dict[str, Any] | None) -> list[tuple[int, dict[str, Any]]]:
    stream = ChangeStream(PARTITION, stored, lookup, tombstones=True)
    return [(r.key.get("id"), r.source_offset) for r in stream.records(WAL)]


def test_a_transactions_last_change_carries_the_position_after_its_commit() -> None:
    found = ids_and_offsets(None)
    assert [i for i, _ in found] == [1, 2, 3]
    first, last_of_first, last = (offset for _, offset in found)
    assert (first["lsn"], first["lsn_proc"], first["txId"], first["messageType"]) == (100, 100, 10, "INSERT")
    assert "lsn_commit" not in first  # no commit processed before it
    assert (last_of_first["lsn"], last_of_first["lsn_commit"], last_of_first["messageType"]) == (300, 300, "COMMIT")
    assert (last["lsn"], last["lsn_commit"]) == (500, 500)


def test_resuming_after_a_commit_skips_that_transaction() -> None:
    stored = {"lsn": 300, "lsn_proc": 300, "lsn_commit": 300, "txId": 10, "messageType": "COMMIT"}
    assert [i for i, _ in ids_and_offsets(stored)] == [3]


def test_resuming_inside_a_transaction_skips_its_changes_up_to_the_stored_one() -> None:
    stored = {"lsn": 100, "lsn_proc": 100, "txId": 10, "messageType": "INSERT"}
    assert [i for i, _ in ids_and_offsets(stored)] == [2, 3]


def test_a_change_whose_lsn_equals_the_previous_commit_is_still_inside_its_transaction() -> None:
    stored = {"lsn": 400, "lsn_proc": 400, "lsn_commit": 400, "txId": 11, "messageType": "INSERT"}  # Debezium's
    assert [i for i, _ in ids_and_offsets(stored)] == []

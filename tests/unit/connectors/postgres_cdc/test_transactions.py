"""Transaction metadata as Debezium's TransactionMonitor: BEGIN/END records, blocks, offsets, restart."""

from __future__ import annotations

from typing import Any

from kopycat.api.records import SourceRecord
from kopycat.connectors.postgres_cdc.change_stream import ChangeStream
from kopycat.connectors.postgres_cdc.transactions import TransactionMetadata, java_hash_map_order
from tests.unit.connectors.postgres_cdc.test_change_stream import PARTITION, WAL, lookup

COUNT = "transaction_data_collection_order_public.items"


def stream(stored: dict[str, Any] | None = None) -> list[SourceRecord]:
    transactions = TransactionMetadata("shop", "transaction", PARTITION, stored)
    return list(ChangeStream(PARTITION, stored, lookup, True, transactions=transactions).records(WAL))


def summary(record: SourceRecord) -> tuple[Any, ...]:
    if record.topic == "shop.transaction":
        value = record.value
        collections = [(c.get("data_collection"), c.get("event_count")) for c in value.get("data_collections") or []]
        return value.get("status"), value.get("id"), value.get("event_count"), collections
    block = record.value.get("transaction")
    return record.key.get("id"), block.get("id"), block.get("total_order"), block.get("data_collection_order")


def test_each_transaction_is_framed_by_begin_and_end_with_debeziums_ids_and_counts() -> None:
    records = stream()
    assert [summary(r) for r in records] == [
        ("BEGIN", "10:100", None, []), (1, "10:100", 1, 1), (2, "10:200", 2, 2),
        ("END", "10:300", 2, [("public.items", 2)]),
        ("BEGIN", "11:400", None, []), (3, "11:400", 1, 1), ("END", "11:500", 1, [("public.items", 1)])]
    begin, first, second, end = records[:4]
    assert begin.key.get("id") == "10:100" and begin.value.get("ts_ms") == 946_684_800_000  # PostgreSQL epoch
    assert (begin.source_offset["messageType"], begin.source_offset["transaction_id"]) == ("BEGIN", "10")
    assert COUNT not in begin.source_offset
    assert (first.source_offset["lsn"], first.source_offset[COUNT]) == (100, 1)
    assert (second.source_offset["messageType"], second.source_offset["lsn"], second.source_offset[COUNT]) == (
        "INSERT", 200, 2)  # with metadata the END, not the last change, carries the commit position
    assert (end.source_offset["lsn"], end.source_offset["lsn_commit"], end.source_offset["messageType"],
            end.source_offset[COUNT]) == (300, 300, "COMMIT", 2)


def test_a_restart_inside_a_transaction_continues_its_counts_without_a_second_begin() -> None:
    stored = {"lsn": 100, "lsn_proc": 100, "txId": 10, "ts_usec": 0, "messageType": "INSERT",
              "transaction_id": "10", COUNT: 1}
    assert [summary(r) for r in stream(stored)] == [
        (2, "10:200", 2, 2), ("END", "10:300", 2, [("public.items", 2)]),
        ("BEGIN", "11:400", None, []), (3, "11:400", 1, 1), ("END", "11:500", 1, [("public.items", 1)])]


def test_data_collections_follow_java_hash_map_iteration_order() -> None:
    # The orders java.util.HashMap printed for these insertion orders (JDK 17).
    assert java_hash_map_order(["public.items", "public.others", "inventory.stock", "s1.a", "s2.a", "public.orders"]) \
        == ["public.items", "inventory.stock", "s1.a", "public.others", "public.orders", "s2.a"]
    tables = [f"public.t{n}" for n in range(1, 31)]  # past 12 and 24 entries: the table grows twice
    assert java_hash_map_order(tables) == [f"public.t{n}" for n in (
        25, 26, 23, 24, 29, 27, 28, 8, 7, 9, 4, 3, 6, 5, 21, 22, 2, 1, 20, 14, 15, 12, 13, 18, 19, 16, 17, 10, 11, 30)]

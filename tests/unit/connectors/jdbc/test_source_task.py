"""JdbcSourceTask on SQLite: each mode's incremental reads, offsets in Confluent's shapes, windows."""

from __future__ import annotations

import datetime as dt
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from kopycat.api.errors import ConfigError
from kopycat.api.window import TimeWindow
from kopycat.connectors.jdbc.source_offsets import Instant
from tests.support.source_items import poll_records
from tests.unit.connectors.jdbc.source_helpers import (
    Database,
    MemoryReader,
    drain,
    plan,
    start_task,
    values,
)

T0 = dt.datetime(2024, 1, 1, 12, 0, 0)


def stamp(seconds: float) -> str:
    return (T0 + dt.timedelta(seconds=seconds)).strftime("%Y-%m-%d %H:%M:%S.%f")


def millis(seconds: float) -> int:
    return int((T0.replace(tzinfo=dt.UTC) + dt.timedelta(seconds=seconds)).timestamp() * 1000)


@pytest.fixture
def db(tmp_path: Path) -> Database:
    database = Database(tmp_path / "shop.db")
    database.run("""CREATE TABLE orders (id INTEGER PRIMARY KEY, item TEXT NOT NULL,
                    updated TIMESTAMP NOT NULL)""")
    return database


def add(db: Database, *rows: tuple[int, str, float]) -> None:
    db.run("INSERT OR REPLACE INTO orders VALUES (?, ?, ?)", [(i, item, stamp(s)) for i, item, s in rows])


def task_props(db: Database, mode: str, **extra: str) -> dict[str, str]:
    props = {"connection.url": db.url, "mode": mode, "topic.prefix": "shop-", "poll.interval.ms": "0",
             **{key.replace("_", "."): value for key, value in extra.items()}}
    if "timestamp" in mode:
        props.setdefault("timestamp.column.name", "updated")
    if "incrementing" in mode:
        props.setdefault("incrementing.column.name", "id")
    return plan(props)[1][0]


def test_bulk_copies_the_whole_table_with_confluents_v0_partition_and_null_offset(db: Database) -> None:
    add(db, (1, "a", 1), (2, "b", 2))
    task = start_task(task_props(db, "bulk", poll_interval_ms="60000"))
    records = drain(task)
    assert values(records, "item") == ["a", "b"]
    assert {r.topic for r in records} == {"shop-orders"}
    assert [(r.source_partition, r.source_offset) for r in records] == [({"table": "orders"}, None)] * 2


def test_incrementing_returns_exactly_the_rows_inserted_between_polls(db: Database) -> None:
    add(db, (1, "a", 1), (2, "b", 2))
    task = start_task(task_props(db, "incrementing"))
    first = drain(task)
    add(db, (3, "c", 3), (4, "d", 4))
    db.run("UPDATE orders SET item = 'changed' WHERE id = 1")  # incrementing mode cannot see updates
    second = drain(task)
    assert values(first, "id") == [1, 2] and values(second, "id") == [3, 4]
    assert [r.source_offset for r in second] == [{"incrementing": 3}, {"incrementing": 4}]
    assert second[0].source_partition == {"protocol": "1", "table": "orders"}


@pytest.mark.parametrize("mode", ["bulk", "incrementing", "timestamp", "timestamp+incrementing"])
def test_batches_hold_the_rows_poll_returns_each_ending_at_its_last_rows_offset(db: Database, mode: str) -> None:
    """A batch (the columnar path) holds the rows its records hold; a batch's offset is the offset of
    its last row, so committing it commits that row. Six rows in reads of three end on an empty read."""
    add(db, *[(i, f"i{i}", i // 2) for i in range(1, 7)])
    records = drain(start_task(task_props(db, mode, batch_max_rows="3", poll_interval_ms="60000")))
    batches = drain(start_task(task_props(db, mode, batch_max_rows="3", poll_interval_ms="60000")), batches=True)
    assert values([r for b in batches for r in b.records()], "item") == values(records, "item")
    assert [b.values.field("item").to_pylist() for b in batches] == [["i1", "i2"], ["i3", "i4", "i5"], ["i6"]] \
        if mode == "timestamp" else [len(b) for b in batches] == [3, 3]
    ends, seen = [], 0
    for batch in batches:
        seen += len(batch)
        ends.append(records[seen - 1].source_offset)
    assert [b.source_offset for b in batches] == ends
    assert all(b.source_partition == records[0].source_partition and b.topic == "shop-orders" for b in batches)


def test_batch_max_rows_limits_each_poll_and_the_result_stays_open_between_polls(db: Database) -> None:
    add(db, *[(i, f"i{i}", i) for i in range(1, 8)])
    task = start_task(task_props(db, "incrementing", batch_max_rows="3"))
    sizes = [len(poll_records(task) or []) for _ in range(4)]
    assert sizes == [3, 3, 1, 0]


def test_timestamp_mode_returns_new_and_updated_rows_with_timestamp_offsets(db: Database) -> None:
    add(db, (1, "a", 1), (2, "b", 2))
    task = start_task(task_props(db, "timestamp"))
    first = drain(task)
    add(db, (1, "a2", 5), (3, "c", 6))
    second = drain(task)
    assert values(first, "item") == ["a", "b"] and values(second, "item") == ["a2", "c"]
    assert second[-1].source_offset == {"timestamp": millis(6), "timestamp_nanos": 0}


def test_timestamp_mode_moves_the_offset_only_past_the_last_row_of_equal_timestamps(db: Database) -> None:
    add(db, (1, "a", 1), (2, "b", 2), (3, "c", 2), (4, "d", 2), (5, "e", 3))
    task = start_task(task_props(db, "timestamp", batch_max_rows="2"))
    records = drain(task)
    offsets = [r.source_offset.get("timestamp") for r in records]
    assert values(records, "id") == [1, 2, 3, 4, 5]
    assert offsets == [millis(1), millis(1), millis(1), millis(2), millis(3)]


def test_timestamp_incrementing_copies_rows_of_equal_timestamps_after_the_stored_one(db: Database) -> None:
    add(db, (1, "a", 1), (2, "b", 2), (3, "c", 2), (4, "d", 2), (5, "e", 3))
    partition = {"protocol": "1", "table": "orders"}
    stored = {"incrementing": 3, "timestamp": millis(2), "timestamp_nanos": 0}
    task = start_task(task_props(db, "timestamp+incrementing"), MemoryReader([(partition, stored)]))
    records = drain(task)
    assert values(records, "id") == [4, 5]
    assert [r.source_offset for r in records] == [
        {"incrementing": 4, "timestamp": millis(2), "timestamp_nanos": 0},
        {"incrementing": 5, "timestamp": millis(3), "timestamp_nanos": 0}]
    add(db, (6, "f", 3), (2, "b2", 4))
    assert values(drain(task), "id") == [6, 2]


def test_timestamp_offsets_keep_microseconds_in_timestamp_nanos(db: Database) -> None:
    add(db, (1, "a", 1.123456))
    record = drain(start_task(task_props(db, "timestamp+incrementing")))[0]
    assert record.source_offset == {"incrementing": 1, "timestamp": millis(1.123),
                                    "timestamp_nanos": 123456000}


def test_a_task_resumes_from_a_legacy_v0_partition_when_no_v1_offset_is_stored(db: Database) -> None:
    add(db, (1, "a", 1), (2, "b", 2), (3, "c", 3))
    reader = MemoryReader([({"table": "orders"}, {"incrementing": 2})])
    records = drain(start_task(task_props(db, "incrementing"), reader))
    assert values(records, "id") == [3]
    assert reader.asked == [{"protocol": "1", "table": "orders"}, {"table": "orders"}]


def test_timestamp_initial_starts_timestamp_modes_at_that_time(db: Database) -> None:
    add(db, (1, "a", 1), (2, "b", 2), (3, "c", 3))
    records = drain(start_task(task_props(db, "timestamp", timestamp_initial=str(millis(2)))))
    assert values(records, "id") == [3]


def test_a_window_copies_exactly_the_rows_inside_it_without_reading_offsets(db: Database) -> None:
    add(db, (1, "a", 1), (2, "b", 2), (3, "c", 3), (4, "d", 4))
    reader = MemoryReader([({"protocol": "1", "table": "orders"}, {"incrementing": 3, "timestamp": millis(3)})])
    props = {**task_props(db, "timestamp+incrementing"), **TimeWindow(millis(2), millis(4)).to_props()}
    task = start_task(props, reader)
    assert values(drain(task), "id") == [2, 3]
    add(db, (5, "e", 2.5))
    assert task.poll() is None and reader.asked == []  # done: the window is not read again


def test_a_bulk_window_copies_the_table_once(db: Database) -> None:
    add(db, (1, "a", 1), (2, "b", 2))
    props = {**task_props(db, "bulk"), **TimeWindow(0, 1).to_props()}
    task = start_task(props)
    assert values(drain(task), "id") == [1, 2]
    time.sleep(0.05)
    assert task.poll() is None


def test_a_window_in_incrementing_mode_is_refused_naming_the_table_mode_and_fix(db: Database) -> None:
    props = {**task_props(db, "incrementing"), **TimeWindow(0, 1).to_props()}
    with pytest.raises(ConfigError, match=r"orders.*mode=incrementing.*Use mode timestamp"):
        start_task(props)


def test_query_mode_copies_the_query_into_the_prefix_topic(db: Database) -> None:
    add(db, (1, "a", 1), (2, "b", 2), (3, "c", 3))
    props = {"connection.url": db.url, "mode": "incrementing", "incrementing.column.name": "id",
             "query": "SELECT id, upper(item) AS item FROM orders", "topic.prefix": "upper", "poll.interval.ms": "0"}
    task = start_task(plan(props)[1][0], MemoryReader([({"query": "query"}, {"incrementing": 1})]))
    records = drain(task)
    assert values(records, "item") == ["B", "C"] and {r.topic for r in records} == {"upper"}
    assert records[-1].source_partition == {"query": "query"} and records[-1].source_offset == {"incrementing": 3}


def test_poll_returns_none_quickly_when_nothing_is_due(db: Database) -> None:
    add(db, (1, "a", 1))
    task = start_task(task_props(db, "incrementing", poll_interval_ms="60000"))
    drain(task)
    started = time.monotonic()
    assert task.poll() is None
    assert time.monotonic() - started < 0.5


def test_stop_from_another_thread_makes_poll_return(db: Database) -> None:
    add(db, (1, "a", 1))
    task = start_task(task_props(db, "incrementing", poll_interval_ms="60000"))
    drain(task)
    threading.Timer(0.05, task.stop).start()
    results: list[Any] = [task.poll() for _ in range(3)]
    assert results == [None, None, None]


def test_instant_round_trips_java_timestamp_fields() -> None:
    value = dt.datetime(2024, 5, 1, 0, 0, 0, 987654, tzinfo=dt.UTC)
    instant = Instant.of(value, dt.UTC)
    assert instant == Instant(int(value.timestamp() * 1000) , 987654000)
    assert instant.to_datetime() == value


def test_a_timestamp_window_in_timestamp_mode_copies_rows_from_start_to_before_end(db: Database) -> None:
    add(db, (1, "a", 1), (2, "b", 2), (3, "c", 2), (4, "d", 4))
    props = {**task_props(db, "timestamp"), **TimeWindow(millis(2), millis(4)).to_props()}
    assert values(drain(start_task(props)), "id") == [2, 3]


def test_query_mode_with_timestamps_reads_new_rows_by_the_query_s_column(db: Database) -> None:
    add(db, (1, "a", 1), (2, "b", 2))
    props = {"connection.url": db.url, "mode": "timestamp", "timestamp.column.name": "updated",
             "query": "SELECT id, updated FROM orders", "topic.prefix": "q", "poll.interval.ms": "0"}
    task = start_task(plan(props)[1][0])
    assert values(drain(task), "id") == [1, 2]
    add(db, (3, "c", 3))
    assert values(drain(task), "id") == [3]


def test_the_first_poll_gives_every_due_table_a_turn(tmp_path: Path) -> None:
    db = Database(tmp_path / "two.db")
    db.run("CREATE TABLE a (id INTEGER PRIMARY KEY); CREATE TABLE b (id INTEGER PRIMARY KEY);")
    db.run("INSERT INTO b VALUES (?)", [(1,), (2,)])
    props = {"connection.url": db.url, "mode": "incrementing", "poll.interval.ms": "60000"}
    task = start_task(plan(props)[1][0])
    first = poll_records(task)
    assert first is not None and [r.topic for r in first] == ["b", "b"]

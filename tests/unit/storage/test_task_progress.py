"""A running copy task's figures on the status topic: the record, its replay, the memory store."""

from __future__ import annotations

import logging

import pytest

from kopycat.storage.status_backing_store import MemoryStatusBackingStore, StatusTable
from kopycat.storage.task_progress import (
    TaskProgress,
    decode_progress,
    encode_progress,
    parse_progress_key,
    progress_key,
)

SUMMARY = {"connector": "a-b", "task": 3, "records": 1200, "duration_s": 2.5,
           "metrics": {"sink-task-metrics.sink-record-send-total": 1200,
                       "sink-task-metrics.put-batch-avg-time-ms": None}}


def test_a_progress_record_round_trips_under_its_own_key() -> None:
    progress = TaskProgress("a-b", 3, "kopycat_connector_a-b/manual__1", SUMMARY)
    assert progress_key("a-b", 3) == "kopycat-progress-a-b-3"
    assert parse_progress_key("kopycat-progress-a-b-3") == ("a-b", 3)
    assert parse_progress_key("status-task-a-b-3") is None
    assert decode_progress("a-b", 3, encode_progress(progress), "connect-status") == progress


def test_the_status_table_keeps_each_tasks_latest_progress_and_a_tombstone_drops_it() -> None:
    table = StatusTable("connect-status")
    for task, records in ((0, 10), (1, 5), (0, 20)):
        value = encode_progress(TaskProgress("c", task, "r", {"records": records}))
        table.apply(progress_key("c", task).encode(), value)
    assert [(p.task, p.summary["records"]) for p in table.get_all_progress("c")] == [(0, 20), (1, 5)]
    table.apply(progress_key("c", 0).encode(), None)
    assert [p.task for p in table.get_all_progress("c")] == [1]
    assert table.connectors() == set() and table.get_all_tasks("c") == []  # no status made up


def test_a_bad_progress_record_is_logged_with_its_key_and_skipped(caplog: pytest.LogCaptureFixture) -> None:
    table = StatusTable("connect-status")
    with caplog.at_level(logging.ERROR, logger="kopycat.storage.status_backing_store"):
        table.apply(b"kopycat-progress-c-0", b'{"summary": {}}')
    assert table.get_all_progress("c") == []
    assert any("kopycat-progress-c-0" in r.getMessage() and "'run'" in r.getMessage() for r in caplog.records)


def test_the_memory_store_keeps_progress_per_connector() -> None:
    store = MemoryStatusBackingStore()
    store.put_progress(TaskProgress("c", 1, "r", {"records": 1})).result()
    store.put_progress(TaskProgress("d", 0, "r", {"records": 2})).result()
    assert store.get_all_progress("c") == [TaskProgress("c", 1, "r", {"records": 1})]


def test_a_connector_tombstone_drops_its_tasks_progress_as_it_drops_their_statuses() -> None:
    table = StatusTable("connect-status")
    for connector in ("c", "d"):
        table.apply(progress_key(connector, 0).encode(), encode_progress(TaskProgress(connector, 0, "r")))
    table.apply(b"status-connector-c", None)
    assert table.get_all_progress("c") == []
    assert [p.connector for p in table.get_all_progress("d")] == ["d"]


def test_the_memory_store_deletes_one_tasks_progress() -> None:
    store = MemoryStatusBackingStore()
    for task in (0, 1):
        store.put_progress(TaskProgress("c", task, "r", {"records": task})).result()
    store.delete_progress("c", 0).result()
    assert [p.task for p in store.get_all_progress("c")] == [1]

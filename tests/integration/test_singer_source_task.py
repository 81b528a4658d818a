"""SingerSourceTask running tap-orders (a singer-sdk tap) as a child process: records, keys, state as
offset, resumption, failure. No broker: the task is driven directly, its offsets from a dict."""

from __future__ import annotations

import datetime as dt
import decimal
from pathlib import Path
from typing import Any

import pytest

from kopycat.api import BOUNDED_RUN_CONFIG, ConfigError, ConnectError, RunComplete, SourceRecordBatch
from kopycat.api.records import SourceRecord
from kopycat.connectors.singer import SingerSourceConnector
from kopycat.connectors.singer.source_task import SingerSourceTask, state_of
from tests.support.singer import TaskContext, order_rows, tap_executable
from tests.support.source_items import records_of

PARTITION_KEY = (("tap", "tap-orders"),)


def run(props: dict[str, str], offsets: dict[Any, Any] | None = None, *, columns: bool = True
        ) -> tuple[list[Any], SingerSourceTask]:
    """Every item of one bounded run, until RunComplete."""
    task = SingerSourceTask()
    task.initialize(TaskContext(props, offsets, columns=columns))
    task.start(props)
    items: list[Any] = []
    try:
        for _ in range(200):
            try:
                items.extend(task.poll() or [])
            except RunComplete:
                return items, task
        raise AssertionError("the run did not complete")
    finally:
        task.stop()


def bookmark(record: SourceRecord) -> str | None:
    """The replication key value of the state a record carries (the state also holds a run's clock)."""
    return (state_of(record.source_offset) or {}).get("bookmarks", {}).get("orders", {}).get("replication_key_value")


@pytest.fixture
def props(tmp_path: Path) -> dict[str, str]:
    from tests.support.singer_orders_tap import insert_orders

    insert_orders(str(tmp_path / "orders.db"), order_rows(range(1, 8)))
    return {"singer.tap.executable": str(tap_executable(tmp_path)),
            "singer.tap.config.database": str(tmp_path / "orders.db"), "singer.tap.config.page_size": "2",
            "topic.prefix": "shop.", BOUNDED_RUN_CONFIG: "true"}


def test_records_carry_the_streams_schema_key_and_values(props: dict[str, str]) -> None:
    items, _ = run(props, columns=False)
    assert all(isinstance(item, SourceRecord) for item in items)
    assert [r.key.get("id") for r in items] == list(range(1, 8))
    first = items[0]
    assert first.topic == "shop.orders" and first.source_partition == {"tap": "tap-orders"}
    assert first.value.get("updated_at") == dt.datetime(2026, 1, 1, 10, tzinfo=dt.UTC)
    assert first.value.get("amount") == decimal.Decimal("1.25")
    assert first.value.get("price_exact") == decimal.Decimal("1.123456789")
    assert first.value.get("shipped_on") == dt.date(2026, 2, 1)
    assert first.value.get("customer").get("email") is None and first.value.get("tags") == ["a"]
    assert first.key_schema.field("id").schema == first.value_schema.field("id").schema


def test_the_last_record_before_a_state_carries_it_and_no_record_carries_a_state_past_it(
        props: dict[str, str]) -> None:
    records = records_of(run(props)[0])
    bookmarks = [bookmark(r) for r in records]
    assert bookmarks[-1] == "2026-01-07T10:00:00+00:00"
    assert list(records[-1].source_offset) == ["state"]  # nested JSON as text: Kafka Connect's offsets are flat
    for record, carried in zip(records, bookmarks, strict=True):  # resuming from it re-sends later records
        assert carried is None or carried[:19] <= record.value.get("updated_at").isoformat()[:19]
    assert bookmarks[2] == "2026-01-03T10:00:00+00:00" and bookmarks[1] is None  # tap-orders' first STATE


def test_a_run_from_the_stored_state_returns_only_rows_changed_since(props: dict[str, str], tmp_path: Path) -> None:
    from tests.support.singer_orders_tap import insert_orders

    first = records_of(run(props)[0])
    insert_orders(str(tmp_path / "orders.db"), order_rows(range(8, 11)))
    second = records_of(run(props, {PARTITION_KEY: first[-1].source_offset})[0])
    assert [r.key.get("id") for r in second] == [8, 9, 10]


def test_batches_hold_the_same_records_as_the_record_path(props: dict[str, str]) -> None:
    batched, _ = run(props, columns=True)
    assert any(isinstance(item, SourceRecordBatch) for item in batched)
    one_by_one, _ = run(props, columns=False)
    assert [(r.key, r.value, bookmark(r)) for r in records_of(batched)] == [
        (r.key, r.value, bookmark(r)) for r in one_by_one]


def test_a_tap_exiting_non_zero_fails_the_task_with_its_stderr_tail(props: dict[str, str]) -> None:
    with pytest.raises(ConnectError, match=r"exited with code 1(.|\n)*the source went away after 3 rows"):
        run({**props, "singer.tap.config.fail_after": "3"})


def test_selecting_a_stream_the_tap_does_not_have_names_the_streams_found(props: dict[str, str]) -> None:
    with pytest.raises(ConfigError, match=r"refunds.*streams found: \['orders'\]"):
        run({**props, "singer.tap.select": "refunds"})
    items, _ = run({**props, "singer.tap.select": "orders"})
    assert len(records_of(items)) == 7


def test_the_connector_plans_one_task_and_validates_its_keys(props: dict[str, str]) -> None:
    connector = SingerSourceConnector()
    with pytest.raises(ConfigError, match="singer.tap.executable"):
        connector.start({})
    connector.start(props)
    assert connector.task_configs(4) == [props]
    assert all(key.doc for key in connector.config().config_keys().values())

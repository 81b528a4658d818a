"""DltSourceTask running dlt's sql_database (SQLite), rest_api (a local paginated API) and a hand-written
resource: rows, keys, each resource's state as its offset, resumption, and resources split over tasks.
No broker: the tasks are driven directly, their offsets from a dict."""

from __future__ import annotations

import datetime as dt
import decimal
import json
import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from kopycat.api import BOUNDED_RUN_CONFIG, SourceRecordBatch
from kopycat.api.task import SourceItem
from kopycat.connectors.dlt import DltSourceConnector
from kopycat.connectors.dlt.source_task import DltSourceTask, state_of
from tests.support.dlt_sources import PagedApi, create_orders, run_task
from tests.support.singer import TaskContext
from tests.support.source_items import records_of

SQL_DATABASE = "dlt.sources.sql_database:sql_database"


def run(props: dict[str, str], offsets: dict[Any, Any] | None = None, *, max_tasks: int = 1,
        columns: bool = True) -> list[list[SourceItem]]:
    """Plan the connector's tasks and run each once to its end; each task's items."""
    connector = DltSourceConnector()
    connector.start(props)
    runs = []
    for config in connector.task_configs(max_tasks):
        task = DltSourceTask()
        task.initialize(TaskContext(config, offsets, columns=columns))
        task.start(config)
        runs.append(run_task(task))
    return runs


def stored(items: list[SourceItem], offsets: dict[Any, Any] | None = None) -> dict[Any, Any]:
    """The offsets after a run: each partition's last offset (what the engine commits), over ``offsets``."""
    found = dict(offsets or {})
    for item in items:
        if item.source_offset is not None:
            found[tuple(sorted(item.source_partition.items()))] = item.source_offset
    return found


def last_value(offset: dict[str, Any], cursor: str) -> Any:
    return state_of(offset)["incremental"][cursor]["last_value"]  # type: ignore[index]


@pytest.fixture
def orders(tmp_path: Path) -> dict[str, str]:
    database = str(tmp_path / "shop.db")
    create_orders(database, range(1, 6))
    return {"dlt.source": SQL_DATABASE, "dlt.args.credentials": f"sqlite:///{database}",
            "dlt.args.table_names": '["orders"]', "dlt.incremental": "orders:updated_at", "topic.prefix": "shop.",
            BOUNDED_RUN_CONFIG: "true", "database": database}


@pytest.mark.parametrize("backend", ["sqlalchemy", "pyarrow"])
def test_sql_database_second_run_copies_only_new_rows_and_the_offset_is_dlts_last_value(
        orders: dict[str, str], backend: str) -> None:
    props = {**orders, "dlt.args.backend": backend}
    [first] = run(props)
    assert all(isinstance(item, SourceRecordBatch) and isinstance(item.values, pa.StructArray) for item in first)
    records = records_of(first)
    assert [r.key.get("id") for r in records] == [1, 2, 3, 4, 5]
    assert {r.topic for r in records} == {"shop.orders"}
    assert first[-1].source_partition == {"dlt_source": "sql_database", "resource": "orders"}
    assert records[1].value.get("amount") == decimal.Decimal("2.50") and records[0].value.get("note") is None
    assert records[0].value.get("updated_at") == dt.datetime(2026, 1, 1, 10, 1, tzinfo=dt.UTC)
    offsets = stored(first)
    assert last_value(first[-1].source_offset, "updated_at") == dt.datetime(2026, 1, 1, 10, 5)

    create_orders(orders["database"], range(6, 9))
    [second] = run(props, offsets)
    keys = [r.key.get("id") for r in records_of(second)]
    assert keys == [6, 7, 8]
    assert not {r.key.get("id") for r in records} & set(keys)  # duplicates = 0
    assert last_value(second[-1].source_offset, "updated_at") == dt.datetime(2026, 1, 1, 10, 8)

    [third] = run(props, stored(second, offsets))
    assert records_of(third) == []


def test_only_the_last_batch_carries_the_new_state_the_others_the_one_the_run_started_from(
        orders: dict[str, str]) -> None:
    props = {**orders, "dlt.batch.max.rows": "2"}
    offsets = stored(run(props)[0])
    create_orders(orders["database"], range(6, 11))
    [second] = run(props, offsets)
    assert [len(item) for item in second] == [2, 2, 1]
    started_from = next(iter(offsets.values()))
    assert [item.source_offset for item in second[:-1]] == [started_from, started_from]
    assert last_value(second[-1].source_offset, "updated_at") == dt.datetime(2026, 1, 1, 10, 10)


def test_record_path_gives_the_same_records_as_the_columns(orders: dict[str, str]) -> None:
    by_columns = records_of(run(orders)[0])
    by_records = records_of(run(orders, columns=False)[0])
    assert [(r.key, r.value) for r in by_records] == [(r.key, r.value) for r in by_columns]


def test_rest_api_pages_are_read_to_the_end_and_the_second_run_asks_from_the_last_cursor() -> None:
    with PagedApi() as api:
        api.add(range(1, 8))
        props = {"dlt.source": "dlt.sources.rest_api:rest_api_source",
                 "dlt.args.config": json.dumps(api.rest_api_config()), "topic.prefix": "api.",
                 BOUNDED_RUN_CONFIG: "true"}
        [first] = run(props)
        records = records_of(first)
        assert [r.key.get("id") for r in records] == list(range(1, 8))
        assert records[3].value.get("tags") == ["a"] and records[0].topic == "api.items"
        assert len(api.requests) == 3  # pages of 3, 3 and 1
        assert last_value(first[-1].source_offset, "updated_at") == 70

        api.add(range(8, 12))
        api.requests.clear()
        [second] = run(props, stored(first))
        assert [r.key.get("id") for r in records_of(second)] == [8, 9, 10, 11]
        assert api.requests[0] == {"since": ["70"]}
        assert last_value(second[-1].source_offset, "updated_at") == 110


def test_a_resources_own_state_is_kept_in_its_offset() -> None:
    props = {"dlt.source": "tests.support.dlt_sources:numbers", "dlt.args.count": "3", "dlt.args.label": "007",
             "dlt.args.step": "5", BOUNDED_RUN_CONFIG: "true"}
    [first] = run(props)
    assert [(r.key.get("n"), r.value.get("label")) for r in records_of(first)] == [(5, "007"), (10, "007"),
                                                                                      (15, "007")]
    assert first[-1].source_partition == {"dlt_source": "numbers", "resource": "numbers"}
    assert state_of(first[-1].source_offset) == {"last": 15}
    [second] = run(props, stored(first))
    assert [r.key.get("n") for r in records_of(second)] == [20, 25, 30]


def test_resources_are_dealt_round_robin_over_tasks_and_each_task_copies_only_its_own(tmp_path: Path) -> None:
    import sqlite3

    database = str(tmp_path / "many.db")
    with sqlite3.connect(database) as connection:
        for index, table in enumerate(["alpha", "beta", "gamma"]):
            connection.execute(f"CREATE TABLE {table} (id INTEGER PRIMARY KEY)")
            connection.executemany(f"INSERT INTO {table} VALUES (?)", [(i,) for i in range(index + 1)])
    props = {"dlt.source": SQL_DATABASE, "dlt.args.credentials": f"sqlite:///{database}",
             "dlt.args.table_names": '["alpha", "beta", "gamma"]', "topic.prefix": "m.", BOUNDED_RUN_CONFIG: "true"}
    connector = DltSourceConnector()
    connector.start(props)
    assert [c["dlt.task.resources"] for c in connector.task_configs(2)] == ["alpha,gamma", "beta"]
    assert [c["dlt.task.resources"] for c in connector.task_configs(5)] == ["alpha", "beta", "gamma"]
    runs = run(props, max_tasks=2)
    topics = [sorted({(r.topic, r.key.get("id")) for r in records_of(items)}) for items in runs]
    assert topics == [[("m.alpha", 0), ("m.gamma", 0), ("m.gamma", 1), ("m.gamma", 2)],
                      [("m.beta", 0), ("m.beta", 1)]]


def test_a_continuous_run_runs_the_source_again_from_its_state_and_copies_only_new_rows(
        orders: dict[str, str]) -> None:
    props = {key: value for key, value in orders.items() if key != BOUNDED_RUN_CONFIG}
    props["dlt.restart.interval.ms"] = "0"
    connector = DltSourceConnector()
    connector.start(props)
    [config] = connector.task_configs(1)
    task = DltSourceTask()
    task.initialize(TaskContext(config))
    task.start(config)
    try:
        first = records_of(task.poll() or [])
        assert [r.key.get("id") for r in first] == [1, 2, 3, 4, 5]
        create_orders(orders["database"], range(6, 8))
        later: list[Any] = []
        for _ in range(30):  # a pass per poll at most: wait for the one after the insert
            later += records_of(task.poll() or [])
            if len(later) >= 2:
                break
        assert [r.key.get("id") for r in later] == [6, 7]
    finally:
        task.stop()
    assert task.poll() is None


def write_csv(directory: Path, name: str, ids: range, modified: dt.datetime) -> None:
    """A CSV file of orders ``ids`` whose modification time is ``modified`` (what the incremental reads)."""
    path = directory / name
    path.write_text("id,amount\n" + "".join(f"{i},{i * 10}\n" for i in ids))
    os.utime(path, (modified.timestamp(), modified.timestamp()))


FILES = {
    "readers": {"dlt.source": "dlt.sources.filesystem:readers", "dlt.resources": "read_csv",
                "dlt.args.incremental": '{"cursor_path": "modification_date"}'},
    "factory": {"dlt.source": "tests.support.dlt_sources:csv_orders"},
}


@pytest.mark.parametrize("form", FILES)
def test_filesystem_files_second_run_copies_only_the_new_files_with_the_cursor_in_the_pipes_offset(
        tmp_path: Path, form: str) -> None:
    files = tmp_path / "in"
    files.mkdir()
    t0 = dt.datetime(2026, 5, 1, 12, 0, tzinfo=dt.UTC)
    write_csv(files, "a.csv", range(1, 4), t0)
    write_csv(files, "b.csv", range(4, 6), t0 + dt.timedelta(minutes=1))
    (files / "skip.txt").write_text("not a csv")
    props = {**FILES[form], "dlt.args.bucket_url": files.as_uri(), "dlt.args.file_glob": "*.csv",
             "topic.prefix": "files.", BOUNDED_RUN_CONFIG: "true"}
    [first] = run(props)
    resource = "read_csv" if form == "readers" else "orders"
    assert sorted(r.value.get("id") for r in records_of(first)) == [1, 2, 3, 4, 5]
    assert {r.topic for r in records_of(first)} == {f"files.{resource}"}
    assert records_of(first)[0].value.get("amount") == 10
    offsets = stored(first)
    offset = offsets[tuple(sorted({"dlt_source": first[-1].source_partition["dlt_source"],
                                   "resource": resource}.items()))]
    [step] = state_of(offset, "pipe").values()  # type: ignore[union-attr] - the filesystem step's
    assert step["incremental"]["modification_date"]["last_value"] == t0 + dt.timedelta(minutes=1)

    write_csv(files, "c.csv", range(6, 9), t0 + dt.timedelta(minutes=2))
    [second] = run(props, offsets)
    assert sorted(r.value.get("id") for r in records_of(second)) == [6, 7, 8]  # a.csv, b.csv not again
    [third] = run(props, stored(second, offsets))
    assert records_of(third) == []


def test_source_level_state_has_its_own_partition_and_each_run_continues_from_it() -> None:
    props = {"dlt.source": "tests.support.dlt_sources:counting", "dlt.args.rows": "3", BOUNDED_RUN_CONFIG: "true"}
    offsets: dict[Any, Any] = {}
    for expected_run in (1, 2, 3):
        [items] = run(props, offsets)
        assert sorted(r.key.get("id") for r in records_of(items)) == [expected_run * 100 + i for i in range(3)]
        offsets = stored(items, offsets)
        source_offset = offsets[(("dlt_source", "counter"),)]
        assert state_of(source_offset) == {"runs": expected_run}
    assert set(offsets) == {(("dlt_source", "counter"),)}  # ticks keeps no state of its own


def test_source_level_state_rides_on_the_last_rows_even_when_the_last_chunk_has_one() -> None:
    props = {"dlt.source": "tests.support.dlt_sources:counting", "dlt.args.rows": "5", "dlt.batch.max.rows": "2",
             BOUNDED_RUN_CONFIG: "true"}
    [items] = run(props)
    assert [(len(item), item.source_partition) for item in items] == [
        (2, {"dlt_source": "counter", "resource": "ticks"}), (1, {"dlt_source": "counter"}),
        (1, {"dlt_source": "counter", "resource": "ticks"}), (1, {"dlt_source": "counter", "resource": "ticks"})]
    assert state_of(items[1].source_offset) == {"runs": 1}


def test_a_sorted_resource_carries_the_state_after_each_arrow_chunk_so_a_resume_starts_after_it(
        orders: dict[str, str]) -> None:
    props = {**orders, "dlt.args.backend": "pyarrow", "dlt.args.chunk_size": "2", "dlt.batch.max.rows": "2",
             "dlt.incremental.row.order": "asc"}
    [first] = run(props)
    assert [len(item) for item in first] == [2, 2, 1]
    assert [last_value(item.source_offset, "updated_at").minute for item in first] == [2, 4, 5]
    resumed = stored(first[:1])  # as if the run died after its first batch was committed
    [rest] = run(props, resumed)
    assert [r.key.get("id") for r in records_of(rest)] == [3, 4, 5]

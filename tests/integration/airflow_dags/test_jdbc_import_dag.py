"""The JDBC -> Kafka DAG under Airflow: mapping, incremental runs, retries, backfills, bad config.

Real PostgreSQL, real broker, real Airflow (dag.test in a child process). Assertions are on the
rows in the topics and the offsets in ``connect-offsets``.
"""

from __future__ import annotations

import datetime as dt
import json
import uuid
from pathlib import Path
from typing import Any

import orjson
import pytest
from sqlalchemy import Table

from kopycat.storage.kafka_offset_store import KafkaOffsetStore
from kopycat_airflow.local import LocalAirflow
from tests.support.kafka import consume_all
from tests.support.sql import create_stamped_tables, insert_stamped

pytestmark = [pytest.mark.integration, pytest.mark.timeout(2400)]

TABLES = ("alpha", "bravo", "charlie", "delta", "echo")
T0 = dt.datetime(2026, 11, 20, 0, 0, 0)  # rows are stamped from here on, one minute apart


def _dag_file(folder: Path, dag_id: str, config: dict[str, Any], **group_kwargs: Any) -> None:
    """A DAG file: hourly data intervals, one connector task group."""
    kwargs = ", ".join(f"{k}={v}" for k, v in group_kwargs.items())
    (folder / f"{dag_id}.py").write_text(f'''
import datetime as dt
import pendulum
from airflow.sdk import DAG
from airflow.timetables.interval import CronDataIntervalTimetable
from kopycat_airflow.task_group import connector_task_group

with DAG({dag_id!r}, schedule=CronDataIntervalTimetable("0 * * * *", timezone="UTC"),
         start_date=pendulum.datetime(2026, 1, 1, tz="UTC"), catchup=False):
    connector_task_group({json.dumps(config)}, retry_delay=dt.timedelta(seconds=1){", " + kwargs if kwargs else ""})
''')


def _create_tables(url: str, rows_per_table: int) -> Any:
    return create_stamped_tables(url, TABLES, rows_per_table, T0)


def _insert(engine: Any, table: Table, first: int, count: int) -> None:
    insert_stamped(engine, table, first, count, T0)


def _ids(bootstrap: str, topic: str) -> list[int]:
    values = consume_all(bootstrap, topic)
    return [orjson.loads(v)["payload"]["id"] for v in values if v is not None]


def _config(name: str, url: str, prefix: str, **extra: str) -> dict[str, str]:
    return {"name": name, "connector.class": "io.confluent.connect.jdbc.JdbcSourceConnector",
            "connection.url": url, "mode": "timestamp+incrementing", "timestamp.column.name": "updated_at",
            "incrementing.column.name": "id", "topic.prefix": prefix, "tasks.max": "3",
            "poll.interval.ms": "200", **extra}


def _offsets(bootstrap: str, connector: str) -> dict[str, Any]:
    store = KafkaOffsetStore(bootstrap)
    store.start()
    try:
        return {json.dumps(p, sort_keys=True): v for p, v in _partition_offsets(store, connector).items()}
    finally:
        store.stop()


def _partition_offsets(store: KafkaOffsetStore, connector: str) -> dict[str, Any]:
    from kopycat.storage.offset_storage_reader_writer import OffsetStorageReaderImpl

    reader = OffsetStorageReaderImpl(store, connector)
    partitions = [p for p in store.connector_partitions(connector) if p is not None]
    return {json.dumps(p, sort_keys=True): offset for p, offset in reader.offsets(partitions)}


def test_jdbc_import_maps_three_copy_tasks_and_each_run_copies_only_new_rows(
        local_airflow: LocalAirflow, postgres_url: str, bootstrap_servers: str) -> None:
    name, prefix = f"imp-{uuid.uuid4().hex[:6]}", f"imp{uuid.uuid4().hex[:6]}_"
    engine, metadata = _create_tables(postgres_url, 200)
    _dag_file(local_airflow.dags_folder, "t_import", _config(name, postgres_url, prefix))

    first = local_airflow.run_dag("t_import", "2026-11-21T01:00:00Z")
    assert first["state"] == "success", first.get("log")
    copies = first.tasks("copy")
    assert len(copies) == 3
    assert sum(t["result"]["records"] for t in copies) == 5 * 200
    assert sorted(t["label"] for t in copies) != ["0", "1", "2"]  # the UI names tasks by their tables

    _insert(engine, metadata.tables["alpha"], 201, 30)
    _insert(engine, metadata.tables["echo"], 201, 20)
    second = local_airflow.run_dag("t_import", "2026-11-21T02:00:00Z")
    assert second["state"] == "success", second.get("log")
    assert sum(t["result"]["records"] for t in second.tasks("copy")) == 50

    for table, expected in [("alpha", 230), ("bravo", 200), ("echo", 220)]:
        ids = _ids(bootstrap_servers, prefix + table)
        assert sorted(ids) == list(range(1, expected + 1)), table  # all rows, no duplicates
    engine.dispose()


def test_a_failed_mapped_task_is_retried_alone_and_resumes_without_duplicates(
        local_airflow: LocalAirflow, postgres_url: str, bootstrap_servers: str, tmp_path: Path) -> None:
    name, prefix = f"retry-{uuid.uuid4().hex[:6]}", f"rt{uuid.uuid4().hex[:6]}_"
    engine, _ = _create_tables(postgres_url, 3_000)
    marker = tmp_path / "failed-once"
    config = _config(name, postgres_url, prefix, **{
        "batch.max.rows": "500", "transforms": "fail",
        "transforms.fail.type": "tests.support.fail_once.FailOnceTransform",
        "transforms.fail.marker.path": str(marker), "transforms.fail.fail.topic": prefix + "charlie",
        "transforms.fail.after.records": "1700"})
    _dag_file(local_airflow.dags_folder, "t_retry", config, copy_retries=1)

    run = local_airflow.run_dag("t_retry", "2026-11-21T01:00:00Z")
    assert run["state"] == "success", run.get("log")
    assert marker.exists()  # the failure did fire
    tries = {t["label"]: t["try_number"] for t in run.tasks("copy")}
    assert sorted(tries.values()) == [1, 1, 2]  # only the failed task ran again
    assert [label for label, n in tries.items() if n == 2][0].find("charlie") >= 0
    for table in TABLES:
        ids = _ids(bootstrap_servers, prefix + table)
        assert len(ids) == len(set(ids)) == 3_000, table  # nothing lost, nothing twice
    engine.dispose()


def test_a_windowed_run_copies_exactly_its_interval_and_leaves_the_live_offsets(
        local_airflow: LocalAirflow, postgres_url: str, bootstrap_servers: str) -> None:
    name, prefix = f"win-{uuid.uuid4().hex[:6]}", f"win{uuid.uuid4().hex[:6]}_"
    engine, _ = _create_tables(postgres_url, 300)  # updated_at = T0 + id minutes: 00:01 .. 05:00
    _dag_file(local_airflow.dags_folder, "t_window", _config(name, postgres_url, prefix, **{"tasks.max": "1"}))
    live = local_airflow.run_dag("t_window", "2026-11-21T01:00:00Z")
    assert live["state"] == "success", live.get("log")
    before = _offsets(bootstrap_servers, name)
    assert len(before) == 5

    # The run at logical date 02:00 has the data interval [01:00, 02:00): ids 60..119 of each table.
    window = local_airflow.run_dag("t_window", "2026-11-20T02:00:00Z", conf={"kopycat_window": True})
    assert window["state"] == "success", window.get("log")
    assert sum(t["result"]["records"] for t in window.tasks("copy")) == 5 * 60
    assert _offsets(bootstrap_servers, name) == before  # the live offsets did not move
    ids = _ids(bootstrap_servers, prefix + "delta")
    assert sorted(ids) == sorted(list(range(1, 301)) + list(range(60, 120)))
    engine.dispose()


def test_a_bad_config_fails_the_plan_with_the_errors_and_starts_no_copy_task(
        local_airflow: LocalAirflow, postgres_url: str) -> None:
    config = _config(f"bad-{uuid.uuid4().hex[:6]}", postgres_url, "bad_", mode="sometimes", **{"tasks.max": "zero"})
    _dag_file(local_airflow.dags_folder, "t_bad", config)
    run = local_airflow.run_dag("t_bad", "2026-11-21T01:00:00Z")
    assert run["state"] == "failed"
    plan = run.tasks("plan")[0]
    assert plan["state"] == "failed" and plan["try_number"] == 1  # a bad config is not retried
    assert all(t["state"] != "success" and t["result"] is None for t in run.tasks("copy"))
    log = Path(run["log"]).read_text()
    assert "is invalid (" in log
    assert "mode: Invalid value sometimes" in log and "tasks.max: Invalid value zero" in log

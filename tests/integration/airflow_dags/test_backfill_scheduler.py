"""Issue #9 through a real scheduler: ``airflow backfill create`` re-copies exactly a past window.

dag.test() can only fake a backfill (conf ``kopycat_window``); here Airflow 3 itself runs the
DAG: api-server, scheduler and dag-processor with the LocalExecutor (tests/support/airflow_scheduler.py).
The scheduler makes the live run, the ``airflow backfill create`` CLI queues the backfill's runs and
the scheduler runs them as ``DagRunType.BACKFILL`` runs. Asserted on the data: the records the
backfill added to the topics (read from the end offsets taken before it) and the connector's records
in ``connect-offsets``. Source: two SQLite tables stamped one row a minute; broker: the session's.
"""

from __future__ import annotations

import datetime as dt
import json
import uuid
from pathlib import Path
from typing import Any

import orjson
import pytest
from confluent_kafka import Consumer, TopicPartition

from kopycat_airflow.local import LocalAirflow
from tests.support.airflow_scheduler import AirflowDeployment
from tests.support.sql import create_stamped_tables

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]

DAG_ID = "t_backfill_scheduler"
TABLES = ("alpha", "bravo")
ROWS = 300  # updated_at = T0 + id minutes: 00:01 .. 05:00
T0 = dt.datetime(2026, 11, 20, 0, 0, 0)
BACKFILL_FROM, BACKFILL_TO = "2026-11-20T01:00:00+00:00", "2026-11-20T02:00:00+00:00"
# Both ends are logical dates (data_interval_start): two hourly runs, [01:00, 02:00) and [02:00, 03:00).
WINDOW_IDS = list(range(60, 180))
OFFSETS_TOPIC = "connect-offsets"
FINISHED = ("success", "failed")


def _source_db(path: Path) -> str:
    url = f"sqlite:///{path}"
    engine, _ = create_stamped_tables(url, TABLES, ROWS, T0)
    engine.dispose()
    return url


def _dag_file(folder: Path, config: dict[str, str]) -> None:
    """Hourly data intervals, no catchup, one run at a time, unpaused: the scheduler starts the live run."""
    (folder / f"{DAG_ID}.py").write_text(f'''
import datetime as dt
import pendulum
from airflow.sdk import DAG
from airflow.timetables.interval import CronDataIntervalTimetable
from kopycat_airflow.task_group import connector_task_group

with DAG({DAG_ID!r}, schedule=CronDataIntervalTimetable("0 * * * *", timezone="UTC"),
         start_date=pendulum.datetime(2026, 1, 1, tz="UTC"), catchup=False, max_active_runs=1,
         is_paused_upon_creation=False):
    connector_task_group({json.dumps(config)}, retry_delay=dt.timedelta(seconds=1))
''')


def _end_offsets(bootstrap: str, topics: list[str]) -> dict[TopicPartition, int]:
    """The high watermark of every partition of ``topics``."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"check-{uuid.uuid4().hex}"})
    try:
        ends = {}
        for topic in topics:
            for partition in consumer.list_topics(topic, timeout=30).topics[topic].partitions:
                tp = TopicPartition(topic, partition)
                ends[tp] = consumer.get_watermark_offsets(tp, timeout=30)[1]
        return ends
    finally:
        consumer.close()


def _records_from(bootstrap: str, starts: dict[TopicPartition, int]) -> list[tuple[str, bytes | None, bytes | None]]:
    """(topic, key, value) of every record from ``starts`` to the current end of each partition."""
    ends = _end_offsets(bootstrap, sorted({tp.topic for tp in starts}))
    todo = [TopicPartition(tp.topic, tp.partition, start) for tp, start in starts.items()
            if ends[TopicPartition(tp.topic, tp.partition)] > start]
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"check-{uuid.uuid4().hex}",
                         "enable.auto.commit": False, "enable.partition.eof": True})
    try:
        consumer.assign(todo)
        left, records = {(tp.topic, tp.partition) for tp in todo}, []
        while left:
            message = consumer.poll(10)
            assert message is not None, f"timed out reading {sorted(left)}"
            if message.error():
                left.discard((message.topic(), message.partition()))
                continue
            records.append((message.topic(), message.key(), message.value()))
        return records
    finally:
        consumer.close()


def _ids_by_topic(records: list[tuple[str, bytes | None, bytes | None]]) -> dict[str, list[int]]:
    ids: dict[str, list[int]] = {}
    for topic, _, value in records:
        assert value is not None
        ids.setdefault(topic, []).append(orjson.loads(value)["payload"]["id"])
    return {topic: sorted(found) for topic, found in ids.items()}


def _connector_offsets(bootstrap: str, connector: str) -> dict[bytes, list[bytes | None]]:
    """Every value the connector's keys have in connect-offsets, raw bytes, in the order written.

    A key always lands in one partition, so each list's order is the log's; any new record,
    even one repeating the last value, makes the lists differ.
    """
    prefix = json.dumps([connector], separators=(",", ":"))[:-1].encode()  # b'["<connector>"'
    values: dict[bytes, list[bytes | None]] = {}
    for _, key, value in _records_from(bootstrap, {tp: 0 for tp in _end_offsets(bootstrap, [OFFSETS_TOPIC])}):
        if key is not None and key.startswith(prefix):
            values.setdefault(key, []).append(value)
    return values


def _live_run(airflow: AirflowDeployment) -> dict[str, Any] | None:
    """The DAG's first scheduled run once it has finished (a later one only starts past the next hour)."""
    runs = [r for r in airflow.dag_runs(DAG_ID) if r["run_type"] == "scheduled"]
    return runs[0] if runs and runs[0]["state"] in FINISHED else None


def _backfill_runs(airflow: AirflowDeployment, count: int) -> list[dict[str, Any]] | None:
    """The DAG's ``count`` backfill runs once all of them have finished."""
    runs = [r for r in airflow.dag_runs(DAG_ID) if r["run_type"] == "backfill"]
    return runs if len(runs) == count and all(r["state"] in FINISHED for r in runs) else None


def _task_states(airflow: AirflowDeployment, run_id: str) -> list[tuple[str, int, str]]:
    return [(t["task_id"].rsplit(".", 1)[-1], t["map_index"], t["state"])
            for t in airflow.task_instances(DAG_ID, run_id)]


def test_a_backfill_through_the_scheduler_copies_exactly_its_window_and_leaves_the_live_offsets(
        tmp_path: Path, bootstrap_servers: str) -> None:
    name, prefix = f"bfs-{uuid.uuid4().hex[:6]}", f"bfs{uuid.uuid4().hex[:6]}_"
    topics = [prefix + table for table in TABLES]
    dags = tmp_path / "dags"
    dags.mkdir()
    _dag_file(dags, {
        "name": name, "connector.class": "io.confluent.connect.jdbc.JdbcSourceConnector",
        "connection.url": _source_db(tmp_path / "source.db"), "mode": "timestamp+incrementing",
        "timestamp.column.name": "updated_at", "incrementing.column.name": "id", "topic.prefix": prefix,
        "tasks.max": "2", "poll.interval.ms": "200"})
    home = LocalAirflow(tmp_path / "airflow", dags, env={"KOPYCAT_BOOTSTRAP_SERVERS": bootstrap_servers})

    with AirflowDeployment(home) as airflow:
        live = airflow.wait_for(lambda: _live_run(airflow), 240, "a finished scheduled (live) run")
        assert live["state"] == "success", _task_states(airflow, live["run_id"])
        live_ends = _end_offsets(bootstrap_servers, topics)
        assert _ids_by_topic(_records_from(bootstrap_servers, {tp: 0 for tp in live_ends})) == {
            topic: list(range(1, ROWS + 1)) for topic in topics}  # the live run copied everything once
        offsets_before = _connector_offsets(bootstrap_servers, name)
        assert len(offsets_before) == len(TABLES)

        airflow.cli("backfill", "create", "--dag-id", DAG_ID, "--from-date", BACKFILL_FROM, "--to-date", BACKFILL_TO)
        backfill = airflow.wait_for(lambda: _backfill_runs(airflow, 2), 300, "two finished backfill runs")
        tasks = [_task_states(airflow, run["run_id"]) for run in backfill]

    assert [(r["state"], r["data_interval_start"][:16], r["data_interval_end"][:16]) for r in backfill] == [
        ("success", "2026-11-20 01:00", "2026-11-20 02:00"), ("success", "2026-11-20 02:00", "2026-11-20 03:00")]
    assert all(r["backfill_id"] is not None for r in backfill)
    assert tasks == [[("copy", 0, "success"), ("copy", 1, "success"), ("plan", -1, "success"),
                      ("summary", -1, "success")]] * 2  # one mapped copy task per table
    # Exactly the window's rows, each once, in each table's topic, and nothing else.
    assert _ids_by_topic(_records_from(bootstrap_servers, live_ends)) == {topic: WINDOW_IDS for topic in topics}
    # The live offsets did not move: not one offset record was written for the connector since.
    assert _connector_offsets(bootstrap_servers, name) == offsets_before

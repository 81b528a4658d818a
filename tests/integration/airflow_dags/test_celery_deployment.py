"""The JDBC import DAG on distributed Airflow: CeleryExecutor, PostgreSQL metadata DB, Redis, two workers.

One deployment for the module (tests/support/celery_deployment.py: api-server, scheduler,
dag-processor and two ``airflow celery worker`` processes, about a minute to start). The runs are
triggered with ``airflow dags trigger`` and run by the scheduler and the workers as in production;
assertions are on the task instances in the metadata DB (which worker ran what) and on the records
in the topics. The crash tests SIGKILL the task process of a copy in the middle of it (its pid is
the one the task instance records) and let the scheduler's retry finish the copy: a JDBC source,
exactly-once and at-least-once, and a JDBC sink (its offsets are committed with its rows).
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
import signal
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
import sqlalchemy as sa
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

from kopycat.api.data import Schema, SchemaBuilder, Struct
from kopycat.converters.json import JsonConverter
from kopycat.dev.kafka_broker import LocalKafkaBroker
from kopycat.dev.postgres import LocalPostgres
from kopycat.dev.redis_server import LocalRedis
from kopycat_airflow.local import LocalAirflow
from tests.support.celery_deployment import CeleryDeployment
from tests.support.kafka import consume_all, create_topic
from tests.support.sql import create_stamped_tables, insert_stamped, query_rows

pytestmark = [pytest.mark.integration, pytest.mark.timeout(1200)]

log = logging.getLogger(__name__)

T0 = dt.datetime(2026, 11, 20, 0, 0, 0)
FINISHED = ("success", "failed")
CRASH_ROWS = 6_000
CRASH_SLEEP_MS = 3  # a copy of CRASH_ROWS lasts at least 18 s: time to see records land and kill


@pytest.fixture(scope="module")
def celery_airflow(tmp_path_factory: pytest.TempPathFactory, kafka_broker: LocalKafkaBroker,
                   postgres_server: LocalPostgres) -> Iterator[CeleryDeployment]:
    """The module's distributed Airflow; each test writes its own DAG file into its DAGs folder."""
    home = tmp_path_factory.mktemp("celery-airflow")
    (home / "dags").mkdir()
    env = {"KOPYCAT_BOOTSTRAP_SERVERS": kafka_broker.bootstrap_servers,
           "AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL": "5"}  # a test's new DAG file is seen within seconds
    with LocalRedis(name="redis-celery") as redis, CeleryDeployment(
            LocalAirflow(home, home / "dags", env=env), postgres_server, redis,
            database=f"airflow_{uuid.uuid4().hex[:8]}") as airflow:
        yield airflow


def _dag_file(folder: Path, dag_id: str, config: dict[str, str], **group_kwargs: Any) -> None:
    """A DAG run only when triggered, unpaused, one connector task group."""
    kwargs = "".join(f", {k}={v!r}" for k, v in group_kwargs.items())
    (folder / f"{dag_id}.py").write_text(f'''
import datetime as dt
import pendulum
from airflow.sdk import DAG
from kopycat_airflow.task_group import connector_task_group

with DAG({dag_id!r}, schedule=None, start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
         is_paused_upon_creation=False):
    connector_task_group({json.dumps(config)}, retry_delay=dt.timedelta(seconds=1){kwargs})
''')


def _config(name: str, url: str, prefix: str, **extra: str) -> dict[str, str]:
    return {"name": name, "connector.class": "io.confluent.connect.jdbc.JdbcSourceConnector",
            "connection.url": url, "mode": "timestamp+incrementing", "timestamp.column.name": "updated_at",
            "incrementing.column.name": "id", "topic.prefix": prefix, "poll.interval.ms": "200", **extra}


def _trigger(airflow: CeleryDeployment, dag_id: str, run_id: str) -> None:
    airflow.wait_for(lambda: airflow.query("SELECT dag_id FROM serialized_dag WHERE dag_id = :d", d=dag_id),
                     180, f"DAG {dag_id} parsed by the dag-processor")
    airflow.cli("dags", "trigger", dag_id, "--run-id", run_id)


def _finished_run(airflow: CeleryDeployment, dag_id: str, run_id: str) -> dict[str, Any] | None:
    runs = [r for r in airflow.dag_runs(dag_id) if r["run_id"] == run_id]
    return runs[0] if runs and runs[0]["state"] in FINISHED else None


def _run_to_end(airflow: CeleryDeployment, dag_id: str, run_id: str, timeout_s: float = 600) -> list[dict[str, Any]]:
    """Wait for the run to finish; assert it succeeded; its task instances."""
    run = airflow.wait_for(lambda: _finished_run(airflow, dag_id, run_id), timeout_s, f"run {run_id} to finish")
    tasks = airflow.task_instances(dag_id, run_id)
    assert run["state"] == "success", tasks
    return tasks


def _copies(tasks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [t for t in tasks if t["task_id"].rsplit(".", 1)[-1] == "copy"]


def _ids(bootstrap: str, topic: str, *, committed_only: bool = False) -> list[int]:
    values = consume_all(bootstrap, topic, committed_only=committed_only)
    return [orjson.loads(v)["payload"]["id"] for v in values if v is not None]


def _end_offset(bootstrap: str, topic: str, *, committed_only: bool = False) -> int:
    """The end offset of partition 0: every record written so far (and transaction markers), or with
    ``committed_only`` its last stable offset (none of an open transaction's records)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"check-{uuid.uuid4().hex}",
                         "isolation.level": "read_committed" if committed_only else "read_uncommitted"})
    try:
        return int(consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=30)[1])
    except KafkaException:  # the topic is created by the first send: not there yet
        return 0
    finally:
        consumer.close()


def test_the_import_dag_spreads_its_copies_over_both_workers_and_each_run_copies_only_new_rows(
        celery_airflow: CeleryDeployment, postgres_server: LocalPostgres, bootstrap_servers: str) -> None:
    dag_id, name, prefix = "t_celery_import", f"cel-{uuid.uuid4().hex[:6]}", f"cel{uuid.uuid4().hex[:6]}_"
    tables, rows = ("alpha", "bravo", "charlie"), 1_000
    url = postgres_server.create_database(f"src_{uuid.uuid4().hex[:10]}")
    engine, metadata = create_stamped_tables(url, tables, rows, T0)
    _dag_file(celery_airflow.airflow.dags_folder, dag_id, _config(name, url, prefix, **{
        "tasks.max": "3", "transforms": "slow", "transforms.slow.type": "tests.support.throttle.ThrottleTransform",
        "transforms.slow.sleep.ms": "5"}))  # each copy lasts 5 s or more: all three run at once

    _trigger(celery_airflow, dag_id, "first")
    copies = _copies(_run_to_end(celery_airflow, dag_id, "first"))
    assert len(copies) == 3 and all(t["state"] == "success" and t["try_number"] == 1 for t in copies)
    hosts = {t["hostname"] for t in copies}
    assert hosts <= set(celery_airflow.worker_names) and len(hosts) == 2, copies  # both workers copied
    assert len({(t["hostname"], t["pid"]) for t in copies}) == 3  # three task processes
    for table in tables:
        assert sorted(_ids(bootstrap_servers, prefix + table)) == list(range(1, rows + 1)), table

    insert_stamped(engine, metadata.tables["alpha"], rows + 1, 30, T0)
    insert_stamped(engine, metadata.tables["charlie"], rows + 1, 20, T0)
    _trigger(celery_airflow, dag_id, "second")
    assert all(t["state"] == "success" for t in _copies(_run_to_end(celery_airflow, dag_id, "second")))
    for table, expected in [("alpha", rows + 30), ("bravo", rows), ("charlie", rows + 20)]:
        ids = _ids(bootstrap_servers, prefix + table)
        assert sorted(ids) == list(range(1, expected + 1)), table  # the new rows once, the old ones not again
    engine.dispose()


def _running_copy(airflow: CeleryDeployment, dag_id: str, run_id: str) -> dict[str, Any] | None:
    copies = [t for t in _copies(airflow.task_instances(dag_id, run_id)) if t["state"] == "running" and t["pid"]]
    return copies[0] if copies else None


def _open_transaction(bootstrap: str, topic: str) -> bool:
    """True while records of a transaction not yet committed are in the topic."""
    return _end_offset(bootstrap, topic) > _end_offset(bootstrap, topic, committed_only=True)


def _kill_mid_copy(airflow: CeleryDeployment, bootstrap: str, dag_id: str, topic: str,
                   transactional: bool) -> tuple[dict[str, Any], int]:
    """SIGKILL the copy's task process once records are in the topic (``transactional``: records of an
    open transaction); the task instance and the topic's end offset right after the kill."""
    copy = airflow.wait_for(lambda: _running_copy(airflow, dag_id, "crash"), 300, "the copy task running")
    if transactional:
        airflow.wait_for(lambda: _open_transaction(bootstrap, topic), 120, f"an open transaction in {topic}")
    else:
        airflow.wait_for(lambda: _end_offset(bootstrap, topic) > 0, 120, f"records in {topic}")
    _sigkill(copy)
    return copy, _end_offset(bootstrap, topic)


def _sigkill(task: dict[str, Any]) -> None:
    """SIGKILL the task process a task instance records (forked by a Celery worker's pool process)."""
    cmdline = Path(f"/proc/{task['pid']}/cmdline").read_bytes().replace(b"\0", b" ")
    assert b"airflow" in cmdline or b"celery" in cmdline, cmdline  # the task process, not a recycled pid
    os.kill(task["pid"], signal.SIGKILL)


@pytest.mark.parametrize("exactly_once", [True, False], ids=["exactly-once", "at-least-once"])
def test_a_copy_task_killed_mid_copy_is_retried_by_the_scheduler_and_loses_nothing(
        celery_airflow: CeleryDeployment, postgres_server: LocalPostgres, bootstrap_servers: str,
        exactly_once: bool) -> None:
    dag_id = f"t_celery_crash_{'eos' if exactly_once else 'alo'}"
    name, prefix = f"crash-{uuid.uuid4().hex[:6]}", f"crash{uuid.uuid4().hex[:6]}_"
    url = postgres_server.create_database(f"src_{uuid.uuid4().hex[:10]}")
    engine, _ = create_stamped_tables(url, ["orders"], CRASH_ROWS, T0)
    overrides = {"exactly.once.source.support": "enabled"} if exactly_once else {}
    # Transactions of several polls (4 s, a poll is 0.6 s): the kill finds records of an open one.
    boundary = {"transaction.boundary": "interval", "transaction.boundary.interval.ms": "4000"} if exactly_once else {}
    _dag_file(celery_airflow.airflow.dags_folder, dag_id, _config(name, url, prefix, **{
        "tasks.max": "1", "batch.max.rows": "200", "transforms": "slow",
        "transforms.slow.type": "tests.support.throttle.ThrottleTransform",
        "transforms.slow.sleep.ms": str(CRASH_SLEEP_MS), **boundary}), copy_retries=1, worker_overrides=overrides)
    topic = prefix + "orders"

    _trigger(celery_airflow, dag_id, "crash")
    killed, end_at_kill = _kill_mid_copy(celery_airflow, bootstrap_servers, dag_id, topic, exactly_once)
    assert 0 < end_at_kill < CRASH_ROWS  # the kill landed in the middle of the copy
    copy = _copies(_run_to_end(celery_airflow, dag_id, "crash"))[0]
    assert copy["try_number"] == 2 and copy["pid"] != killed["pid"]  # the scheduler's retry finished it

    ids = _ids(bootstrap_servers, topic, committed_only=exactly_once)
    assert set(ids) == set(range(1, CRASH_ROWS + 1))  # 0 lost
    duplicates = len(ids) - len(set(ids))
    aborted = len(_ids(bootstrap_servers, topic)) - len(ids)  # what only a read_uncommitted consumer sees
    log.info("%s: killed at end offset %d of %d rows; %d duplicates, %d aborted records", dag_id, end_at_kill,
             CRASH_ROWS, duplicates, aborted)
    if exactly_once:
        assert duplicates == 0  # for a read_committed consumer
        assert aborted > 0  # the kill landed inside an open transaction, which the retry aborted
    engine.dispose()


SINK_ROWS = 20_000  # the sink runner consumes up to 5,000 records a batch: four batches of 5 s or more
SINK_SLEEP_MS = 1
EVENT = (SchemaBuilder.struct().name("event").field("event_id", Schema.INT64_SCHEMA)
         .field("payload", Schema.STRING_SCHEMA).build())


def _produce_events(bootstrap: str, topic: str, count: int) -> None:
    """``count`` events, JSON with schemas, keyed by their id, in one partition."""
    create_topic(bootstrap, topic, 1)
    values = JsonConverter()
    values.configure({"schemas.enable": True}, is_key=False)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 50, "enable.idempotence": True})
    for n in range(count):
        producer.produce(topic, key=str(n).encode(), value=values.from_connect_data(
            topic, EVENT, Struct(EVENT).put("event_id", n).put("payload", f"event number {n:06d}")))
        producer.poll(0)
    assert producer.flush(60) == 0


def _event_rows(url: str) -> int:
    try:
        return int(query_rows(url, "SELECT count(*) FROM events")[0][0])
    except sa.exc.ProgrammingError:  # the sink creates the table with its first batch
        return 0


def test_a_jdbc_sink_task_killed_mid_copy_is_retried_and_writes_each_record_once(
        celery_airflow: CeleryDeployment, postgres_server: LocalPostgres, bootstrap_servers: str) -> None:
    """The JDBC sink commits its offsets with the rows (``kopycat_offsets``): exactly-once into the table."""
    dag_id, topic = "t_celery_crash_sink", f"events-{uuid.uuid4().hex[:8]}"
    url = postgres_server.create_database(f"sink_{uuid.uuid4().hex[:10]}")
    _produce_events(bootstrap_servers, topic, SINK_ROWS)
    _dag_file(celery_airflow.airflow.dags_folder, dag_id, {
        "name": f"sink-{uuid.uuid4().hex[:6]}", "topics": topic,
        "connector.class": "kopycat.connectors.jdbc.sink_connector.JdbcSinkConnector",
        "tasks.max": "1", "connection.url": url, "insert.mode": "insert", "pk.mode": "none",
        "auto.create": "true", "table.name.format": "events", "batch.size": "200",
        "key.converter": "org.apache.kafka.connect.storage.StringConverter",
        "value.converter": "org.apache.kafka.connect.json.JsonConverter", "value.converter.schemas.enable": "true",
        "transforms": "slow", "transforms.slow.type": "tests.support.throttle.ThrottleTransform",
        "transforms.slow.sleep.ms": str(SINK_SLEEP_MS)}, copy_retries=1)

    _trigger(celery_airflow, dag_id, "crash")
    killed = celery_airflow.wait_for(lambda: _running_copy(celery_airflow, dag_id, "crash"), 300, "the copy running")
    celery_airflow.wait_for(lambda: _event_rows(url) > 0, 120, "rows in the sink's table")
    _sigkill(killed)
    rows_at_kill = _event_rows(url)
    assert 0 < rows_at_kill < SINK_ROWS  # the kill landed in the middle of the copy

    copy = _copies(_run_to_end(celery_airflow, dag_id, "crash"))[0]
    assert copy["try_number"] == 2 and copy["pid"] != killed["pid"]
    total, distinct, low, high = query_rows(
        url, "SELECT count(*), count(DISTINCT event_id), min(event_id), max(event_id) FROM events")[0]
    log.info("%s: killed at %d of %d rows", dag_id, rows_at_kill, SINK_ROWS)
    assert (total, distinct, low, high) == (SINK_ROWS, SINK_ROWS, 0, SINK_ROWS - 1)  # 0 lost, 0 duplicated

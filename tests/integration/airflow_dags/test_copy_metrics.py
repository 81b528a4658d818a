"""A copy task sends its Kafka Connect metrics through Airflow's Stats, and returns them in its summary.

Real broker and Airflow (dag.test) with ``[metrics] statsd_on`` pointing at a UDP socket on
loopback that this test reads: the StatsD counters equal the records the FileStreamSource copied.
"""

from __future__ import annotations

import json
import socket
import uuid
from pathlib import Path

import pytest

from kopycat_airflow.local import LocalAirflow
from tests.support.kafka import consume_all, create_topic

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]

LINES = 250


def received(listener: socket.socket) -> dict[str, list[str]]:
    """StatsD lines received so far: metric name -> its ``value|type`` parts."""
    lines: dict[str, list[str]] = {}
    listener.settimeout(0.5)
    while True:
        try:
            packet = listener.recv(65535)
        except TimeoutError:
            return lines
        for line in packet.decode().splitlines():
            name, _, rest = line.partition(":")
            lines.setdefault(name, []).append(rest)


def test_a_copy_task_sends_its_counters_to_statsd_and_returns_them_in_its_summary(
        local_airflow: LocalAirflow, bootstrap_servers: str, tmp_path: Path) -> None:
    run_id = uuid.uuid4().hex[:8]
    topic = create_topic(bootstrap_servers, f"metrics-{run_id}")
    source_file = tmp_path / "in.txt"
    source_file.write_text("".join(f"line {i}\n" for i in range(LINES)))
    config = {"name": f"file-{run_id}", "connector.class": "FileStreamSource", "file": str(source_file),
              "topic": topic}
    (local_airflow.dags_folder / "t_copy_metrics.py").write_text(f'''
import pendulum
from airflow.sdk import DAG
from kopycat_airflow.task_group import connector_task_group

with DAG("t_copy_metrics", schedule=None, start_date=pendulum.datetime(2026, 1, 1, tz="UTC"), catchup=False):
    connector_task_group({json.dumps(config)}, copy_retries=0)
''')
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as listener:
        listener.bind(("127.0.0.1", 0))
        port = listener.getsockname()[1]
        airflow = local_airflow.with_dags(local_airflow.dags_folder, {
            "AIRFLOW__METRICS__STATSD_ON": "True", "AIRFLOW__METRICS__STATSD_HOST": "127.0.0.1",
            "AIRFLOW__METRICS__STATSD_PORT": str(port), "AIRFLOW__METRICS__STATSD_PREFIX": "airflow"})
        run = airflow.run_dag("t_copy_metrics")
        assert run["state"] == "success", run.get("log")
        stats = received(listener)
    [copied] = run.results("copy")
    assert copied["records"] == LINES
    assert copied["metrics"]["source-task-metrics.source-record-poll-total"] == LINES
    assert copied["metrics"]["source-task-metrics.source-record-write-total"] == LINES
    assert copied["metrics"]["connector-task-metrics.offset-commit-success-percentage"] == 1.0
    assert copied["metrics"]["task-error-metrics.total-record-errors"] == 0
    assert stats["airflow.kafka_connect.source_task_metrics.source_record_poll_total"] == [f"{LINES}|c"]
    assert stats["airflow.kafka_connect.source_task_metrics.source_record_write_total"] == [f"{LINES}|c"]
    assert stats["airflow.kafka_connect.task_error_metrics.total_record_errors"] == ["0|c"]
    assert "airflow.kafka_connect.connector_task_metrics.batch_size_max" in stats
    assert len(consume_all(bootstrap_servers, topic)) == LINES

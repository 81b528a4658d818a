"""``kopycat connect import`` and ``export`` against the real Kafka Connect worker (Apache Kafka 4.x).

A FileStreamSource runs in Kafka Connect; ``kopycat connect import --stop-source`` stops it there
and stores it in Kopycat's config topic; a Kopycat run of the stored config copies only the lines
appended since; ``kopycat connect export --stop`` hands it back, and Kafka Connect copies only
what was appended after that. Offsets share Kafka Connect's offsets topic, so each side resumes
where the other stopped: the topic holds every line exactly once, in order.
"""

from __future__ import annotations

import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from kopycat.dev.kafka_connect import LocalKafkaConnect
from kopycat.runtime.run_once import run_connector_once
from kopycat.runtime.stored_connectors import load_stored_connector
from kopycat.storage.config_backing_store import TargetState
from tests.integration.test_kafka_connect_interop import (
    HALF,
    STRING_CONVERTER,
    append_lines,
    connector_props,
    line,
    read_topic,
    stop_and_delete,
    wait_for_java_position,
)
from tests.support.kafka import create_topic

pytestmark = [pytest.mark.integration, pytest.mark.timeout(1200)]  # may start the Connect worker (minutes)


def _kopycat(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kopycat.cli", *args], capture_output=True, text=True, timeout=300)


def _kopycat_worker(tmp_path: Path, connect: LocalKafkaConnect, topic: str) -> tuple[dict[str, str], Path]:
    """Kopycat's worker: its own config and status topics, Kafka Connect's offsets topic."""
    props = {"bootstrap.servers": connect.bootstrap_servers, "offset.storage.topic": connect.offsets_topic,
             "offset.storage.replication.factor": "1",
             "config.storage.topic": f"{topic}-configs", "config.storage.replication.factor": "1",
             "status.storage.topic": f"{topic}-status", "status.storage.replication.factor": "1",
             "status.storage.partitions": "1", "key.converter": STRING_CONVERTER, "value.converter": STRING_CONVERTER}
    path = tmp_path / "worker.properties"
    path.write_text("".join(f"{key}={value}\n" for key, value in props.items()))
    return props, path


def test_a_connector_moves_from_kafka_connect_to_kopycat_and_back_copying_every_line_once(
        kafka_connect: LocalKafkaConnect, bootstrap_servers: str, topic_name: str, tmp_path: Path) -> None:
    topic = create_topic(bootstrap_servers, topic_name, 1)
    name = f"migrated-{uuid.uuid4().hex[:8]}"
    path = tmp_path / "input.txt"
    worker, worker_file = _kopycat_worker(tmp_path, kafka_connect, topic)
    kafka_connect.create_connector(name, connector_props(path, topic))
    kafka_connect.wait_for_task_state(name, "RUNNING", timeout_s=120)
    wait_for_java_position(kafka_connect, name, path, append_lines(path, 0, HALF))

    imported = _kopycat("connect", "import", "--url", kafka_connect.url, "--worker", str(worker_file),
                        "--stop-source", "--connector", name)

    assert imported.returncode == 0, imported.stdout + imported.stderr[-3000:]
    assert kafka_connect.connector_status(name)["connector"]["state"] == "STOPPED"
    stored = load_stored_connector(worker, name)
    assert stored.config == kafka_connect.request("GET", f"/connectors/{name}/config")
    assert stored.target_state is TargetState.STARTED
    append_lines(path, HALF, HALF)
    [summary] = run_connector_once(stored.config, worker)
    assert summary.error is None and summary.records == HALF
    assert [m.value for m in read_topic(bootstrap_servers, topic)] == [line(i).encode() for i in range(2 * HALF)]

    full_size = append_lines(path, 2 * HALF, HALF)
    exported = _kopycat("connect", "export", "--worker", str(worker_file), "--to", kafka_connect.url, "--stop",
                        "--connector", name)

    assert exported.returncode == 0, exported.stdout + exported.stderr[-3000:]
    assert load_stored_connector(worker, name).target_state is TargetState.STOPPED
    kafka_connect.wait_for_task_state(name, "RUNNING", timeout_s=120)
    wait_for_java_position(kafka_connect, name, path, full_size)
    stop_and_delete(kafka_connect, name)
    messages = read_topic(bootstrap_servers, topic)
    assert [m.value for m in messages] == [line(i).encode() for i in range(3 * HALF)]
    assert {(m.partition, m.key, m.headers) for m in messages} == {(0, None, ())}

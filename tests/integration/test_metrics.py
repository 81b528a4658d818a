"""`/metrics` shows Kafka Connect's metrics under the JMX exporter's names, equal to what was copied.

A file goes through ``kopycat standalone`` (with ``metrics.port``): FileStreamSource -> topic ->
FileStreamSink, the sink with errors.tolerance=all and a dead letter queue; some lines are not JSON,
so the sink's JsonConverter rejects exactly those. The scrape is parsed with prometheus_client's parser.
"""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families

from kopycat.rest import create_app
from kopycat.rest.metrics_route import add_metrics_route
from kopycat.rest.worker_server import running_worker
from kopycat.runtime.metrics import ConnectMetrics
from tests.support.kafka import consume_all, create_topic
from tests.support.standalone import REPO, write_props

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

LINES = 400
BAD = {17, 40, 41, 199, 350}  # line numbers written as text that is not JSON


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def scrape(port: int) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of ``/metrics``: (name, sorted labels) -> value."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        return parse(response.read().decode())


def parse(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {(sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in text_string_to_metric_families(text) for sample in family.samples}


def value(samples: dict[tuple[str, tuple[tuple[str, str], ...]], float], name: str, **labels: str) -> float | None:
    return samples.get((name, tuple(sorted(labels.items()))))


def test_standalone_metrics_count_the_records_copied_and_the_bad_ones_sent_to_the_dlq(
        tmp_path: Path, bootstrap_servers: str, topic_name: str, task_isolation: str) -> None:
    create_topic(bootstrap_servers, topic_name)
    dlq = create_topic(bootstrap_servers, f"{topic_name}-dlq")
    source_file, sink_file = tmp_path / "in.txt", tmp_path / "out.txt"
    source_file.write_text("".join(f"not json {i}\n" if i in BAD else f"{i}\n" for i in range(LINES)))
    port = free_port()
    worker = write_props(tmp_path / "worker.properties", {
        "bootstrap.servers": bootstrap_servers, "offset.storage.file.filename": str(tmp_path / "offsets"),
        "offset.flush.interval.ms": "200", "metrics.port": str(port), "task.isolation": task_isolation,
        "key.converter": "org.apache.kafka.connect.storage.StringConverter",
        "value.converter": "org.apache.kafka.connect.storage.StringConverter"})
    source = write_props(tmp_path / "source.properties", {
        "name": "file-in", "connector.class": "FileStreamSource", "tasks.max": "1",
        "file": str(source_file), "topic": topic_name})
    sink = write_props(tmp_path / "sink.properties", {
        "name": "file-out", "connector.class": "FileStreamSink", "tasks.max": "1", "topics": topic_name,
        "file": str(sink_file), "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter.schemas.enable": "false", "consumer.auto.offset.reset": "earliest",
        "errors.tolerance": "all", "errors.deadletterqueue.topic.name": dlq,
        "errors.deadletterqueue.topic.replication.factor": "1", "offset.flush.interval.ms": "200"})
    log = tmp_path / "worker.log"
    with log.open("ab") as out:
        process = subprocess.Popen([sys.executable, "-m", "kopycat.cli", "standalone", str(worker), str(source),
                                    str(sink)], stdout=out, stderr=subprocess.STDOUT, cwd=REPO)
    try:
        samples: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
        read = "kafka_connect_sink_task_metrics_sink_record_read_total"
        deadline = time.monotonic() + 180
        while value(samples, read, connector="file-out", task="0") != LINES:
            assert process.poll() is None, f"worker exited: {log.read_text()[-3000:]}"
            assert time.monotonic() < deadline, f"sink read {samples.get(read)}: {log.read_text()[-3000:]}"
            time.sleep(0.3)
            try:
                samples = scrape(port)
            except OSError:
                continue
        source_task = {"connector": "file-in", "task": "0"}
        sink_task = {"connector": "file-out", "task": "0"}
        good = LINES - len(BAD)
        assert value(samples, "kafka_connect_source_task_metrics_source_record_poll_total", **source_task) == LINES
        assert value(samples, "kafka_connect_source_task_metrics_source_record_write_total", **source_task) == LINES
        assert value(samples, "kafka_connect_sink_task_metrics_sink_record_send_total", **sink_task) == good
        assert value(samples, "kafka_connect_task_error_metrics_total_record_errors", **sink_task) == len(BAD)
        assert value(samples, "kafka_connect_task_error_metrics_total_record_failures", **sink_task) == len(BAD)
        assert value(samples, "kafka_connect_task_error_metrics_total_records_skipped", **sink_task) == len(BAD)
        assert value(samples, "kafka_connect_task_error_metrics_deadletterqueue_produce_requests",
                     **sink_task) == len(BAD)
        assert value(samples, "kafka_connect_task_error_metrics_deadletterqueue_produce_failures", **sink_task) == 0
        assert value(samples, "kafka_connect_task_error_metrics_total_record_errors", **source_task) == 0
        assert value(samples, "kafka_connect_connector_task_metrics_status", status="running", **sink_task) == 1
        assert value(samples, "kafka_connect_connect_worker_metrics_connector_count") == 2
        assert value(samples, "kafka_connect_connect_worker_metrics_task_count") == 2
        assert value(samples, "kafka_connect_connect_worker_metrics_connector_running_task_count",
                     connector="file-out") == 1
        assert value(samples, "kafka_connect_sink_task_metrics_sink_record_read_rate", **sink_task) > 0
        assert value(samples, "kafka_connect_connector_task_metrics_batch_size_max", **sink_task) >= 1
        assert len(consume_all(bootstrap_servers, dlq)) == len(BAD)
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(60) == 0, log.read_text()[-3000:]


def test_the_rest_worker_serves_its_tasks_metrics_at_slash_metrics(
        tmp_path: Path, worker: dict[str, Any], bootstrap_servers: str, topic_name: str,
        task_isolation: str) -> None:
    topic = create_topic(bootstrap_servers, topic_name)
    source_file = tmp_path / "in.txt"
    source_file.write_text("".join(f"line {i}\n" for i in range(LINES)))
    props = {**worker, "value.converter": "org.apache.kafka.connect.storage.StringConverter",
             "key.converter": "org.apache.kafka.connect.storage.StringConverter", "offset.flush.interval.ms": "300",
             "task.isolation": task_isolation}
    metrics = ConnectMetrics()
    with running_worker(props, "127.0.0.1:8083", poll_interval_s=0.3, metrics=metrics) as herder:
        app = create_app(herder)
        add_metrics_route(app, metrics)  # as serve_worker does
        with TestClient(app) as client:
            config = {"connector.class": "FileStreamSource", "file": str(source_file), "topic": topic}
            assert client.post("/connectors", json={"name": "src", "config": config}).status_code == 201
            written = "kafka_connect_source_task_metrics_source_record_write_total"
            deadline = time.monotonic() + 120
            samples: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
            while value(samples, written, connector="src", task="0") != LINES:
                assert time.monotonic() < deadline, f"written: {samples}"
                time.sleep(0.3)
                response = client.get("/metrics")
                assert response.status_code == 200 and response.headers["content-type"].startswith("text/plain")
                samples = parse(response.text)
            assert value(samples, "kafka_connect_connect_worker_metrics_connector_count") == 1
            assert value(samples, "kafka_connect_connector_metrics_status", connector="src", status="running") == 1
            wait = time.monotonic() + 30  # the next offset commit covers every record written
            while value(samples, "kafka_connect_source_task_metrics_source_record_active_count",
                        connector="src", task="0") != 0:
                assert time.monotonic() < wait, "no offset commit was recorded"
                time.sleep(0.3)
                samples = parse(client.get("/metrics").text)
            assert value(samples, "kafka_connect_connector_task_metrics_offset_commit_success_percentage",
                         connector="src", task="0") == 1.0
    assert len(consume_all(bootstrap_servers, topic)) == LINES

"""The OpenTelemetry SDK reads the same Kafka Connect metrics as ``/metrics``: counters equal what was copied.

A REST worker runs a FileStreamSource; an ``InMemoryMetricReader`` stands in for the OTLP exporter.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from kopycat.rest import create_app
from kopycat.rest.worker_server import running_worker
from kopycat.runtime.metrics import ConnectMetrics
from kopycat.runtime.otel_metrics import start_otel_metrics
from tests.support.kafka import consume_all, create_topic

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

LINES = 300


def points(reader: InMemoryMetricReader) -> dict[tuple[str, tuple[tuple[str, Any], ...]], tuple[float, bool]]:
    """(instrument, sorted attributes) -> (value, is a monotonic sum) of one collection."""
    found: dict[tuple[str, tuple[tuple[str, Any], ...]], tuple[float, bool]] = {}
    data = reader.get_metrics_data()
    for resource in data.resource_metrics if data else ():
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                monotonic = bool(getattr(metric.data, "is_monotonic", False))
                for point in metric.data.data_points:
                    found[(metric.name, tuple(sorted(point.attributes.items())))] = (point.value, monotonic)
    return found


def test_opentelemetry_counters_equal_the_records_a_real_worker_copied(
        tmp_path: Path, worker: dict[str, Any], bootstrap_servers: str, topic_name: str) -> None:
    topic = create_topic(bootstrap_servers, topic_name)
    source_file = tmp_path / "in.txt"
    source_file.write_text("".join(f"line {i}\n" for i in range(LINES)))
    props = {**worker, "value.converter": "org.apache.kafka.connect.storage.StringConverter",
             "key.converter": "org.apache.kafka.connect.storage.StringConverter", "offset.flush.interval.ms": "300"}
    metrics = ConnectMetrics()
    reader = InMemoryMetricReader()
    provider = start_otel_metrics(metrics, environ={}, reader=reader)
    assert provider is not None
    task = (("connector", "src"), ("task", "0"))
    written = ("kafka_connect_source_task_metrics_source_record_write", task)
    try:
        with running_worker(props, "127.0.0.1:8083", poll_interval_s=0.3, metrics=metrics) as herder:
            with TestClient(create_app(herder)) as client:
                config = {"connector.class": "FileStreamSource", "file": str(source_file), "topic": topic}
                assert client.post("/connectors", json={"name": "src", "config": config}).status_code == 201
                deadline = time.monotonic() + 120
                seen: dict[tuple[str, tuple[tuple[str, Any], ...]], tuple[float, bool]] = {}
                while seen.get(written, (None,))[0] != LINES:
                    assert time.monotonic() < deadline, f"written: {seen.get(written)}"
                    time.sleep(0.6)
                    seen = points(reader)
                assert seen[written] == (LINES, True)
                assert seen[("kafka_connect_source_task_metrics_source_record_poll", task)] == (LINES, True)
                assert seen[("kafka_connect_connect_worker_metrics_connector_count", ())] == (1, False)
                status = tuple(sorted((*task, ("status", "running"))))
                assert seen[("kafka_connect_connector_task_metrics_status", status)][0] == 1
                assert seen[("kafka_connect_source_task_metrics_source_record_write_rate", task)][0] > 0
                assert not any(name.endswith("_total") for name, _ in seen)
    finally:
        provider.shutdown()
    assert len(consume_all(bootstrap_servers, topic)) == LINES

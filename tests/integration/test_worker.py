"""The worker and the embedded API: file -> Kafka -> file with both built-in connectors."""

from __future__ import annotations

import time
from pathlib import Path

from kopycat.embedded import Kopycat
from kopycat.runtime.bounds import Bounds, StopReason
from kopycat.storage.offset_backing_store import MemoryOffsetStore
from tests.support.kafka import create_topic


def test_run_once_copies_a_file_through_kafka_into_another_file(
        bootstrap_servers: str, topic_name: str, tmp_path: Path, task_isolation: str) -> None:
    create_topic(bootstrap_servers, topic_name, 2)
    source_file, sink_file = tmp_path / "in.txt", tmp_path / "out.txt"
    lines = [f"line {i} ü" for i in range(5000)]
    source_file.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    worker = {"value.converter": "org.apache.kafka.connect.storage.StringConverter",
              "offset.flush.interval.ms": "500", "task.isolation": task_isolation}
    with Kopycat(bootstrap_servers, worker_props=worker, offset_store=MemoryOffsetStore()) as kc:
        sources = kc.run_once({"name": "file-in", "connector.class": "FileStreamSource",
                               "file": str(source_file), "topic": topic_name})
        sinks = kc.run_once({"name": "file-out", "connector.class": "FileStreamSink", "file": str(sink_file),
                             "topics": topic_name}, Bounds(idle_ms=3000))
        again = kc.run_once({"name": "file-in", "connector.class": "FileStreamSource",
                             "file": str(source_file), "topic": topic_name})
    assert [s.records for s in sources if s] == [5000] and [s.records for s in again if s] == [0]
    assert sinks[0] is not None and sinks[0].stop_reason is StopReason.CAUGHT_UP
    assert sorted(sink_file.read_text(encoding="utf-8").splitlines()) == sorted(lines)


def test_a_failing_task_is_reported_failed_with_its_trace(bootstrap_servers: str, tmp_path: Path,
                                                          task_isolation: str) -> None:
    worker = {"value.converter": "org.apache.kafka.connect.json.JsonConverter", "task.isolation": task_isolation}
    with Kopycat(bootstrap_servers, worker_props=worker, offset_store=MemoryOffsetStore()) as kc:
        handle = kc.add_connector({"name": "bad", "connector.class": "tests.support.counting.CountingSourceConnector",
                                   "topic": "x", "total": "10", "transforms": "boom",
                                   "transforms.boom.type": "ExtractField$Value",
                                   "transforms.boom.field": "missing"})
        deadline = time.monotonic() + 60
        while handle.status()["tasks"][0]["state"] != "FAILED":
            assert time.monotonic() < deadline, handle.status()
            time.sleep(0.2)
        status = handle.status()
    assert status["type"] == "source" and status["connector"]["state"] == "RUNNING"
    assert "ExtractField" in status["tasks"][0]["trace"]

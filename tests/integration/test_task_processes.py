"""What only ``task.isolation=process`` can meet: a task process that dies."""

from __future__ import annotations

import time

import pytest

from kopycat.embedded import Kopycat
from kopycat.storage.offset_backing_store import MemoryOffsetStore
from tests.support.crashing import EXIT_CODE

pytestmark = pytest.mark.integration


def test_a_task_process_that_dies_is_failed_with_its_exit_code_and_the_connector_keeps_running(
        bootstrap_servers: str, topic_name: str) -> None:
    worker = {"task.isolation": "process", "value.converter": "org.apache.kafka.connect.storage.StringConverter"}
    with Kopycat(bootstrap_servers, worker_props=worker, offset_store=MemoryOffsetStore()) as kc:
        handle = kc.add_connector({"name": "crash", "connector.class": "tests.support.crashing.CrashingSourceConnector",
                                   "topic": topic_name, "tasks.max": "2"})
        deadline = time.monotonic() + 120
        while [task["state"] for task in handle.status()["tasks"]] != ["FAILED", "FAILED"]:
            assert time.monotonic() < deadline, handle.status()
            time.sleep(0.2)
        status = handle.status()
    assert status["connector"]["state"] == "RUNNING"
    assert all(f"exited with code {EXIT_CODE}" in task["trace"] for task in status["tasks"]), status


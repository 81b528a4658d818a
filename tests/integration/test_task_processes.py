"""What only ``task.isolation=process`` can meet: a task process that dies, one stopped while it starts."""

from __future__ import annotations

import time

import pytest

from kopycat.embedded import Kopycat
from kopycat.runtime.worker import Worker
from kopycat.storage.connector_status import State
from kopycat.storage.offset_backing_store import MemoryOffsetStore
from kopycat.storage.status_backing_store import MemoryStatusBackingStore
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



def test_a_task_stopped_before_its_process_built_it_stops_gracefully_instead_of_being_killed(
        bootstrap_servers: str, topic_name: str) -> None:
    statuses = MemoryStatusBackingStore()  # the task copies 3 records, then idles: an unbounded run
    worker_props = {"bootstrap.servers": bootstrap_servers, "task.isolation": "process"}
    with Worker(worker_props, MemoryOffsetStore(), status_store=statuses) as worker:
        name = worker.add_connector({"name": "quick", "topic": topic_name, "total": "3",
                                     "connector.class": "tests.support.counting.CountingSourceConnector"})
        worker.remove_connector(name)  # "stop" reaches the child while it imports and builds the runner
    [task] = statuses.get_all_tasks(name)
    assert task.state is State.UNASSIGNED and task.trace is None, task

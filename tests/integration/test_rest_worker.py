"""``kopycat worker``: connectors created through the REST API run in the same process, on a real broker.

A FileStreamSource and a FileStreamSink posted to the API copy lines file -> topic -> file; pause,
resume, a changed config, stop, restart and delete take effect on the running tasks, and the
statuses the API shows say so.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from kopycat.rest import create_app
from kopycat.rest.worker_server import running_worker
from tests.support.kafka import consume_all, create_topic

pytestmark = pytest.mark.integration

WORKER_ID = "127.0.0.1:8083"
QUIET_S = 3.0  # how long nothing must be copied while paused or stopped


@pytest.fixture
def client(worker: dict[str, Any], task_isolation: str) -> Iterator[TestClient]:
    """What ``kopycat worker`` serves, minus uvicorn."""
    props = {**worker, "value.converter": "org.apache.kafka.connect.storage.StringConverter",
             "key.converter": "org.apache.kafka.connect.storage.StringConverter",
             "offset.flush.interval.ms": "500", "task.isolation": task_isolation}
    with running_worker(props, WORKER_ID, poll_interval_s=0.3) as herder, TestClient(create_app(herder)) as c:
        yield c


def wait_for(what: str, check: Callable[[], Any], timeout_s: float = 60.0) -> Any:
    deadline = time.monotonic() + timeout_s
    while True:
        result = check()
        if result:
            return result
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


def lines_in(bootstrap: str, topic: str) -> list[str]:
    return [(value or b"").decode() for value in consume_all(bootstrap, topic)]


def append(path: Path, lines: list[str]) -> None:
    with path.open("a", encoding="utf-8") as handle:
        handle.write("".join(f"{line}\n" for line in lines))


def states(client: TestClient, name: str) -> tuple[str, list[str], set[str]]:
    """(connector state, task states, worker ids) from ``GET /connectors/{name}/status``."""
    body = client.get(f"/connectors/{name}/status").json()
    return (body["connector"]["state"], [t["state"] for t in body["tasks"]],
            {body["connector"]["worker_id"], *(t["worker_id"] for t in body["tasks"])})


def task_threads(name: str) -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith(f"task-{name}-") and t.is_alive()]


def test_posted_connectors_run_and_follow_pause_resume_reconfigure_stop_and_delete(
        client: TestClient, bootstrap_servers: str, topic_name: str, tmp_path: Path) -> None:
    first, second = create_topic(bootstrap_servers, f"{topic_name}-a"), create_topic(bootstrap_servers,
                                                                                     f"{topic_name}-b")
    source_file, sink_file = tmp_path / "in.txt", tmp_path / "out.txt"
    lines = [f"line {n} ü" for n in range(10)]
    append(source_file, lines)
    source = {"connector.class": "FileStreamSource", "file": str(source_file), "topic": first}
    assert client.post("/connectors", json={"name": "src", "config": source}).status_code == 201
    wait_for("the source's lines in the topic", lambda: len(lines_in(bootstrap_servers, first)) >= 10)
    assert lines_in(bootstrap_servers, first) == lines
    assert wait_for("RUNNING", lambda: states(client, "src")[:2] == ("RUNNING", ["RUNNING"]))
    assert states(client, "src")[2] == {WORKER_ID}
    assert client.get("/connectors/src/tasks").json()[0]["config"]["topic"] == first

    sink = {"connector.class": "FileStreamSink", "file": str(sink_file), "topics": first}
    assert client.put("/connectors/sink/config", json=sink).status_code == 201
    wait_for("the sink's file", lambda: sink_file.exists() and sink_file.read_text(encoding="utf-8").count("\n") >= 10)
    assert sink_file.read_text(encoding="utf-8").splitlines() == lines

    assert client.put("/connectors/src/pause").status_code == 202
    wait_for("PAUSED", lambda: states(client, "src")[:2] == ("PAUSED", ["PAUSED"]))
    wait_for("the paused task's thread to end", lambda: not task_threads("src"))
    paused_lines = [f"while paused {n}" for n in range(5)]
    append(source_file, paused_lines)
    time.sleep(QUIET_S)
    assert lines_in(bootstrap_servers, first) == lines
    assert states(client, "src")[:2] == ("PAUSED", ["PAUSED"])

    assert client.put("/connectors/src/resume").status_code == 202
    wait_for("the lines appended while paused", lambda: len(lines_in(bootstrap_servers, first)) >= 15)
    wait_for("RUNNING again", lambda: states(client, "src")[:2] == ("RUNNING", ["RUNNING"]))
    assert lines_in(bootstrap_servers, first) == lines + paused_lines  # resumed at the stored offset
    wait_for("the sink to follow", lambda: sink_file.read_text(encoding="utf-8").count("\n") >= 15)
    assert sink_file.read_text(encoding="utf-8").splitlines() == lines + paused_lines

    assert client.put("/connectors/src/config", json={**source, "topic": second}).status_code == 200
    wait_for("the new task config", lambda: client.get("/connectors/src/tasks").json()[0]["config"]["topic"] == second)
    moved = [f"to the new topic {n}" for n in range(3)]
    append(source_file, moved)
    wait_for("lines in the new topic", lambda: len(lines_in(bootstrap_servers, second)) >= 3)
    assert lines_in(bootstrap_servers, second) == moved
    assert lines_in(bootstrap_servers, first) == lines + paused_lines

    assert client.put("/connectors/src/stop").status_code == 204
    wait_for("STOPPED", lambda: states(client, "src")[:2] == ("STOPPED", []))
    wait_for("the stopped task's thread to end", lambda: not task_threads("src"))
    append(source_file, ["while stopped"])
    time.sleep(QUIET_S)
    assert lines_in(bootstrap_servers, second) == moved
    assert client.get("/connectors/src/tasks").json() == []

    for name in ("src", "sink"):
        assert client.delete(f"/connectors/{name}").status_code == 204
    assert client.get("/connectors").json() == []
    wait_for("no task thread left", lambda: not task_threads("src") and not task_threads("sink"))
    assert sink_file.read_text(encoding="utf-8").splitlines() == lines + paused_lines


def test_a_failed_task_stays_failed_until_restarted(client: TestClient, topic_name: str) -> None:
    config = {"connector.class": "tests.support.counting.CountingSourceConnector", "topic": topic_name,
              "total": "10", "transforms": "boom", "transforms.boom.type": "ExtractField$Value",
              "transforms.boom.field": "missing"}
    assert client.post("/connectors", json={"name": "bad", "config": config}).status_code == 201
    wait_for("FAILED", lambda: states(client, "bad")[1] == ["FAILED"])
    time.sleep(QUIET_S)  # not restarted on its own, as Kafka
    body = client.get("/connectors/bad/status").json()
    assert body["connector"]["state"] == "RUNNING" and body["tasks"][0]["state"] == "FAILED"
    assert "ExtractField" in body["tasks"][0]["trace"]

    restart = client.post("/connectors/bad/restart", params={"includeTasks": "true", "onlyFailed": "true"})
    assert restart.status_code == 202 and restart.json()["tasks"][0]["state"] == "RESTARTING"
    assert restart.json()["connector"]["state"] == "RUNNING"  # only the failed task is restarted
    wait_for("the restarted task to fail again", lambda: states(client, "bad")[1] == ["FAILED"])
    assert "ExtractField" in client.get("/connectors/bad/status").json()["tasks"][0]["trace"]

"""The connectors page in headless Chromium: it lists connectors and its buttons change their state.

The page is served by the REST app (over in-memory config and status stores: the page only talks
HTTP to the API, and the stores on Kafka have their own tests) from a real uvicorn server, and
driven by Debian's chromium through chromedriver. Lag is measured on the real broker: a sink
connector has 5 records of its topic to copy. The screenshot lands in the test's tmp dir.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import uvicorn

from kopycat.rest import RestHerder, create_app
from kopycat.rest.metrics_route import add_metrics_route
from kopycat.runtime.metrics import ConnectMetrics, GroupValues
from kopycat.storage.config_backing_store import MemoryConfigBackingStore, TargetState
from kopycat.storage.connector_status import ConnectorStatus, State, TaskStatus, TopicStatus
from kopycat.storage.status_backing_store import MemoryStatusBackingStore
from tests.support.browser import chromium, click, page_error, row_cells, wait_until
from tests.support.kafka import create_topic, produce

CONNECTOR = "orders-<img src=x onerror=alert(1)>"  # markup in a name must show as text, never run


SINK = "~archive"  # sorts after CONNECTOR: its row is the second


@pytest.fixture
def herder(tmp_path: Path, bootstrap_servers: str, topic_name: str) -> RestHerder:
    herder = RestHerder(MemoryConfigBackingStore(), MemoryStatusBackingStore(),
                        {"offset.storage.file.filename": str(tmp_path / "connect.offsets"),
                         "bootstrap.servers": bootstrap_servers})
    herder.create_connector({"name": CONNECTOR, "config": {
        "connector.class": "FileStreamSource", "file": str(tmp_path / "orders.txt"), "topic": "orders"}})
    herder.status_store.put_topic(TopicStatus("orders", CONNECTOR, 0, 1))
    create_topic(bootstrap_servers, topic_name, partitions=2)
    produce(bootstrap_servers, topic_name, [b"x"] * 5, partition=1)
    herder.create_connector({"name": SINK, "config": {
        "connector.class": "FileStreamSink", "file": str(tmp_path / "archive.txt"), "topics": topic_name}})
    herder.config_store.put_task_configs(CONNECTOR, [{}, {}])
    herder.status_store.put(ConnectorStatus(CONNECTOR, State.RUNNING, None, "airflow"))
    herder.status_store.put(TaskStatus(CONNECTOR, 0, State.RUNNING, None, "airflow"))
    herder.status_store.put(TaskStatus(CONNECTOR, 1, State.FAILED, "RuntimeError: disk full\n  at line 3", "airflow"))
    return herder


TOKEN = "s3cret-token"
LAST_ERROR_MS = 1_795_000_000_000  # 2026-11-18T11:06:40Z


def task_metrics() -> ConnectMetrics:
    """The figures a worker's registry would hold for the source's two tasks."""
    metrics = ConnectMetrics()
    task0, task1 = {"connector": CONNECTOR, "task": "0"}, {"connector": CONNECTOR, "task": "1"}
    metrics.register("tasks", lambda: [
        GroupValues("source-task-metrics", task0, {"source-record-write-rate": 12.5, "source-record-write-total": 40,
                                                   "source-record-active-count": 3}),
        GroupValues("task-error-metrics", task0, {"total-record-errors": 0, "last-error-timestamp": 0}),
        GroupValues("source-task-metrics", task1, {"source-record-write-rate": float("nan"),
                                                   "source-record-active-count": 0}),
        GroupValues("task-error-metrics", task1, {"total-record-errors": 2, "last-error-timestamp": LAST_ERROR_MS})])
    return metrics


@pytest.fixture(params=[None, TOKEN], ids=["open", "token"])
def base_url(herder: RestHerder, request: pytest.FixtureRequest) -> Iterator[str]:
    """The server, as ``kopycat rest`` runs it: without a token, then with ``--token-file``."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    app = create_app(herder, token=request.param)
    add_metrics_route(app, task_metrics())  # as kopycat worker serves its registry
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(10)


@pytest.fixture
def browser() -> Iterator[object]:
    with chromium() as driver:
        yield driver


def test_the_page_lists_the_connector_and_its_buttons_pause_resume_stop_and_restart_it(
        browser: object, base_url: str, herder: RestHerder, tmp_path: Path, topic_name: str,
        request: pytest.FixtureRequest) -> None:
    driver: object = browser
    driver.get(f"{base_url}/ui")  # type: ignore[attr-defined]
    if request.node.callspec.id == "token":  # the page asks for the token, then sends it as a bearer header
        wait_until(lambda: driver.execute_script("return !document.getElementById('login').hidden"),  # type: ignore[attr-defined]
                   "the token form", lambda: page_error(driver))
        driver.execute_script("document.getElementById('token').value = arguments[0];"  # type: ignore[attr-defined]
                              "document.querySelector('#login button').click();", TOKEN)
    wait_until(lambda: driver.execute_script("return document.body.dataset.loaded") == "2",  # type: ignore[attr-defined]
               "the connectors to load")
    cells = row_cells(driver)
    assert cells[0] == CONNECTOR  # shown as text, not markup
    assert cells[1] == "source · FileStreamSource" and cells[2] == "RUNNING"
    assert cells[3].splitlines() == ["task 0: RUNNING", "task 1: FAILED — RuntimeError: disk full"]
    assert cells[4] == "orders" and cells[5] == "— reads no Kafka topic"
    sink = row_cells(driver, 1)
    assert sink[0] == SINK and sink[1] == "sink · FileStreamSink"
    assert sink[5].splitlines() == ["total 5", f"{topic_name}-1: 5 (at none of 5)"]  # nothing committed yet
    assert cells[6].splitlines() == [
        "task 0: 12.5 records/s, 40 copied, 3 uncommitted",
        "task 1: \u2014 records/s, 0 uncommitted, last error 2026-11-18T11:06:40Z (2 failed: RuntimeError: disk full)"]
    assert sink[6] == ""  # the sink runs no task
    driver.save_screenshot(str(tmp_path / "connectors-page.png"))  # type: ignore[attr-defined]

    def press(action: str, expect: str) -> None:
        click(driver, f"button[data-action={action}]")
        wait_until(lambda: row_cells(driver)[2] == expect, f"{action} to show {expect}",
                   lambda: f"row {row_cells(driver)}, error {page_error(driver)!r}")

    press("pause", "PAUSED")
    assert herder.config_store.snapshot().target_states[CONNECTOR] is TargetState.PAUSED
    press("resume", "RUNNING")
    assert herder.config_store.snapshot().target_states[CONNECTOR] is TargetState.STARTED
    press("restart", "RUNNING")  # includeTasks&onlyFailed: the failed task restarts, the connector runs on
    # the row showed RUNNING before the click too: wait for the request itself to land
    wait_until(lambda: herder.status_store.get_task(CONNECTOR, 1).state is State.RESTARTING,  # type: ignore[union-attr]
               "the failed task to restart", lambda: f"row {row_cells(driver)}, error {page_error(driver)!r}")
    assert herder.status_store.get_task(CONNECTOR, 0).state is State.RUNNING  # type: ignore[union-attr]
    press("stop", "STOPPED")
    assert herder.config_store.snapshot().target_states[CONNECTOR] is TargetState.STOPPED
    assert page_error(driver) == ""

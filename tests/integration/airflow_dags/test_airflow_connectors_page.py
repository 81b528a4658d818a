"""The "Kafka connectors" page inside Airflow, in headless Chromium, over a real run of a connector's DAG.

A real ``airflow api-server`` (the plugin loaded from its entry point) serves Airflow's UI and the
mounted page; the connector is created through the mounted REST API with a token from the simple
auth manager's ``POST /auth/token``; its DAG (dag_factory's, run by ``dag.test()`` on the same
metadata DB) copies partition 0 and fails on partition 1's bad JSON. Chromium signs in on Airflow's
login form, opens the page from Airflow's navigation (``/plugin/kopycat-connectors``, the external view
in an iframe) and reads what the run left: tasks, records copied, lag and the failed task's error.
A long copy's figures reach ``/kopycat/metrics`` while its task instance is still running.
"""

from __future__ import annotations

import json
import re
import threading
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from kopycat_airflow.dag_factory import connector_dag_id
from kopycat_airflow.local import LocalAirflow
from tests.support.airflow_scheduler import AirflowDeployment
from tests.support.browser import chromium, connector_cells, page_error, wait_until
from tests.support.kafka import create_topic, produce

USER, PASSWORD = "ada", "page-test-password"

DAG_FILE = '''
from kopycat_airflow.dag_factory import ConnectorListing, connector_dag

dag = connector_dag(ConnectorListing({name!r}, {kind!r}, "none", "STARTED"), copy_retries=0,
                    progress_interval_s=0.5)
'''


@pytest.fixture
def api_server(local_airflow: LocalAirflow, tmp_path: Path) -> Iterator[AirflowDeployment]:
    """The session's Airflow home served by a real api-server (one worker), user ``ada`` an admin."""
    passwords = tmp_path / "passwords.json"
    passwords.write_text(json.dumps({USER: PASSWORD}))
    deployment = AirflowDeployment(local_airflow.with_dags(local_airflow.dags_folder, {
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": f"{USER}:admin",
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(passwords),
        "AIRFLOW__API__WORKERS": "1"}))
    try:
        yield deployment.start_api_server()
    finally:
        deployment.stop()


def _call(url: str, method: str = "GET", body: Any = None, token: str | None = None) -> Any:
    headers = {"Content-Type": "application/json", **({"Authorization": f"Bearer {token}"} if token else {})}
    request = urllib.request.Request(url, method=method, headers=headers,
                                     data=None if body is None else json.dumps(body).encode())
    with urllib.request.urlopen(request, timeout=120) as response:
        text = response.read()
        return json.loads(text) if text else None


def _sign_in(driver: Any, base_url: str, next_path: str) -> None:
    """Airflow's simple auth manager login form; it sets the ``_token`` cookie and goes to ``next_path``."""
    from selenium.webdriver.common.by import By

    driver.get(f"{base_url}/auth/login?next={next_path}")
    wait_until(lambda: bool(driver.find_elements(By.CSS_SELECTOR, "input[type=password]")), "the login form",
               lambda: driver.page_source[:500], timeout_s=60)
    driver.find_element(By.CSS_SELECTOR, "input:not([type=password])").send_keys(USER)
    driver.find_element(By.CSS_SELECTOR, "input[type=password]").send_keys(PASSWORD)
    driver.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    wait_until(lambda: driver.get_cookie("_token") is not None, "the login cookie",
               lambda: driver.current_url, timeout_s=60)


def test_the_kafka_connectors_page_in_airflow_shows_the_runs_tasks_records_lag_and_the_failed_tasks_error(
        api_server: AirflowDeployment, local_airflow: LocalAirflow, bootstrap_servers: str, topic_name: str,
        tmp_path: Path) -> None:
    name = f"archive-{uuid.uuid4().hex[:6]}"
    create_topic(bootstrap_servers, topic_name, partitions=2)
    produce(bootstrap_servers, topic_name, [json.dumps({"n": n}).encode() for n in range(30)], partition=0)
    produce(bootstrap_servers, topic_name, [b"{not json"] * 20, partition=1)
    store = tmp_path / "store"
    token = _call(f"{api_server.api_url}/auth/token", "POST", {"username": USER, "password": PASSWORD})["access_token"]
    _call(f"{api_server.api_url}/kopycat/connectors", "POST", {"name": name, "config": {
        "connector.class": "io.confluent.connect.s3.S3SinkConnector", "store.url": f"file://{store}",
        "format.class": "json", "flush.size": "10", "topics": topic_name, "tasks.max": "2",
        "key.converter": "org.apache.kafka.connect.storage.StringConverter",
        "value.converter": "org.apache.kafka.connect.json.JsonConverter", "value.converter.schemas.enable": "false",
        "kopycat.schedule": "none"}}, token)
    (local_airflow.dags_folder / "connector_dag.py").write_text(DAG_FILE.format(name=name, kind="S3SinkConnector"))
    run = local_airflow.run_dag(connector_dag_id(name))

    copies = {t["map_index"]: t for t in run.tasks("copy")}
    assert run["state"] == "failed" and {i: t["state"] for i, t in copies.items()} == {0: "success", 1: "failed"}
    assert copies[0]["result"]["records"] == 30
    assert sum(len(f.read_text().splitlines()) for f in store.rglob("*.json")) == 30  # 3 files of flush.size 10

    with chromium(window="1600,900") as driver:
        _sign_in(driver, api_server.api_url, "/plugin/kopycat-connectors")
        driver.get(f"{api_server.api_url}/plugin/kopycat-connectors")  # Browse > Kafka connectors
        frame = _page_frame(driver)
        driver.switch_to.frame(frame)
        wait_until(lambda: len(connector_cells(driver, name)) > 0, f"the row of {name}",
                   lambda: f"error {page_error(driver)!r}", timeout_s=90)
        cells = connector_cells(driver, name)
        driver.switch_to.default_content()
        driver.save_screenshot(str(tmp_path / "airflow-connectors-page.png"))

    assert cells[0] == name and cells[1] == "sink · io.confluent.connect.s3.S3SinkConnector" and cells[2] == "RUNNING"
    tasks = cells[3].splitlines()
    assert tasks[0] == "task 0: RUNNING"
    assert tasks[1].startswith("task 1: FAILED — kopycat.api.errors.ConnectError: Tolerance exceeded in error "
                               "handler: executing stage 'VALUE_CONVERTER'"), tasks  # the exception, not "Traceback"
    assert f"on topic '{topic_name}', partition 1, offset 0 failed" in tasks[1] and "'{not json'" in tasks[1]
    assert cells[4] == topic_name
    assert cells[5].splitlines() == ["total 20", f"{topic_name}-1: 20 (at none of 20)"]
    figures = cells[6].splitlines()
    rate = copies[0]["result"]["records"] / copies[0]["result"]["duration_s"]
    shown = re.fullmatch(r"task 0: (\d+\.\d) records/s, 30 copied, 0 uncommitted", figures[0])
    assert shown and float(shown[1]) == pytest.approx(rate, abs=0.051), figures[0]  # toFixed(1) of the run's rate
    # the failed task returned no summary: its last progress record says what it did before failing
    assert figures[1].startswith("task 1: 0.0 records/s, 0 copied, 0 uncommitted, last error"), figures[1][:200]
    assert figures[1].endswith(tasks[1].removeprefix("task 1: FAILED — ") + ")"), figures[1]


def _page_frame(driver: Any) -> Any:
    """The iframe Airflow's UI shows the external view in (its ``href``, ``/kopycat/ui``)."""
    from selenium.webdriver.common.by import By

    def frames() -> list[Any]:
        return [f for f in driver.find_elements(By.TAG_NAME, "iframe")
                if "/kopycat/ui" in (f.get_attribute("src") or "")]

    wait_until(lambda: bool(frames()), "Airflow's UI to show the page in an iframe",
               lambda: driver.page_source[:1000], timeout_s=90)
    return frames()[0]


def _call_text(url: str, token: str) -> str:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(request, timeout=120) as response:
        return response.read().decode()


SENT = "kafka_connect_sink_task_metrics_sink_record_send_total"


def test_a_running_copy_tasks_records_so_far_reach_the_page_before_it_ends(
        api_server: AirflowDeployment, local_airflow: LocalAirflow, bootstrap_servers: str, topic_name: str,
        tmp_path: Path) -> None:
    """One copy task writes 600,000 records of 200 bytes to a file: long enough for several of its
    half-second progress records; ``/kopycat/metrics`` is read in a loop with the task's state beside."""
    name, total = f"bulk-{uuid.uuid4().hex[:6]}", 600_000
    create_topic(bootstrap_servers, topic_name)
    produce(bootstrap_servers, topic_name, [f"{n:0200d}".encode() for n in range(total)])
    out = tmp_path / "bulk.txt"
    token = _call(f"{api_server.api_url}/auth/token", "POST", {"username": USER, "password": PASSWORD})["access_token"]
    _call(f"{api_server.api_url}/kopycat/connectors", "POST", {"name": name, "config": {
        "connector.class": "FileStreamSink", "file": str(out), "topics": topic_name, "tasks.max": "1",
        "key.converter": "org.apache.kafka.connect.storage.StringConverter",
        "value.converter": "org.apache.kafka.connect.storage.StringConverter", "kopycat.schedule": "none"}}, token)
    dag_id = connector_dag_id(name)
    (local_airflow.dags_folder / "connector_dag.py").write_text(DAG_FILE.format(name=name, kind="FileStreamSink"))
    finished: list[Any] = []
    runner = threading.Thread(target=lambda: finished.append(local_airflow.run_dag(dag_id)), daemon=True)
    runner.start()
    seen: list[tuple[str | None, float | None]] = []  # (copy task state, records sent so far)
    while runner.is_alive():
        states = api_server.query("SELECT state FROM task_instance WHERE dag_id = :dag_id AND task_id LIKE '%.copy'",
                                  dag_id=dag_id)
        text = _call_text(f"{api_server.api_url}/kopycat/metrics", token)
        sent = [s.value for family in text_string_to_metric_families(text) for s in family.samples
                if s.name == SENT and s.labels.get("connector") == name]
        seen.append((states[0]["state"] if states else None, sent[0] if sent else None))
        runner.join(0.3)

    run = finished[0]
    assert run["state"] == "success", run.get("log")
    assert run.results("copy")[0]["records"] == total and len(out.read_text().splitlines()) == total
    while_running = [sent for state, sent in seen if state == "running" and sent is not None]
    assert any(0 < sent < total for sent in while_running), seen
    assert while_running == sorted(while_running), seen  # records so far only grow
    final = [s.value for family in text_string_to_metric_families(_call_text(f"{api_server.api_url}/kopycat/metrics",
                                                                              token))
             for s in family.samples if s.name == SENT and s.labels.get("connector") == name]
    assert final == [total]  # the finished task's summary, no longer its progress

"""Connectors created through the REST API run as DAGs: statuses, task configs, pause and resume.

Real broker, real Airflow (dag.test in a child process), the REST app in process. The connector
is a FileStreamSource, so the assertions are on exact lines in its topic.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from kopycat.rest import RestHerder, create_app
from kopycat.storage.config_backing_store import KafkaConfigBackingStore
from kopycat.storage.status_backing_store import KafkaStatusBackingStore
from kopycat_airflow.dag_factory import connector_dag_id
from kopycat_airflow.local import LocalAirflow
from tests.support.kafka import consume_all

pytestmark = [pytest.mark.integration, pytest.mark.timeout(1800)]

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture
def rest(worker: dict[str, str]) -> Iterator[TestClient]:
    with KafkaConfigBackingStore.from_config(worker) as configs, \
            KafkaStatusBackingStore.from_config(worker) as statuses:
        with TestClient(create_app(RestHerder(configs, statuses, worker))) as client:
            yield client


@pytest.fixture
def airflow(local_airflow: LocalAirflow, worker: dict[str, str]) -> LocalAirflow:
    """Airflow whose ``kopycat_default`` connection is ``worker``, with dags/kopycat_connectors.py."""
    shutil.copy(REPO / "dags" / "kopycat_connectors.py", local_airflow.dags_folder)
    host, port = worker["bootstrap.servers"].split(":")
    local_airflow.extra_env["AIRFLOW_CONN_KOPYCAT_DEFAULT"] = json.dumps(
        {"conn_type": "kopycat", "host": host, "port": int(port), "extra": worker})
    return local_airflow


def _lines(path: Path, first: int, count: int) -> None:
    with path.open("a") as out:
        out.writelines(f"line-{i}\n" for i in range(first, first + count))


def _topic_lines(bootstrap: str, topic: str) -> list[str]:
    return [json.loads(v) for v in consume_all(bootstrap, topic) if v is not None]


def _states(run: dict[str, Any]) -> dict[str, list[str]]:
    states: dict[str, list[str]] = {}
    for task in run["tasks"]:
        states.setdefault(task["task_id"].rsplit(".", 1)[-1], []).append(task["state"])
    return states


def test_a_connector_posted_to_the_rest_api_runs_as_a_dag_reports_its_status_and_honours_pause(
        rest: TestClient, airflow: LocalAirflow, bootstrap_servers: str, topic_name: str, tmp_path: Path) -> None:
    source = tmp_path / "input.txt"
    _lines(source, 0, 100)
    name = f"{topic_name}-file"
    created = rest.post("/connectors", json={"name": name, "config": {
        "connector.class": "FileStreamSource", "tasks.max": "1", "file": str(source), "topic": topic_name,
        "value.converter": "org.apache.kafka.connect.json.JsonConverter", "value.converter.schemas.enable": "false",
        "kopycat.schedule": "@hourly"}})
    assert created.status_code == 201, created.text
    dag_id = connector_dag_id(name)

    first = airflow.run_dag(dag_id)
    assert first["state"] == "success", first
    assert _topic_lines(bootstrap_servers, topic_name) == [f"line-{i}" for i in range(100)]
    assert rest.get(f"/connectors/{name}/tasks").json()[0]["id"] == {"connector": name, "task": 0}
    status = rest.get(f"/connectors/{name}/status").json()
    assert status["connector"]["state"] == "RUNNING" and "(airflow)" in status["connector"]["worker_id"]
    assert [(t["id"], t["state"]) for t in status["tasks"]] == [(0, "RUNNING")]
    assert rest.get(f"/connectors/{name}/topics").json() == {name: {"topics": [topic_name]}}  # KIP-558

    assert rest.put(f"/connectors/{name}/pause").status_code == 202
    _lines(source, 100, 50)
    paused = airflow.run_dag(dag_id)
    assert _states(paused) == {"plan": ["skipped"], "copy": ["skipped"], "summary": ["skipped"]}, paused
    assert len(_topic_lines(bootstrap_servers, topic_name)) == 100  # nothing copied while paused

    assert rest.put(f"/connectors/{name}/resume").status_code == 202
    resumed = airflow.run_dag(dag_id)
    assert resumed["state"] == "success", resumed
    assert resumed.results("summary")[0]["records"] == 50
    assert _topic_lines(bootstrap_servers, topic_name) == [f"line-{i}" for i in range(150)]  # no gap, no duplicate


def test_a_connector_with_a_bad_schedule_is_refused_by_the_rest_api_naming_the_key(rest: TestClient) -> None:
    answer = rest.post("/connectors", json={"name": "bad-schedule", "config": {
        "connector.class": "FileStreamSource", "file": "/tmp/x", "topic": "t", "kopycat.schedule": "*/5 * *"}})
    assert answer.status_code == 400
    assert "kopycat.schedule" in answer.json()["message"] and "'*/5 * *'" in answer.json()["message"]
    assert rest.get("/connectors").json() == []

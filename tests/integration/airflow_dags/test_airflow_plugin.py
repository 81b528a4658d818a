"""The Airflow plugin: Kafka Connect's REST API inside Airflow's API server, acting on the DAGs.

A connector's DAG fails one mapped copy task; through ``/kopycat`` (Airflow's own app, the real
broker's config topic) pause pauses that DAG, resume unpauses it, restart clears exactly the
failed task instances, and Airflow's users and roles guard every route.
"""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path

from kopycat_airflow.dag_factory import connector_dag_id
from kopycat_airflow.local import LocalAirflow

CALLS = Path(__file__).with_name("plugin_calls.py")

# The shape of a stored connector's DAG (dag_factory): plan -> copy (mapped; task 1 fails) -> summary.
DAG_FILE = '''
import pendulum
from airflow.sdk import DAG, TaskGroup, task

with DAG({dag_id!r}, schedule=None, start_date=pendulum.datetime(2026, 1, 1, tz="UTC")):
    with TaskGroup({group!r}):
        @task(task_id="plan")
        def plan():
            return [0, 1, 2]

        @task(task_id="copy")
        def copy(task_config):
            if task_config == 1:
                raise RuntimeError("task 1 breaks")
            return task_config

        @task(task_id="summary")
        def summary(results):
            return list(results)

        summary(copy.expand(task_config=plan()))
'''


def test_the_mounted_api_pauses_resumes_and_restarts_the_connectors_dag_behind_airflow_login(
        local_airflow: LocalAirflow, tmp_path: Path) -> None:
    name = f"orders-{uuid.uuid4().hex[:6]}"
    dag_id, group = connector_dag_id(name), name.replace("-", "_")
    (local_airflow.dags_folder / "connector_dag.py").write_text(DAG_FILE.format(dag_id=dag_id, group=group))
    first = local_airflow.run_dag(dag_id)
    assert [t["state"] for t in first.tasks("copy")] == ["success", "failed", "success"]

    answers = tmp_path / "answers.json"
    done = subprocess.run([sys.executable, str(CALLS), name, dag_id, str(answers)], env=local_airflow.environ(),
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(answers.read_text())

    assert seen["anonymous"]["status"] == 401
    assert seen["anonymous"]["body"] == {"error_code": 401, "message": "Not authenticated"}
    assert seen["create"]["status"] == 201
    assert name in seen["viewer_list"]["body"]
    assert seen["viewer_pause"]["status"] == 403 and seen["viewer_pause"]["body"]["error_code"] == 403

    assert seen["pause"]["status"] == 202 and seen["after_pause"]["paused"] is True
    assert seen["status_paused"]["body"]["connector"]["state"] == "PAUSED"
    assert seen["resume"]["status"] == 202 and seen["after_resume"]["paused"] is False

    failed_before = seen["before"]["tis"]
    assert failed_before[f"{group}.copy[1]"] == "failed" and failed_before[f"{group}.summary[-1]"] == "upstream_failed"
    assert seen["restart"]["status"] == 204
    after = seen["after_restart"]["tis"]
    assert after[f"{group}.copy[1]"] is None and after[f"{group}.summary[-1]"] is None  # cleared: to run again
    assert after[f"{group}.copy[0]"] == after[f"{group}.copy[2]"] == after[f"{group}.plan[-1]"] == "success"
    assert seen["after_restart"]["run_state"] == "queued"

    assert seen["page"]["status"] == 200 and "Kopycat connectors" in seen["page"]["body"]
    assert [(v["name"], v["href"]) for v in seen["external_views"]] == [("Kafka connectors", "/kopycat/ui")]
    assert seen["plugin_errors"] == {}  # loaded once, from the airflow.plugins entry point
    assert seen["delete"]["status"] == 204

"""The Airflow plugin: Kafka Connect's REST API inside Airflow's API server, acting on the DAGs.

A connector's DAG fails one mapped copy task; through ``/kopycat`` (Airflow's own app, the real
broker's config topic) pause pauses that DAG, resume unpauses it, restart clears exactly the
failed task instances, and Airflow's users and roles guard every route. A real sink DAG's copy tasks
give ``/kopycat/metrics`` (the connectors page's figures) their records and throughput.
"""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from kopycat_airflow.dag_factory import connector_dag_id
from kopycat_airflow.local import LocalAirflow
from tests.support.kafka import create_topic, produce

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

# A stored connector's DAG as dag_factory builds it: the connector's task group under the connector's DAG id.
SINK_DAG_FILE = '''
import pendulum
from airflow.sdk import DAG
from kopycat_airflow.task_group import connector_task_group

with DAG({dag_id!r}, schedule=None, start_date=pendulum.datetime(2026, 1, 1, tz="UTC")):
    connector_task_group({config!r})
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


def test_the_mounted_metrics_give_the_page_each_copy_tasks_figures_of_the_latest_run(
        local_airflow: LocalAirflow, tmp_path: Path, bootstrap_servers: str, topic_name: str) -> None:
    """The figures the "Kafka connectors" page shows inside Airflow: a real sink DAG run copies 30 + 20
    records; ``/kopycat/metrics`` holds each copy task's records and throughput."""
    name = f"archive-{uuid.uuid4().hex[:6]}"
    create_topic(bootstrap_servers, topic_name, partitions=2)
    produce(bootstrap_servers, topic_name, [b"a"] * 30, partition=0)
    produce(bootstrap_servers, topic_name, [b"b"] * 20, partition=1)
    out = tmp_path / "archive.txt"
    config = {"connector.class": "FileStreamSink", "file": str(out), "topics": topic_name, "tasks.max": "2",
              "key.converter": "org.apache.kafka.connect.storage.StringConverter",
              "value.converter": "org.apache.kafka.connect.storage.StringConverter", "kopycat.schedule": "none"}
    (local_airflow.dags_folder / "sink_dag.py").write_text(SINK_DAG_FILE.format(
        dag_id=connector_dag_id(name), config={"name": name, **config}))
    run = local_airflow.run_dag(connector_dag_id(name))
    assert run["state"] == "success", run.get("log")
    copied = {t["map_index"]: t["result"] for t in run.tasks("copy")}
    assert sum(r["records"] for r in copied.values()) == 50
    assert len(out.read_text().splitlines()) == 50

    answers = tmp_path / "answers.json"
    done = subprocess.run([sys.executable, str(CALLS), "figures", name, json.dumps(config), str(answers)],
                          env=local_airflow.environ(), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(answers.read_text())

    assert (seen["create"], seen["anonymous"], seen["delete"], seen["metrics"]["status"]) == (201, 401, 204, 200)
    samples = {(s.name, s.labels.get("connector"), s.labels.get("task")): s.value
               for family in text_string_to_metric_families(seen["metrics"]["body"]) for s in family.samples}
    for task, result in copied.items():
        key = (name, str(task))
        assert samples[("kafka_connect_sink_task_metrics_sink_record_send_total", *key)] == result["records"]
        assert samples[("kafka_connect_sink_task_metrics_sink_record_read_total", *key)] == result["records"]
        assert samples[("kafka_connect_sink_task_metrics_sink_record_send_rate", *key)] == pytest.approx(
            result["records"] / result["duration_s"])
        assert samples[("kafka_connect_sink_task_metrics_sink_record_active_count", *key)] == 0

"""A connector DAG run with ``dag.test()`` against the secured broker.

The ``kopycat`` Airflow connection's extra is the worker.properties a Kafka Connect user has for a
SASL_SSL/SCRAM cluster (Java keys: the JAAS line, a JKS trust store). The JDBC source copies a
SQLite table to the secured cluster; the test reads the rows back, and finds the SASL and store
passwords in no XCom value, no line of the run's log and no argv of the test's child processes.
"""

from __future__ import annotations

import json
import sqlite3
import uuid
from pathlib import Path

import orjson
import psutil
import pytest

from kopycat.dev.secured_kafka import SecuredKafkaBroker
from kopycat_airflow.local import LocalAirflow
from tests.support.secured import argvs_of, assert_absent, consume_secured, worker_properties

pytestmark = [pytest.mark.integration, pytest.mark.timeout(1200)]

ROWS = 60


def test_a_connector_dag_copies_to_the_secured_cluster_and_no_password_reaches_xcom_or_the_log(
        local_airflow: LocalAirflow, secured_kafka: SecuredKafkaBroker, tmp_path: Path) -> None:
    run_id = uuid.uuid4().hex[:8]
    topic, conn_id = f"secured-dag-{run_id}", f"kopycat_secured_{run_id}"
    rows = [(i, f"order {i}") for i in range(1, ROWS + 1)]
    with sqlite3.connect(tmp_path / "orders.db") as db:
        db.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, label TEXT NOT NULL)")
        db.executemany("INSERT INTO orders VALUES (?, ?)", rows)
    worker = worker_properties(secured_kafka.java_sasl_settings(mechanism="SCRAM-SHA-512"), topic)
    local_airflow.extra_env[f"AIRFLOW_CONN_{conn_id.upper()}"] = json.dumps({"conn_type": "kopycat",
                                                                             "extra": worker})
    config = {"name": f"{topic}-source", "connector.class": "io.confluent.connect.jdbc.JdbcSourceConnector",
              "connection.url": f"sqlite:///{tmp_path / 'orders.db'}", "mode": "incrementing",
              "incrementing.column.name": "id", "table.whitelist": "orders", "topic.prefix": f"{topic}-"}
    (local_airflow.dags_folder / "t_secured.py").write_text(f'''
import pendulum
from airflow.sdk import DAG
from kopycat_airflow.task_group import connector_task_group

with DAG("t_secured", schedule=None, start_date=pendulum.datetime(2026, 1, 1, tz="UTC"), catchup=False):
    connector_task_group({json.dumps(config)}, kopycat_conn_id={conn_id!r}, copy_retries=0)
''')

    run = local_airflow.run_dag("t_secured")
    assert run["state"] == "success", run.get("log")
    assert [copied["records"] for copied in run.results("copy")] == [ROWS]
    values = [orjson.loads(m.value())["payload"] for m in consume_secured(secured_kafka, f"{topic}-orders")]
    assert [(v["id"], v["label"]) for v in values] == rows

    secrets = (secured_kafka.passwords["admin"], secured_kafka.store_password)
    assert_absent(secrets, "an XCom value", (json.dumps(task["result"]) for task in run["tasks"]))
    with open(run["log"], encoding="utf-8") as log:
        assert_absent(secrets, "the DAG run's log", log)
    assert_absent(secrets, "a process argv", (" ".join(argv) for argv in argvs_of(psutil.Process())))

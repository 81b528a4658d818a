"""``${airflow:<conn_id>:<field>}`` and ``${airflow:variable:<name>}`` under Airflow (dag.test).

Real PostgreSQL, broker and Airflow: the JDBC source's URL, user and password come from an Airflow
connection and its topic prefix from an Airflow Variable. They are resolved inside the plan and
the copy task; the plan's XCom (the task configs) holds the placeholders, and the run's log never
the password.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import orjson
import pytest
from sqlalchemy.engine import make_url

from kopycat_airflow.local import LocalAirflow
from tests.integration.test_jdbc_source import create_table, execute
from tests.support.kafka import consume_all

pytestmark = [pytest.mark.integration, pytest.mark.timeout(1200)]

ROWS = 40


def _dag_file(local_airflow: LocalAirflow, dag_id: str, config: dict[str, Any]) -> None:
    worker = {"config.providers": "airflow",
              "config.providers.airflow.class": "kopycat_airflow.config_provider.AirflowConfigProvider"}
    (local_airflow.dags_folder / f"{dag_id}.py").write_text(f'''
import pendulum
from airflow.sdk import DAG
from kopycat_airflow.task_group import connector_task_group

with DAG({dag_id!r}, schedule=None, start_date=pendulum.datetime(2026, 1, 1, tz="UTC"), catchup=False):
    connector_task_group({json.dumps(config)}, worker_overrides={json.dumps(worker)}, copy_retries=0)
''')


def test_a_copy_task_resolves_airflow_connection_secrets_while_xcom_keeps_placeholders(
        local_airflow: LocalAirflow, postgres_url: str, bootstrap_servers: str) -> None:
    run_id = uuid.uuid4().hex[:8]
    conn_id, role, prefix = f"warehouse_{run_id}", f"dag_reader_{run_id}", f"ap{run_id}_"
    secret = f"pw-{uuid.uuid4().hex}"
    create_table(postgres_url, "orders", ROWS)
    execute(postgres_url, f"CREATE ROLE {role} LOGIN", f"GRANT SELECT ON orders TO {role}")
    url = make_url(postgres_url)
    local_airflow.extra_env[f"AIRFLOW_CONN_{conn_id.upper()}"] = json.dumps({
        "conn_type": "postgres", "host": url.host, "port": url.port, "schema": url.database, "login": role,
        "password": secret})
    local_airflow.extra_env[f"AIRFLOW_VAR_PREFIX_{run_id.upper()}"] = prefix
    config = {"name": f"secrets-{run_id}", "connector.class": "io.confluent.connect.jdbc.JdbcSourceConnector",
              "connection.url": f"postgresql+psycopg://${{airflow:{conn_id}:host}}:${{airflow:{conn_id}:port}}"
                                f"/${{airflow:{conn_id}:schema}}",
              "connection.user": f"${{airflow:{conn_id}:login}}",
              "connection.password": f"${{airflow:{conn_id}:password}}",
              "topic.prefix": f"${{airflow:variable:prefix_{run_id}}}",
              "mode": "incrementing", "incrementing.column.name": "id", "table.whitelist": "orders"}
    _dag_file(local_airflow, "t_airflow_secrets", config)

    run = local_airflow.run_dag("t_airflow_secrets")
    assert run["state"] == "success", run.get("log")
    [copied] = run.results("copy")
    assert copied["records"] == ROWS
    ids = sorted(orjson.loads(value)["payload"]["id"] for value in consume_all(bootstrap_servers, prefix + "orders")
                 if value is not None)
    assert ids == list(range(1, ROWS + 1))

    [plan] = run.results("plan")
    [task] = plan
    assert task["config"]["connection.user"] == config["connection.user"]
    assert task["config"]["connection.url"] == config["connection.url"]
    xcom = json.dumps(plan)
    assert secret not in xcom and role not in xcom and prefix not in xcom
    with open(run["log"], encoding="utf-8") as log:
        assert secret not in log.read()

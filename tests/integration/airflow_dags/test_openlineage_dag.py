"""OpenLineage events of real DAG runs: datasets named by the naming spec, schemas, column lineage.

The JDBC import, the Python storage sink and the Spark export (pyspark local, through spark-submit).
The OpenLineage provider's file transport writes every event of a ``dag.test`` run (one process per
run: the provider reads its configuration once per process); the test reads them back.
"""

from __future__ import annotations

import datetime as dt
import json
import uuid
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from sqlalchemy.engine import make_url

from kopycat_airflow.local import LocalAirflow
from tests.support.kafka import create_topic, produce
from tests.support.orders import assert_every_id_once, local_store, produce_orders, read_committed
from tests.support.sql import create_stamped_tables

pytestmark = [pytest.mark.integration, pytest.mark.timeout(1200)]

T0 = dt.datetime(2026, 11, 20)


def _dag_file(folder: Path, dag_id: str, config: dict[str, Any]) -> None:
    (folder / f"{dag_id}.py").write_text(f'''
import pendulum
from airflow.sdk import DAG
from kopycat_airflow.task_group import connector_task_group

with DAG({dag_id!r}, schedule=None, start_date=pendulum.datetime(2026, 1, 1, tz="UTC"), catchup=False):
    connector_task_group({json.dumps(config)})
''')


def _lineage_airflow(served: LocalAirflow, tmp_path: Path) -> tuple[LocalAirflow, Path]:
    """The session's Airflow home, each run in its own process, events to a file."""
    dags, events = tmp_path / "dags", tmp_path / "openlineage.jsonl"
    dags.mkdir()
    transport = json.dumps({"type": "file", "log_file_path": str(events), "append": True})
    # A forked listener process inherits librdkafka's threads half-held and hangs: task events are sent from
    # a thread, and the DAG run's events (a process pool dag.test would wait for at exit) are left out.
    env = {**served.extra_env, "AIRFLOW__OPENLINEAGE__TRANSPORT": transport,
           "AIRFLOW__OPENLINEAGE__NAMESPACE": "kopycat-tests", "AIRFLOW__OPENLINEAGE__EXECUTE_IN_THREAD": "True",
           "AIRFLOW__OPENLINEAGE__EXECUTION_TIMEOUT": "60",
           "AIRFLOW__OPENLINEAGE__EMISSION_POLICY": json.dumps([{"scope": {}, "controls": {"emit_dag_events": False}}])}
    return LocalAirflow(served.home, dags, env), events


def _completed(events: Path, task: str) -> dict[str, Any]:
    """The COMPLETE event of the DAG's task whose id ends with ``task``."""
    found = [json.loads(line) for line in events.read_text().splitlines() if line.strip()]
    done = [e for e in found if e["eventType"] == "COMPLETE" and e["job"]["name"].endswith(task)]
    assert done, [(e["eventType"], e["job"]["name"]) for e in found]
    return done[-1]


def _fields(dataset: dict[str, Any]) -> dict[str, str]:
    return {f["name"]: f.get("type") for f in dataset["facets"].get("schema", {}).get("fields", [])}


def test_a_jdbc_import_reports_tables_topics_schemas_and_column_lineage_through_replace_field(
        served_airflow: LocalAirflow, tmp_path: Path, postgres_url: str, bootstrap_servers: str) -> None:
    tag = uuid.uuid4().hex[:6]
    tables = (f"ol{tag}_a", f"ol{tag}_b")
    engine, _ = create_stamped_tables(postgres_url, tables, 5, T0)
    engine.dispose()
    config = {"name": f"ol-jdbc-{tag}", "connector.class": "io.confluent.connect.jdbc.JdbcSourceConnector",
              "connection.url": postgres_url, "mode": "incrementing", "incrementing.column.name": "id",
              "table.whitelist": ",".join(tables), "topic.prefix": "t_", "tasks.max": "1",
              "transforms": "rf", "transforms.rf.type": "org.apache.kafka.connect.transforms.ReplaceField$Value",
              "transforms.rf.renames": "label:name", "transforms.rf.exclude": "updated_at"}
    airflow, events = _lineage_airflow(served_airflow, tmp_path)
    _dag_file(airflow.dags_folder, "t_ol_jdbc", config)

    run = airflow.run_dag("t_ol_jdbc", "2026-11-21T01:00:00Z")

    assert run["state"] == "success", run.get("log")
    url = make_url(postgres_url)
    namespace = f"postgres://{url.host}:{url.port}"
    kafka = f"kafka://{bootstrap_servers.split(',')[0]}"
    for task in ("plan", "copy"):
        event = _completed(events, task)
        inputs = {(d["namespace"], d["name"]): d for d in event["inputs"]}
        outputs = {(d["namespace"], d["name"]): d for d in event["outputs"]}
        for table in tables:
            source = inputs[(namespace, f"{url.database}.public.{table}")]
            assert _fields(source) == {"id": "int32", "label": "string",
                                       "updated_at": "org.apache.kafka.connect.data.Timestamp"}
            topic = outputs[(kafka, f"t_{table}")]
            assert _fields(topic) == {"id": "int32", "name": "string"}  # renamed, updated_at dropped
            lineage = topic["facets"]["columnLineage"]["fields"]
            assert lineage["name"]["inputFields"] == [
                {"namespace": namespace, "name": f"{url.database}.public.{table}", "field": "label",
                 "transformations": []}]
            assert sorted(lineage) == ["id", "name"]


def test_a_storage_export_reports_its_topic_and_the_directory_it_writes(
        served_airflow: LocalAirflow, tmp_path: Path, bootstrap_servers: str, topic_name: str) -> None:
    create_topic(bootstrap_servers, topic_name)
    produce(bootstrap_servers, topic_name, [json.dumps({"id": i}).encode() for i in range(20)], keys=False)
    lake = tmp_path / "lake"
    config = {"name": f"ol-sink-{uuid.uuid4().hex[:6]}", "connector.class": "io.confluent.connect.s3.S3SinkConnector",
              "topics": topic_name, "store.url": f"file://{lake}", "format.class": "json", "flush.size": "10",
              "value.converter": "org.apache.kafka.connect.json.JsonConverter",
              "value.converter.schemas.enable": "false", "tasks.max": "1",
              "key.converter": "org.apache.kafka.connect.storage.StringConverter"}
    airflow, events = _lineage_airflow(served_airflow, tmp_path)
    _dag_file(airflow.dags_folder, "t_ol_export", config)

    run = airflow.run_dag("t_ol_export", "2026-11-21T01:00:00Z")

    assert run["state"] == "success", run.get("log")
    kafka = f"kafka://{bootstrap_servers.split(',')[0]}"
    for task in ("plan", "copy"):
        event = _completed(events, task)
        assert [(d["namespace"], d["name"]) for d in event["inputs"]] == [(kafka, topic_name)]
        assert [(d["namespace"], d["name"]) for d in event["outputs"]] == [("file", f"{lake}/topics/{topic_name}")]


def test_a_spark_export_reports_its_topic_and_directory_with_the_columns_it_wrote(
        served_airflow: LocalAirflow, tmp_path: Path, bootstrap_servers: str, topic_name: str) -> None:
    count = 600
    produce_orders(bootstrap_servers, topic_name, count)
    lake = tmp_path / "lake"
    config = {"name": f"ol-spark-{uuid.uuid4().hex[:6]}", "connector.class": "io.confluent.connect.s3.S3SinkConnector",
              "topics": topic_name, "store.url": f"file://{lake}", "format.class": "parquet", "flush.size": "1000",
              "tasks.max": "1"}
    airflow, events = _lineage_airflow(served_airflow, tmp_path)
    airflow.extra_env["AIRFLOW_CONN_SPARK_DEFAULT"] = "spark://local%5B2%5D"
    (airflow.dags_folder / "t_ol_spark.py").write_text(f'''
import pendulum
from airflow.sdk import DAG
from kopycat_airflow.task_group import spark_export_task_group

with DAG("t_ol_spark", schedule=None, start_date=pendulum.datetime(2026, 1, 1, tz="UTC"), catchup=False):
    spark_export_task_group({json.dumps(config)}, export_retries=0)
''')

    run = airflow.run_dag("t_ol_spark", "2026-11-21T01:00:00Z")

    assert run["state"] == "success", run.get("log")
    assert sum(t["result"]["records"] for t in run.tasks("export")) == count
    written = read_committed(*local_store(lake / "topics" / topic_name), topic=topic_name)
    assert_every_id_once(written, count)
    event = _completed(events, "export")
    kafka = f"kafka://{bootstrap_servers.split(',')[0]}"
    assert [(d["namespace"], d["name"]) for d in event["inputs"]] == [(kafka, topic_name)]
    [output] = event["outputs"]
    assert (output["namespace"], output["name"]) == ("file", f"{lake}/topics/{topic_name}")
    [first, *_] = sorted((lake / "topics" / topic_name).rglob("*.parquet"))
    assert _fields(output) == {f.name: str(f.type) for f in pq.read_schema(first)}
    assert {"id", "name", "amount", "day", "ts", "note"} <= set(_fields(output))  # the records' value fields

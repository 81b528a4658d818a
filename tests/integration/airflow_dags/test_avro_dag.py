"""Issue #30's DAG: PostgreSQL -> Confluent Avro topics -> Parquet, a PostgreSQL table and a Spark export.

Real PostgreSQL, broker, Apicurio registry, Airflow (dag.test in a child process) and spark-submit in
local mode. One DAG run: the JDBC source copies a table of NUMERIC decimals, timestamps with and
without a time zone, dates, texts and nulls into a topic with ``io.confluent.connect.avro.AvroConverter``
for keys (``ValueToKey`` makes the key ``{id}``) and values; then the Python storage sink writes
Parquet, the JDBC sink upserts by the Avro key into another table, and the Spark export writes
Parquet from the same topic. Every column of every row is compared with the source: decimals
exactly (value and scale), nulls kept, timestamps as UTC instants (Connect's Timestamp is UTC).
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import uuid
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
import sqlalchemy as sa

from kopycat.connectors.files.committed_files import TEMP_DIR
from kopycat.converters.schema_registry import SchemaRegistryClient
from kopycat_airflow.local import LocalAirflow
from tests.support.sql import query_rows

pytestmark = [pytest.mark.integration, pytest.mark.timeout(3000)]

ROWS = 400
COLUMNS = ("id", "price", "total", "placed_at", "placed_tz", "due", "note")
T0 = dt.datetime(2026, 11, 20, 22, 30, 0)
BERLIN = dt.timezone(dt.timedelta(hours=1))
AVRO = "io.confluent.connect.avro.AvroConverter"


def source_row(n: int) -> dict[str, Any]:
    """Row ``n``: each nullable column is null on its own stride, so rows mix nulls and values."""
    def unless(stride: int, value: Any) -> Any:
        return None if n % stride == 0 else value
    return {"id": n,
            "price": unless(7, (decimal.Decimal(n) * decimal.Decimal("1.2345")).quantize(decimal.Decimal("0.0001"))),
            "total": decimal.Decimal("1234567890123456.78") - n,  # 18 digits: a float would round it
            "placed_at": unless(5, T0 + dt.timedelta(minutes=n, milliseconds=n)),
            "placed_tz": unless(6, (T0 + dt.timedelta(hours=n, milliseconds=3 * n)).replace(tzinfo=BERLIN)),
            "due": unless(4, dt.date(2026, 1, 1) + dt.timedelta(days=n)),
            "note": unless(3, f"order {n} – grüße, ‘quoted’, 注文")}


def create_source(url: str, table: str) -> None:
    engine = sa.create_engine(url)
    try:
        with engine.begin() as conn:
            conn.execute(sa.text(f"CREATE TABLE {table} (id INTEGER PRIMARY KEY, price NUMERIC(12, 4), "
                                 "total NUMERIC(18, 2) NOT NULL, placed_at TIMESTAMP(3), placed_tz TIMESTAMPTZ(3), "
                                 "due DATE, note TEXT)"))
            conn.execute(sa.text(f"INSERT INTO {table} VALUES (:id, :price, :total, :placed_at, :placed_tz, :due, "
                                 ":note)"), [source_row(n) for n in range(1, ROWS + 1)])
    finally:
        engine.dispose()


def comparable(row: dict[str, Any]) -> dict[str, Any]:
    """A row with timestamps as naive UTC and decimals as (value, exponent): equal only if exactly equal."""
    out: dict[str, Any] = {}
    for name in COLUMNS:
        value = row[name]
        if isinstance(value, dt.datetime) and value.tzinfo is not None:
            value = value.astimezone(dt.timezone.utc).replace(tzinfo=None)
        if isinstance(value, decimal.Decimal):
            value = (value, value.as_tuple().exponent)
        out[name] = value
    return out


def table_rows(url: str, table: str) -> list[dict[str, Any]]:
    return [comparable(dict(zip(COLUMNS, row, strict=True)))
            for row in query_rows(url, f"SELECT {', '.join(COLUMNS)} FROM {table} ORDER BY id")]


def parquet_files(topic_dir: Path) -> dict[str, list[dict[str, Any]]]:
    return {str(path.relative_to(topic_dir)): pq.read_table(path).to_pylist()
            for path in sorted(topic_dir.rglob("*.parquet")) if TEMP_DIR not in path.parts}


def parquet_rows(files: dict[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    return sorted((comparable(row) for rows in files.values() for row in rows), key=lambda r: r["id"])


def avro_converters(registry: str) -> dict[str, str]:
    return {"key.converter": AVRO, "key.converter.schema.registry.url": registry,
            "value.converter": AVRO, "value.converter.schema.registry.url": registry}


def configs(run: str, url: str, registry: str, lake: Path) -> dict[str, dict[str, str]]:
    """The DAG's four connectors: the source, and the three sinks of its topic."""
    topic = f"avro{run}_orders"
    avro = avro_converters(registry)
    return {
        "source": {"name": f"pg-{run}", "connector.class": "io.confluent.connect.jdbc.JdbcSourceConnector",
                   "connection.url": url, "mode": "incrementing", "incrementing.column.name": "id",
                   "table.whitelist": "orders", "topic.prefix": f"avro{run}_", "tasks.max": "1",
                   "poll.interval.ms": "200", "batch.max.rows": "150", "transforms": "key",
                   "transforms.key.type": "org.apache.kafka.connect.transforms.ValueToKey",
                   "transforms.key.fields": "id", **avro},
        "lake": {"name": f"lake-{run}", "connector.class": "io.confluent.connect.s3.S3SinkConnector",
                 "topics": topic, "tasks.max": "1", "store.url": f"file://{lake / 'python'}",
                 "format.class": "parquet", "flush.size": "100000", **avro},
        "table": {"name": f"table-{run}", "connector.class": "io.confluent.connect.jdbc.JdbcSinkConnector",
                  "topics": topic, "tasks.max": "1", "connection.url": url, "table.name.format": "orders_copy",
                  "insert.mode": "upsert", "pk.mode": "record_key", "pk.fields": "id", "auto.create": "true",
                  **avro},
        "spark": {"name": f"spark-{run}", "connector.class": "io.confluent.connect.s3.S3SinkConnector",
                  "topics": topic, "tasks.max": "1", "store.url": f"file://{lake / 'spark'}",
                  "format.class": "parquet", "flush.size": "100000", **avro},
    }


def dag_file(folder: Path, dag_id: str, connectors: dict[str, dict[str, str]]) -> None:
    """Source first, then its three sinks, each reading the topic up to the end the source left."""
    (folder / f"{dag_id}.py").write_text(f'''
import datetime as dt
import pendulum
from airflow.sdk import DAG
from kopycat_airflow.task_group import connector_task_group, spark_export_task_group

with DAG({dag_id!r}, schedule=None, start_date=pendulum.datetime(2026, 1, 1, tz="UTC"), catchup=False):
    source = connector_task_group({json.dumps(connectors["source"])}, retry_delay=dt.timedelta(seconds=1))
    lake = connector_task_group({json.dumps(connectors["lake"])}, retry_delay=dt.timedelta(seconds=1))
    table = connector_task_group({json.dumps(connectors["table"])}, retry_delay=dt.timedelta(seconds=1))
    spark = spark_export_task_group({json.dumps(connectors["spark"])}, export_retries=0)
    source >> [lake, table, spark]
''')


def test_postgres_rows_through_avro_topics_land_equal_in_parquet_a_table_and_the_spark_export(
        local_airflow: LocalAirflow, postgres_url: str, schema_registry: str, tmp_path: Path) -> None:
    run = uuid.uuid4().hex[:6]
    create_source(postgres_url, "orders")
    lake = tmp_path / "lake"
    connectors = configs(run, postgres_url, schema_registry, lake)
    topic = connectors["lake"]["topics"]
    dag_file(local_airflow.dags_folder, "t_avro_orders", connectors)
    local_airflow.extra_env["AIRFLOW_CONN_SPARK_DEFAULT"] = "spark://local%5B2%5D"

    result = local_airflow.run_dag("t_avro_orders", "2026-11-21T01:00:00Z")

    assert result["state"] == "success", result.get("log")
    copied = {group: sum(t["result"]["records"] for t in result.tasks(f"{config['name']}.copy"))
              for group, config in connectors.items() if group != "spark"}
    assert copied == {"source": ROWS, "lake": ROWS, "table": ROWS}
    [exported] = result.results(f"{connectors['spark']['name']}.export")
    assert exported["records"] == ROWS
    registry = SchemaRegistryClient(schema_registry)
    assert sorted(s for s in registry.request("GET", "/subjects") if s.startswith(topic)) == [
        f"{topic}-key", f"{topic}-value"]  # both sides went through the registry

    expected = [comparable(source_row(n)) for n in range(1, ROWS + 1)]
    assert table_rows(postgres_url, "orders") == expected  # the source read back: the test's own oracle
    assert table_rows(postgres_url, "orders_copy") == expected
    from_python = parquet_files(lake / "python" / "topics" / topic)
    assert parquet_rows(from_python) == expected
    from_spark = parquet_files(lake / "spark" / "topics" / topic)
    assert from_spark == from_python, "the Spark export writes the Python sink's file names and rows"
    nulls = {name: sum(row[name] is None for row in expected) for name in COLUMNS}
    assert nulls == {"id": 0, "price": ROWS // 7, "total": 0, "placed_at": ROWS // 5, "placed_tz": ROWS // 6,
                     "due": ROWS // 4, "note": ROWS // 3}  # the nulls compared above are there

"""Issue #31: the demo's DAGs (``dags/`` as shipped) run by a real scheduler, asserted on data.

One LocalExecutor deployment for the module (tests/support/airflow_scheduler.py: api-server, scheduler,
dag-processor) on the checkout's ``dags/`` with the demo's environment (provider/kopycat_airflow/demo.py:
KOPYCAT_BOOTSTRAP_SERVERS, KOPYCAT_SHOP_DB_URL, KOPYCAT_REPORTING_DB_URL, KOPYCAT_LAKE_URL) plus the
``spark_default`` connection the lake DAG's docstring names. The shop is a PostgreSQL database seeded by
kopycat.dev.shop_db, the reporting DB another one, the lake a local directory (the demo's ``file://``).

- The scheduler starts ``kopycat_shop_import`` once it is unpaused, and starts ``kopycat_shop_export``
  itself from the asset event the import run emits on ``kafka://<cluster>/shop_orders``: an
  ``asset_triggered`` run whose triggering events name the import's run (data-aware scheduling). The
  events come from the run's summary task, after every copy task: the export sees all three tables.
- ``kopycat_shop_lake_spark`` catches the lake up on a second import while the export is paused (as
  its docstring asks); the export then takes its turn, and the demo's own check still holds.
- ``kopycat_shop_mirror`` on its defaults: the Kopycat cluster is its own primary, the copies
  ``primary.shop_*`` beside the originals. Its records go to the cluster of the ``kopycat_default``
  connection (a source connector writes to its worker's cluster, as in Kafka Connect), which is also the
  one the import writes the shop topics to: a second broker as the target would need the DAG to run on
  another connection (tests/integration/airflow_dags/test_mirror_dag.py mirrors from a second broker).
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest
import sqlalchemy as sa

from kopycat.dev.kafka_broker import LocalKafkaBroker
from kopycat.dev.postgres import LocalPostgres
from kopycat.dev.shop_db import SHOP_TABLES, add_orders, row_counts, seed_shop, touch_customers
from kopycat_airflow.demo import lake_ids, pipeline_matches
from kopycat_airflow.local import LocalAirflow
from tests.support.airflow_scheduler import AirflowDeployment
from tests.support.kafka import consume_records

pytestmark = [pytest.mark.integration, pytest.mark.timeout(3000)]

DAGS = Path(__file__).resolve().parents[3] / "dags"
IMPORT, EXPORT = "kopycat_shop_import", "kopycat_shop_export"
LAKE_SPARK, MIRROR = "kopycat_shop_lake_spark", "kopycat_shop_mirror"
ORDERS, NEW_ORDERS, TOUCHED = 2_000, 250, [1, 2, 3]
FINISHED = ("success", "failed")
RUN_TIMEOUT_S = 900


@dataclass
class Shop:
    """The deployment and what its DAGs read and write."""

    airflow: AirflowDeployment
    db: sa.Engine
    shop_url: str
    reporting_url: str
    lake: Path
    bootstrap: str


@pytest.fixture(scope="module")
def shop_broker() -> Iterator[LocalKafkaBroker]:
    """A broker of the module's own: the demo's topic and group names are fixed (shop_*, connect-shop-*), and
    the session broker holds other modules' runs of the same connectors (test_mirror_dag.py's mirror)."""
    with LocalKafkaBroker(name="kafka-demo-dags") as broker:
        yield broker


@pytest.fixture(scope="module")
def shop(tmp_path_factory: pytest.TempPathFactory, shop_broker: LocalKafkaBroker,
         postgres_server: LocalPostgres) -> Iterator[Shop]:
    """The seeded shop and the deployment, every demo DAG parsed (and paused, as Airflow creates them)."""
    tmp = tmp_path_factory.mktemp("demo-dags")
    run = uuid.uuid4().hex[:8]
    shop_url = postgres_server.create_database(f"shop_{run}")
    reporting_url = postgres_server.create_database(f"reporting_{run}")
    db = seed_shop(shop_url, orders=ORDERS)
    bootstrap = shop_broker.bootstrap_servers
    home = LocalAirflow(tmp / "airflow", DAGS, env={
        "KOPYCAT_BOOTSTRAP_SERVERS": bootstrap, "KOPYCAT_SHOP_DB_URL": shop_url,
        "KOPYCAT_REPORTING_DB_URL": reporting_url, "KOPYCAT_LAKE_URL": f"file://{tmp / 'lake'}",
        "AIRFLOW_CONN_SPARK_DEFAULT": "spark://local%5B2%5D"})
    try:
        with AirflowDeployment(home, parallelism=3) as airflow:
            airflow.wait_for(lambda: _parsed(airflow), 600, "the demo's four DAGs parsed")
            yield Shop(airflow, db, shop_url, reporting_url, tmp / "lake", bootstrap)
    finally:
        db.dispose()


@pytest.fixture(scope="module")
def first_runs(shop: Shop) -> tuple[dict[str, Any], dict[str, Any]]:
    """The import's first run, started by the scheduler, and the export run the scheduler started from it."""
    shop.airflow.cli("dags", "unpause", EXPORT)
    shop.airflow.cli("dags", "unpause", IMPORT)
    imported = shop.airflow.wait_for(lambda: _finished(shop.airflow, IMPORT), RUN_TIMEOUT_S, "a finished import")
    assert imported["state"] == "success", shop.airflow.run_report(IMPORT, imported["run_id"])
    exported = shop.airflow.wait_for(lambda: _finished(shop.airflow, EXPORT), RUN_TIMEOUT_S, "a finished export")
    assert exported["state"] == "success", shop.airflow.run_report(EXPORT, exported["run_id"])
    return imported, exported


def test_the_scheduler_runs_the_import_and_the_export_from_its_topic_asset(shop: Shop, first_runs: Any) -> None:
    imported, exported = first_runs
    assert imported["run_type"] == "scheduled"
    assert Counter(t["task_id"].rsplit(".", 1)[-1] for t in _tasks(shop.airflow, imported)) == {
        "plan": 1, "copy": 3, "summary": 1}  # tasks.max=3: one mapped copy task per table
    assert exported["run_type"] == "asset_triggered"
    triggers = _triggering_events(shop.airflow, exported["id"])
    orders_asset = f"kafka://{shop.bootstrap}/shop_orders"
    assert orders_asset in {e["uri"] for e in triggers}, triggers
    assert {(e["source_dag_id"], e["source_run_id"]) for e in triggers if e["uri"] == orders_asset} == {
        (IMPORT, imported["run_id"])}
    # From the run's summary, after all three copy tasks: the export's sinks plan every table's end offset.
    assert {e["source_task_id"] for e in triggers} == {"shop-jdbc-source.summary"}, triggers

    rows = row_counts(shop.shop_url)
    assert (rows["customers"], rows["orders"]) == (200, ORDERS) and rows["products"] > 0
    topics = {table: _topic_ids(shop.bootstrap, f"shop_{table}") for table in SHOP_TABLES}
    for table in SHOP_TABLES:
        assert sorted(topics[table]) == list(range(1, rows[table] + 1)), table  # each row once
        assert sorted(lake_ids(shop.lake, f"shop_{table}")) == sorted(topics[table]), table  # each record once
    assert row_counts(shop.reporting_url) == rows
    assert pipeline_matches(shop.shop_url, shop.reporting_url, shop.lake)  # the demo's own check


def test_the_spark_lake_dag_catches_the_lake_up_and_the_export_takes_its_turn_after(
        shop: Shop, first_runs: Any) -> None:
    airflow = shop.airflow
    airflow.cli("dags", "pause", EXPORT)  # the lake DAG's docstring: not at the same time as the export
    airflow.wait_for(lambda: not _active(airflow, EXPORT), RUN_TIMEOUT_S, "no export run in flight")
    add_orders(shop.db, NEW_ORDERS)
    touch_customers(shop.db, TOUCHED)
    before = {r["run_id"] for r in airflow.dag_runs(IMPORT)}
    airflow.cli("dags", "trigger", IMPORT)
    imported = airflow.wait_for(lambda: _finished(airflow, IMPORT, before), RUN_TIMEOUT_S, "the second import")
    assert imported["state"] == "success", airflow.run_report(IMPORT, imported["run_id"])
    rows = row_counts(shop.shop_url)
    assert rows["orders"] == ORDERS + NEW_ORDERS
    customers = _topic_ids(shop.bootstrap, "shop_customers")
    assert sorted(customers) == sorted([*range(1, rows["customers"] + 1), *TOUCHED])  # only the changes moved
    assert sorted(_topic_ids(shop.bootstrap, "shop_orders")) == list(range(1, rows["orders"] + 1))

    airflow.cli("dags", "unpause", LAKE_SPARK)
    airflow.cli("dags", "trigger", LAKE_SPARK)
    lake_run = airflow.wait_for(lambda: _finished(airflow, LAKE_SPARK), RUN_TIMEOUT_S, "a finished Spark lake run")
    assert lake_run["state"] == "success", airflow.run_report(LAKE_SPARK, lake_run["run_id"])
    assert Counter(t["task_id"].rsplit(".", 1)[-1] for t in _tasks(airflow, lake_run))["export"] == 2  # tasks.max=2
    assert sorted(lake_ids(shop.lake, "shop_orders")) == list(range(1, rows["orders"] + 1))
    assert sorted(lake_ids(shop.lake, "shop_customers")) == sorted(customers)
    assert row_counts(shop.reporting_url)["orders"] == ORDERS  # the export has not run since

    before = {r["run_id"] for r in airflow.dag_runs(EXPORT)}
    airflow.cli("dags", "unpause", EXPORT)
    airflow.cli("dags", "trigger", EXPORT)
    exported = airflow.wait_for(lambda: _finished(airflow, EXPORT, before), RUN_TIMEOUT_S, "the export's turn")
    assert exported["state"] == "success", airflow.run_report(EXPORT, exported["run_id"])
    assert row_counts(shop.reporting_url) == rows
    assert pipeline_matches(shop.shop_url, shop.reporting_url, shop.lake)  # the Python sink started behind Spark


def test_the_mirror_dag_copies_every_shop_topic_record_once(shop: Shop, first_runs: Any) -> None:
    shop.airflow.cli("dags", "unpause", MIRROR)  # hourly, no catchup: the scheduler starts the latest interval
    mirrored = shop.airflow.wait_for(lambda: _finished(shop.airflow, MIRROR), RUN_TIMEOUT_S, "a finished mirror")
    assert mirrored["state"] == "success", shop.airflow.run_report(MIRROR, mirrored["run_id"])
    for table in SHOP_TABLES:
        source = _by_partition(shop.bootstrap, f"shop_{table}")
        assert _by_partition(shop.bootstrap, f"primary.shop_{table}") == source, table
        ids = [orjson.loads(value)["payload"]["id"] for values in source.values() for value in values]
        assert set(ids) == set(range(1, row_counts(shop.shop_url)[table] + 1)), table  # every row's record


def _parsed(airflow: AirflowDeployment) -> bool:
    found = airflow.query("SELECT dag_id FROM dag WHERE dag_id IN (:a, :b, :c, :d)",
                          a=IMPORT, b=EXPORT, c=LAKE_SPARK, d=MIRROR)
    return len(found) == 4


def _finished(airflow: AirflowDeployment, dag_id: str, seen: set[str] | frozenset[str] = frozenset()
              ) -> dict[str, Any] | None:
    """The DAG's first run not in ``seen`` (with its ``id``) once it has finished."""
    runs = [r for r in airflow.query("SELECT id, dag_id, run_id, run_type, state FROM dag_run WHERE dag_id = :dag_id"
                                     " ORDER BY id", dag_id=dag_id) if r["run_id"] not in seen]
    return runs[0] if runs and runs[0]["state"] in FINISHED else None


def _active(airflow: AirflowDeployment, dag_id: str) -> bool:
    return any(r["state"] not in FINISHED for r in airflow.dag_runs(dag_id))


def _tasks(airflow: AirflowDeployment, run: dict[str, Any]) -> list[dict[str, Any]]:
    return airflow.task_instances(run["dag_id"], run["run_id"])


def _triggering_events(airflow: AirflowDeployment, dag_run_id: int) -> list[dict[str, Any]]:
    """The asset events Airflow recorded as the run's triggers, with their asset's URI."""
    return airflow.query("SELECT a.uri, e.source_dag_id, e.source_run_id, e.source_task_id FROM dagrun_asset_event d"
                         " JOIN asset_event e ON e.id = d.event_id JOIN asset a ON a.id = e.asset_id"
                         " WHERE d.dag_run_id = :id", id=dag_run_id)


def _topic_ids(bootstrap: str, topic: str) -> list[int]:
    """The row ``id`` of every record of ``topic`` (JsonConverter with schemas: ``payload.id``)."""
    return [orjson.loads(record.value())["payload"]["id"] for record in consume_records(bootstrap, topic)]


def _by_partition(bootstrap: str, topic: str) -> dict[int, list[bytes]]:
    """The record values of each partition of ``topic``, in offset order."""
    found: dict[int, list[bytes]] = {}
    for record in consume_records(bootstrap, topic):
        found.setdefault(record.partition(), []).append(record.value())
    return found

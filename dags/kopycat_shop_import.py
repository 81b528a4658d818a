"""Import the shop database into Kafka every 5 minutes (JDBC source, timestamp+incrementing).

Each run plans the connector (one task per group of tables, tasks.max=3), copies what changed
since the last run from the offsets in ``connect-offsets``, and marks the topics it wrote as
assets, which schedules ``kopycat_shop_export``. A backfill of a past interval re-copies exactly
the rows whose ``updated_at`` falls in it, without moving the live offsets.

Environment: ``KOPYCAT_SHOP_DB_URL`` (default: include/demo/shop.db); the Kafka cluster is the
``kopycat_default`` connection (or ``KOPYCAT_BOOTSTRAP_SERVERS``, default 127.0.0.1:9092).
"""

from __future__ import annotations

import os
from pathlib import Path

import pendulum
from airflow.sdk import DAG
from airflow.timetables.interval import CronDataIntervalTimetable

from kopycat.properties import load_config_file
from kopycat_airflow.task_group import connector_task_group

INCLUDE = Path(__file__).resolve().parent.parent / "include"
SHOP_DB_URL = os.environ.get("KOPYCAT_SHOP_DB_URL", f"sqlite:///{INCLUDE / 'demo' / 'shop.db'}")

with DAG(
    dag_id="kopycat_shop_import",
    schedule=CronDataIntervalTimetable("*/5 * * * *", timezone="UTC"),
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,  # runs of one source connector must not overlap: they share its offsets
    tags=["kopycat", "jdbc", "import"],
    doc_md=__doc__,
):
    connector_task_group({**load_config_file(INCLUDE / "connectors" / "shop-jdbc-source.properties"),
                          "connection.url": SHOP_DB_URL})

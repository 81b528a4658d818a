"""Export the shop topics whenever the import wrote to them: a reporting database and a Parquet lake.

Scheduled on the ``kafka://<cluster>/shop_orders`` asset that ``kopycat_shop_import`` updates
(data-aware scheduling). Two connectors run side by side, each copying up to the end offsets
snapshotted when it planned, each exactly once:

- ``shop-reporting-sink`` (JDBC sink) upserts the latest version of each row and stores its
  consumed offsets in the same transactions;
- ``shop-lake-sink`` (storage sink) writes every record version as Parquet under
  ``topics/<topic>/partition=<p>/<topic>+<p>+<start>+<end>.parquet``; the names are its offsets.

Environment: ``KOPYCAT_REPORTING_DB_URL`` (default: include/demo/reporting.db) and
``KOPYCAT_LAKE_URL`` (default: file://include/demo/lake; s3://bucket/prefix for S3).
"""

from __future__ import annotations

import os
from pathlib import Path

import pendulum
from airflow.sdk import DAG

from kopycat.properties import load_config_file
from kopycat_airflow.assets import kafka_asset
from kopycat_airflow.hooks.kopycat import default_cluster
from kopycat_airflow.task_group import connector_task_group

INCLUDE = Path(__file__).resolve().parent.parent / "include"
REPORTING_DB_URL = os.environ.get("KOPYCAT_REPORTING_DB_URL", f"sqlite:///{INCLUDE / 'demo' / 'reporting.db'}")
LAKE_URL = os.environ.get("KOPYCAT_LAKE_URL", f"file://{INCLUDE / 'demo' / 'lake'}")

with DAG(
    dag_id="kopycat_shop_export",
    schedule=[kafka_asset(default_cluster(), "shop_orders")],
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    tags=["kopycat", "jdbc", "parquet", "export"],
    doc_md=__doc__,
):
    connector_task_group({**load_config_file(INCLUDE / "connectors" / "shop-jdbc-sink.properties"),
                          "connection.url": REPORTING_DB_URL})
    connector_task_group({**load_config_file(INCLUDE / "connectors" / "shop-lake-sink.properties"),
                          "store.url": LAKE_URL})

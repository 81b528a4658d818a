"""Load the shop topics into a reporting database whenever the import wrote to them.

Scheduled on the ``kafka://<cluster>/shop_orders`` asset that ``kopycat_shop_import`` updates
(data-aware scheduling). The JDBC sink upserts the latest version of each row and stores its
consumed offsets in the same transactions (exactly once); each run copies up to the end offsets
snapshotted when it planned.

Environment: ``KOPYCAT_REPORTING_DB_URL`` (default: include/demo/reporting.db).
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

with DAG(
    dag_id="kopycat_shop_export",
    schedule=[kafka_asset(default_cluster(), "shop_orders")],
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    tags=["kopycat", "jdbc", "export"],
    doc_md=__doc__,
):
    connector_task_group({**load_config_file(INCLUDE / "connectors" / "shop-jdbc-sink.properties"),
                          "connection.url": REPORTING_DB_URL})

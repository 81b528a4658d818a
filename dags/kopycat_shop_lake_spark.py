"""Catch the shop's Parquet lake up in bulk with Spark: the same connector, a bigger engine.

``kopycat_shop_export`` copies the shop topics into the lake with the Python storage sink after
every import. When a backlog is too big for it (a new lake, a long outage, a replay), trigger this
DAG: ``spark_export_task_group`` plans the same ``shop-lake-sink`` connector (``plan``: its
topic-partitions split over ``tasks.max=2`` range groups, end offsets snapshotted now), then maps
one ``export`` task per range group. Each submits one Spark job that reads its partitions from the
consumer group ``connect-shop-lake-sink`` up to the planned ends with Spark's Kafka source, writes
Parquet under the same committed names and commits the group for those partitions after the
files; a retry resumes behind its own files. ``summary`` totals the run. Both paths start behind
what the lake already holds, so they take turns without writing a record twice; do not run them
at the same time (pause ``kopycat_shop_export`` while this one runs).

Connections: ``kopycat_default`` (Kafka) and ``spark_default`` (the Spark master, e.g.
``AIRFLOW_CONN_SPARK_DEFAULT='spark://local%5B2%5D'`` for local mode; a ``spark://host:7077`` or
``yarn`` master for a cluster). Environment: ``KOPYCAT_LAKE_URL`` as in ``kopycat_shop_export``.
"""

from __future__ import annotations

import os
from pathlib import Path

import pendulum
from airflow.sdk import DAG

from kopycat.properties import load_config_file
from kopycat_airflow.task_group import spark_export_task_group

INCLUDE = Path(__file__).resolve().parent.parent / "include"
LAKE_URL = os.environ.get("KOPYCAT_LAKE_URL", f"file://{INCLUDE / 'demo' / 'lake'}")

with DAG(
    dag_id="kopycat_shop_lake_spark",
    schedule=None,
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    tags=["kopycat", "parquet", "spark", "export"],
    doc_md=__doc__,
):
    spark_export_task_group(
        {**load_config_file(INCLUDE / "connectors" / "shop-lake-sink.properties"), "store.url": LAKE_URL},
        spark_conf={"spark.sql.shuffle.partitions": "4"},
    )

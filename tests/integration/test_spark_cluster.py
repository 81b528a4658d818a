"""The Spark export on a real Spark standalone cluster, submitted by the Airflow operator.

``SparkExportOperator`` reads the master from a Spark provider connection naming
``spark://127.0.0.1:PORT`` (a master and two workers of the ``spark_cluster`` fixture), so the job's
executors run in the workers' JVMs, not in the driver as with ``local[2]``. What it commits must
equal what the Python storage sink writes from the same topic: the same file names, row for row.
"""

from __future__ import annotations

import datetime as dt
import json
import uuid
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pyarrow.parquet as pq
import pytest

from kopycat.dev.spark_cluster import LocalSparkCluster
from kopycat.runtime.bounded_plan import plan_bounded_run
from kopycat.runtime.bounded_run import run_planned_task
from kopycat_airflow.operators.spark_export import SparkExportOperator
from tests.support.orders import assert_every_id_once, local_store, produce_orders, read_committed

pytestmark = pytest.mark.timeout(1800)

DAY = dt.datetime(2026, 11, 20, tzinfo=dt.UTC)


def sink_config(name: str, topic: str, store: Path) -> dict[str, str]:
    return {"name": name, "connector.class": "io.confluent.connect.hdfs.HdfsSinkConnector", "topics": topic,
            "tasks.max": "1", "store.url": f"file://{store}", "format.class": "parquet", "flush.size": "100000"}


def test_the_operator_exports_on_a_standalone_cluster_what_the_python_sink_writes_row_for_row(
        bootstrap_servers: str, topic_name: str, spark_cluster: LocalSparkCluster, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    count, suffix = 3_000, uuid.uuid4().hex[:8]
    produce_orders(bootstrap_servers, topic_name, count)
    worker = {"bootstrap.servers": bootstrap_servers,
              "key.converter": "org.apache.kafka.connect.storage.StringConverter"}
    python_sink = sink_config(f"python-{suffix}", topic_name, tmp_path / "python")
    for planned in plan_bounded_run(python_sink, worker):
        assert run_planned_task(python_sink, planned, worker).error is None
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_CLUSTER", json.dumps(
        {"conn_type": "spark", "host": "spark://127.0.0.1", "port": spark_cluster.port}))
    host, port = bootstrap_servers.rsplit(":", 1)
    monkeypatch.setenv("AIRFLOW_CONN_KOPYCAT_CLUSTER", json.dumps(
        {"conn_type": "kopycat", "host": host, "port": int(port), "extra": worker}))
    operator = SparkExportOperator(task_id="export", connector_config=sink_config(
        f"spark-{suffix}", topic_name, tmp_path / "spark"), kopycat_conn_id="kopycat_cluster",
        spark_conn_id="spark_cluster", spark_conf=spark_cluster.submit_conf(), window="never")
    assert operator._master() == spark_cluster.master_url
    context: dict[str, Any] = {"run_id": "manual__1", "ti": SimpleNamespace(try_number=1),
                               "dag_run": SimpleNamespace(run_type="manual", conf={}),
                               "data_interval_start": DAY, "data_interval_end": DAY + dt.timedelta(days=1)}

    operator.execute(context)  # type: ignore[arg-type]

    exported = read_committed(*local_store(tmp_path / "spark" / "topics" / topic_name), topic=topic_name)
    written = read_committed(*local_store(tmp_path / "python" / "topics" / topic_name), topic=topic_name)
    assert_every_id_once(exported, count)
    assert sorted(exported) == sorted(written)
    for name in exported:
        partition = f"partition={name.split('+')[1]}"
        spark_rows = pq.read_table(tmp_path / "spark" / "topics" / topic_name / partition / name).to_pylist()
        python_rows = pq.read_table(tmp_path / "python" / "topics" / topic_name / partition / name).to_pylist()
        assert spark_rows == python_rows, name

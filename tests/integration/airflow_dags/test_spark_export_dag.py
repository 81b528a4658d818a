"""The Spark bulk export under Airflow: plan -> one mapped Spark export per range group -> summary.

Real broker, real Airflow (dag.test in a child process), real spark-submit in local mode through
apache-airflow-providers-apache-spark's SparkSubmitHook and the ``spark_default`` connection.
``spark_export_task_group`` takes the same connector config as the Python storage sink; its plan
splits the 3 partitions over ``tasks.max=2`` range groups, and each mapped task exports its own.
Assertions are on each task's summary, on the Parquet files (every id once, each file holding the
offsets its name says) and on the group ``connect-<name>``. What an interrupted run left (files of
a Python sink run that committed one partition and half of another, and another run's temp files)
is neither written again nor deleted.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from kopycat.connectors.files.committed_files import TEMP_DIR, committed_name
from kopycat.connectors.files.spark_export import OffsetRange
from kopycat_airflow.local import LocalAirflow
from tests.support.kafka import committed_offsets
from tests.support.orders import (
    PARTITIONS,
    assert_every_id_once,
    local_store,
    produce_orders,
    read_committed,
    write_committed_like_the_python_sink,
)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(2400)]


def _dag_file(folder: Path, dag_id: str, config: dict[str, Any]) -> None:
    (folder / f"{dag_id}.py").write_text(f'''
import pendulum
from airflow.sdk import DAG
from kopycat_airflow.task_group import spark_export_task_group

with DAG({dag_id!r}, schedule=None, start_date=pendulum.datetime(2026, 1, 1, tz="UTC"), catchup=False):
    spark_export_task_group({json.dumps(config)}, export_retries=0)
''')


def test_each_planned_range_group_is_one_spark_export_skipping_what_the_store_holds(
        local_airflow: LocalAirflow, bootstrap_servers: str, topic_name: str, tmp_path: Path) -> None:
    count, name = 6_000, f"lake-{uuid.uuid4().hex[:8]}"
    ranges = produce_orders(bootstrap_servers, topic_name, count)
    lake = tmp_path / "lake"
    topic_dir = lake / "topics" / topic_name
    # An interrupted run committed partition 1 and half of partition 0 (not the group), and left temp files.
    write_committed_like_the_python_sink(bootstrap_servers, ranges[1], topic_dir)
    half = OffsetRange(topic_name, 0, 0, ranges[0].end // 2)
    write_committed_like_the_python_sink(bootstrap_servers, half, topic_dir)
    leftover = topic_dir / TEMP_DIR / "dead-run" / committed_name(topic_name, 2, 0, ranges[2].end - 1, "parquet")
    leftover.parent.mkdir(parents=True)
    leftover.write_bytes(b"PAR1 half written")
    config = {"name": name, "connector.class": "io.confluent.connect.s3.S3SinkConnector", "topics": topic_name,
              "store.url": f"file://{lake}", "format.class": "parquet", "flush.size": "1000", "tasks.max": "2"}
    _dag_file(local_airflow.dags_folder, "t_spark_export", config)
    local_airflow.extra_env["AIRFLOW_CONN_SPARK_DEFAULT"] = "spark://local%5B2%5D"

    run = local_airflow.run_dag("t_spark_export", "2026-11-21T01:00:00Z")

    assert run["state"] == "success", run.get("log")
    exports = sorted(run.tasks("export"), key=lambda t: t["map_index"])
    assert [(t["map_index"], t["label"], t["state"]) for t in exports] == [
        (0, f"{topic_name}[0,2]", "success"), (1, f"{topic_name}[1]", "success")]
    groups, nothing_left = (t["result"] for t in exports)
    # Task 0 (partitions 0 and 2) reads the rest of partition 0 and all of partition 2.
    assert groups["task"] == 0
    assert groups["offsets"] == {f"{topic_name}-0": ranges[0].end, f"{topic_name}-2": ranges[2].end}
    rest_of_0 = OffsetRange(topic_name, 0, half.end, ranges[0].end)
    assert [OffsetRange(*r) for r in groups["read"]] == [rest_of_0, ranges[2]]
    assert groups["records"] == count - ranges[1].end - half.end
    assert [path.rsplit("/", 1)[-1] for path in groups["files"]] == [
        committed_name(topic_name, 0, half.end, ranges[0].end - 1, "parquet"),
        committed_name(topic_name, 2, 0, ranges[2].end - 1, "parquet")]
    # Task 1 (partition 1): the interrupted run's files hold all of it, so its job only commits the group.
    assert nothing_left == {"task": 1, "records": 0, "read": [], "files": [], "topics": [topic_name],
                            "offsets": {f"{topic_name}-1": ranges[1].end}}
    [total] = run.results("summary")
    assert (total["tasks"], total["records"], total["topics"]) == (2, groups["records"], [topic_name])
    files = read_committed(*local_store(topic_dir), topic=topic_name)
    assert_every_id_once(files, count)
    assert len(files) == PARTITIONS + 1
    assert leftover.exists(), "another run's temp files are not the job's to delete"
    assert committed_offsets(bootstrap_servers, f"connect-{name}", topic_name, PARTITIONS) == {
        r.partition: r.end for r in ranges}

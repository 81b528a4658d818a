"""The Spark bulk export under Airflow: plan -> one mapped Spark export per range group -> summary.

Real broker, real Airflow (dag.test in a child process), real spark-submit in local mode through
apache-airflow-providers-apache-spark's SparkSubmitHook and the ``spark_default`` connection.
``spark_export_task_group`` takes the same connector config as the Python storage sink; its plan
splits the 3 partitions over ``tasks.max=2`` range groups, and each mapped task exports its own.
Assertions are on each task's summary, on the Parquet files (every id once, each file holding the
offsets its name says) and on the group ``connect-<name>``. What an interrupted run left (files of
a Python sink run that committed one partition and half of another, and another run's temp files)
is neither written again nor deleted. A daily DAG over Berlin days (DailyPartitioner on the Kafka
timestamp) backfills one day through ``{"kopycat_window": true}``: only that day's directory is
rewritten, the other days keep their bytes, and the group does not move.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from kopycat.api.window import TimeWindow
from kopycat.connectors.files.committed_files import TEMP_DIR, committed_name
from kopycat.connectors.files.spark_export import OffsetRange
from kopycat_airflow.local import LocalAirflow
from tests.integration.test_spark_export_time_based import (
    DAY,
    MIDNIGHT,
    PLACE,
    committed,
    expected_placements,
    placements,
    produce_stamped,
    sink_config,
    snapshot,
    stamps_around_midnights,
)
from tests.integration.test_spark_export_time_based import PARTITIONS as PARTITIONS_BY_DAY
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


def _daily_dag_file(folder: Path, dag_id: str, config: dict[str, Any]) -> None:
    """A daily DAG whose data intervals are Berlin days, the buckets of the DailyPartitioner in ``config``."""
    (folder / f"{dag_id}.py").write_text(f'''
import pendulum
from airflow.sdk import DAG
from airflow.timetables.interval import CronDataIntervalTimetable
from kopycat_airflow.task_group import spark_export_task_group

with DAG({dag_id!r}, schedule=CronDataIntervalTimetable("0 0 * * *", timezone="Europe/Berlin"),
         start_date=pendulum.datetime(2026, 1, 1, tz="Europe/Berlin"), catchup=False):
    spark_export_task_group({json.dumps(config)}, export_retries=0)
''')


def test_a_backfill_run_of_the_spark_export_rewrites_exactly_its_day_and_moves_no_offsets(
        local_airflow: LocalAirflow, bootstrap_servers: str, topic_name: str, tmp_path: Path) -> None:
    """The Airflow path of a Spark backfill: a run with ``{"kopycat_window": true}`` whose data interval
    is the Berlin day of 2026-11-21 re-exports exactly that day's directory (one file was damaged),
    as a backfill run would, and leaves the other days and the group alone."""
    stamps = stamps_around_midnights(seed=5, per_partition=60)
    ends = produce_stamped(bootstrap_servers, topic_name, stamps)
    lake = tmp_path / "lake"
    topic_dir = lake / "topics" / topic_name
    name = f"daily-{uuid.uuid4().hex[:8]}"
    _daily_dag_file(local_airflow.dags_folder, "t_spark_daily", sink_config(name, topic_name, lake))
    local_airflow.extra_env["AIRFLOW_CONN_SPARK_DEFAULT"] = "spark://local%5B2%5D"

    live = local_airflow.run_dag("t_spark_daily", "2026-11-22T23:00:00Z")  # the live run: everything, group committed
    assert live["state"] == "success", live.get("log")
    assert placements(committed(topic_dir)) == expected_placements(stamps)
    day = PLACE.encode_timestamp(MIDNIGHT)
    damaged = sorted(topic_dir.glob(f"{day}/*.parquet"))[0]
    damaged.write_bytes(b"PAR1 damaged")  # same name, so the live position stays where it is
    others = {path: data for path, data in snapshot(topic_dir).items() if not path.startswith(day + "/")}

    # a manual run's data interval ends at its logical date: Berlin's 2026-11-22 00:00 gives the 21st
    window = local_airflow.run_dag("t_spark_daily", "2026-11-21T23:00:00Z", conf={"kopycat_window": True})

    assert window["state"] == "success", window.get("log")
    files = committed(topic_dir)
    in_day = [p for p in placements(files) if p[2] == day]
    assert in_day == expected_placements(stamps, keep=TimeWindow(MIDNIGHT, MIDNIGHT + DAY)), [
        t["result"] for t in window.tasks("export")]
    assert {path: data for path, data in snapshot(topic_dir).items() if not path.startswith(day + "/")} == others
    assert placements(files) == expected_placements(stamps)  # every offset once again
    assert committed_offsets(bootstrap_servers, f"connect-{name}", topic_name, PARTITIONS_BY_DAY) == {
        tp.partition: end for tp, end in ends.items()}

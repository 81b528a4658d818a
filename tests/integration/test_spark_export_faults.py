"""SIGKILL of the spark-submit driver in the middle of a Spark export, then the retry.

The export (include/spark/kafka_to_files.py) is started as a subprocess as run_spark_export starts it,
in a session of its own, and its whole process group (spark-submit's JVM and the Python driver) is
killed once Spark's tasks are writing part files under ``<topic>/+tmp/<run id>``: a crash before any
file is committed. The retry (another run id, as an Airflow retry gets) must leave every offset of the
topic exactly once in the committed files, no gap, no duplicate, no file of the killed run's temp dir
among them, and the group at the ranges' ends.
"""

from __future__ import annotations

import os
import subprocess
import uuid
from pathlib import Path

import pytest

from kopycat.api.records import TopicPartition
from kopycat.connectors.files.committed_files import TEMP_DIR, committed_name
from kopycat.connectors.files.spark_export import SparkExportJob, run_spark_export, spark_export_job
from kopycat.dev.processes import stop_process_group
from tests.support.kafka import committed_offsets
from tests.support.kills import kill_when
from tests.support.orders import PARTITIONS, assert_every_id_once, local_store, produce_orders, read_committed

pytestmark = pytest.mark.timeout(3600)  # two spark-submits on a loaded 2-core machine

COUNT = 150_000
SPARK_TIMEOUT_S = 1500


def test_a_spark_export_killed_while_writing_is_retried_without_duplicate_gap_or_temp_file(
        bootstrap_servers: str, topic_name: str, tmp_path: Path) -> None:
    name, killed_run = f"export-{uuid.uuid4().hex[:8]}", f"killed-{uuid.uuid4().hex[:8]}"
    ranges = produce_orders(bootstrap_servers, topic_name, COUNT)
    lake, log = tmp_path / "lake", tmp_path / "killed-run.log"
    topic_dir = lake / "topics" / topic_name

    def job(run_id: str) -> SparkExportJob:
        return spark_export_job(ranges, store_url=f"file://{lake}", connector_name=name,
                                bootstrap_servers=bootstrap_servers, run_id=run_id)

    killed = job(killed_run)
    with killed.staged() as staged, log.open("wb") as out:
        driver = subprocess.Popen(staged.command(), env={**os.environ, **killed.env}, stdout=out,
                                  stderr=subprocess.STDOUT, start_new_session=True)
        try:
            kill_when(driver, lambda: list((topic_dir / TEMP_DIR / killed_run).rglob("part-*")), log,
                      waiting_for="a part file written", timeout_s=SPARK_TIMEOUT_S, group=True)
        finally:
            stop_process_group(driver, 30)
    parts = list((topic_dir / TEMP_DIR / killed_run).rglob("part-*"))
    committed_at_kill = read_committed(*local_store(topic_dir), topic=topic_name)
    assert committed_at_kill == {}, f"the kill landed after files were committed: {sorted(committed_at_kill)}"

    result = run_spark_export(job(f"retry-{uuid.uuid4().hex[:8]}"), timeout=SPARK_TIMEOUT_S)

    files = read_committed(*local_store(topic_dir), topic=topic_name)
    assert_every_id_once(files, COUNT)  # no gap, no duplicate, every row as the topic holds it
    assert sorted(files) == sorted(committed_name(topic_name, r.partition, 0, r.end - 1, "parquet") for r in ranges)
    outside_temp = sorted(p.name for p in topic_dir.rglob("*.parquet")
                          if TEMP_DIR not in p.relative_to(topic_dir).parts and not p.name.startswith("."))
    assert outside_temp == sorted(files), "a file of the killed run was committed"
    assert committed_offsets(bootstrap_servers, f"connect-{name}", topic_name, PARTITIONS) == {
        r.partition: r.end for r in ranges}
    assert result.committed_offsets == {TopicPartition(r.topic, r.partition): r.end for r in ranges}
    left = sorted(str(p.relative_to(topic_dir)) for p in (topic_dir / TEMP_DIR).rglob("*") if p.is_file())
    assert all(path.startswith(f"{TEMP_DIR}/{killed_run}/") for path in left), left  # the retry's temp is gone
    print(f"Spark export, driver SIGKILLed: {len(parts)} part file(s) being written, 0 of {PARTITIONS} files "
          f"committed at the kill; the retry committed {len(files)} files holding {COUNT} rows once each, "
          f"{len(left)} file(s) of the killed run left in {TEMP_DIR}, none committed")

"""SIGKILL of the Spark export inside its rename commit, then the retry.

The job (include/spark/kafka_to_files.py) writes part files into ``<topic>/+tmp/<run id>`` and then
commits them one rename at a time (``kopycat.connectors.files.spark_commit.commit_pieces``): each
Kafka partition's files as one round under a manifest, as the Python storage sink commits. An
HourlyPartitioner over records stamped across many hours gives each partition a round of many
files, so the commit lasts long enough to be caught from outside: the test polls the store until
the first committed name appears and kills the job's process group at once, while other part files
are still temporary. There is no test hook in the job; the kill is a real one.

The retry (another run id, as an Airflow retry gets) must roll back the half-committed round and
leave every offset exactly once in the directory its timestamp names, no manifest and none of its
own temp files.
"""

from __future__ import annotations

import os
import subprocess
import uuid
from pathlib import Path

import pytest

from kopycat.connectors.files.committed_files import TEMP_DIR, committed_name, parse_committed_name
from kopycat.connectors.files.partitioners import partitioner_from_config
from kopycat.connectors.files.spark_export import SparkExportJob, run_spark_export
from kopycat.connectors.files.spark_plan import plan_spark_export
from kopycat.dev.processes import stop_process_group
from tests.integration.test_spark_export_time_based import (
    PARTITIONS,
    committed,
    placements,
    produce_stamped,
    sink_config,
)
from tests.support.kafka import committed_offsets
from tests.support.kills import kill_when

pytestmark = [pytest.mark.integration, pytest.mark.timeout(3600)]  # two spark-submits on 2 loaded cores

SPARK_TIMEOUT_S = 1500
HOURS = 120  # files per Kafka partition: one round of 120 renames, long enough to catch from outside
PER_HOUR = 25
HOUR_MS = 3_600_000
START_MS = 1_795_219_200_000  # 2026-11-21T00:00:00Z
HOURLY_UTC = {"partitioner.class": "io.confluent.connect.storage.partitioner.HourlyPartitioner",
              "locale": "en-US", "timezone": "UTC", "timestamp.extractor": "Record"}
PLACE = partitioner_from_config(HOURLY_UTC)


def hourly_stamps() -> dict[int, list[int]]:
    """Offset k of each partition stamped in hour k // PER_HOUR: each file holds a contiguous stretch."""
    return {p: [START_MS + (k // PER_HOUR) * HOUR_MS + p for k in range(HOURS * PER_HOUR)] for p in range(PARTITIONS)}


def committed_files(topic_dir: Path) -> list[Path]:
    return [p for p in topic_dir.rglob("*.parquet") if TEMP_DIR not in p.relative_to(topic_dir).parts]


def kill_at_first_rename(job: SparkExportJob, topic_dir: Path, log: Path) -> None:
    """Run ``job`` in a session of its own; SIGKILL its process group when the first committed file appears.

    The committed names live below ``year=...`` beside ``+tmp``: listing the topic directory is
    cheap while Spark writes, and once that directory exists the first rename is close.
    """
    with job.staged() as staged, log.open("wb") as out:
        driver = subprocess.Popen(staged.command(), env={**os.environ, **job.env}, stdout=out,
                                  stderr=subprocess.STDOUT, start_new_session=True)
        try:
            kill_when(driver, lambda: (topic_dir.exists() and any(n != TEMP_DIR for n in os.listdir(topic_dir))
                                       and committed_files(topic_dir)),
                      log, waiting_for="a committed file", timeout_s=SPARK_TIMEOUT_S, poll_s=0.002, group=True)
        finally:
            stop_process_group(driver, 30)


def test_a_spark_export_killed_between_two_renames_is_retried_with_each_offset_once_and_no_temp_file(
        bootstrap_servers: str, topic_name: str, tmp_path: Path) -> None:
    stamps = hourly_stamps()
    ends = produce_stamped(bootstrap_servers, topic_name, stamps)
    lake, name = tmp_path / "lake", f"commit-{uuid.uuid4().hex[:8]}"
    topic_dir = lake / "topics" / topic_name
    config = sink_config(name, topic_name, lake, **HOURLY_UTC)
    killed_run, retry_run = f"killed-{uuid.uuid4().hex[:8]}", f"retry-{uuid.uuid4().hex[:8]}"

    def job(run_id: str) -> SparkExportJob:
        return plan_spark_export(config, {"bootstrap.servers": bootstrap_servers}, ends, master="local[2]",
                                 run_id=run_id)

    kill_at_first_rename(job(killed_run), topic_dir, tmp_path / "killed-run.log")
    total = PARTITIONS * HOURS
    at_kill = len(committed_files(topic_dir))
    temporary = len(list((topic_dir / TEMP_DIR / killed_run).rglob("part-*.parquet")))
    manifests = sorted(p.name for p in (topic_dir / TEMP_DIR).glob("*.round.json"))
    assert 0 < at_kill < total and temporary > 0, f"the kill missed the commit: {at_kill} committed, {temporary} temp"
    assert at_kill + temporary == total, "every part file is either committed or still temporary"
    assert manifests, "a kill inside a round leaves its manifest"
    group_at_kill = committed_offsets(bootstrap_servers, f"connect-{name}", topic_name, PARTITIONS)
    assert all(offset < 0 for offset in group_at_kill.values()), f"the group moved before the commit: {group_at_kill}"

    result = run_spark_export(job(retry_run), timeout=SPARK_TIMEOUT_S)

    files = committed(topic_dir)  # each file's rows are exactly the offsets its name says, in order
    found = placements(files)
    expected = sorted((p, k, PLACE.encode_timestamp(stamp)) for p, times in stamps.items()
                      for k, stamp in enumerate(times))
    assert len(found) - len(set(found)) == 0, "an offset committed twice"
    assert found == expected, "every offset once, in its hour's directory"
    assert sorted(Path(path).name for path in files) == sorted(
        committed_name(topic_name, p, h * PER_HOUR, (h + 1) * PER_HOUR - 1, "parquet")
        for p in range(PARTITIONS) for h in range(HOURS))
    assert all(parse_committed_name(p.name) is not None for p in committed_files(topic_dir))
    assert list((topic_dir / TEMP_DIR).glob("*.round.json")) == [], "a manifest left behind"
    assert not (topic_dir / TEMP_DIR / retry_run).exists(), "the retry left its temp files"
    assert committed_offsets(bootstrap_servers, f"connect-{name}", topic_name, PARTITIONS) == {
        tp.partition: end for tp, end in ends.items()}
    rewritten = sum(r.end - r.start for r in result.read)
    left = len(list((topic_dir / TEMP_DIR / killed_run).rglob("*.parquet")))
    print(f"Spark export killed inside its rename commit: {at_kill} of {total} files committed and {temporary} "
          f"still temporary at the kill, manifest(s) {manifests}; the retry rolled back and re-read {rewritten} "
          f"records, committed {len(result.files)} files: {len(found)} offsets once each; {left} killed-run "
          f"file(s) left in {TEMP_DIR}, none committed; group at {dict(sorted(ends.items()))}")

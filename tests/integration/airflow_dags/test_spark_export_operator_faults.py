"""SIGKILL of the spark-submit that SparkExportOperator started, under Airflow, and the operator's retry.

The Spark export DAG (``spark_export_task_group``, ``export_retries=1``) runs under ``dag.test()``
(the session's served Airflow); the operator submits through the Spark provider's SparkSubmitHook.
While the first try's Spark tasks write part files into ``<topic>/+tmp/<run id>-task0-1``, the test
finds that try's spark-submit JVM by its command line (``org.apache.spark.deploy.SparkSubmit``
and the try's ``--run-id``) and SIGKILLs it alone, as a crashed or OOM-killed submitter dies. The
hook sees the exit, the task fails, and Airflow runs the retry, a new spark-submit with its own run
id: every offset once in the committed Parquet, no gap, no file of the killed try committed, the
group at the planned ends. The killed try's Python driver must not outlive it.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from kopycat.connectors.files.committed_files import TEMP_DIR, committed_name
from kopycat_airflow.local import LocalAirflow
from tests.support.kafka import committed_offsets
from tests.support.orders import PARTITIONS, assert_every_id_once, local_store, produce_orders, read_committed

pytestmark = [pytest.mark.integration, pytest.mark.timeout(3600)]  # two spark-submits on 2 loaded cores

COUNT = 150_000
SPARK_SUBMIT = "org.apache.spark.deploy.SparkSubmit"
FIRST_TRY = "-task0-1"  # the operator's run id: <dag run id>-task<map index>-<try number>


def _dag_file(folder: Path, dag_id: str, config: dict[str, Any]) -> None:
    (folder / f"{dag_id}.py").write_text(f'''
import datetime as dt
import pendulum
from airflow.sdk import DAG
from kopycat_airflow.task_group import spark_export_task_group

with DAG({dag_id!r}, schedule=None, start_date=pendulum.datetime(2026, 1, 1, tz="UTC"), catchup=False):
    spark_export_task_group({json.dumps(config)}, export_retries=1, retry_delay=dt.timedelta(seconds=1))
''')


def processes_with(*needles: str) -> dict[int, list[str]]:
    """Live processes whose command line holds every needle: pid -> argv."""
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            argv = Path(f"/proc/{entry}/cmdline").read_bytes().decode(errors="replace").split("\0")
        except OSError:
            continue  # gone meanwhile
        if all(any(needle in arg for arg in argv) for needle in needles):
            found[int(entry)] = argv
    return found


def parent_of(pid: int) -> int:
    """The parent pid from /proc/PID/stat (0 once the process is gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0
    return int(stat.rsplit(")", 1)[1].split()[1])


def outermost(found: dict[int, list[str]]) -> dict[int, list[str]]:
    """Drop processes whose parent is also in ``found``.

    A JVM that starts a subprocess (spark-submit starts the Python driver) forks first: for a
    moment the child carries the JVM's own command line, so a scan can see the same argv twice.
    """
    return {pid: argv for pid, argv in found.items() if parent_of(pid) not in found}


@dataclass
class Killer:
    """Waits for the first try's part files, then SIGKILLs that try's spark-submit JVM (a thread)."""

    topic_dir: Path
    store: str
    timeout_s: float = 1500
    killed: list[str] = field(default_factory=list)
    parts_at_kill: int = 0
    committed_at_kill: int = -1
    pid: int = 0
    run_id: str = ""
    error: str = ""
    done: threading.Event = field(default_factory=threading.Event)

    def run(self) -> None:
        try:
            self._kill()
        except Exception as exc:  # noqa: BLE001 - reported by the test's own assertion
            self.error = repr(exc)
        finally:
            self.done.set()

    def _kill(self) -> None:
        deadline = time.monotonic() + self.timeout_s
        while True:
            temp_root = self.topic_dir / TEMP_DIR
            tries = list(temp_root.glob(f"*{FIRST_TRY}")) if temp_root.exists() else []
            parts = [p for t in tries for p in t.rglob("part-*")]
            if parts:
                break
            if time.monotonic() > deadline:
                self.error = "the first try wrote no part file"
                return
            time.sleep(0.05)
        self.run_id = tries[0].name
        found = outermost(processes_with(SPARK_SUBMIT, self.store, self.run_id))
        if len(found) != 1:
            self.error = f"expected one spark-submit of {self.run_id}, found {found}"
            return
        [(pid, argv)] = found.items()
        self.parts_at_kill = len(parts)
        os.kill(pid, signal.SIGKILL)
        self.pid, self.killed = pid, argv
        self.committed_at_kill = len(committed_parquet(self.topic_dir))


def committed_parquet(topic_dir: Path) -> list[str]:
    return sorted(p.name for p in topic_dir.rglob("*.parquet")
                  if TEMP_DIR not in p.relative_to(topic_dir).parts and not p.name.startswith("."))


def still_running(store: str, timeout_s: float = 120) -> dict[int, list[str]]:
    """This test's Spark processes (their command line names its store) still alive after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while (found := processes_with(store)) and time.monotonic() < deadline:
        time.sleep(0.5)
    return found


def test_a_spark_submit_killed_under_the_operator_is_retried_by_airflow_with_every_offset_once(
        local_airflow: LocalAirflow, bootstrap_servers: str, topic_name: str, tmp_path: Path) -> None:
    name = f"killed-{uuid.uuid4().hex[:8]}"
    ranges = produce_orders(bootstrap_servers, topic_name, COUNT)
    lake = tmp_path / "lake"
    topic_dir = lake / "topics" / topic_name
    config = {"name": name, "connector.class": "io.confluent.connect.s3.S3SinkConnector", "topics": topic_name,
              "store.url": f"file://{lake}", "format.class": "parquet", "flush.size": "1000", "tasks.max": "1"}
    _dag_file(local_airflow.dags_folder, "t_spark_killed", config)
    local_airflow.extra_env["AIRFLOW_CONN_SPARK_DEFAULT"] = "spark://local%5B2%5D"
    killer = Killer(topic_dir, f"file://{lake}")
    threading.Thread(target=killer.run, daemon=True).start()
    try:
        run = local_airflow.run_dag("t_spark_killed", "2026-11-21T01:00:00Z", timeout_s=2400)
        orphans = still_running(killer.store)
    finally:
        killer.done.wait(5)
        for pid in processes_with(killer.store):  # never leave this test's processes behind
            os.kill(pid, signal.SIGKILL)

    assert killer.error == "" and killer.killed, killer.error
    assert SPARK_SUBMIT in killer.killed and killer.run_id in killer.killed, killer.killed
    assert killer.committed_at_kill == 0, f"the kill landed after {killer.committed_at_kill} file(s) were committed"
    assert run["state"] == "success", run.get("log")
    [export] = run.tasks("export")
    assert (export["state"], export["try_number"]) == ("success", 2), export
    assert export["result"]["records"] == COUNT, "the retry read every record: the killed try committed nothing"
    files = read_committed(*local_store(topic_dir), topic=topic_name)
    assert_every_id_once(files, COUNT)  # no gap, no duplicate, every row as the topic holds it
    assert sorted(files) == sorted(committed_name(topic_name, r.partition, 0, r.end - 1, "parquet") for r in ranges)
    assert committed_parquet(topic_dir) == sorted(files), "a file of the killed try was committed"
    assert committed_offsets(bootstrap_servers, f"connect-{name}", topic_name, PARTITIONS) == {
        r.partition: r.end for r in ranges}
    temp_dirs = sorted(p.name for p in (topic_dir / TEMP_DIR).iterdir())
    assert temp_dirs == [killer.run_id], f"only the killed try's temp dir may stay: {temp_dirs}"
    left = [p for p in (topic_dir / TEMP_DIR / killer.run_id).rglob("*") if p.is_file()]
    assert orphans == {}, f"the killed try's driver outlived its spark-submit: {orphans}"
    print(f"SparkExportOperator, spark-submit of {killer.run_id} SIGKILLed (pid {killer.pid}) with "
          f"{killer.parts_at_kill} part file(s) being written and 0 committed; Airflow's try 2 committed "
          f"{len(files)} files holding {COUNT} rows once each; {len(left)} file(s) of the killed try left in "
          f"{TEMP_DIR}, none committed")

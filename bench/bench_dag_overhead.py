"""The same JDBC import run by ``kopycat standalone`` and by an Airflow DAG: the cost of orchestration.

Issue #9: "the same 1,000,000-row JDBC import run by the standalone CLI and by the DAG
(dag.test); print both and the ratio. Goal: DAG within 1.3x of standalone." (``--rows N`` to
change the volume.)

The source is the demo's embedded database, SQLite: one table of N rows of ~100 bytes (``id``
INTEGER primary key, two INTEGERs, two TEXTs, a NUMERIC(12, 2) and an ``updated_at`` DATETIME),
seeded untimed. Every run is of a new connector (Confluent's ``JdbcSourceConnector`` keys,
``mode=incrementing`` on ``id``, ``tasks.max=1``, JsonConverter with schemas) into a new
one-partition topic (``topic.prefix`` differs, so no two runs mix; deleted once checked), through
one broker. The three paths run ``--rounds`` times each (3 by default), taking turns, and each
one's median run counts (``bench.common.median_rounds``); every round is printed.

- *standalone*: ``.venv/bin/kopycat standalone worker.properties connector.properties`` (Kafka's
  ``ConnectStandalone``, offsets in ``offset.storage.file.filename``), timed from the process's
  launch until the topic's end offset is N (watermarks polled every 0.2 s); then SIGTERM.
- *DAG*: a DAG file with ``connector_task_group`` (plan -> one mapped copy task -> summary) in a
  throwaway Airflow (``LocalAirflow``, its metadata DB migrated untimed), timed around
  ``run_dag``: a fresh ``python -m kopycat_airflow.dag_test`` process, which is what ``airflow
  dags test`` pays (process start, Airflow import, DAG parse, plan, copy, summary). Offsets go to
  ``connect-offsets`` on the broker (the ``kopycat_default`` connection's fallback), created
  untimed first as a deployed cluster has it. The copy task's ``RunSummary.duration_s`` splits
  the DAG's time into the copy and the fixed cost around it, and the run's log splits it by
  phase; the copy ends when its query read the table to the end (``RunComplete``).
- *long-lived DAG*: the same DAG runs in one ``dag_test --serve`` process, as in a deployed
  Airflow, whose workers import Airflow once and fork each task from it: its first round first
  pays Airflow's start with an untimed run that copies nothing.

An untimed DAG run before the rounds gives the record size. Every topic is checked: N records,
the first with id 1, the last with id N. CPU is the child process's (the standalone worker's up
to SIGTERM; the dag_test process's whole life; none for the long-lived process, still running).
``--keep`` leaves the work directory (SQLite file, Airflow home with the runs' logs, the
standalone worker's log) for profiling.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import resource
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from operator import attrgetter
from pathlib import Path
from typing import Any

import orjson
from confluent_kafka import Consumer
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import AdminClient

from bench.bench_jdbc import new_topic
from bench.bench_raw_kafka import warm_up
from bench.common import (
    ROUNDS,
    BenchResult,
    check_count,
    cpu_seconds,
    delete_topic,
    median_rounds,
    num_text,
    parse_into,
    print_results,
    rounds_lines,
    shared_broker,
)
from kopycat.dev.processes import stop_process_group
from kopycat.storage.kafka_offset_store import KafkaOffsetStore
from kopycat_airflow.hooks.kopycat import DEFAULT_BOOTSTRAP_ENV, LOCAL_DEFAULTS
from kopycat_airflow.local import DagRunResult, LocalAirflow

ROWS = 1_000_000
GOAL = 1.3  # DAG wall time / standalone wall time, at most
TABLE = "bench_rows"
DAG_ID = "bench_dag_overhead"
SOURCE_CLASS = "io.confluent.connect.jdbc.JdbcSourceConnector"
JSON_CONVERTER = "org.apache.kafka.connect.json.JsonConverter"
POLL_S = 0.2
TIMEOUT_S = 3600.0
SEED_CHUNK = 100_000
T0 = dt.datetime(2024, 1, 1)
STATUSES = ("new", "paid", "shipped", "returned")
KOPYCAT_CLI = Path(sys.executable).with_name("kopycat")

CREATE_TABLE = f"""CREATE TABLE {TABLE} (id INTEGER PRIMARY KEY, customer_id INTEGER NOT NULL,
    quantity INTEGER NOT NULL, status TEXT NOT NULL, label TEXT NOT NULL,
    amount NUMERIC(12, 2) NOT NULL, updated_at DATETIME NOT NULL)"""

DAG_FILE = '''"""The bench's import: {rows:,} rows of {table}, one connector task group."""
import pendulum
from airflow.sdk import DAG
from airflow.timetables.interval import CronDataIntervalTimetable
from kopycat_airflow.task_group import connector_task_group

with DAG({dag_id!r}, schedule=CronDataIntervalTimetable("0 * * * *", timezone="UTC"),
         start_date=pendulum.datetime(2026, 1, 1, tz="UTC"), catchup=False):
    connector_task_group({config}, copy_retries=0)
'''


@dataclass(frozen=True)
class Options:
    rows: int = ROWS
    keep: bool = False
    rounds: int = ROUNDS


def parse_options(argv: Sequence[str]) -> Options:
    """``--rows N`` (default 1,000,000), ``--rounds N`` and ``--keep`` (leave the work directory for profiling)."""
    return parse_into(Options, argv, bench="dag_overhead", doc=__doc__, size=("--rows", ROWS, "rows in the table"),
                      switch=("--keep", "keep the work directory (Airflow home and logs) and print its path"))


@dataclass(frozen=True)
class Run:
    """One path's import of ``rows`` rows: wall and CPU time of its process, the copy's own time."""

    path: str
    rows: int
    wall_s: float
    cpu_s: float | None
    load: float  # 1-minute load average when it ended: the machine is shared
    copy_s: float | None = None  # the DAG's copy task (RunSummary.duration_s)
    phases: Sequence[tuple[str, float]] = ()  # the DAG run's wall time by phase, from its log
    walls: tuple[float, ...] = ()  # every round's wall time (bench.common.median_rounds)
    log: str = ""  # a DAG run's log file

    @property
    def rate(self) -> float:
        return self.rows / self.wall_s


# ------------------------------------------------------------------ the source table


def _rows(first: int, count: int) -> Iterator[tuple[Any, ...]]:
    for n in range(first, first + count):
        yield (n, n % 10007, n % 97, STATUSES[n % 4], f"order {n:09d} for customer {n % 10007} via the web shop",
               f"{n % 10_000_000 / 100:.2f}", (T0 + dt.timedelta(seconds=n)).isoformat(" ", "microseconds"))


def seed(path: Path, rows: int) -> str:
    """The table with ``rows`` rows in a new SQLite file, inserted in chunks; its SQLAlchemy URL.

    ``updated_at`` is written as SQLAlchemy's SQLite DATETIME text, so the source reads it back.
    """
    with sqlite3.connect(path) as conn:
        conn.execute(CREATE_TABLE)
        for first in range(1, rows + 1, SEED_CHUNK):
            conn.executemany(f"INSERT INTO {TABLE} VALUES (?, ?, ?, ?, ?, ?, ?)",
                             _rows(first, min(SEED_CHUNK, rows + 1 - first)))
    conn.close()
    return f"sqlite:///{path}"


def connector_props(url: str, prefix: str) -> dict[str, str]:
    """The one connector config both paths run (the name and topic prefix set apart per path)."""
    return {"name": f"{prefix}source", "connector.class": SOURCE_CLASS, "connection.url": url,
            "mode": "incrementing", "incrementing.column.name": "id", "table.whitelist": TABLE,
            "topic.prefix": prefix, "tasks.max": "1",
            "key.converter": JSON_CONVERTER, "key.converter.schemas.enable": "true",
            "value.converter": JSON_CONVERTER, "value.converter.schemas.enable": "true"}


# ------------------------------------------------------------------ Kafka


def end_offset(watcher: Consumer, topic: str) -> int:
    return int(watcher.get_watermark_offsets(KafkaTopicPartition(topic, 0), timeout=10)[1])


def _id_at(consumer: Consumer, topic: str, offset: int) -> int:
    consumer.assign([KafkaTopicPartition(topic, 0, offset)])
    deadline = time.monotonic() + 60
    while (message := consumer.poll(1.0)) is None or message.error():
        if time.monotonic() > deadline:
            raise RuntimeError(f"no record at offset {offset} of {topic} within 60 s")
    return int(orjson.loads(message.value())["payload"]["id"])


def check_topic(bootstrap: str, topic: str, rows: int) -> None:
    """``topic`` holds exactly ``rows`` records, from id 1 to id ``rows`` (ids ascend with offsets)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": uuid.uuid4().hex,
                         "enable.auto.commit": False})
    try:
        check_count(f"end offset of {topic}", end_offset(consumer, topic), rows)
        check_count(f"id of the first record in {topic}", _id_at(consumer, topic, 0), 1)
        check_count(f"id of the last record in {topic}", _id_at(consumer, topic, rows - 1), rows)
    finally:
        consumer.close()


def create_offsets_topic(bootstrap: str) -> None:
    """``connect-offsets`` as the DAG's copy task finds it on a deployed cluster: already there."""
    store = KafkaOffsetStore.from_config({"bootstrap.servers": bootstrap, **LOCAL_DEFAULTS})
    store.start()
    store.stop()


# ------------------------------------------------------------------ standalone


def _write_properties(path: Path, props: Mapping[str, str]) -> Path:
    path.write_text("".join(f"{key}={value}\n" for key, value in props.items()))
    return path


def standalone(bootstrap: str, props: Mapping[str, str], workdir: Path, topic: str, rows: int) -> Run:
    """``kopycat standalone`` from launch until ``topic`` holds ``rows`` records; then SIGTERM."""
    worker = _write_properties(workdir / "worker.properties", {
        "bootstrap.servers": bootstrap, "offset.storage.file.filename": str(workdir / "connect.offsets")})
    connector = _write_properties(workdir / "connector.properties", props)
    log = workdir / "standalone.log"
    watcher = Consumer({"bootstrap.servers": bootstrap, "group.id": uuid.uuid4().hex})
    try:
        with log.open("wb") as out:
            launched = time.perf_counter()
            process = subprocess.Popen([str(KOPYCAT_CLI), "standalone", str(worker), str(connector)],
                                       stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
            try:
                wall, cpu = _wait_for(process, watcher, topic, rows, launched, log)
            finally:
                code = stop_process_group(process, 60)
    finally:
        watcher.close()
    if code != 0:
        raise RuntimeError(f"kopycat standalone exited with {code} after SIGTERM; see {log}")
    return Run("kopycat standalone", rows, wall, cpu, os.getloadavg()[0])


def standalone_round(bootstrap: str, admin: AdminClient, url: str, workdir: Path, rows: int) -> Run:
    """One standalone run of a new connector into a new topic, checked (the topic deleted after)."""
    props = connector_props(url, _prefix("standalone"))
    topic = new_topic(admin, props["topic.prefix"] + TABLE)
    run = standalone(bootstrap, props, workdir, topic, rows)
    check_topic(bootstrap, topic, rows)
    delete_topic(admin, topic)
    return run


def _wait_for(process: subprocess.Popen[bytes], watcher: Consumer, topic: str, rows: int,
              launched: float, log: Path) -> tuple[float, float | None]:
    """(wall s, CPU s) when the end offset of ``topic`` reaches ``rows``."""
    while (done := end_offset(watcher, topic)) < rows:
        elapsed = time.perf_counter() - launched
        if process.poll() is not None or elapsed > TIMEOUT_S:
            raise RuntimeError(f"kopycat standalone wrote {done:,} of {rows:,} records to {topic} in "
                               f"{elapsed:.0f} s (exit code {process.poll()}); see {log}")
        time.sleep(POLL_S)
    return time.perf_counter() - launched, cpu_seconds(process.pid)


# ------------------------------------------------------------------ DAG


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def dag_run(airflow: LocalAirflow, rows: int) -> tuple[Run, DagRunResult]:
    """One ``run_dag``, checked: success, one copy task, ``rows`` records.

    Without a server, a fresh dag_test process: its CPU and phases are measured. With one
    (``LocalAirflow.serve``, a long-lived process as a deployed Airflow's API server and workers
    are), only the wall time: the process has not exited, so its CPU is not counted yet.
    """
    served = airflow.server is not None
    cpu, launched = _children_cpu_s(), time.time()
    started = time.perf_counter()
    result = airflow.run_dag(DAG_ID, timeout_s=TIMEOUT_S)
    wall = time.perf_counter() - started
    cpu, ended = _children_cpu_s() - cpu, time.time()
    if result["state"] != "success":
        raise RuntimeError(f"the DAG run of {DAG_ID} ended {result['state']}; see {result.get('log')}")
    [copy] = result.results("copy")
    [summary] = result.results("summary")
    check_count("records the copy task reports", copy["records"], rows)
    check_count("records the summary task reports", summary["records"], rows)
    breakdown = [] if served else phases(Path(result["log"]), launched, ended)
    path = "DAG (long-lived dag.test process)" if served else "DAG (dag.test process)"
    return Run(path, rows, wall, None if served else cpu, os.getloadavg()[0], copy_s=float(copy["duration_s"]),
               phases=breakdown, log=str(result.get("log") or "")), result


def dag_round(airflow: LocalAirflow, admin: AdminClient, url: str, rows: int, path: str) -> Run:
    """One DAG run of a new connector (so ``rows`` rows to copy, into a new topic), checked (the topic
    deleted after)."""
    topic = new_connector_dag(airflow, admin, url, rows, path)
    run, _ = dag_run(airflow, rows)
    check_topic(airflow.extra_env[DEFAULT_BOOTSTRAP_ENV], topic, rows)
    delete_topic(admin, topic)
    return run


def new_connector_dag(airflow: LocalAirflow, admin: AdminClient, url: str, rows: int, path: str) -> str:
    """The DAG file of a new connector written into ``airflow``'s DAG folder; its new topic."""
    props = connector_props(url, _prefix(path))
    topic = new_topic(admin, props["topic.prefix"] + TABLE)
    write_dag(airflow.dags_folder, props, rows)
    return topic


class ServedRounds:
    """DAG runs in one long-lived dag_test process (``LocalAirflow.serve``), as a deployed Airflow's
    API server and workers are: started at the first round, which first runs the DAG folder's DAG
    once more (its connector already at the table's end: nothing to copy) to pay Airflow's start."""

    def __init__(self, airflow: LocalAirflow, admin: AdminClient, url: str, rows: int, stack: ExitStack) -> None:
        self.airflow, self.admin, self.url, self.rows, self.stack = airflow, admin, url, rows, stack
        self.served: LocalAirflow | None = None

    def __call__(self) -> Run:
        if self.served is None:
            self.served = self.stack.enter_context(self.airflow.serve())
            self.served.run_dag(DAG_ID, timeout_s=TIMEOUT_S)
        return dag_round(self.served, self.admin, self.url, self.rows, "served")


PHASES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("process start, Python and Airflow imports", ("Filling up the DagBag",)),
    ("DAG parse, bundle sync, DAG run created", ("[DAG TEST] starting task_id=",)),
    ("first task: in-process execution API up", ("Task started",)),
    ("plan task", ("[DAG TEST] end task", ".plan ")),
    ("copy task", ("[DAG TEST] end task", ".copy ")),
    ("summary task", ("[DAG TEST] end task", ".summary ")),
)
"""Where a DAG run's wall time goes: each phase ends at the first log line (after the previous
phase's) holding all its markers; the last phase runs to the process's exit."""


def phases(log: Path, launched: float, ended: float) -> list[tuple[str, float]]:
    """(phase, seconds) of one dag_test run from its log's timestamps; [] if a marker is missing."""
    found: list[tuple[str, float]] = []
    pending = iter(PHASES)
    phase = next(pending, None)
    for line in log.read_text(errors="replace").splitlines():
        if phase is not None and all(marker in line for marker in phase[1]):
            found.append((phase[0], dt.datetime.fromisoformat(line.split(" ", 1)[0]).timestamp()))
            phase = next(pending, None)
    if phase is not None:
        return []
    ends = [*(at for _, at in found), ended]
    starts = [launched, *ends[:-1]]
    labels = [label for label, _ in found] + ["run finished, result read, process exit"]
    return [(label, end - start) for label, start, end in zip(labels, starts, ends, strict=True)]


def write_dag(folder: Path, props: Mapping[str, str], rows: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{DAG_ID}.py").write_text(
        DAG_FILE.format(rows=rows, table=TABLE, dag_id=DAG_ID, config=json.dumps(dict(props))))


# ------------------------------------------------------------------ report


def table(standalone_run: Run, dag: Run, record_bytes: float, warm: Run) -> str:
    """Both paths, the DAG's copy and fixed cost, and the ratio against the goal; then the DAG in a
    long-lived process."""
    rows = dag.rows
    copy_s = dag.copy_s or 0.0
    lines = [f"JDBC import, SQLite -> Kafka: {rows:,} rows, {record_bytes:,.0f} B per record, one task",
             f"  {'path':<44} {'wall s':>8} {'rows/s':>10} {'CPU s':>7} {'load':>5}"]
    for label, wall, cpu, load in ((f"{standalone_run.path}, launch -> end offset", standalone_run.wall_s,
                                    standalone_run.cpu_s, standalone_run.load),
                                   (f"{dag.path}, start -> result", dag.wall_s, dag.cpu_s, dag.load),
                                   ("  of which the copy task (RunSummary)", copy_s, None, None),
                                   ("  of which the rest (fixed cost)", dag.wall_s - copy_s, None, None)):
        lines.append(f"  {label:<44} {wall:>8.2f} {rows / wall:>10,.0f} {num_text(cpu, '.1f'):>7} "
                     f"{num_text(load, '.1f'):>5}")
    lines += [f"    DAG phase: {label:<48} {seconds:>8.2f}" for label, seconds in dag.phases]
    lines.append(f"  ratio DAG/standalone {dag.wall_s / standalone_run.wall_s:.2f} (goal <= {GOAL}); "
                 f"copy task/standalone {copy_s / standalone_run.wall_s:.2f}")
    warm_copy_s = warm.copy_s or 0.0
    lines.append(f"  {warm.path + ', start -> result':<44} {warm.wall_s:>8.2f} {rows / warm.wall_s:>10,.0f} "
                 f"{'-':>7} {warm.load:>5.1f}   (copy {warm_copy_s:.2f} s, rest {warm.wall_s - warm_copy_s:.2f} s)")
    lines.append(f"  ratio long-lived DAG/standalone {warm.wall_s / standalone_run.wall_s:.2f} (goal <= {GOAL})")
    lines += rounds_lines([standalone_run, dag, warm], label=attrgetter("path"))
    return "\n".join(lines)


def results(standalone_run: Run, dag: Run, warm: Run) -> list[BenchResult]:
    """Rates: the standalone as the anchor, the DAG and its copy task against it (ratio = 1/time ratio)."""
    unit = "rows/s"
    copy_rate = dag.rows / dag.copy_s if dag.copy_s else 0.0
    return [BenchResult("dag_overhead_standalone", standalone_run.rate, unit=unit),
            BenchResult("dag_overhead_dag_vs_standalone", dag.rate, standalone_run.rate, unit=unit),
            BenchResult("dag_overhead_copy_task_vs_standalone", copy_rate, standalone_run.rate, unit=unit),
            BenchResult("dag_overhead_long_lived_dag_vs_standalone", warm.rate, standalone_run.rate, unit=unit)]


# ------------------------------------------------------------------ run


def _prefix(path: str) -> str:
    return f"bench-dag-{path}-{uuid.uuid4().hex[:8]}-"


def run(argv: Sequence[str] = ()) -> list[BenchResult]:
    """The bench (``python -m bench dag_overhead [--rows N] [--keep]``)."""
    options = parse_options(argv)
    rows = options.rows
    bootstrap = shared_broker().bootstrap_servers
    admin = AdminClient({"bootstrap.servers": bootstrap})
    workdir = Path(tempfile.mkdtemp(prefix="kopycat-bench-dag-"))
    try:
        url = seed(workdir / "source.db", rows)
        warm_up(bootstrap, admin)
        create_offsets_topic(bootstrap)
        airflow = LocalAirflow(workdir / "airflow", workdir / "dags", env={DEFAULT_BOOTSTRAP_ENV: bootstrap})
        airflow.migrate()
        # Untimed: the record size, from a first DAG run (its connector stays at the table's end).
        new_connector_dag(airflow, admin, url, rows, "first")
        _, result = dag_run(airflow, rows)
        [copy] = result.results("copy")
        with ExitStack() as stack:
            standalone_run, dag, warm = median_rounds(
                [lambda: standalone_round(bootstrap, admin, url, workdir, rows),
                 lambda: dag_round(airflow, admin, url, rows, "airflow"),
                 ServedRounds(airflow, admin, url, rows, stack)], options.rounds)
        print(table(standalone_run, dag, copy["bytes"] / rows, warm), flush=True)
        print(f"  DAG run log (the median dag.test process's): {dag.log}", flush=True)
    finally:
        if options.keep:
            print(f"  work directory kept: {workdir}", flush=True)
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    return results(standalone_run, dag, warm)


if __name__ == "__main__":
    print_results(run)

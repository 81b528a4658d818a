"""One connector at tasks.max 1, 2 and 4, its tasks in threads against processes (``task.isolation``).

N lines of 100 bytes (1,000,000 by default, ``--records``), split over four files, and the same N records
on a topic of four partitions (produced once, untimed). Each mover is one embedded worker
(:class:`kopycat.embedded.Kopycat`, a memory offset store) running one connector to its end
(``run_once``, caught up after :data:`IDLE_MS` without new data), every mover ``--rounds`` times
(3 by default), taking turns (``bench.common.median_rounds``):

- *source*: FileStreamSource with ``files`` = the four files, each round to a fresh four-partition topic;
  checked: N records in the summaries and on the topic's end offsets;
- *sink*: the storage sink (FileSinkConnector, Confluent's HDFS/S3 sink model) from the start of the four
  partitions into JSON-lines files under a fresh ``file://`` directory per round, ``flush.size`` 100,000; the
  run splits the partitions over its tasks (``Kopycat.run_once``, as an Airflow plan does); checked: N records
  in the summaries and N lines in the files. Not FileStreamSink: it plans one task whatever ``tasks.max`` (a
  file has one writer), so it cannot scale.

Beside each side, the raw client loop in one process and in two at once (:mod:`bench.raw_processes`, the
fair producer or assigned consumer of ``bench_raw_kafka``, taking turns the same way): how far the machine and
the broker scale before any of Kopycat's Python runs. Two tasks cannot scale further than two raw loops do.

Timed around ``run_once``: planning, each task's start (a process forked by multiprocessing's fork server in
process mode) and its final commit included, as a user pays them. CPU per record is this process's (every
thread) plus that of its children (``RUSAGE_CHILDREN``, and ``/proc`` for the live fork server, which reaps
the task processes); the broker's CPU over the same run (``/proc/<pid>/stat``
of its JVM) is printed beside it, and the share of all cores' time anything on the machine ran
(``/proc/stat``), so a reader sees which side saturates the two cores, or that others do.

Goal: ``tasks.max=2`` in processes at least 1.3x the records/s of ``tasks.max=1`` (the issue's), per side, on
the wall time and, in a second line, on the slowest task's own time (RunSummary.duration_s: without planning
and the interpreter each task process starts, which a long-running worker pays once).
"""

from __future__ import annotations

import os
import resource
import shutil
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from confluent_kafka.admin import AdminClient

from bench.bench_raw_kafka import fill_numbered, new_topic, warm_up
from bench.common import (
    BenchResult,
    check_count,
    cpu_seconds,
    delete_topic,
    median_rounds,
    rounds_lines,
    shared_broker,
    size_and_switch,
    spread_of,
)
from bench.raw_processes import Spread, raw_consumers, raw_producers
from kopycat.embedded import Kopycat
from kopycat.runtime.bounds import Bounds, RunSummary
from kopycat.storage.offset_backing_store import MemoryOffsetStore

RECORDS = 1_000_000
PARTITIONS = 4
TASKS = (1, 2, 4)
MODES = ("thread", "process")
PLURAL = {"thread": "threads", "process": "processes"}
GOAL = 1.3
IDLE_MS = 100
"""A run ends after this long with nothing new (the file source polls as often): the default 1 s tail, which
a scheduled run pays once, would be half of a one-million-record run and hide the scaling."""
CAUGHT_UP = Bounds.caught_up(idle_ms=IDLE_MS)
STRING = "org.apache.kafka.connect.storage.StringConverter"


@dataclass(frozen=True)
class Run:
    """One mover's round: wall time, its CPU (this process and reaped task processes), the broker's CPU."""

    mover: str
    count: int
    wall_s: float
    cpu_s: float
    broker_cpu_s: float | None
    machine_busy: float
    """The share of every core's time that something (anything on the machine) ran during the round."""
    task_s: float
    """The slowest task's own run time (RunSummary.duration_s: from its clients' start to its final commit,
    without planning and without starting an interpreter per task process)."""
    walls: tuple[float, ...] = ()

    @property
    def rate(self) -> float:
        return self.count / self.wall_s

    @property
    def task_rate(self) -> float:
        return self.count / self.task_s


def _own_and_children_cpu() -> float:
    """This process's CPU, its reaped children's, and its live children's with the children they reaped:
    task processes are forked by multiprocessing's fork server, a live child of ours that reaps them."""
    reaped = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (cpu_seconds() or 0.0) + reaped.ru_utime + reaped.ru_stime + sum(map(_tree_cpu, _live_children()))


def _live_children() -> list[int]:
    me, found = str(os.getpid()), []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[1] == me:  # ppid
            found.append(int(stat.parent.name))
    return found


def _tree_cpu(pid: int) -> float:
    """utime + stime + cutime + cstime of a live process (its own and its reaped children's CPU)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return sum(int(tick) for tick in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def broker_pid(workdir: Path | None) -> int | None:
    """The pid of the broker JVM whose command line names ``workdir``; None when not found."""
    if workdir is None:
        return None
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if str(workdir).encode() in cmdline.read_bytes():
                return int(cmdline.parent.name)
        except OSError:
            continue
    return None


def _machine_ticks() -> tuple[int, int]:
    """(busy, total) clock ticks of all cores since boot, from /proc/stat's "cpu" line."""
    ticks = [int(tick) for tick in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = ticks[3] + ticks[4]  # idle, iowait
    return sum(ticks) - idle, sum(ticks)


def timed(mover: str, count: int, broker: int | None, move: Callable[[], list[RunSummary | None]]) -> Run:
    """Run ``move`` once, checking its summaries count ``count`` records."""
    machine_before = _machine_ticks()
    broker_before = cpu_seconds(broker) if broker else None
    cpu_before, started = _own_and_children_cpu(), time.perf_counter()
    summaries = move()
    wall_s = time.perf_counter() - started
    cpu_s = _own_and_children_cpu() - cpu_before
    broker_after = cpu_seconds(broker) if broker else None
    machine_after = _machine_ticks()
    busy = (machine_after[0] - machine_before[0]) / max(machine_after[1] - machine_before[1], 1)
    failed = [s.error for s in summaries if s is not None and s.error]
    if failed:
        raise RuntimeError(f"{mover}: a task failed: {failed}")
    check_count(f"{mover} records", sum(s.records for s in summaries if s is not None), count)
    broker_cpu = None if broker_before is None or broker_after is None else broker_after - broker_before
    task_s = max(s.duration_s for s in summaries if s is not None)
    return Run(mover, count, wall_s, cpu_s, broker_cpu, busy, task_s)


def _worker(bootstrap: str, mode: str) -> dict[str, str]:
    return {"bootstrap.servers": bootstrap, "task.isolation": mode, "key.converter": STRING,
            "value.converter": STRING, "offset.flush.interval.ms": "60000"}


def source_mover(bootstrap: str, admin: AdminClient, files: str, count: int, tasks: int, mode: str,
                 broker: int | None) -> Callable[[], Run]:
    def move() -> Run:
        topic = new_topic(admin, "bench-scaling-source", PARTITIONS)
        props = {"name": f"scaling-source-{uuid.uuid4().hex[:8]}", "connector.class": "FileStreamSource",
                 "files": files, "topic": topic, "tasks.max": str(tasks), "batch.size": "2000",
                 "poll.interval.ms": str(IDLE_MS)}
        with Kopycat(bootstrap, worker_props=_worker(bootstrap, mode), offset_store=MemoryOffsetStore()) as kc:
            run = timed(f"source {PLURAL[mode]} tasks.max={tasks}", count, broker,
                        lambda: kc.run_once(props, CAUGHT_UP))
        delete_topic(admin, topic)
        return run
    return move


def sink_mover(bootstrap: str, topic: str, out_dir: Path, count: int, tasks: int, mode: str,
               broker: int | None) -> Callable[[], Run]:
    def move() -> Run:
        name = f"scaling-sink-{uuid.uuid4().hex[:8]}"
        store = out_dir / name
        props = {"name": name, "connector.class": "FileSinkConnector", "store.url": store.as_uri(),
                 "format.class": "json", "flush.size": "100000", "topics": topic, "tasks.max": str(tasks),
                 "consumer.auto.offset.reset": "earliest"}
        with Kopycat(bootstrap, worker_props=_worker(bootstrap, mode), offset_store=MemoryOffsetStore()) as kc:
            run = timed(f"sink {PLURAL[mode]} tasks.max={tasks}", count, broker,
                        lambda: kc.run_once(props, CAUGHT_UP))
        check_count(f"lines under {store}", sum(map(_lines, store.rglob("*.json"))), count)
        shutil.rmtree(store)
        return run
    return move


def _lines(path: Path) -> int:
    with path.open("rb") as written:
        return sum(chunk.count(b"\n") for chunk in iter(lambda: written.read(1 << 20), b""))


def write_files(directory: Path, count: int) -> str:
    """``count`` 100-byte lines over four files; the ``files`` pattern naming them."""
    for index in range(PARTITIONS):
        lines = range(index, count, PARTITIONS)
        (directory / f"in-{index}.txt").write_bytes(b"".join(b"%099d\n" % i for i in lines))
    return str(directory / "in-*.txt")


def _load() -> str:
    """The machine's load averages (1, 5, 15 min): above the core count, no second task finds a free core."""
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def table(side: str, runs: Sequence[Run]) -> str:
    lines = [f"=== {side}: one connector, tasks in threads vs processes (medians of rounds; load average "
             f"{_load()} on {os.cpu_count()} cores at the end) ===",
             f"  {'mover':<28} {'records/s':>11} {'spread':>7} {'µs CPU/rec':>11} {'broker CPU s':>13} "
             f"{'kopycat CPU s':>14} {'machine busy':>13} {'wall s':>7} {'task s':>7} {'task rec/s':>11}"]
    for run in runs:
        spread = spread_of(run)
        broker = "-" if run.broker_cpu_s is None else f"{run.broker_cpu_s:.1f}"
        lines.append(f"  {run.mover:<28} {run.rate:>11,.0f} {'-' if spread is None else f'{spread:.0%}':>7} "
                     f"{run.cpu_s / run.count * 1e6:>11.2f} {broker:>13} {run.cpu_s:>14.1f} "
                     f"{run.machine_busy:>13.0%} {run.wall_s:>7.2f} "
                     f"{run.task_s:>7.2f} {run.task_rate:>11,.0f}")
    return "\n".join([*lines, *rounds_lines(runs), ceiling_line(side, runs)])


def ceiling_line(side: str, runs: Sequence[Run]) -> str:
    """The most any number of tasks could reach if the cores were the only limit: all cores' time divided by
    the CPU one record costs (Kopycat's and the broker's), against the one-task rate.

    Read from the one task in a thread, whose CPU holds no interpreter start-up. That task already runs
    librdkafka's threads beside its own, so it may use more than one core: then no tasks.max reaches twice its
    rate on two cores, and a goal above this ceiling cannot be met here.
    """
    one = next(run for run in runs if run.mover == f"{side} threads tasks.max=1")
    used_s = one.cpu_s + (one.broker_cpu_s or 0.0)
    ceiling = (os.cpu_count() or 1) * one.count / used_s
    return (f"  cores-bound ceiling: {ceiling:,.0f} records/s = {ceiling / one.task_rate:.2f}x the one-task rate "
            f"(one task in a thread used {used_s / one.task_s:.2f} cores with the broker)")


def results(side: str, runs: Sequence[Run]) -> list[BenchResult]:
    by_name = {run.mover: run for run in runs}
    one = by_name[f"{side} processes tasks.max=1"]
    rows = []
    for tasks in TASKS[1:]:
        for mode in MODES:
            run = by_name[f"{side} {PLURAL[mode]} tasks.max={tasks}"]
            goal = GOAL if (tasks, mode) == (2, "process") else None
            rows.append(BenchResult(f"scaling {side}: tasks.max={tasks} {PLURAL[mode]} vs tasks.max=1 processes",
                                    run.rate, one.rate, goal=goal, spread=spread_of(run),
                                    anchor_spread=spread_of(one)))
    two = by_name[f"{side} processes tasks.max=2"]
    rows.append(BenchResult(f"scaling {side}: tasks.max=2 processes vs tasks.max=1 processes, task time",
                            two.task_rate, one.task_rate, goal=GOAL))
    return rows


def raw_lines(side: str, one: Spread, two: Spread) -> tuple[str, BenchResult]:
    """The raw client loop in one process and in two at once (:mod:`bench.raw_processes`): the scaling the
    machine and broker allow before any of Kopycat's Python runs, read beside the tasks' ratio."""
    clients = "producers" if side == "source" else "consumers"
    line = (f"  raw {clients} (bench.raw_processes), the machine's own scaling: 1 process {one.rate:,.0f} records/s "
            f"(spread {spread_of(one) or 0:.0%}), 2 processes {two.rate:,.0f} (spread {spread_of(two) or 0:.0%}): "
            f"{two.rate / one.rate:.2f}x")
    return line, BenchResult(f"scaling {side}: raw {clients}, 2 processes vs 1", two.rate, one.rate,
                             spread=spread_of(two), anchor_spread=spread_of(one))


def raw_source_rounds(bootstrap: str, admin: AdminClient, count: int, rounds: int) -> tuple[Spread, Spread]:
    def producers(processes: int) -> Callable[[], Spread]:
        def move() -> Spread:
            topic = new_topic(admin, "bench-scaling-raw", PARTITIONS)
            try:
                return raw_producers(bootstrap, topic, count, processes)
            finally:
                delete_topic(admin, topic)
        return move
    one, two = median_rounds([producers(1), producers(2)], rounds)
    return one, two


def raw_sink_rounds(bootstrap: str, topic: str, count: int, rounds: int) -> tuple[Spread, Spread]:
    ends = [len(range(partition, count, PARTITIONS)) for partition in range(PARTITIONS)]  # fill_numbered's deal
    one, two = median_rounds([lambda: raw_consumers(bootstrap, topic, ends, 1),
                              lambda: raw_consumers(bootstrap, topic, ends, 2)], rounds)
    return one, two


def run(argv: Sequence[str] = ()) -> list[BenchResult]:
    args = size_and_switch(argv, bench="scaling", doc=__doc__,
                           size=("--records", RECORDS, f"lines and records per run (default {RECORDS:,})"),
                           switch=("--keep", "keep the input files' directory"), rounds=True)
    broker = shared_broker()
    bootstrap = broker.bootstrap_servers
    admin = AdminClient({"bootstrap.servers": bootstrap})
    warm_up(bootstrap, admin)
    pid = broker_pid(broker.workdir)
    configs = [(tasks, mode) for tasks in TASKS for mode in MODES]
    rows: list[BenchResult] = []
    directory = Path(tempfile.mkdtemp(prefix="bench-scaling-"))
    try:
        files = write_files(directory, args.records)
        sources = median_rounds([source_mover(bootstrap, admin, files, args.records, tasks, mode, pid)
                                 for tasks, mode in configs], args.rounds)
        line, raw = raw_lines("source", *raw_source_rounds(bootstrap, admin, args.records, args.rounds))
        print(table("source", sources), line, sep="\n", flush=True)
        rows += [*results("source", sources), raw]
        topic = fill_numbered(bootstrap, admin, "bench-scaling-sink", args.records, PARTITIONS)
        sinks = median_rounds([sink_mover(bootstrap, topic, directory, args.records, tasks, mode, pid)
                               for tasks, mode in configs], args.rounds)
        line, raw = raw_lines("sink", *raw_sink_rounds(bootstrap, topic, args.records, args.rounds))
        delete_topic(admin, topic)
        print(table("sink", sinks), line, sep="\n", flush=True)
        rows += [*results("sink", sinks), raw]
    finally:
        if not args.keep:
            shutil.rmtree(directory, ignore_errors=True)
    return rows

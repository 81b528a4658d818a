"""What Kafka Connect's task metrics cost: the file source and sink with metrics on and off.

``--records`` lines of 100 ASCII bytes (default 200,000) go file -> topic through Kopycat's
FileStreamSource task and topic -> file through its FileStreamSink task (StringConverter both
ways, one partition, the shared broker), each under its runner once with the task metrics it
always records (per batch: kopycat.runtime.task_metrics) and once with them switched off
(:class:`MetricsOff`, the same calls doing nothing). The goal: metrics cost at most 2% (ratio
on/off >= 0.98).

On two cores shared with other work a run's wall time moves by tens of percent from one round to
the next, more than the 2% asked about, so the runs are *paired*: each of ``--rounds`` rounds
(default 9) runs on and off back to back, in alternating order (on off, off on, ...), and gives one
ratio per side; a slow spell of the machine mostly hits both runs of a pair and cancels in their
ratio. The figure is the median of the paired ratios with their spread (interquartile range and
min-max), on three clocks: wall time; this process's CPU time (all threads: the runner's and
librdkafka's); and the CPU time of the task's own thread. The runner runs on the bench's thread, and
every metrics call is made there, so that last clock holds all of what metrics can cost while
leaving out librdkafka's threads and the broker, whose timing moves a run by more than 2% on two
shared cores: the goal is read on it. The metrics' own cost is shown too: the batches the run
recorded (records / ``batch-size-avg``) times what one ``record_batch`` costs in a tight loop, as a
share of the metrics-off run's wall time; it holds still under load.
"""

from __future__ import annotations

import shutil
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from confluent_kafka.admin import AdminClient, NewTopic

from bench import common
from bench.common import BenchResult, Measure
from kopycat.api.records import TopicPartition
from kopycat.connectors.files.filestream_sink import FileStreamSinkConnector
from kopycat.connectors.files.filestream_source import FileStreamSourceConnector
from kopycat.runtime.bounds import Bounds, RunSummary
from kopycat.runtime.task_factory import build_sink_runner, build_source_runner
from kopycat.runtime.task_metrics import SOURCE, TaskMetrics
from kopycat.runtime.task_parts import TaskId
from kopycat.runtime.worker_task import WorkerTask
from kopycat.storage.offset_backing_store import MemoryOffsetStore

STRING_CONVERTER = "org.apache.kafka.connect.storage.StringConverter"
CONVERTERS = {"key.converter": STRING_CONVERTER, "value.converter": STRING_CONVERTER}
LINE_BYTES = 100
GOAL = 0.98
ROUNDS = 9
CLOCKS = {"wall": "wall_s", "CPU": "cpu_s", "task thread CPU": "thread_cpu_s"}
"""The clocks a pair is compared on, by the Measure field holding each."""
GOAL_CLOCK = "task thread CPU"
"""Pairs per side by default: the interquartile range of fewer than ~8 paired ratios is a guess."""


class MetricsOff:
    """The :class:`~kopycat.runtime.task_metrics.TaskMetrics` calls a runner makes, doing nothing."""

    status = "unassigned"
    batch_s = 0.0

    def record_batch(self, read: int) -> None:
        """Nothing."""

    def record_commit(self, seconds: float, succeeded: bool) -> None:
        """Nothing."""

    def set_status(self, status: str) -> None:
        """Nothing."""

    def figures(self) -> dict[str, Any]:
        return {}


@dataclass(frozen=True)
class Options:
    records: int = 200_000
    keep: bool = False
    rounds: int = ROUNDS


def parse_options(argv: Sequence[str]) -> Options:
    return common.parse_into(Options, argv, bench="metrics", doc=__doc__,
                             size=("--records", 200_000, "lines to copy each way"),
                             switch=("--keep", "keep the work directory"), default_rounds=ROUNDS)


@dataclass(frozen=True)
class Paired:
    """One side's rounds: each round's metrics-on and metrics-off run, taken back to back."""

    side: str
    pairs: tuple[tuple[Measure, Measure], ...]

    def ratios(self, clock: str) -> list[float]:
        """Per round, on/off as a throughput ratio (off's time / on's time) on one of :data:`CLOCKS`;
        1.0 costs nothing. Rounds without that clock are left out."""
        times = [(getattr(on, CLOCKS[clock]), getattr(off, CLOCKS[clock])) for on, off in self.pairs]
        return [off_s / on_s for on_s, off_s in times if on_s and off_s]

    def median_run(self, metrics_on: bool) -> Measure:
        """The median-wall run of one setting, keeping every round's wall time (as common.median_rounds)."""
        runs = [pair[0 if metrics_on else 1] for pair in self.pairs]
        median = sorted(runs, key=lambda m: m.wall_s)[len(runs) // 2]
        return replace(median, walls=tuple(m.wall_s for m in runs))


def paired_rounds(side: str, on: Callable[[], Measure], off: Callable[[], Measure], rounds: int) -> Paired:
    """``rounds`` pairs of runs, on then off in even rounds and off then on in odd ones."""
    pairs = []
    for index in range(rounds):
        if index % 2 == 0:
            first = on()
            pairs.append((first, off()))
        else:
            first = off()
            pairs.append((on(), first))
    return Paired(side, tuple(pairs))


def ratio_line(paired: Paired, clock: str) -> str:
    """The paired ratios' median, interquartile range and min-max on ``clock``."""
    ratios = sorted(paired.ratios(clock))
    goal = f"; goal >= {GOAL}" if clock == GOAL_CLOCK else ""
    if not ratios:
        return f"metrics on/off, {paired.side}, {clock}: no such clock on this platform"
    if len(ratios) < 4:
        return (f"metrics on/off, {paired.side}, {clock}: paired ratios {' '.join(f'{r:.3f}' for r in ratios)}"
                f"{goal}")
    q1, _, q3 = statistics.quantiles(ratios, n=4)
    return (f"metrics on/off, {paired.side}, {clock}: median paired ratio {statistics.median(ratios):.3f} "
            f"(IQR {q1:.3f}-{q3:.3f}, min-max {ratios[0]:.3f}-{ratios[-1]:.3f}, {len(ratios)} rounds{goal})")


def write_lines(path: Path, records: int) -> None:
    filler = ("abcdefghijklmnopqrstuvwxyz0123456789" * 3)[:LINE_BYTES - 9]
    with path.open("wb") as out:
        for start in range(0, records, 100_000):
            out.write("".join(f"{i:08d} {filler}\n" for i in range(start, min(start + 100_000, records))).encode())


BATCHES: dict[str, float] = {}
"""Batches the last metrics-on run of each side recorded: records / batch-size-avg."""


def _timed(runner: WorkerTask, metrics: bool, mover: str, records: int) -> Measure:
    if not metrics:
        runner.metrics = MetricsOff()  # type: ignore[assignment]
    with common.Span() as span:
        summary = runner.run()
    common.check_count(mover, summary.records, records)
    if metrics:
        BATCHES[mover.partition(",")[0]] = records / summary.metrics["connector-task-metrics.batch-size-avg"]
    return Measure.of(mover, records, span, summary.duration_s)


def batch_cost_s(calls: int = 200_000) -> float:
    """Seconds one ``record_batch`` (the per-batch work metrics add) takes, in a tight loop."""
    summary = RunSummary("bench", 0)
    metrics = TaskMetrics(SOURCE, summary)
    started = time.perf_counter()
    for _ in range(calls):
        summary.records += 2000
        metrics.batch_s = 0.001
        metrics.record_batch(2000)
    return (time.perf_counter() - started) / calls


def source_run(bootstrap: str, admin: AdminClient, path: Path, records: int, metrics: bool,
               keep_topic: list[str] | None = None) -> Measure:
    """One FileStreamSource run of exactly ``records`` lines into a new topic (deleted after, unless kept)."""
    topic = f"bench-metrics-{uuid.uuid4().hex[:8]}"
    admin.create_topics([NewTopic(topic, num_partitions=1)])[topic].result(30)
    name = f"bench-metrics-source-{uuid.uuid4().hex[:8]}"
    props = {"name": name, "connector.class": "FileStreamSource", "file": str(path), "topic": topic,
             "batch.size": "2000", **CONVERTERS}
    connector = FileStreamSourceConnector()
    connector.start(props)
    [task_props] = connector.task_configs(1)
    runner = build_source_runner(TaskId(name, 0), connector.task_class(), task_props, props,
                                 {"bootstrap.servers": bootstrap, **CONVERTERS}, MemoryOffsetStore(),
                                 Bounds(max_records=records))
    measure = _timed(runner, metrics, f"source, metrics {'on' if metrics else 'off'}", records)
    connector.stop()
    if keep_topic is None:
        common.delete_topic(admin, topic)
    else:
        keep_topic.append(topic)
    return measure


def sink_run(bootstrap: str, topic: str, out: Path, records: int, metrics: bool) -> Measure:
    """One FileStreamSink run from the start of ``topic`` to offset ``records`` (a new group each time)."""
    name = f"bench-metrics-sink-{uuid.uuid4().hex[:8]}"
    props = {"name": name, "connector.class": "FileStreamSink", "file": str(out), "topics": topic, **CONVERTERS}
    connector = FileStreamSinkConnector()
    connector.start(props)
    [task_props] = connector.task_configs(1)
    runner = build_sink_runner(TaskId(name, 0), connector.task_class(), task_props, props,
                               {"bootstrap.servers": bootstrap, **CONVERTERS},
                               Bounds(end_offsets={TopicPartition(topic, 0): records}),
                               assignment=[TopicPartition(topic, 0)])
    measure = _timed(runner, metrics, f"sink, metrics {'on' if metrics else 'off'}", records)
    connector.stop()
    common.check_count(f"bytes in {out}", out.stat().st_size, records * (LINE_BYTES + 1))
    out.unlink()
    return measure


def compare(side: str, on: Measure, off: Measure) -> list[BenchResult]:
    """The median runs of metrics on and off on each clock, for reference: the goal is read on the paired
    ratios (:func:`ratio_line`), which a slow spell hitting one setting's median run does not move."""
    results = [BenchResult(f"metrics on vs off, {side}, wall", on.rate, off.rate)]
    for clock in ("CPU", GOAL_CLOCK):
        on_s, off_s = getattr(on, CLOCKS[clock]), getattr(off, CLOCKS[clock])
        if on_s and off_s:
            results.append(BenchResult(f"metrics on vs off, {side}, {clock}", on.count / on_s, off.count / off_s,
                                       unit="records/CPU s"))
    return results


def own_cost(side: str, off: Measure, per_batch_s: float) -> str:
    batches = BATCHES.get(side, 0.0)
    share = batches * per_batch_s / off.wall_s
    return (f"metrics' own cost, {side}: {batches:,.0f} batches x {per_batch_s * 1e6:.2f} us = "
            f"{share:.4%} of the metrics-off run (goal <= 2%)")


def run(argv: Sequence[str] = ()) -> list[BenchResult]:
    options = parse_options(argv)
    bootstrap = common.shared_broker().bootstrap_servers
    admin = AdminClient({"bootstrap.servers": bootstrap})
    workdir = Path(tempfile.mkdtemp(prefix="kopycat-bench-metrics-"))
    try:
        source = workdir / "input.txt"
        write_lines(source, options.records)
        filled: list[str] = []
        source_run(bootstrap, admin, source, options.records, True, keep_topic=filled)  # warm-up, fills the topic
        out = workdir / "out.txt"
        sides = [
            paired_rounds("file source", lambda: source_run(bootstrap, admin, source, options.records, True),
                          lambda: source_run(bootstrap, admin, source, options.records, False), options.rounds),
            paired_rounds("file sink", lambda: sink_run(bootstrap, filled[0], out, options.records, True),
                          lambda: sink_run(bootstrap, filled[0], out, options.records, False), options.rounds)]
        common.delete_topic(admin, filled[0])
    finally:
        if not options.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    runs = [paired.median_run(metrics_on) for paired in sides for metrics_on in (True, False)]
    for line in common.rounds_lines(runs):
        print(line, flush=True)
    for paired in sides:
        for clock in CLOCKS:
            print(ratio_line(paired, clock), flush=True)
    per_batch_s = batch_cost_s()
    for paired, side in zip(sides, ("source", "sink"), strict=True):
        print(own_cost(side, paired.median_run(False), per_batch_s), flush=True)
    return [result for paired in sides
            for result in compare(paired.side, paired.median_run(True), paired.median_run(False))]


if __name__ == "__main__":
    common.print_results(run)

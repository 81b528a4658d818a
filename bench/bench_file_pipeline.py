"""File -> Kafka and Kafka -> file, one task: Kopycat against raw confluent-kafka and Kafka Connect.

N lines of 100 ASCII bytes (plus ``\\n``) go through three movers, on the shared broker, one
partition, in one run: 4,000,000 by default (``--records N``; a tenth under ``--quick``), so that
even the fastest mover's round lasts 2 s or more on an idle machine (the raw producer copied 1M
lines in ~0.55 s, where a scheduler hiccup of 0.1 s moves a round by 15%):

- *source* (file -> topic): a raw confluent-kafka ``Producer`` reading the file in 1 MiB chunks
  and producing each line (the physical limit, bench_raw_kafka's fair producer);
  Kopycat's FileStreamSource task under ``SourceTaskRunner`` (``Bounds(max_records=N)``);
  Kafka Connect's own ``FileStreamSource`` (``batch.size`` 2000, its default) in a
  ``ConnectStandalone`` JVM started from the Maven Central jars (include/jars/connect-runtime).
- *sink* (topic -> file): the fair raw ``Consumer`` of bench_raw_kafka (consume only, no file);
  Kopycat's FileStreamSink task under ``SinkTaskRunner`` (``Bounds(end_offsets=...)``); Kafka
  Connect's ``FileStreamSink``. All three read the same topic (filled untimed first), so they
  see the same batches on the log.

The six movers take turns for ``--rounds`` rounds (``bench.common.median_rounds``): each one's
median round counts and its spread is printed. Goals: source >= 0.8x and sink >= 0.6x of the raw
anchor, both >= 1.0x Kafka Connect.

Both engines use StringConverter for keys and values. How each time is taken:

- raw: after the client is made (producer id asked for, metadata fetched, partitions assigned)
  to the last delivery (``flush``) / the Nth record;
- Kopycat: around ``runner.run()`` (client creation, task start and the final commit, flush
  and fsync included); ``duration_s`` is the runner's own clock (RunSummary). The ratios to the
  raw anchors and to Kafka Connect's steady rate are over Kopycat's copy, ``duration_s`` less
  ``start_s`` (client made, offsets read, task started), timed from the point the raw clocks
  start; the launch->done ratio is over the whole run;
- Kafka Connect *launch->done*: JVM launch until the topic's end offset (source) or the file's
  size (sink) says all N records are there, polled every 0.2 s; *steady*: from the
  first poll that saw a record to that point. JVM start (launch until ``GET /`` answers 200) is
  shown on its own. The goal ratio against Kafka Connect is read against its steady rate: it
  leaves out the JVM's and the herder's start-up, so it favours Kafka Connect.

Each mover's CPU (user + system, all threads, from /proc) is shown too: on two cores shared
with other work, records per CPU second move less with the load than records/s do (the
broker's CPU is in neither). Peak RSS: of this process during each raw and Kopycat run (VmHWM,
reset before it), and of the Kafka Connect JVM (its VmHWM just before it is stopped).
``python -m bench file_pipeline --profile [--records N]`` runs the two Kopycat tasks under cProfile
instead and prints where their time goes.
"""

from __future__ import annotations

import contextlib
import cProfile
import filecmp
import io
import os
import pstats
import shutil
import tempfile
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import AdminClient

from bench.bench_raw_kafka import RAW_PRODUCER, new_topic, raw_consume, ready_producer, warm_up
from bench.common import (
    BenchResult,
    Span,
    check_count,
    cpu_seconds,
    delete_topic,
    median_rounds,
    parse_into,
    print_results,
    rounds_lines,
    shared_broker,
    spread_of,
    vm_hwm_mib,
)
from bench.kafka_connect_standalone import log_tail, rest_answers, standalone
from kopycat.api.records import TopicPartition
from kopycat.connectors.files.filestream_sink import FileStreamSinkConnector
from kopycat.connectors.files.filestream_source import FileStreamSourceConnector
from kopycat.runtime.bounds import Bounds
from kopycat.runtime.source_produce import produce_when_room
from kopycat.runtime.task_factory import build_sink_runner, build_source_runner
from kopycat.runtime.task_parts import TaskId
from kopycat.storage.offset_backing_store import MemoryOffsetStore

RECORDS = 4_000_000  # the default of --records: >= 2 s a round for the fastest mover (see the docstring)
LINE_BYTES = 100
ROUNDS = 3
RAW_GOALS = {"source": 0.8, "sink": 0.6}  # of the fair raw producer / consumer (bench_raw_kafka)
KAFKA_CONNECT_GOAL = 1.0

STRING_CONVERTER = "org.apache.kafka.connect.storage.StringConverter"
CONVERTERS = {"key.converter": STRING_CONVERTER, "value.converter": STRING_CONVERTER}
KAFKA_FILE_SOURCE = "org.apache.kafka.connect.file.FileStreamSourceConnector"
KAFKA_FILE_SINK = "org.apache.kafka.connect.file.FileStreamSinkConnector"
POLL_S = 0.2
TIMEOUT_S = 900.0


@dataclass(frozen=True)
class Measure:
    """One mover's copy of ``records`` records: its times, and what else was seen.

    ``cpu_s`` is the CPU (user + system, every thread) the mover's process used over
    ``wall_s``; ``steady_*`` cover Kafka Connect's span from the first record seen to the end.
    """

    mover: str
    wall_s: float
    records: int
    cpu_s: float | None = None
    rss_mib: float | None = None
    load: float = 0.0                  # 1-minute load average when it ended
    duration_s: float | None = None    # Kopycat: RunSummary.duration_s
    start_s: float | None = None       # Kafka Connect: launch -> REST GET / answers 200
    steady_s: float | None = None      # Kafka Connect: first record seen -> done
    steady_cpu_s: float | None = None
    walls: tuple[float, ...] = ()      # every round's wall time (bench.common.median_rounds)
    copy_s: float | None = None        # Kopycat: duration_s less RunSummary.start_s (its copy alone)

    @property
    def rate(self) -> float:
        return self.records / self.wall_s

    @property
    def copy_rate(self) -> float:
        """Kopycat's copy alone, timed from where the raw anchors' clocks start (the client made and
        ready); the whole run's rate for a mover without it."""
        return self.records / (self.copy_s or self.wall_s)

    @property
    def spread(self) -> float | None:
        return spread_of(self)

    @property
    def steady_rate(self) -> float:
        return self.records / (self.steady_s or self.wall_s)

    @property
    def cpu_rate(self) -> float | None:
        """Records per CPU second of the mover's own process (the broker's work is not in it)."""
        return self.records / self.cpu_s if self.cpu_s else None

    @property
    def steady_cpu_rate(self) -> float | None:
        return self.records / self.steady_cpu_s if self.steady_cpu_s else self.cpu_rate


class _Span(Span):
    """A :class:`Span` that turns into this bench's :class:`Measure`."""

    def measure(self, mover: str, records: int, *, wall_s: float | None = None, **more: Any) -> Measure:
        return Measure(mover, wall_s or self.wall_s, records, cpu_s=self.cpu_s, rss_mib=self.rss_mib,
                       load=_load(), **more)


# ------------------------------------------------------------------ input and topics


def write_lines(path: Path, records: int) -> None:
    """``records`` distinct lines of LINE_BYTES ASCII bytes, each ending in a newline."""
    filler = ("abcdefghijklmnopqrstuvwxyz0123456789" * 3)[:LINE_BYTES - 9]
    with path.open("wb") as out:
        for start in range(0, records, 100_000):
            out.write("".join(f"{i:08d} {filler}\n"
                              for i in range(start, min(start + 100_000, records))).encode())


def _load() -> float:
    return os.getloadavg()[0]


# ------------------------------------------------------------------ raw anchors


def raw_produce_lines(bootstrap: str, topic: str, path: Path, records: int) -> Measure:
    """Read the file in 1 MiB chunks and produce each line: the source side's physical limit
    (bench_raw_kafka's fair producer: Kopycat's settings, metadata fetched before the clock)."""
    producer = ready_producer(bootstrap, topic)
    send, poll = producer.produce, producer.poll
    sent, rest = 0, b""
    with _Span() as span, path.open("rb") as source:
        while chunk := source.read(1 << 20):
            lines = (rest + chunk).split(b"\n")
            rest = lines.pop()
            pending = iter(lines)
            while True:
                try:
                    for line in pending:
                        send(topic, line)
                    break
                except BufferError:  # a busy broker filled the local queue: wait for room, as Kopycat does
                    produce_when_room(producer, (topic, line), RAW_PRODUCER)
            sent += len(lines)
            poll(0)
        if producer.flush(120) != 0:
            raise RuntimeError("raw producer left records undelivered")
    check_count("raw producer sent", sent, records)
    return span.measure("raw confluent-kafka Producer", records)


def raw_consume_lines(bootstrap: str, topic: str, records: int) -> Measure:
    """bench_raw_kafka's fair consumer (assigned, batches, no file): the sink side's physical limit."""
    measure = raw_consume(bootstrap, topic, records)
    return Measure(measure.mover, measure.wall_s, records, cpu_s=measure.cpu_s, rss_mib=measure.rss_mib, load=_load())


# ------------------------------------------------------------------ Kopycat


def _worker(bootstrap: str) -> dict[str, str]:
    return {"bootstrap.servers": bootstrap, "offset.flush.interval.ms": "60000", **CONVERTERS}


def kopycat_source(bootstrap: str, path: Path, topic: str, records: int,
                   profiler: AbstractContextManager[Any] | None = None) -> Measure:
    """Kopycat's FileStreamSource task, one run of exactly ``records`` records."""
    name = f"bench-file-source-{uuid.uuid4().hex[:8]}"
    props = {"name": name, "connector.class": KAFKA_FILE_SOURCE, "file": str(path),
             "topic": topic, "batch.size": "2000", **CONVERTERS}
    connector = FileStreamSourceConnector()
    connector.start(props)
    [task_props] = connector.task_configs(1)
    runner = build_source_runner(TaskId(name, 0), connector.task_class(), task_props, props,
                                 _worker(bootstrap), MemoryOffsetStore(),
                                 Bounds(max_records=records))
    with _Span() as span, profiler or contextlib.nullcontext():
        summary = runner.run()
    connector.stop()
    check_count("Kopycat source records", summary.records, records)
    return span.measure("Kopycat FileStreamSource", records, duration_s=summary.duration_s,
                        copy_s=summary.duration_s - summary.start_s)


def kopycat_sink(bootstrap: str, topic: str, out: Path, records: int,
                 profiler: AbstractContextManager[Any] | None = None) -> Measure:
    """Kopycat's FileStreamSink task, from the start of ``topic`` to offset ``records``."""
    name = f"bench-file-sink-{uuid.uuid4().hex[:8]}"
    props = {"name": name, "connector.class": KAFKA_FILE_SINK, "file": str(out), "topics": topic,
             **CONVERTERS}
    connector = FileStreamSinkConnector()
    connector.start(props)
    [task_props] = connector.task_configs(1)
    bounds = Bounds(end_offsets={TopicPartition(topic, 0): records})
    runner = build_sink_runner(TaskId(name, 0), connector.task_class(), task_props, props,
                               _worker(bootstrap), bounds, assignment=[TopicPartition(topic, 0)])
    with _Span() as span, profiler or contextlib.nullcontext():
        summary = runner.run()
    connector.stop()
    check_count("Kopycat sink records", summary.records, records)
    check_count(f"bytes in {out}", out.stat().st_size, records * (LINE_BYTES + 1))
    return span.measure("Kopycat FileStreamSink", records, duration_s=summary.duration_s,
                        copy_s=summary.duration_s - summary.start_s)


# ------------------------------------------------------------------ Kafka Connect


def kafka_connect(bootstrap: str, mover: str, connector: Mapping[str, str],
                  progress: Callable[[], int], records: int) -> Measure:
    """Launch Kafka Connect with ``connector``; poll ``progress`` (records done) to ``records``."""
    workdir = Path(tempfile.mkdtemp(prefix="kopycat-bench-connect-"))
    try:
        with standalone(bootstrap, CONVERTERS, connector, workdir) as (process, port):
            launched = time.perf_counter()
            start_s = first_s = first_cpu = None
            while (done := progress()) < records:
                now = time.perf_counter() - launched
                if process.poll() is not None or now > TIMEOUT_S:
                    raise RuntimeError(f"Kafka Connect ({mover}) did {done:,} of {records:,} "
                                       f"records in {now:.0f} s (exit code {process.poll()}):\n"
                                       f"{log_tail(workdir)}")
                if start_s is None and rest_answers(port):
                    start_s = now
                if first_s is None and done > 0:
                    first_s, first_cpu = now, cpu_seconds(process.pid)
                time.sleep(POLL_S)
            wall = time.perf_counter() - launched
            cpu, rss = cpu_seconds(process.pid), vm_hwm_mib(process.pid)
        steady_cpu = cpu - first_cpu if cpu is not None and first_cpu is not None else None
        return Measure(f"Kafka Connect {mover}", wall, records, cpu_s=cpu, rss_mib=rss, load=_load(),
                       start_s=start_s, steady_s=wall - (first_s or 0.0), steady_cpu_s=steady_cpu)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def kafka_connect_source(bootstrap: str, path: Path, topic: str, records: int) -> Measure:
    """Kafka's FileStreamSource; done when the topic's end offset is ``records``."""
    watcher = Consumer({"bootstrap.servers": bootstrap, "group.id": uuid.uuid4().hex})
    partition = KafkaTopicPartition(topic, 0)
    try:
        return kafka_connect(bootstrap, "FileStreamSource", {
            "name": f"bench-kc-source-{uuid.uuid4().hex[:8]}", "connector.class": KAFKA_FILE_SOURCE,
            "tasks.max": "1", "file": str(path), "topic": topic, "batch.size": "2000"},
            lambda: int(watcher.get_watermark_offsets(partition, timeout=10)[1]), records)
    finally:
        watcher.close()


def kafka_connect_sink(bootstrap: str, topic: str, out: Path, records: int) -> Measure:
    """Kafka's FileStreamSink; done when the file holds ``records`` lines (its size says so)."""
    def lines() -> int:
        return out.stat().st_size // (LINE_BYTES + 1) if out.exists() else 0

    return kafka_connect(bootstrap, "FileStreamSink", {
        "name": f"bench-kc-sink-{uuid.uuid4().hex[:8]}", "connector.class": KAFKA_FILE_SINK,
        "tasks.max": "1", "file": str(out), "topics": topic}, lines, records)


# ------------------------------------------------------------------ report


def _num(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def _row(label: str, measure: Measure, *, steady: bool = False) -> str:
    wall, cpu = ((measure.steady_s, measure.steady_cpu_s) if steady
                 else (measure.wall_s, measure.cpu_s))
    rate, cpu_rate = ((measure.steady_rate, measure.steady_cpu_rate) if steady
                      else (measure.rate, measure.cpu_rate))
    return (f"  {label:<46} {rate:>10,.0f} {_num(wall, '.2f'):>8} {_num(cpu, '.1f'):>7} "
            f"{_num(cpu_rate, ',.0f'):>10} {_num(measure.rss_mib, ',.0f'):>8} {measure.load:>5.1f}")


def _ratio(kopycat: Measure, anchor_rate: float, anchor_cpu_rate: float | None) -> str:
    cpu = (f", per CPU s {kopycat.cpu_rate / anchor_cpu_rate:.2f}"
           if kopycat.cpu_rate and anchor_cpu_rate else "")
    return f"{kopycat.copy_rate / anchor_rate:.2f}{cpu}"


def table(title: str, raw: Measure, kopycat: Measure, connect: Measure, raw_goal: float) -> str:
    """One direction: the three movers (Kafka Connect twice: from launch, and steady) and ratios.

    records/s is over wall time; rec/CPU-s over the CPU the mover's own process used.
    """
    header = (f"{title}: {raw.records:,} lines x {LINE_BYTES} B, one task\n"
              f"  {'mover':<46} {'records/s':>10} {'wall s':>8} {'CPU s':>7} {'rec/CPU-s':>10} "
              f"{'RSS MiB':>8} {'load':>5}")
    rows = [_row(raw.mover, raw), _row(kopycat.mover, kopycat),
            _row(f"{connect.mover}, launch->done", connect),
            _row(f"{connect.mover}, steady", connect, steady=True)]
    start = None if kopycat.duration_s is None or kopycat.copy_s is None else kopycat.duration_s - kopycat.copy_s
    notes = (f"  Kopycat RunSummary.duration_s {_num(kopycat.duration_s, '.2f')} s, of which start "
             f"{_num(start, '.2f')} s (its ratios are over the rest, {kopycat.copy_rate:,.0f} records/s); "
             f"Kafka Connect JVM up (GET / 200) after {_num(connect.start_s, '.1f')} s")
    ratios = (f"  Kopycat/raw {_ratio(kopycat, raw.rate, raw.cpu_rate)} (goal >= {raw_goal}); "
              f"Kopycat/Kafka Connect steady "
              f"{_ratio(kopycat, connect.steady_rate, connect.steady_cpu_rate)} "
              f"(goal >= {KAFKA_CONNECT_GOAL}); Kopycat/Kafka Connect launch->done "
              f"{_ratio(kopycat, connect.rate, connect.cpu_rate)}")
    return "\n".join([header, *rows, notes, ratios, *rounds_lines([raw, kopycat, connect])])


def _results(side: str, raw: Measure, kopycat: Measure, connect: Measure) -> list[BenchResult]:
    """The goal ratios over wall time, then the same over CPU time (where /proc gives it)."""
    spreads = {"spread": kopycat.spread}
    results = [BenchResult(f"file_{side}_vs_raw", kopycat.copy_rate, raw.rate, goal=RAW_GOALS[side],
                           anchor_spread=raw.spread, **spreads),
               BenchResult(f"file_{side}_vs_kafka_connect_steady", kopycat.copy_rate,
                           connect.steady_rate, goal=KAFKA_CONNECT_GOAL, anchor_spread=connect.spread, **spreads),
               BenchResult(f"file_{side}_vs_kafka_connect_launch", kopycat.rate, connect.rate)]
    if kopycat.cpu_rate and raw.cpu_rate and connect.steady_cpu_rate:
        results += [BenchResult(f"file_{side}_vs_raw_per_cpu", kopycat.cpu_rate, raw.cpu_rate,
                                unit="records/CPU-s"),
                    BenchResult(f"file_{side}_vs_kafka_connect_steady_per_cpu", kopycat.cpu_rate,
                                connect.steady_cpu_rate, unit="records/CPU-s")]
    return results


def _fresh_topic(admin: AdminClient, prefix: str, move: Callable[[str], Measure]) -> Measure:
    """``move`` into a new topic, deleted once the round is checked (rounds would fill the disk)."""
    topic = new_topic(admin, prefix)
    try:
        return move(topic)
    finally:
        delete_topic(admin, topic)


def _to_file(source: Path, out: Path, move: Callable[[Path], Measure]) -> Measure:
    """``move`` into a new ``out`` file, which must then equal the input file."""
    out.unlink(missing_ok=True)
    measure = move(out)
    if not filecmp.cmp(source, out, shallow=False):
        raise RuntimeError(f"{out} differs from the input file")
    return measure


@dataclass(frozen=True)
class Options:
    records: int = RECORDS
    profile: bool = False
    rounds: int = ROUNDS


def parse_options(argv: Sequence[str]) -> Options:
    """``--records N`` (default 4,000,000, a tenth under ``--quick``), ``--rounds N`` (default 3)
    and ``--profile`` (the cProfile report instead)."""
    return parse_into(Options, argv, bench="file_pipeline", doc=__doc__,
                      size=("--records", RECORDS, "lines in the file (records per round of every mover)"),
                      switch=("--profile", "run the Kopycat source and sink under cProfile instead of the bench"))


def run(argv: Sequence[str] = ()) -> list[BenchResult]:
    """The six movers taking turns (``--rounds N``, default 3); each one's median round counts.
    With ``--profile``, the cProfile report of the two Kopycat tasks instead (no results)."""
    options = parse_options(argv)
    records = options.records
    if options.profile:
        print(profile(records), flush=True)
        return []
    bootstrap = shared_broker().bootstrap_servers
    admin = AdminClient({"bootstrap.servers": bootstrap})
    workdir = Path(tempfile.mkdtemp(prefix="kopycat-bench-files-"))
    try:
        source = workdir / "input.txt"
        write_lines(source, records)
        warm_up(bootstrap, admin)
        filled = new_topic(admin, "bench-file-raw")
        raw_produce_lines(bootstrap, filled, source, records)  # untimed: what every sink round reads
        movers: list[Callable[[], Measure]] = [
            lambda: _fresh_topic(admin, "bench-file-raw", lambda t: raw_produce_lines(bootstrap, t, source, records)),
            lambda: raw_consume_lines(bootstrap, filled, records),
            lambda: _fresh_topic(admin, "bench-file-kopycat",
                                 lambda t: kopycat_source(bootstrap, source, t, records)),
            lambda: _to_file(source, workdir / "kopycat.out",
                             lambda out: kopycat_sink(bootstrap, filled, out, records)),
            lambda: _fresh_topic(admin, "bench-file-kc", lambda t: kafka_connect_source(bootstrap, source, t, records)),
            lambda: _to_file(source, workdir / "kafka-connect.out",
                             lambda out: kafka_connect_sink(bootstrap, filled, out, records))]
        found = median_rounds(movers, options.rounds)
        delete_topic(admin, filled)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    raw, kopycat, connect = found[0:2], found[2:4], found[4:6]
    results = []
    for index, (title, side) in enumerate((("file -> Kafka (source)", "source"),
                                           ("Kafka -> file (sink)", "sink"))):
        print(table(title, raw[index], kopycat[index], connect[index], RAW_GOALS[side]), flush=True)
        results += _results(side, raw[index], kopycat[index], connect[index])
    return results


# ------------------------------------------------------------------ profile


def _top(profiler: cProfile.Profile, sort: str, count: int = 15) -> str:
    text = io.StringIO()
    pstats.Stats(profiler, stream=text).sort_stats(sort).print_stats(count)
    return text.getvalue()


def profile(records: int) -> str:
    """Both Kopycat tasks once under cProfile: the top functions by cumulative and own time."""
    bootstrap = shared_broker().bootstrap_servers
    admin = AdminClient({"bootstrap.servers": bootstrap})
    workdir = Path(tempfile.mkdtemp(prefix="kopycat-bench-files-"))
    report = []
    try:
        source = workdir / "input.txt"
        write_lines(source, records)
        warm_up(bootstrap, admin)
        topic = new_topic(admin, "bench-file-profile")
        for label, measure_with in (
                ("source", lambda p: kopycat_source(bootstrap, source, topic, records, p)),
                ("sink", lambda p: kopycat_sink(bootstrap, topic, workdir / "out.txt", records, p))):
            profiler = cProfile.Profile()
            measure = measure_with(profiler)
            report.append(f"=== Kopycat {label} under cProfile: {measure.wall_s:.2f} s wall ===\n"
                          + _top(profiler, "cumulative") + _top(profiler, "tottime"))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return "\n".join(report)


if __name__ == "__main__":
    print_results(run)

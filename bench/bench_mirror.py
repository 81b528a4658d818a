"""One topic-partition mirrored, one task: Kopycat's MirrorSourceConnector against MirrorMaker 2's.

Issue #8: records/s per task of Kopycat's mirror against Kafka's own
``org.apache.kafka.connect.mirror.MirrorSourceConnector`` (connect-mirror 4.1.1 from Maven
Central, include/jars/connect-runtime) on the same broker in the same run; goal >= 1.0x.

One broker (the shared one) is both clusters: it is mirrored into itself, source alias ``src``,
target alias ``dst``, so remote topics are ``src.<topic>`` and the offset syncs go to
``mm2-offset-syncs.dst.internal`` on the same broker. Every copy gets a fresh source topic of one
partition holding the same N records (2,000,000 by default, the issue's size; ``--records`` to
change): key ``key-<n>`` (12 B), value 100 B, produced untimed with bench_raw_kafka's producer
settings. Its remote topic and the offset syncs topic are made beforehand for both engines, so
neither clock holds topic creation. Both run with MM2's defaults where they share a key, set
explicitly: ``tasks.max=1``, ``emit.offset-syncs.enabled=true``, ``offset.lag.max=100``,
``consumer.max.poll.records=500``, ByteArrayConverter for keys, values and headers. The movers:

- *raw*: bench_raw_kafka's fair consumer (assigned, batches, Kopycat's settings) reading N
  records: the physical limit of the read side;
- *Kopycat*: planned (``plan_bounded_run``, untimed: Airflow's plan task) and run as an Airflow
  copy task runs it (``run_planned_task``, offsets in a ``connect-offsets``-style topic made
  beforehand), timed from the call until the Nth record landed in the remote topic;
- *MM2*: a Kafka Connect worker (``LocalKafkaConnect``, distributed mode, Kafka's JVM options
  with C2, not the tests' C1-only) started untimed; timed from the connector's ``POST`` until
  the Nth record landed. Once *cold* first (the JVM's C2 compiler competes with the copy for the
  two cores), then *warm* in the rounds, a new connector each time in the same worker (the copy
  path already compiled: how a long-lived MM2 runs). The goal ratio is read against warm MM2.

Raw, Kopycat and warm MM2 take turns for ``--rounds`` rounds (``bench.common.median_rounds``);
each one's median round counts and its spread is printed. Both copies must be complete: each
remote topic's end offset equals N (and Kopycat's RunSummary counts N), or the bench fails.
"landed" times come from a thread polling the remote topic's end offset every 0.2 s for both
engines alike, from the same point (the run call / the POST): *start-up* is the time to the first
record there, *steady* the rate from that first record to the Nth; both are printed for both
engines. CPU is each engine's process (all threads; the broker's is in neither); peak RSS is this
process's during Kopycat's run (VmHWM, reset before) and the worker JVM's at the end.
``python -m bench mirror --profile [--records N]`` runs Kopycat's task under cProfile instead
(CPU µs per record).
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from confluent_kafka import Consumer, KafkaException
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from bench.bench_raw_kafka import new_topic, produce_records, raw_consume, warm_up
from bench.common import (
    BenchResult,
    Measure,
    Span,
    check_count,
    cpu_seconds,
    delete_topic,
    median_rounds,
    parse_into,
    print_results,
    profiled,
    rounds_lines,
    shared_broker,
    spread_of,
    vm_hwm_mib,
)
from bench.kafka_connect_standalone import connect_libs
from kopycat.dev.kafka_connect import LocalKafkaConnect
from kopycat.runtime.bounded_plan import PlannedTask, plan_bounded_run
from kopycat.runtime.bounded_run import run_planned_task
from kopycat.runtime.bounds import RunSummary
from kopycat.storage.kafka_offset_store import KafkaOffsetStore

RECORDS = 2_000_000
VALUE_BYTES = 100
GOAL_MM2 = 1.0
SOURCE_ALIAS, TARGET_ALIAS = "src", "dst"
OFFSET_SYNCS_TOPIC = f"mm2-offset-syncs.{TARGET_ALIAS}.internal"
MIRROR_SOURCE = "org.apache.kafka.connect.mirror.MirrorSourceConnector"
BYTE_ARRAY = "org.apache.kafka.connect.converters.ByteArrayConverter"
# What both engines run with (MM2's defaults, written out so a changed default shows here).
SHARED = {"tasks.max": "1", "source.cluster.alias": SOURCE_ALIAS, "target.cluster.alias": TARGET_ALIAS,
          "emit.offset-syncs.enabled": "true", "offset.lag.max": "100",
          "consumer.max.poll.records": "500", "replication.factor": "1",
          "offset-syncs.topic.replication.factor": "1", "key.converter": BYTE_ARRAY,
          "value.converter": BYTE_ARRAY, "header.converter": BYTE_ARRAY}
# What bin/kafka-run-class.sh gives a Connect worker's JVM (LocalKafkaConnect sets the heap, G1).
KAFKA_JVM_OPTIONS = ("-server", "-XX:MaxGCPauseMillis=20", "-XX:InitiatingHeapOccupancyPercent=35",
                     "-XX:+ExplicitGCInvokesConcurrent")
MM2_VERSION = "4.1.1"  # connect-mirror, as include/jars/connect-runtime/pom.xml fetches it
POLL_S = 0.2
TIMEOUT_S = 900.0


@dataclass(frozen=True)
class Options:
    records: int = RECORDS
    profile: bool = False
    rounds: int = 3


def parse_options(argv: Sequence[str]) -> Options:
    """``--records N`` (default 2,000,000), ``--rounds N`` and ``--profile`` (the cProfile report instead)."""
    return parse_into(Options, argv, bench="mirror", doc=__doc__,
                      size=("--records", RECORDS, "records in each source topic"),
                      switch=("--profile", "run Kopycat's mirror task under cProfile instead of the bench"))


# ------------------------------------------------------------------ topics


def produce_keyed(bootstrap: str, topic: str, records: int) -> None:
    """N records, key ``key-<n>`` (12 B) and a 100 B value: what both engines copy."""
    filler = b"v" * (VALUE_BYTES - 8)
    produce_records(bootstrap, topic, ((b"key-%08d" % n, b"%08d" % n + filler) for n in range(records)),
                    "fill " + topic)


class EndOffsetWatch:
    """Polls a topic-partition's end offset every POLL_S on its own thread; notes when it
    first moved and when it reached ``target``, in seconds since :meth:`start`.

    A topic that does not exist yet counts as end offset 0.
    """

    def __init__(self, bootstrap: str, topic: str, target: int) -> None:
        self.target = target
        self.end = 0
        self.first_s: float | None = None
        self.done_s: float | None = None
        self._partition = KafkaTopicPartition(topic, 0)
        self._consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": uuid.uuid4().hex})
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name=f"watch-{topic}", daemon=True)

    def start(self) -> EndOffsetWatch:
        self._started = time.perf_counter()
        self._thread.start()
        return self

    def end_offset(self) -> int:
        try:
            return int(self._consumer.get_watermark_offsets(self._partition, timeout=5, cached=False)[1])
        except KafkaException:  # not created yet
            return 0

    def _watch(self) -> None:
        while not self._stop.is_set() and self.done_s is None:
            self.end = self.end_offset()
            now = time.perf_counter() - self._started
            if self.end > 0 and self.first_s is None:
                self.first_s = now
            if self.end >= self.target:
                self.done_s = now
                return
            self._stop.wait(POLL_S)

    def wait(self, timeout_s: float) -> bool:
        """Until the target is reached (True) or ``timeout_s`` passed (False)."""
        self._thread.join(timeout_s)
        return self.done_s is not None

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self._consumer.close()


@dataclass(frozen=True)
class Copy:
    """One engine's copy: its Measure, and when records landed in the remote topic."""

    measure: Measure
    first_s: float | None   # start -> first record in the remote topic
    landed_s: float | None  # start -> Nth record in the remote topic
    walls: tuple[float, ...] = ()  # every round's wall time (bench.common.median_rounds)

    @property
    def wall_s(self) -> float:
        return self.measure.wall_s

    @property
    def steady_rate(self) -> float | None:
        """Records/s from the first record landed to the last."""
        if self.first_s is None or self.landed_s is None or self.landed_s <= self.first_s:
            return None
        return self.measure.count / (self.landed_s - self.first_s)


# ------------------------------------------------------------------ the anchor


# ------------------------------------------------------------------ Kopycat


def mirror_props(name: str, bootstrap: str, topic: str) -> dict[str, str]:
    return {"name": name, "connector.class": MIRROR_SOURCE, "source.cluster.bootstrap.servers": bootstrap,
            "target.cluster.bootstrap.servers": bootstrap, "topics": topic, **SHARED}


def plan_kopycat(bootstrap: str, topic: str) -> tuple[dict[str, str], dict[str, str], PlannedTask]:
    """Connector props, worker props and the one planned task; the offsets topic made (untimed)."""
    run = uuid.uuid4().hex[:8]
    props = mirror_props(f"bench-mirror-{run}", bootstrap, topic)
    worker = {"bootstrap.servers": bootstrap, "offset.storage.topic": f"bench-mirror-offsets-{run}",
              "offset.storage.replication.factor": "1", "offset.storage.partitions": "5",
              "offset.flush.interval.ms": "60000"}
    store = KafkaOffsetStore.from_config(worker)
    store.start()
    store.stop()
    [planned] = plan_bounded_run(props, worker)
    return props, worker, planned


def _checked(summary: RunSummary, records: int) -> RunSummary:
    if summary.error is not None:
        raise RuntimeError(f"Kopycat's mirror task failed: {summary.error}")
    check_count("records Kopycat's mirror task copied", summary.records, records)
    return summary


def kopycat_mirror(bootstrap: str, topic: str, records: int) -> Copy:
    """The one planned task's bounded run, in this thread: timed as MM2 is, from the call until the
    Nth record landed in the remote topic (the run's caught-up wait and final commit come after;
    RunSummary.duration_s shows the whole run). CPU and peak RSS are the whole call's."""
    props, worker, planned = plan_kopycat(bootstrap, topic)
    watch = EndOffsetWatch(bootstrap, f"{SOURCE_ALIAS}.{topic}", records)
    try:
        with Span() as span:
            watch.start()
            summary = run_planned_task(props, planned, worker)
        watch.wait(TIMEOUT_S)
        check_count(f"end offset of {SOURCE_ALIAS}.{topic} (Kopycat's copy)", watch.end_offset(), records)
    finally:
        watch.close()
    _checked(summary, records)
    assert watch.done_s is not None
    return Copy(Measure("Kopycat MirrorSourceConnector", records, watch.done_s, span.cpu_s, span.rss_mib,
                        summary.duration_s), watch.first_s, watch.done_s)


# ------------------------------------------------------------------ MirrorMaker 2


def mm2_copy(worker: LocalKafkaConnect, bootstrap: str, topic: str, records: int, mover: str) -> Copy:
    """One MirrorSourceConnector on ``topic``, from its POST to N records landed; then deleted."""
    pid = worker.pid
    assert pid is not None
    name = f"bench-mm2-{uuid.uuid4().hex[:8]}"
    config = {**mirror_props(name, bootstrap, topic), "sync.topic.acls.enabled": "false"}
    watch = EndOffsetWatch(bootstrap, f"{SOURCE_ALIAS}.{topic}", records)
    try:
        cpu_before = cpu_seconds(pid)
        watch.start()
        worker.create_connector(name, config)
        if not watch.wait(TIMEOUT_S):
            raise RuntimeError(f"MM2 copied {watch.end:,} of {records:,} records to {SOURCE_ALIAS}.{topic} in "
                               f"{TIMEOUT_S:.0f} s; status {worker.connector_status(name)}\n{worker.log_tail()}")
        cpu_after, rss = cpu_seconds(pid), vm_hwm_mib(pid)
        time.sleep(1.0)  # a duplicate written after the Nth record would show now
        check_count(f"end offset of {SOURCE_ALIAS}.{topic} (MM2's copy)", watch.end_offset(), records)
        worker.delete_connector(name)
    finally:
        watch.close()
    cpu = cpu_after - cpu_before if cpu_after is not None and cpu_before is not None else None
    assert watch.done_s is not None
    return Copy(Measure(mover, records, watch.done_s, cpu, rss), watch.first_s, watch.done_s)


# ------------------------------------------------------------------ report


def _num(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def _row(measure: Measure, copy: Copy | None = None) -> str:
    cpu_rate = measure.count / measure.cpu_s if measure.cpu_s else None
    landed = "" if copy is None else (f" {_num(copy.first_s, '.2f'):>7} {_num(copy.landed_s, '.2f'):>8} "
                                      f"{_num(copy.steady_rate, ',.0f'):>10}")
    return (f"  {measure.mover:<48} {measure.rate:>10,.0f} {measure.wall_s:>8.2f} {_num(measure.cpu_s, '.1f'):>7} "
            f"{_num(cpu_rate, ',.0f'):>10} {_num(measure.rss_mib, ',.0f'):>8}{landed}")


def _ratios(label: str, kopycat: Copy, mm2: Copy, goal: str = "") -> str:
    """Kopycat against one MM2 run: over wall time (the goal), CPU time and the steady span."""
    k, m = kopycat.measure, mm2.measure
    per_cpu = f", per CPU s {m.cpu_s / k.cpu_s:.2f}" if k.cpu_s and m.cpu_s else ""
    steady = (f", steady (first->last record landed) {kopycat.steady_rate / mm2.steady_rate:.2f}"
              if kopycat.steady_rate and mm2.steady_rate else "")
    return f"  Kopycat/MM2 {label} {k.rate / m.rate:.2f}{goal}{per_cpu}{steady}"


def table(raw: Measure, kopycat: Copy, cold: Copy, warm: Copy) -> str:
    k = kopycat.measure
    return "\n".join([
        (f"mirror (one broker into itself, {SOURCE_ALIAS} -> {TARGET_ALIAS}): {k.count:,} records, "
         f"12 B keys, {VALUE_BYTES} B values, 1 partition, 1 task, offset syncs on"),
        (f"  {'mover':<48} {'records/s':>10} {'wall s':>8} {'CPU s':>7} {'rec/CPU-s':>10} {'RSS MiB':>8} "
         f"{'first s':>7} {'landed s':>8} {'steady r/s':>10}"),
        _row(raw), _row(k, kopycat), _row(cold.measure, cold), _row(warm.measure, warm),
        f"  Kopycat RunSummary.duration_s {_num(k.duration_s, '.2f')} s; Kopycat/raw {k.rate / raw.rate:.2f}",
        _ratios("warm", kopycat, warm, f" (goal >= {GOAL_MM2})"), _ratios("cold", kopycat, cold),
        (f"  start-up (start -> first record landed): Kopycat {_num(kopycat.first_s, '.2f')} s, "
         f"MM2 warm {_num(warm.first_s, '.2f')} s, MM2 cold {_num(cold.first_s, '.2f')} s"),
        (f"  steady (first -> last record landed): Kopycat {_num(kopycat.steady_rate, ',.0f')} records/s, "
         f"MM2 warm {_num(warm.steady_rate, ',.0f')} records/s, MM2 cold {_num(cold.steady_rate, ',.0f')} records/s"),
        *rounds_lines([raw]), *rounds_lines([kopycat, warm], label=lambda copy: copy.measure.mover)])


def results(raw: Measure, kopycat: Copy, cold: Copy, warm: Copy) -> list[BenchResult]:
    """The anchor, Kopycat against warm MM2 (the goal; its CPU too) and cold MM2, and raw."""
    k, m = kopycat.measure, warm.measure
    spreads = {"spread": spread_of(kopycat)}
    found = [BenchResult("mirror_raw_consume", raw.rate, spread=raw.spread),
             BenchResult("mirror_vs_mm2_warm", k.rate, m.rate, goal=GOAL_MM2, anchor_spread=spread_of(warm), **spreads),
             BenchResult("mirror_vs_mm2_cold", k.rate, cold.measure.rate, **spreads),
             BenchResult("mirror_vs_raw_consume", k.rate, raw.rate, anchor_spread=raw.spread, **spreads)]
    if kopycat.steady_rate and warm.steady_rate:
        found.append(BenchResult("mirror_vs_mm2_warm_steady", kopycat.steady_rate, warm.steady_rate, goal=GOAL_MM2))
    if k.cpu_s and m.cpu_s:
        found.append(BenchResult("mirror_vs_mm2_warm_per_cpu", k.count / k.cpu_s, m.count / m.cpu_s,
                                 unit="records/CPU-s"))
    return found


def source_topic(admin: AdminClient, bootstrap: str, engine: str, records: int) -> str:
    """A source topic of N records, and its remote topic and the offset syncs topic made beforehand:
    neither engine's clock holds topic creation."""
    topic = new_topic(admin, f"bench-mirror-{engine}")
    produce_keyed(bootstrap, topic, records)
    made = admin.create_topics([NewTopic(f"{SOURCE_ALIAS}.{topic}", num_partitions=1),
                                NewTopic(OFFSET_SYNCS_TOPIC, num_partitions=1)])
    made[f"{SOURCE_ALIAS}.{topic}"].result(30)
    try:
        made[OFFSET_SYNCS_TOPIC].result(30)
    except KafkaException:  # made by an earlier round
        pass
    return topic


def copy_round(admin: AdminClient, bootstrap: str, engine: str, records: int, copy: Callable[[str], Copy]) -> Copy:
    """One engine's copy of a fresh source topic; both topics deleted after it is checked."""
    topic = source_topic(admin, bootstrap, engine, records)
    try:
        return copy(topic)
    finally:
        delete_topic(admin, f"{SOURCE_ALIAS}.{topic}")
        delete_topic(admin, topic)


def run(argv: Sequence[str] = ()) -> list[BenchResult]:
    """The bench (``python -m bench mirror [--records N] [--rounds N]``); ``--profile``: cProfile report.

    MM2's cold copy runs once first (the worker's JVM compiling the copy path); then raw, Kopycat
    and warm MM2 take turns (``bench.common.median_rounds``), each round on fresh topics."""
    options = parse_options(argv)
    if options.profile:
        print(profile(options.records), flush=True)
        return []
    records = options.records
    bootstrap = shared_broker().bootstrap_servers
    admin = AdminClient({"bootstrap.servers": bootstrap})
    warm_up(bootstrap, admin)
    raw_topic = new_topic(admin, "bench-mirror-raw")
    produce_keyed(bootstrap, raw_topic, records)
    connect_libs()  # fetched before the worker starts, which would not wait for them
    with LocalKafkaConnect(bootstrap, name="bench-mm2", heap="1g", jvm_options=KAFKA_JVM_OPTIONS) as worker:
        cold = copy_round(admin, bootstrap, "mm2-cold", records,
                          lambda t: mm2_copy(worker, bootstrap, t, records, f"MM2 {MM2_VERSION}, cold JVM"))
        raw, kopycat, warm = median_rounds([
            lambda: raw_consume(bootstrap, raw_topic, records),
            lambda: copy_round(admin, bootstrap, "kopycat", records, lambda t: kopycat_mirror(bootstrap, t, records)),
            lambda: copy_round(admin, bootstrap, "mm2-warm", records,
                               lambda t: mm2_copy(worker, bootstrap, t, records, f"MM2 {MM2_VERSION}, warm JVM"))],
            options.rounds)
    delete_topic(admin, raw_topic)
    print(table(raw, kopycat, cold, warm), flush=True)
    return results(raw, kopycat, cold, warm)


# ------------------------------------------------------------------ profile


def profile(records: int) -> str:
    """Kopycat's mirror task once, run in this thread (run_planned_task does) under cProfile."""
    bootstrap = shared_broker().bootstrap_servers
    admin = AdminClient({"bootstrap.servers": bootstrap})
    warm_up(bootstrap, admin)
    topic = source_topic(admin, bootstrap, "profile", records)
    produce_keyed(bootstrap, topic, records)
    props, worker, planned = plan_kopycat(bootstrap, topic)
    summary, report = profiled("Kopycat MirrorSourceConnector", lambda: run_planned_task(props, planned, worker),
                               records, top=30)
    _checked(summary, records)
    return report


if __name__ == "__main__":
    print_results(run)

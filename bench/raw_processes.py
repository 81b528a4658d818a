"""The raw client loops in one process and in several at once: how far the machine itself scales.

A ``tasks.max`` goal on two cores that the broker shares is only as reachable as the cores allow.
This runs the fair raw producer (or assigned consumer) of :mod:`bench.bench_raw_kafka` in N child
processes at the same moment, each with its share of the records (or partitions), and times them
from the common start to the last one's end: the same loop, the same client settings as Kopycat's,
no Python of ours between records. If two raw processes do not reach 1.3x one, no two tasks can.

Each child gets its clients ready (metadata, assignment), prints ``ready``, waits for ``go`` on its
stdin, runs, and prints its start, end and CPU seconds as JSON; the parent starts the clock when
every child is ready.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import repeat

from confluent_kafka import OFFSET_BEGINNING, Consumer
from confluent_kafka import TopicPartition as KafkaTopicPartition

from bench.bench_raw_kafka import CONSUME_BATCH, CONSUMER_SETTINGS, TIMEOUT_S, VALUE, produce_records
from bench.common import check_count, cpu_seconds

__all__ = ["Spread", "raw_consumers", "raw_producers"]


@dataclass(frozen=True)
class Spread:
    """N children's run: wall time from the common start to the last end, and their CPU seconds."""

    processes: int
    count: int
    wall_s: float
    cpu_s: float
    walls: tuple[float, ...] = ()
    """Every round's wall time when it ran several (bench.common.median_rounds)."""

    @property
    def rate(self) -> float:
        return self.count / self.wall_s


def raw_producers(bootstrap: str, topic: str, count: int, processes: int) -> Spread:
    """``count`` 100-byte records to ``topic`` (the partitioner spreads them), split over ``processes``."""
    shares = [count // processes + (index < count % processes) for index in range(processes)]
    return _run([["produce", bootstrap, topic, str(share)] for share in shares], count)


def raw_consumers(bootstrap: str, topic: str, ends: Sequence[int], processes: int) -> Spread:
    """Every record of ``topic`` (partition p holding ``ends[p]``), its partitions dealt over ``processes``."""
    groups = [list(range(len(ends)))[index::processes] for index in range(processes)]
    return _run([["consume", bootstrap, topic, ",".join(map(str, group)), str(sum(ends[p] for p in group))]
                 for group in groups if group], sum(ends))


def _run(arguments: list[list[str]], count: int) -> Spread:
    children = [subprocess.Popen([sys.executable, "-m", "bench.raw_processes", *args], stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
                for args in arguments]
    try:
        for child in children:
            assert child.stdout is not None
            if child.stdout.readline().strip() != "ready":
                raise RuntimeError(f"a raw child ({child.args}) did not get ready")
        for child in children:
            assert child.stdin is not None
            child.stdin.write("go\n")
            child.stdin.flush()
        reports = [json.loads(child.communicate(timeout=TIMEOUT_S)[0]) for child in children]
    finally:
        for child in children:
            child.kill()
    failed = [child.args for child in children if child.returncode != 0]
    if failed:
        raise RuntimeError(f"raw children failed: {failed}")
    check_count("records the raw children moved", sum(r["count"] for r in reports), count)
    wall_s = max(r["ended"] for r in reports) - min(r["started"] for r in reports)
    return Spread(len(children), count, wall_s, sum(r["cpu_s"] for r in reports))


def _produce(bootstrap: str, topic: str, count: int) -> dict[str, float]:
    started: list[float] = []

    def go() -> None:
        _await_go()
        started.append(time.time())

    measure = produce_records(bootstrap, topic, repeat((None, VALUE), count), ready=go)
    return {"started": started[0], "ended": started[0] + measure.wall_s, "cpu_s": measure.cpu_s or 0.0,
            "count": measure.count}


def _consume(bootstrap: str, topic: str, partitions: list[int], count: int) -> dict[str, float]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"raw-{os.getpid()}", **CONSUMER_SETTINGS})
    consumer.list_topics(topic, timeout=30)  # connected, metadata known: a task's start-up, not its copy
    consume, seen = consumer.consume, 0
    _await_go()
    started, cpu = time.time(), cpu_seconds() or 0.0
    consumer.assign([KafkaTopicPartition(topic, p, OFFSET_BEGINNING) for p in partitions])  # fetching starts now
    deadline = time.monotonic() + TIMEOUT_S
    while seen < count and time.monotonic() < deadline:
        seen += len(consume(num_messages=CONSUME_BATCH, timeout=1.0))
    ended = time.time()
    consumer.close()
    return {"started": started, "ended": ended, "cpu_s": (cpu_seconds() or 0.0) - cpu, "count": seen}


def _await_go() -> None:
    print("ready", flush=True)
    if sys.stdin.readline().strip() != "go":
        raise SystemExit("no go from the parent")


if __name__ == "__main__":
    role, bootstrap, topic, *rest = sys.argv[1:]
    if role == "produce":
        report = _produce(bootstrap, topic, int(rest[0]))
    else:
        report = _consume(bootstrap, topic, [int(p) for p in rest[0].split(",")], int(rest[1]))
    print(json.dumps(report), flush=True)

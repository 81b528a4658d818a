"""Peak memory of a sink run as the volume grows: FileStreamSink over 1M, 3M and 10M records.

Each size is a topic of two partitions with N records of 100 bytes (produced untimed), copied to a file
by one FileStreamSink task (``task.isolation=thread``, a bounded run to the end offsets, as an Airflow
copy task runs) in a child process of its own (``python -m bench.bench_sink_memory --child ...``), whose
peak RSS is its ``ru_maxrss`` (``os.wait4``: bench.common.run_child). The child checks N records in its
summary and N lines in the file. A sink that keeps nothing per record keeps a flat peak: the goal is
peak(10M) / peak(1M) <= 1.2. The 10M run is left out of ``--quick`` (which runs 100k and 300k).
"""

from __future__ import annotations

import os
import sys
import tempfile
import uuid
from collections.abc import Sequence
from pathlib import Path

from confluent_kafka.admin import AdminClient

from bench.bench_raw_kafka import fill_numbered, warm_up
from bench.common import QUICK_DIVISOR, BenchResult, check_count, delete_topic, run_child, scaled, shared_broker

SIZES = (1_000_000, 3_000_000, 10_000_000)
PARTITIONS = 2
GOAL_RATIO = 1.2
STRING = "org.apache.kafka.connect.storage.StringConverter"


def child(bootstrap: str, topic: str, out: Path, count: int) -> None:
    """In the child: copy ``topic`` to ``out`` with one FileStreamSink task; check the count."""
    from kopycat.embedded import Kopycat
    from kopycat.storage.offset_backing_store import MemoryOffsetStore

    worker = {"task.isolation": "thread", "key.converter": STRING, "value.converter": STRING}
    props = {"name": f"sink-memory-{uuid.uuid4().hex[:8]}", "connector.class": "FileStreamSink",
             "file": str(out), "topics": topic, "consumer.auto.offset.reset": "earliest"}
    with Kopycat(bootstrap, worker_props=worker, offset_store=MemoryOffsetStore()) as kc:
        summaries = kc.run_once(props)
    check_count("sink records", sum(s.records for s in summaries if s is not None), count)
    with out.open("rb") as written:
        check_count(f"lines in {out}", sum(c.count(b"\n") for c in iter(lambda: written.read(1 << 20), b"")),
                    count)


def sizes() -> list[int]:
    """1M, 3M, 10M; under ``--quick`` a tenth of the first two, without the 10M run."""
    quick = scaled(SIZES[0]) < SIZES[0]
    return [scaled(size) for size in SIZES[:2]] if quick else list(SIZES)


def run(argv: Sequence[str] = ()) -> list[BenchResult]:
    del argv
    broker = shared_broker()
    bootstrap = broker.bootstrap_servers
    admin = AdminClient({"bootstrap.servers": bootstrap})
    warm_up(bootstrap, admin)
    peaks: dict[int, float] = {}
    lines = ["=== FileStreamSink peak RSS as the volume grows (one task, a child process each) ===",
             f"  {'records':>11} {'peak RSS MiB':>13} {'wall s':>8} {'records/s':>11}"]
    with tempfile.TemporaryDirectory(prefix="bench-sink-memory-") as tmp:
        for count in sizes():
            topic = fill_numbered(bootstrap, admin, "bench-sink-memory", count, PARTITIONS, timeout_s=600.0)
            out = Path(tmp) / f"out-{count}.txt"
            done = run_child([sys.executable, "-m", "bench.bench_sink_memory", "--child", bootstrap, topic, str(out),
                              str(count)], dict(os.environ), Path(tmp) / "child.out", Path(tmp) / "child.err",
                             timeout_s=3600.0)
            if done.code != 0:
                raise RuntimeError(f"the sink child for {count:,} records exited with {done.code}: "
                                   f"{(Path(tmp) / 'child.err').read_text()[-2000:]}")
            delete_topic(admin, topic)
            out.unlink()
            peaks[count] = done.peak_rss_mib
            lines.append(f"  {count:>11,} {done.peak_rss_mib:>13.0f} {done.wall_s:>8.1f} {count / done.wall_s:>11,.0f}")
    first, last = min(peaks), max(peaks)
    lines.append(f"  peak({last:,}) / peak({first:,}) = {peaks[last] / peaks[first]:.2f} (goal <= {GOAL_RATIO})"
                 + ("" if last == SIZES[-1] else f" (--quick: sizes / {QUICK_DIVISOR}, no 10M run)"))
    print("\n".join(lines), flush=True)
    return []  # the table is the result: BenchResult's ratio line reads "goal >=", and this goal is "<="


if __name__ == "__main__" and sys.argv[1:2] == ["--child"]:
    child(sys.argv[2], sys.argv[3], Path(sys.argv[4]), int(sys.argv[5]))

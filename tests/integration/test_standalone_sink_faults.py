"""Kill -9 the standalone worker while an at-most-once sink copies a topic; prove nothing repeats.

``delivery.guarantee=at_most_once`` on a sink commits the consumer group past each batch before
``put`` sees it (:mod:`kopycat.runtime.delivery_guarantee`): a crash loses what was committed and
not yet on disk, and never writes a record twice. The sink is Kafka's ``FileStreamSink``, which
keeps no offsets of its own, so the group is all a restart has. The topic has one partition of
fixed-width lines whose value is their offset, so the file names exactly what was written, and
each kill is measured: lines on disk, the group's offset, and the lines between them (lost), at
most the batch ``put`` had when the kill came.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from pathlib import Path

import pytest
from confluent_kafka import Producer

from tests.support.kafka import committed_offsets, create_topic, produce_waiting
from tests.support.kills import kill_when
from tests.support.standalone import run_until, start_worker, write_props

pytestmark = [pytest.mark.integration, pytest.mark.timeout(2400)]

LINES = 3_000_000
KILLS = 6
BATCH = 5_000  # the sink runner's consumer batch: the most one put() is handed
LINE = re.compile(rb"line-(\d{7})")


@dataclass(frozen=True)
class Kill:
    """One SIGKILL: the line after the file's last, and the group's offset (where the next run starts)."""

    file_end: int
    committed: int

    @property
    def lost(self) -> int:
        return self.committed - self.file_end


def produce_lines(bootstrap: str, topic: str) -> None:
    """Line n at offset n of the topic's one partition."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "batch.size": 1 << 20,
                         "enable.idempotence": True})
    for n in range(LINES):
        produce_waiting(producer, topic, value=b"line-%07d" % n, partition=0)
        if n % 10_000 == 0:
            producer.poll(0)
    assert producer.flush(120) == 0


def written(path: Path, *, killed: bool = False) -> list[int]:
    """The file's lines as their numbers; every line must be whole. Right after a kill the last line
    may be torn (a killed ``writev``): it is left out, as the next start cuts it."""
    if not path.exists():
        return []
    data = path.read_bytes()
    if killed:
        data = data[:data.rfind(b"\n") + 1]
    assert not data or data.endswith(b"\n"), f"the file ends in a partial line: {data[-40:]!r}"
    lines = data.split(b"\n")[:-1]
    numbers = [int(match[1]) if (match := LINE.fullmatch(line)) else -1 for line in lines]
    assert -1 not in numbers, f"a malformed line at {numbers.index(-1)}: {lines[numbers.index(-1)]!r}"
    return numbers


def test_an_at_most_once_file_sink_killed_mid_copy_writes_no_record_twice(
        bootstrap_servers: str, topic_name: str, tmp_path: Path) -> None:
    create_topic(bootstrap_servers, topic_name, 1)
    produce_lines(bootstrap_servers, topic_name)
    out, log, name = tmp_path / "sink.txt", tmp_path / "worker.log", f"amo-{topic_name}"
    worker = write_props(tmp_path / "worker.properties", {
        "bootstrap.servers": bootstrap_servers, "offset.storage.file.filename": str(tmp_path / "offsets"),
        "offset.flush.interval.ms": "300", "value.converter": "org.apache.kafka.connect.storage.StringConverter"})
    connector = write_props(tmp_path / "connector.properties", {
        "name": name, "connector.class": "FileStreamSink", "topics": topic_name, "file": str(out),
        "delivery.guarantee": "at_most_once", "consumer.override.auto.offset.reset": "earliest",
        # the killed run's member holds the partition until its session times out (45 s by default)
        "consumer.override.session.timeout.ms": "6000"})

    def group_offset() -> int:
        return max(0, committed_offsets(bootstrap_servers, f"connect-{name}", topic_name, 1)[0])

    rng = random.Random(20261128)
    kills: list[Kill] = []
    for _ in range(KILLS):
        before = out.read_bytes().rfind(b"\n") + 1 if out.exists() else 0  # its size once the start cut a torn line
        process = start_worker(worker, connector, log)
        # started and writing, however slow the machine
        kill_when(process, lambda b=before: (out.stat().st_size if out.exists() else 0) != b, log, timeout_s=240,
                  poll_s=0.02, waiting_for="lines written by this run", after_s=rng.uniform(0.0, 0.3))
        lines = written(out, killed=True)
        kills.append(Kill(lines[-1] + 1 if lines else 0, group_offset()))

    mid_copy = [kill for kill in kills if 0 < kill.file_end < LINES]
    assert len(mid_copy) >= KILLS // 2, f"kills did not land mid-copy: {kills}"
    assert all(kill.file_end <= kill.committed for kill in kills), f"the group behind the file: {kills}"

    run_until(worker, connector, log, group_offset, LINES, poll_s=0.5)

    values = written(out)
    duplicates = len(values) - len(set(values))
    assert duplicates == 0, f"{duplicates} lines written twice"
    assert values == sorted(values) and values[-1] == LINES - 1
    # each run appends from the group's offset: what a kill lost is exactly its committed, unwritten stretch
    gaps = [(a + 1, b) for a, b in zip([-1, *values], values, strict=False) if b != a + 1]
    lost = [kill.lost for kill in kills]
    assert gaps == [(kill.file_end, kill.committed) for kill in kills if kill.lost], (gaps, kills)
    assert LINES - len(values) == sum(lost)
    # the sink hands each batch to the OS before put() returns: a kill loses the batch in flight at most
    assert max(lost) <= BATCH, kills
    print(f"at-most-once FileStreamSink: {len(values)} of {LINES} lines written, 0 twice; per kill "
          f"(file end, group, lost): {[(k.file_end, k.committed, k.lost) for k in kills]}")

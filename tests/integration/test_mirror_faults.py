"""MirrorSourceConnector run continuously by the standalone worker, killed with SIGKILL and resumed.

Broker B (source) is mirrored into broker A (target) by ``python -m kopycat.cli standalone``, a
subprocess as an operator runs it. Each source partition has one task and one target partition,
so every run of the worker appends, per partition, a contiguous ascending stretch of the source
starting where the last *committed* offset points (MM2's ``{"offset": n}`` is the last record
copied: the next run starts at n + 1). What the guarantees promise, checked on the data:

- a clean run (and a task reconfiguration when a new topic appears) copies each partition
  exactly: keys, values, headers, timestamps, order;
- at-least-once: after kills, every source record is in the target, and each repeat is a restart
  from a position that was committed when the worker was killed (one stretch per kill at most);
- exactly-once: a read_committed consumer sees each source record once, in order.
"""

from __future__ import annotations

import random
import signal
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import orjson
import pytest
from confluent_kafka import Consumer, TopicPartition

from kopycat.dev.kafka_broker import LocalKafkaBroker
from kopycat.storage.file_offset_store import loads_offsets
from kopycat.storage.kafka_offset_store import KafkaOffsetStore
from kopycat.storage.offset_storage_reader_writer import OffsetStorageReaderImpl
from tests.support.kills import kill_when
from tests.support.mirror import PARTITIONS, Record, create_topics, produce, read_partitions
from tests.support.standalone import start_worker, write_props

pytestmark = pytest.mark.timeout(900)  # a ceiling for a loaded 2-core machine; runs take far less

Partition = tuple[str, int]
Positions = dict[Partition, int]  # the next source offset a run copies, per source partition
KILLS = 3


class Mirror:
    """One test's topics, connector and worker files; starts, kills and stops its worker."""

    def __init__(self, source: str, target: str, directory: Path, topic_count: int) -> None:
        self.source, self.target, self.directory = source, target, directory
        self.run = uuid.uuid4().hex[:8]
        self.name = f"mirror-{self.run}"
        self.topics = [f"mir{self.run}-{n}" for n in ("orders", "users", "audit", "payments")[:topic_count]]
        self.log = directory / "worker.log"
        self.worker = directory / "worker.properties"
        self.connector = directory / "connector.properties"
        self.processes: list[subprocess.Popen[bytes]] = []

    def write(self, worker: dict[str, str], connector: dict[str, str] | None = None) -> None:
        write_props(self.worker, {"bootstrap.servers": self.target, "offset.flush.interval.ms": "300", **worker})
        write_props(self.connector, {
            "name": self.name, "connector.class": "org.apache.kafka.connect.mirror.MirrorSourceConnector",
            "tasks.max": "2", "source.cluster.alias": "b",
            # its own offset-syncs topic (mm2-offset-syncs.<target alias>.internal on the session's source
            # broker): test_mirror_source.py expects to find only its own syncs in the "a" one
            "target.cluster.alias": f"a{self.run}",
            "source.cluster.bootstrap.servers": self.source, "target.cluster.bootstrap.servers": self.target,
            "topics": f"mir{self.run}-.*", "replication.factor": "1", "offset-syncs.topic.replication.factor": "1",
            "consumer.max.poll.records": "5000", **(connector or {})})

    def start(self) -> subprocess.Popen[bytes]:
        self.processes.append(start_worker(self.worker, self.connector, self.log))
        return self.processes[-1]

    def kill_leftovers(self) -> None:
        """A failed test leaves no worker behind to copy into the next test's brokers."""
        for process in self.processes:
            if process.poll() is None:
                process.kill()
                process.wait(30)

    def tail(self) -> str:
        return self.log.read_text(errors="replace")[-4000:] if self.log.exists() else "(no log)"

    def wait_running(self, process: subprocess.Popen[bytes], log_from: int) -> None:
        """SIGTERM is handled only once the worker runs (before, Python's default ends it)."""
        deadline = time.monotonic() + 180
        while b"standalone worker running" not in self.log.read_bytes()[log_from:]:
            assert process.poll() is None, f"worker exited early: {self.tail()}"
            assert time.monotonic() < deadline, f"the worker did not start: {self.tail()}"
            time.sleep(0.1)

    def stop(self, process: subprocess.Popen[bytes]) -> None:
        process.send_signal(signal.SIGTERM)
        assert process.wait(60) == 0, self.tail()


@pytest.fixture
def make_mirror(kafka_broker: LocalKafkaBroker, kafka_broker_b: LocalKafkaBroker,
                tmp_path: Path) -> Iterator[Callable[[int], Mirror]]:
    """``make_mirror(topic_count)``: a mirror from broker B into broker A; its workers end with the test."""
    made: list[Mirror] = []

    def make(topic_count: int) -> Mirror:
        made.append(Mirror(kafka_broker_b.bootstrap_servers, kafka_broker.bootstrap_servers, tmp_path, topic_count))
        return made[-1]

    yield make
    for each in made:
        each.kill_leftovers()


def source_ends(bootstrap: str, topics: list[str]) -> Positions:
    """The high watermark of every source partition: where a caught-up mirror has committed."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"check-{uuid.uuid4().hex}"})
    try:
        return {(t, p): consumer.get_watermark_offsets(TopicPartition(t, p), timeout=30)[1]
                for t in topics for p in range(PARTITIONS)}
    finally:
        consumer.close()


def positions_of(raw: dict[bytes, bytes | None], name: str) -> Positions:
    """``{(topic, partition): stored offset + 1}`` of connector ``name`` from raw offsets entries."""
    out: Positions = {}
    for key, value in raw.items():
        connector, partition = orjson.loads(key)
        if connector == name and value is not None:
            out[(partition["topic"], partition["partition"])] = orjson.loads(value)["offset"] + 1
    return out


def file_positions(path: Path, name: str) -> Callable[[], Positions]:
    """Committed positions from the standalone offsets file, read without a FileOffsetStore:
    its start() deletes temp files, which would break the worker's write in progress."""
    return lambda: positions_of(loads_offsets(path.read_bytes(), str(path)), name) if path.exists() else {}


@pytest.fixture
def kafka_positions(kafka_broker: LocalKafkaBroker) -> Iterator[Callable[[str, str], Callable[[], Positions]]]:
    """Committed positions from an offsets topic, read_committed (an open transaction hides its offsets)."""
    stores: list[KafkaOffsetStore] = []

    def make(topic: str, name: str) -> Callable[[], Positions]:
        store = KafkaOffsetStore(kafka_broker.bootstrap_servers, topic=topic, replication_factor=1, partitions=5)
        store.start()
        stores.append(store)
        reader = OffsetStorageReaderImpl(store, name)

        def read() -> Positions:
            found = reader.offsets([p for p in store.connector_partitions(name) if p is not None])
            return {(p["topic"], p["partition"]): o["offset"] + 1 for p, o in found if o is not None}
        return read

    yield make
    for store in stores:
        store.stop()


def wait_caught_up(mirror: Mirror, process: subprocess.Popen[bytes], committed: Callable[[], Positions],
                   ends: Positions) -> None:
    """Until every partition's committed position is its source end; fails if progress stalls 180 s."""
    last, stalled_since = -1, time.monotonic()
    while (now := committed()) != ends:
        assert process.poll() is None, f"worker exited: {mirror.tail()}"
        done = sum(now.values())
        if done != last:  # a slow machine is fine; a stalled worker is not
            last, stalled_since = done, time.monotonic()
        assert time.monotonic() - stalled_since < 180, f"stalled at {now} of {ends}: {mirror.tail()}"
        time.sleep(0.3)


def kill_mid_copy(mirror: Mirror, committed: Callable[[], Positions], total: int) -> list[Positions]:
    """SIGKILL the worker ``KILLS`` times once its committed offsets moved; the positions after each."""
    rng = random.Random(20261124)
    after_kills: list[Positions] = []
    for _ in range(KILLS):
        before = sum(committed().values())
        process = mirror.start()
        # started and copying, however slow the machine; then past the commit just seen, before the next one
        kill_when(process, lambda b=before: sum(committed().values()) != b or b >= total, mirror.log, timeout_s=180,
                  waiting_for="a commit of this run", after_s=rng.uniform(0.2, 0.8))
        after_kills.append(committed())
    landed = sum(0 < sum(p.values()) < total for p in after_kills)
    totals = [sum(p.values()) for p in after_kills]
    assert landed >= KILLS - 1, f"kills did not land mid-copy: committed totals {totals} of {total}"
    return after_kills


def finish(mirror: Mirror, committed: Callable[[], Positions], ends: Positions) -> None:
    """One last run to the end, stopped cleanly."""
    log_from = mirror.log.stat().st_size
    process = mirror.start()
    mirror.wait_running(process, log_from)
    wait_caught_up(mirror, process, committed, ends)
    mirror.stop(process)


def check_resent_stretches(copied: list[Record], source: list[Record], starts: set[int], kills: int) -> int:
    """Every source record copied, in order; each repeat a restart at a committed position. Repeats."""
    where = {value: offset for offset, (_, value, _, _) in enumerate(source)}  # values are unique
    expected, restarts = 0, 0
    for record in copied:
        offset = where.get(record[1])
        assert offset is not None and source[offset] == record, f"not a record of the source partition: {record}"
        if offset != expected:
            assert offset < expected, f"source offset {expected} was lost: the next record copied is {offset}"
            assert offset in starts, f"a run restarted at offset {offset}, never committed at a kill {sorted(starts)}"
            restarts += 1
        expected = offset + 1
    assert expected == len(source), f"the target ends at source offset {expected} of {len(source)}"
    assert restarts <= kills, f"{restarts} re-sent stretches after {kills} kills"
    return len(copied) - len(source)


def test_a_running_mirror_copies_300k_records_exactly_and_picks_up_a_new_topic_at_the_next_refresh(
        make_mirror: Callable[[int], Mirror], tmp_path: Path) -> None:
    mirror = make_mirror(4)
    old, new = mirror.topics[:3], mirror.topics[3]
    mirror.write({"offset.storage.file.filename": str(tmp_path / "connect.offsets")},
                 {"refresh.topics.interval.seconds": "2"})
    committed = file_positions(tmp_path / "connect.offsets", mirror.name)
    create_topics(mirror.source, old)
    produce(mirror.source, old, 50_000)
    started = time.monotonic()
    process = mirror.start()
    mirror.wait_running(process, 0)
    produce(mirror.source, old, 50_000, start=50_000)  # while it copies: 300k records in all
    create_topics(mirror.source, [new])
    produce(mirror.source, [new], 2_000)
    wait_caught_up(mirror, process, committed, source_ends(mirror.source, mirror.topics))
    elapsed = time.monotonic() - started
    mirror.stop(process)
    for topic in mirror.topics:
        assert read_partitions(mirror.target, f"b.{topic}") == read_partitions(mirror.source, topic), topic
    print(f"continuous mirror: 302,000 records caught up in {elapsed:.1f} s (worker start included)")


def test_at_least_once_after_kills_has_every_record_and_repeats_only_from_committed_offsets(
        make_mirror: Callable[[int], Mirror], tmp_path: Path) -> None:
    mirror = make_mirror(3)
    # commits 1 s apart: several batches between them, so a kill leaves copied, uncommitted records to re-send
    mirror.write({"offset.storage.file.filename": str(tmp_path / "connect.offsets"),
                  "offset.flush.interval.ms": "1000"})
    committed = file_positions(tmp_path / "connect.offsets", mirror.name)
    create_topics(mirror.source, mirror.topics)
    # enough that an idle machine's run still has records left at its second commit, where the kill lands
    produce(mirror.source, mirror.topics, 150_000)
    ends = source_ends(mirror.source, mirror.topics)

    after_kills = kill_mid_copy(mirror, committed, sum(ends.values()))
    finish(mirror, committed, ends)
    repeats = 0
    for topic in mirror.topics:
        copied, source = read_partitions(mirror.target, f"b.{topic}"), read_partitions(mirror.source, topic)
        for p in range(PARTITIONS):
            starts = {0, *(positions.get((topic, p), 0) for positions in after_kills)}
            repeats += check_resent_stretches(copied[p], source[p], starts, KILLS)
    assert repeats > 0, "no kill landed after an uncommitted batch: nothing was re-sent, nothing proven"
    print(f"at-least-once: {repeats} records re-sent after {KILLS} kills; committed totals at the kills: "
          f"{[sum(p.values()) for p in after_kills]} of {sum(ends.values())}")


def test_exactly_once_after_kills_shows_every_record_once_to_read_committed_consumers(
        make_mirror: Callable[[int], Mirror], kafka_positions: Callable[[str, str], Callable[[], Positions]]
) -> None:
    mirror = make_mirror(3)
    offsets_topic = f"offsets-{mirror.run}"
    mirror.write({"exactly.once.source.support": "enabled", "group.id": f"eos-{mirror.run}",
                  "offset.storage.topic": offsets_topic, "offset.storage.replication.factor": "1",
                  "offset.storage.partitions": "5"},
                 {"exactly.once.support": "required", "consumer.isolation.level": "read_committed",
                  # several polls per transaction: records reach the log long before the commit,
                  # so a kill leaves an open transaction with records in it to abort
                  "transaction.boundary": "interval", "transaction.boundary.interval.ms": "1000"})
    committed = kafka_positions(offsets_topic, mirror.name)
    create_topics(mirror.source, mirror.topics)
    produce(mirror.source, mirror.topics, 250_000)  # more than at-least-once: transactions end later than commits
    ends = source_ends(mirror.source, mirror.topics)

    after_kills = kill_mid_copy(mirror, committed, sum(ends.values()))
    finish(mirror, committed, ends)
    aborted = 0
    for topic in mirror.topics:
        source = read_partitions(mirror.source, topic)
        assert read_partitions(mirror.target, f"b.{topic}", committed_only=True) == source, topic
        everything = read_partitions(mirror.target, f"b.{topic}")
        aborted += sum(len(everything[p]) - len(source[p]) for p in range(PARTITIONS))
    assert aborted > 0, "no kill landed inside an open transaction: nothing was aborted, nothing proven"
    print(f"exactly-once: {aborted} aborted copies visible to read_uncommitted only; committed totals at the "
          f"kills: {[sum(p.values()) for p in after_kills]} of {sum(ends.values())}")

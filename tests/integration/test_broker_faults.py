"""The broker crashes (SIGKILL) and restarts, same port and data, in the middle of a copy.

A broker of this module's own (``crash_broker``) is killed under a running ``kopycat standalone``
worker: a file source writing to it, a file sink reading from it, a mirror writing into it from the
session's broker. What Kafka Connect's rule asks of a task when its cluster goes away: the running
task recovers by itself once the broker is back (librdkafka reconnects and retries), or fails with a
clear error and its rerun completes. Either way: 0 records lost, and 0 duplicates where the
guarantee is exactly-once. Each test asserts its kill landed mid-copy: the records in the topic (or
the file) at the kill are more than 0 and fewer than the total.
"""

from __future__ import annotations

import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from confluent_kafka import KafkaException

from kopycat.dev.kafka_broker import LocalKafkaBroker
from kopycat.storage.file_offset_store import loads_offsets
from kopycat.storage.kafka_offset_store import KafkaOffsetStore
from kopycat.storage.offset_codec import decode_value, encode_key
from kopycat.storage.offset_storage_reader_writer import OffsetStorageReaderImpl
from tests.support.crashes import Worker, standalone_workers, topic_size
from tests.support.kafka import consume_all, create_topic, produce
from tests.support.mirror import PARTITIONS, create_topics, read_partitions
from tests.support.mirror import produce as produce_records
from tests.support.standalone import write_props

pytestmark = pytest.mark.timeout(1200)  # broker restarts and whole copies on a loaded 2-core machine

LINES = 600_000
TRANSACTIONS_OF_A_SECOND = {"transaction.boundary": "interval", "transaction.boundary.interval.ms": "1000"}
WIDTH = len("line-0000000\n")


@pytest.fixture(scope="module")
def crash_broker() -> Iterator[LocalKafkaBroker]:
    """A broker these tests kill: the session's brokers stay up for every other test."""
    with LocalKafkaBroker(name="kafka-crash") as broker:
        yield broker


@pytest.fixture
def workers() -> Iterator[Callable[[Path, Path, Path], Worker]]:
    with standalone_workers() as make:
        yield make


def crash_when(broker: LocalKafkaBroker, worker: Worker, copied: Callable[[], int],
               uncommitted: Callable[[], int] = lambda: 1) -> tuple[int, int]:
    """SIGKILL the broker once ``copied()`` and ``uncommitted()`` (records of open transactions, for an
    exactly-once copy) are above 0, restart it on the same port and data; both counts at the kill."""
    deadline = time.monotonic() + 300
    while True:
        open_records = uncommitted()
        seen = copied()  # read second: the records of open transactions are among these
        if seen > 0 and open_records > 0:
            break
        assert worker.processes[-1].poll() is None, f"worker exited before copying: {worker.tail()}"
        assert time.monotonic() < deadline, f"nothing copied (in a transaction): {worker.tail()}"
        time.sleep(0.02)
    broker.kill()
    broker.restart()
    return seen, open_records


def open_transactions(bootstrap: str, topics: list[str]) -> Callable[[], int]:
    """Records of ``topics`` inside transactions still open (past the last stable offset)."""
    def count() -> int:
        try:
            return sum(topic_size(bootstrap, t) - topic_size(bootstrap, t, committed_only=True) for t in topics)
        except (KeyError, KafkaException):  # the topics are not made yet
            return 0
    return count


def file_source(tmp_path: Path, bootstrap: str, topic: str, worker_props: dict[str, str] | None = None,
                connector_props: dict[str, str] | None = None) -> tuple[Path, Path]:
    """The input file, worker.properties (offsets in a file unless ``worker_props`` say otherwise) and the
    connector's properties."""
    (tmp_path / "input.txt").write_bytes(b"".join(b"line-%07d\n" % i for i in range(LINES)))
    worker = write_props(tmp_path / "worker.properties", {
        "bootstrap.servers": bootstrap, "offset.storage.file.filename": str(tmp_path / "connect.offsets"),
        "offset.flush.interval.ms": "500", "value.converter": "org.apache.kafka.connect.storage.StringConverter",
        **(worker_props or {})})
    connector = write_props(tmp_path / "connector.properties", {
        "name": "crash-file", "connector.class": "FileStreamSource", "file": str(tmp_path / "input.txt"),
        "topic": topic, "batch.size": "500", **(connector_props or {})})
    return worker, connector


def test_a_file_source_loses_nothing_when_the_broker_crashes_mid_copy(
        crash_broker: LocalKafkaBroker, workers: Callable[[Path, Path, Path], Worker], tmp_path: Path) -> None:
    bootstrap, topic = crash_broker.bootstrap_servers, f"crash-src-{uuid.uuid4().hex[:8]}"
    create_topic(bootstrap, topic, 1)
    worker = workers(*file_source(tmp_path, bootstrap, topic), tmp_path / "worker.log")
    offsets_file = tmp_path / "connect.offsets"
    key = encode_key("crash-file", {"filename": str(tmp_path / "input.txt")})

    def committed_line() -> int:
        if not offsets_file.exists():
            return 0
        value = loads_offsets(offsets_file.read_bytes(), str(offsets_file)).get(key)
        return 0 if value is None else decode_value(value)["position"] // WIDTH

    worker.start()
    at_kill, _ = crash_when(crash_broker, worker, lambda: topic_size(bootstrap, topic))
    worker.run_to(committed_line, LINES)
    values = Counter(int(v[5:]) for v in consume_all(bootstrap, topic) if v is not None)
    assert 0 < at_kill < LINES, f"the kill did not land mid-copy: {at_kill} of {LINES} records in the topic"
    assert set(values) == set(range(LINES)), f"{LINES - len(values)} lines lost"
    duplicates = sum(values.values()) - LINES
    print(f"file source, broker crash: {at_kill} of {LINES} records in the topic at the kill; 0 lost, "
          f"{duplicates} duplicates; worker reruns: {len(worker.failures)}")


def test_a_file_sink_loses_nothing_when_the_broker_crashes_mid_copy(
        crash_broker: LocalKafkaBroker, workers: Callable[[Path, Path, Path], Worker], tmp_path: Path) -> None:
    bootstrap, topic = crash_broker.bootstrap_servers, f"crash-sink-{uuid.uuid4().hex[:8]}"
    create_topic(bootstrap, topic, 1)
    produce(bootstrap, topic, [b"line-%07d" % i for i in range(LINES)])
    output = tmp_path / "out.txt"
    worker = workers(
        write_props(tmp_path / "worker.properties", {
            "bootstrap.servers": bootstrap, "offset.storage.file.filename": str(tmp_path / "connect.offsets"),
            "offset.flush.interval.ms": "500", "key.converter": "org.apache.kafka.connect.storage.StringConverter",
            "value.converter": "org.apache.kafka.connect.storage.StringConverter"}),
        write_props(tmp_path / "connector.properties", {
            "name": f"crash-sink-{uuid.uuid4().hex[:8]}", "connector.class": "FileStreamSink",
            "file": str(output), "topics": topic}),
        tmp_path / "worker.log")

    def written() -> int:
        return output.stat().st_size // WIDTH if output.exists() else 0

    worker.start()
    at_kill, _ = crash_when(crash_broker, worker, written)
    worker.run_to(lambda: len(set(output.read_text().splitlines())), LINES)
    lines = Counter(output.read_text().splitlines())
    assert 0 < at_kill < LINES, f"the kill did not land mid-copy: {at_kill} of {LINES} lines in the file"
    assert set(lines) == {"line-%07d" % i for i in range(LINES)}, f"{LINES - len(lines)} lines lost"
    duplicates = sum(lines.values()) - LINES
    print(f"file sink, broker crash: {at_kill} of {LINES} lines in the file at the kill; 0 lost, "
          f"{duplicates} duplicates; worker reruns: {len(worker.failures)}")


def stored_offsets(bootstrap: str, offsets_topic: str, name: str) -> list[tuple[dict, dict]]:
    """Connector ``name``'s committed source offsets in ``offsets_topic`` (read_committed: an open
    transaction hides its offsets), as ``(partition, offset)`` pairs."""
    with KafkaOffsetStore(bootstrap, topic=offsets_topic, replication_factor=1, partitions=5) as store:
        reader = OffsetStorageReaderImpl(store, name)
        found = reader.offsets([p for p in store.connector_partitions(name) if p is not None])
    return [(partition, offset) for partition, offset in found if offset is not None]


def eos_worker_props(run: str) -> dict[str, str]:
    return {"exactly.once.source.support": "enabled", "group.id": f"eos-{run}",
            "offset.storage.topic": f"offsets-{run}", "offset.storage.replication.factor": "1",
            "offset.storage.partitions": "5"}


def test_an_exactly_once_file_source_shows_every_line_once_after_the_broker_crashes_mid_transaction(
        crash_broker: LocalKafkaBroker, workers: Callable[[Path, Path, Path], Worker], tmp_path: Path) -> None:
    bootstrap, run = crash_broker.bootstrap_servers, uuid.uuid4().hex[:8]
    topic = f"crash-eos-{run}"
    create_topic(bootstrap, topic, 1)
    # transactions of 1 s (several polls): records reach the log long before their commit, so the kill
    # lands inside an open transaction with records in it
    worker = workers(*file_source(tmp_path, bootstrap, topic, eos_worker_props(run), TRANSACTIONS_OF_A_SECOND),
                     tmp_path / "worker.log")

    def committed_line() -> int:
        found = stored_offsets(bootstrap, f"offsets-{run}", "crash-file")
        return found[0][1]["position"] // WIDTH if found else 0

    worker.start()
    at_kill, open_records = crash_when(crash_broker, worker, lambda: topic_size(bootstrap, topic),
                                       open_transactions(bootstrap, [topic]))
    worker.run_to(committed_line, LINES)
    committed = [int(v[5:]) for v in consume_all(bootstrap, topic, committed_only=True) if v]
    aborted = len([v for v in consume_all(bootstrap, topic) if v]) - LINES
    assert 0 < at_kill < LINES, f"the kill did not land mid-copy: {at_kill} of {LINES} records in the topic"
    assert committed == list(range(LINES)), f"{len(committed)} committed records, {len(set(committed))} distinct"
    assert open_records > 0, "the kill did not land inside an open transaction"
    print(f"exactly-once file source, broker crash: {at_kill} of {LINES} records in the topic at the kill, "
          f"{open_records} of them in an open transaction; "
          f"0 lost, 0 duplicates read_committed, {aborted} aborted copies; worker reruns: {len(worker.failures)}")


def test_an_exactly_once_mirror_copies_every_record_once_after_its_target_broker_crashes_mid_copy(
        crash_broker: LocalKafkaBroker, kafka_broker: LocalKafkaBroker,
        workers: Callable[[Path, Path, Path], Worker], tmp_path: Path) -> None:
    source, target, run = kafka_broker.bootstrap_servers, crash_broker.bootstrap_servers, uuid.uuid4().hex[:8]
    topics, name = [f"crashmir{run}-{n}" for n in ("orders", "users")], f"mirror-{run}"
    create_topics(source, topics)
    produce_records(source, topics, 100_000)
    total = topic_size_all(source, topics)
    worker = workers(
        write_props(tmp_path / "worker.properties", {"bootstrap.servers": target, "offset.flush.interval.ms": "300",
                                                     **eos_worker_props(run)}),
        write_props(tmp_path / "connector.properties", {
            "name": name, "connector.class": "org.apache.kafka.connect.mirror.MirrorSourceConnector",
            "tasks.max": "2", "source.cluster.alias": "b", "target.cluster.alias": f"a{run}",
            "source.cluster.bootstrap.servers": source, "target.cluster.bootstrap.servers": target,
            "topics": f"crashmir{run}-.*", "replication.factor": "1", "offset-syncs.topic.replication.factor": "1",
            "consumer.max.poll.records": "5000", "exactly.once.support": "required",
            "consumer.isolation.level": "read_committed", **TRANSACTIONS_OF_A_SECOND}),
        tmp_path / "worker.log")

    def copied() -> int:
        try:
            return topic_size_all(target, [f"b.{t}" for t in topics])
        except (KeyError, AssertionError, KafkaException):  # the target topics are not made yet
            return 0

    def committed() -> int:  # MM2's stored offset is the last record copied
        return sum(offset["offset"] + 1 for _, offset in stored_offsets(target, f"offsets-{run}", name))

    worker.start()
    at_kill, open_records = crash_when(crash_broker, worker, copied,
                                       open_transactions(target, [f"b.{t}" for t in topics]))
    worker.run_to(committed, total)
    aborted = 0
    for topic in topics:
        expected = read_partitions(source, topic)
        assert read_partitions(target, f"b.{topic}", committed_only=True) == expected, topic
        everything = read_partitions(target, f"b.{topic}")
        aborted += sum(len(everything[p]) - len(expected[p]) for p in range(PARTITIONS))
    assert 0 < at_kill < total, f"the kill did not land mid-copy: {at_kill} of {total} records in the target"
    assert open_records > 0, "the kill did not land inside an open transaction"
    print(f"exactly-once mirror, target broker crash: {at_kill} of {total} records in the target at the kill, "
          f"{open_records} of them in an open transaction; "
          f"0 lost, 0 duplicates read_committed, {aborted} aborted copies; worker reruns: {len(worker.failures)}")


def topic_size_all(bootstrap: str, topics: list[str]) -> int:
    return sum(topic_size(bootstrap, topic) for topic in topics)

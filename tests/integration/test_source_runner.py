"""The source runner against a real broker: what lands in Kafka and which offsets are committed."""

from __future__ import annotations

import collections
import time
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa
import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, ResourceType

from kopycat.api.bounded import RunComplete
from kopycat.api.data import Schema
from kopycat.api.errors import ConfigError, ConnectError
from kopycat.api.record_batch import SourceRecordBatch
from kopycat.api.records import RecordMetadata, SourceRecord
from kopycat.api.task import SourceItem, SourceTask
from kopycat.converters.string import StringConverter
from kopycat.runtime.bounded_plan import plan_bounded_run
from kopycat.runtime.bounds import Bounds, StopReason
from kopycat.runtime.task_factory import build_source_runner
from kopycat.runtime.task_parts import TaskId
from kopycat.storage.kafka_offset_store import KafkaOffsetStore
from kopycat.storage.offset_backing_store import MemoryOffsetStore
from kopycat.storage.offset_storage_reader_writer import OffsetStorageReaderImpl
from tests.integration.test_columnar_sink import NO_OP_TRANSFORM
from tests.support.boundaries import BoundaryDefiningTask
from tests.support.counting import CountingSourceTask
from tests.support.kafka import consume_all as support_consume_all
from tests.support.kafka import create_topic


def consume_all(bootstrap: str, topic: str, *, committed_only: bool = False) -> list[str]:
    return [v.decode() for v in support_consume_all(bootstrap, topic, committed_only=committed_only) if v]


def connector_props(topic: str, **extra: Any) -> dict[str, str]:
    return {"name": f"counting-{topic}", "connector.class": "tests.support.counting.CountingSourceConnector",
            "topic": topic, "value.converter": "org.apache.kafka.connect.storage.StringConverter",
            **{k: str(v) for k, v in extra.items()}}


def worker_props(bootstrap: str, **extra: Any) -> dict[str, str]:
    return {"bootstrap.servers": bootstrap, "offset.flush.interval.ms": "200", **extra}


def run(bootstrap: str, props: Mapping[str, str], store: Any, bounds: Bounds | None = None,
        task_class: type = CountingSourceTask, **worker: Any) -> Any:
    runner = build_source_runner(TaskId(props["name"], 0), task_class, props, props,
                                 worker_props(bootstrap, **worker), store, bounds or Bounds.caught_up(300))
    return runner.run()


@pytest.fixture
def created_topic(bootstrap_servers: str, topic_name: str) -> str:
    return create_topic(bootstrap_servers, topic_name, 3)


def test_every_record_arrives_once_and_offsets_are_the_last_of_each_partition(
        bootstrap_servers: str, created_topic: str) -> None:
    store = MemoryOffsetStore()
    props = connector_props(created_topic, partitions=3, total=5000, batch=700)
    summary = run(bootstrap_servers, props, store)
    values = consume_all(bootstrap_servers, created_topic)
    assert summary.stop_reason is StopReason.CAUGHT_UP
    assert summary.records == 15_000
    assert sorted(values) == sorted(f"p{p}-{i}" for p in range(3) for i in range(5000))
    assert len(set(values)) == len(values)
    after = {text: entry["after"] for text, entry in summary.offsets.items()}
    assert after == {f'{{"p":{p}}}': {"i": 4999} for p in range(3)}


def test_a_second_run_resumes_after_the_committed_offsets(bootstrap_servers: str, created_topic: str) -> None:
    store = MemoryOffsetStore()
    props = connector_props(created_topic, partitions=2, total=3000, batch=500)
    first = run(bootstrap_servers, props, store, Bounds(max_records=2000))
    second = run(bootstrap_servers, props, store)
    values = consume_all(bootstrap_servers, created_topic)
    assert first.stop_reason is StopReason.MAX_RECORDS and first.records == 2000
    assert second.records == 4000
    assert collections.Counter(values) == collections.Counter(
        f"p{p}-{i}" for p in range(2) for i in range(3000))
    assert second.offsets['{"p":0}'] == {"partition": {"p": 0}, "before": {"i": 999}, "after": {"i": 2999}}


class AckCountingTask(CountingSourceTask):
    acked: list[tuple[str, RecordMetadata | None]] = []

    def commit_record(self, record: SourceRecord, metadata: RecordMetadata | None) -> None:
        AckCountingTask.acked.append((record.value, metadata))


def test_commit_record_is_called_once_per_record_with_where_kafka_stored_it(
        bootstrap_servers: str, created_topic: str) -> None:
    AckCountingTask.acked = []
    props = connector_props(created_topic, partitions=1, total=500, batch=200)
    run(bootstrap_servers, props, MemoryOffsetStore(), task_class=AckCountingTask)
    assert collections.Counter(value for value, _ in AckCountingTask.acked) == collections.Counter(
        f"p0-{i}" for i in range(500))  # acks of different Kafka partitions may interleave
    stored = [(m.topic, m.partition, m.offset) for _, m in AckCountingTask.acked if m is not None]
    assert len(set(stored)) == 500 and {t for t, _, _ in stored} == {created_topic}



class BatchAckTask(CountingSourceTask):
    """Acks in batches; p0-42 fails conversion, p1-7 is a tombstone the Filter drops."""

    acked: list[tuple[tuple[int, int], RecordMetadata | None]] = []
    unacked_at_commit: list[int] = []
    polled = 0

    def poll(self) -> list[SourceRecord] | None:
        records = super().poll()
        if records is None:
            return None
        BatchAckTask.polled += len(records)
        return [r.new_record(value=42) if r.value == "p0-42" else r.new_record(value=None) if r.value == "p1-7"
                else r for r in records]

    def commit_records(self, records: Sequence[SourceRecord], metadata: Sequence[RecordMetadata | None]) -> None:
        BatchAckTask.acked.extend(((r.source_partition["p"], r.source_offset["i"]), m)  # type: ignore[index]
                                  for r, m in zip(records, metadata, strict=True))

    def commit(self) -> None:
        BatchAckTask.unacked_at_commit.append(BatchAckTask.polled - len(BatchAckTask.acked))


def test_commit_records_hears_of_every_record_once_before_each_commit(
        bootstrap_servers: str, created_topic: str) -> None:
    BatchAckTask.acked, BatchAckTask.unacked_at_commit, BatchAckTask.polled = [], [], 0
    props = connector_props(created_topic, partitions=2, total=3000, batch=250,
                            **{"value.converter": "org.apache.kafka.connect.json.JsonConverter",
                               "value.converter.schemas.enable": "false", "errors.tolerance": "all",
                               "transforms": "dropTombstones",
                               "transforms.dropTombstones.type": "org.apache.kafka.connect.transforms.Filter",
                               "transforms.dropTombstones.predicate": "isTombstone",
                               "predicates": "isTombstone",
                               "predicates.isTombstone.type":
                                   "org.apache.kafka.connect.transforms.predicates.RecordIsTombstone"})
    summary = run(bootstrap_servers, props, MemoryOffsetStore(), task_class=BatchAckTask)
    assert summary.records == 5998 and summary.skipped == 1 and summary.filtered == 1
    assert collections.Counter(key for key, _ in BatchAckTask.acked) == collections.Counter(
        (p, i) for p in range(2) for i in range(3000))
    assert {key for key, m in BatchAckTask.acked if m is None} == {(0, 42), (1, 7)}
    stored = {(m.partition, m.offset) for _, m in BatchAckTask.acked if m is not None}
    assert len(stored) == 5998
    assert BatchAckTask.unacked_at_commit and set(BatchAckTask.unacked_at_commit) == {0}


class CompletingTask(CountingSourceTask):
    """Says so once it returned its last record, instead of returning None."""

    def poll(self) -> list[SourceRecord] | None:
        records = super().poll()
        if records is None:
            raise RunComplete
        return records


def test_a_task_that_raises_run_complete_ends_its_bounded_run_caught_up_and_committed(
        bootstrap_servers: str, created_topic: str) -> None:
    store = MemoryOffsetStore()
    props = connector_props(created_topic, partitions=2, total=1000, batch=300)
    summary = run(bootstrap_servers, props, store, Bounds(max_seconds=300), task_class=CompletingTask)
    assert summary.stop_reason is StopReason.CAUGHT_UP  # not max_seconds: no idle clock ran out
    assert summary.records == 2000 and len(consume_all(bootstrap_servers, created_topic)) == 2000
    assert {text: entry["after"] for text, entry in summary.offsets.items()} == {
        '{"p":0}': {"i": 999}, '{"p":1}': {"i": 999}}

class MixedItemsTask(SourceTask):
    """One poll of records and string batches of one source partition, mixed, then RunComplete."""

    def start(self, props: Mapping[str, str]) -> None:
        self.topic, self.polled = props["topic"], False

    def poll(self) -> list[SourceItem] | None:
        if self.polled:
            raise RunComplete
        self.polled = True

        def record(i: int) -> SourceRecord:
            return SourceRecord.of({"p": 0}, {"i": i}, self.topic, None, None, None, Schema.STRING_SCHEMA, f"v{i}")

        def batch(first: int, rows: int) -> SourceRecordBatch:
            return SourceRecordBatch({"p": 0}, {"i": first + rows - 1}, self.topic, Schema.STRING_SCHEMA,
                                     pa.array([f"v{i}" for i in range(first, first + rows)], pa.string()))
        return [record(0), batch(1, 3), record(4), record(5), batch(6, 0), batch(6, 2), record(8)]

    def stop(self) -> None:
        pass


@pytest.mark.parametrize("transform", [False, True], ids=["columns", "records"])
def test_records_and_batches_of_one_poll_arrive_in_order_as_columns_or_as_records(
        bootstrap_servers: str, topic_name: str, monkeypatch: pytest.MonkeyPatch, transform: bool) -> None:
    encoded: list[int] = []
    original = StringConverter.from_arrow_array

    def spy(self: Any, topic: str, schema: Any, values: Any) -> Any:
        result = original(self, topic, schema, values)
        encoded.append(len(values) if result is not None else -1)
        return result
    monkeypatch.setattr(StringConverter, "from_arrow_array", spy)
    topic = create_topic(bootstrap_servers, topic_name, 1)
    props = connector_props(topic, **(NO_OP_TRANSFORM if transform else {}))
    summary = run(bootstrap_servers, props, MemoryOffsetStore(), Bounds(max_seconds=300), task_class=MixedItemsTask)
    assert encoded == ([] if transform else [3, 2])
    assert summary.stop_reason is StopReason.CAUGHT_UP and summary.records == 9
    assert consume_all(bootstrap_servers, topic) == [f"v{i}" for i in range(9)]
    assert {text: entry["after"] for text, entry in summary.offsets.items()} == {'{"p":0}': {"i": 8}}


class BadValueTask(CountingSourceTask):
    """Record 42 of partition 0 carries an int where its schema says string."""

    def poll(self) -> list[SourceRecord] | None:
        records = super().poll()
        return None if records is None else [
            r.new_record(value=42) if r.value == "p0-42" else r for r in records]


def test_a_bad_record_fails_the_task_naming_its_source_partition_and_offset(
        bootstrap_servers: str, created_topic: str) -> None:
    props = connector_props(created_topic, partitions=1, total=100, batch=100,
                            **{"value.converter": "org.apache.kafka.connect.json.JsonConverter"})
    with pytest.raises(ConnectError, match=r"source partition \{'p': 0\} offset \{'i': 42\}"):
        run(bootstrap_servers, props, MemoryOffsetStore(), task_class=BadValueTask)


def test_tolerance_all_skips_only_the_bad_record(bootstrap_servers: str, created_topic: str) -> None:
    props = connector_props(created_topic, partitions=1, total=100, batch=100,
                            **{"value.converter": "org.apache.kafka.connect.json.JsonConverter",
                               "value.converter.schemas.enable": "false", "errors.tolerance": "all"})
    summary = run(bootstrap_servers, props, MemoryOffsetStore(), task_class=BadValueTask)
    values = consume_all(bootstrap_servers, created_topic)
    assert summary.skipped == 1 and summary.records == 99
    assert sorted(values) == sorted(f'"p0-{i}"' for i in range(100) if i != 42)


def test_topics_are_created_with_the_topic_creation_settings(bootstrap_servers: str, topic_name: str) -> None:
    props = connector_props(topic_name, total=10, **{"topic.creation.default.partitions": 4,
                                                     "topic.creation.default.replication.factor": 1,
                                                     "topic.creation.default.retention.ms": 3600000})
    run(bootstrap_servers, props, MemoryOffsetStore())
    admin = AdminClient({"bootstrap.servers": bootstrap_servers})
    assert len(admin.list_topics(topic_name, timeout=30).topics[topic_name].partitions) == 4
    resource = ConfigResource(ResourceType.TOPIC, topic_name)
    assert admin.describe_configs([resource])[resource].result(30)["retention.ms"].value == "3600000"
    assert len(consume_all(bootstrap_servers, topic_name)) == 10


def test_exactly_once_writes_records_and_offsets_in_one_transaction(
        bootstrap_servers: str, created_topic: str) -> None:
    offsets_topic = f"offsets-{created_topic}"
    props = connector_props(created_topic, partitions=2, total=1500, batch=400)
    worker = {"exactly.once.source.support": "enabled", "group.id": "eos-test"}
    with KafkaOffsetStore(bootstrap_servers, topic=offsets_topic, replication_factor=1) as store:
        first = run(bootstrap_servers, props, store, Bounds(max_records=1600), **worker)
    with KafkaOffsetStore(bootstrap_servers, topic=offsets_topic, replication_factor=1) as store:
        second = run(bootstrap_servers, props, store, **worker)
    values = consume_all(bootstrap_servers, created_topic, committed_only=True)
    assert first.records == 1600 and second.records == 1400
    assert collections.Counter(values) == collections.Counter(
        f"p{p}-{i}" for p in range(2) for i in range(1500))


def test_the_plan_of_an_exactly_once_source_aborts_a_killed_tasks_open_transaction(
        bootstrap_servers: str, created_topic: str) -> None:
    """A zombie of task 1 left a transaction open on the offsets topic: until it is fenced, a
    read_committed reader (task 0 reading its offsets) cannot see past it. The plan fences it."""
    offsets_topic = f"offsets-{created_topic}"
    props = connector_props(created_topic, **{"tasks.max": 2})
    worker = {"bootstrap.servers": bootstrap_servers, "exactly.once.source.support": "enabled",
              "group.id": "fence-test", "offset.storage.topic": offsets_topic}
    with KafkaOffsetStore(bootstrap_servers, topic=offsets_topic, replication_factor=1):
        pass
    zombie = Producer({"bootstrap.servers": bootstrap_servers,
                       "transactional.id": f"fence-test-{props['name']}-1"})
    zombie.init_transactions(30)
    zombie.begin_transaction()
    zombie.produce(offsets_topic, key=b"zombie", value=b"{}", partition=0)
    zombie.flush(30)
    later = Producer({"bootstrap.servers": bootstrap_servers})
    later.produce(offsets_topic, key=b"later", value=b"{}", partition=0)
    later.flush(30)
    reader = Consumer({"bootstrap.servers": bootstrap_servers, "group.id": "fence-check",
                       "isolation.level": "read_committed"})
    partition = KafkaTopicPartition(offsets_topic, 0)  # a read_committed consumer's end is the stable offset
    try:
        assert reader.get_watermark_offsets(partition, timeout=30, cached=False)[1] == 0  # held by the zombie

        planned = plan_bounded_run(props, worker)

        assert len(planned) == 2
        deadline = time.monotonic() + 30
        while reader.get_watermark_offsets(partition, timeout=30, cached=False)[1] < 3:  # 2 records + abort marker
            assert time.monotonic() < deadline, "the zombie's transaction was not aborted"
            time.sleep(0.2)
    finally:
        reader.close()

def test_exactly_once_required_on_a_worker_without_it_is_refused(bootstrap_servers: str) -> None:
    props = connector_props("unused", **{"exactly.once.support": "required"})
    with pytest.raises(ConfigError, match="exactly.once.source.support=enabled"):
        run(bootstrap_servers, props, MemoryOffsetStore())


def test_connector_defined_boundaries_commit_where_the_task_asks_and_an_abort_drops_its_records(
        bootstrap_servers: str, topic_name: str) -> None:
    """KIP-618's transaction.boundary=connector: commits after records 99, 199, ..., an abort after
    record 299 (records 200..299 dropped, their offsets still committed), and the last batch (1049)."""
    create_topic(bootstrap_servers, topic_name, 1)
    offsets_topic = f"offsets-{topic_name}"
    props = {**connector_props(topic_name, partitions=1, total=1050, batch=250, **{"abort.after": 299}),
             "connector.class": "tests.support.boundaries.BoundaryDefiningConnector",
             "transaction.boundary": "connector"}
    worker = {"exactly.once.source.support": "enabled", "group.id": "boundaries-test"}
    with KafkaOffsetStore(bootstrap_servers, topic=offsets_topic, replication_factor=1) as store:
        summary = run(bootstrap_servers, props, store, task_class=BoundaryDefiningTask, **worker)
    with KafkaOffsetStore(bootstrap_servers, topic=offsets_topic, replication_factor=1) as store:
        again = run(bootstrap_servers, props, store, task_class=BoundaryDefiningTask, **worker)
        [(_, offset)] = OffsetStorageReaderImpl(store, props["name"]).offsets([{"p": 0}])
    visible = [int(v.split("-")[1]) for v in consume_all(bootstrap_servers, topic_name, committed_only=True)]
    assert visible == [*range(200), *range(300, 1050)]  # in order, once each: 200..299 were aborted
    assert (summary.records, again.records, offset) == (950, 0, {"i": 1049})


def test_connector_defined_boundaries_need_a_connector_that_supports_them(
        bootstrap_servers: str, created_topic: str) -> None:
    props = connector_props(created_topic, **{"transaction.boundary": "connector"})
    worker = {"exactly.once.source.support": "enabled", "group.id": "boundaries-refused"}
    with (KafkaOffsetStore(bootstrap_servers, topic=f"offsets-{created_topic}", replication_factor=1) as store,
          pytest.raises(ConfigError, match="transaction.boundary=connector, but connector .*CountingSourceConnector")):
        run(bootstrap_servers, props, store, **worker)

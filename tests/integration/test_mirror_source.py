"""MirrorSourceConnector between two real brokers: broker B (source) mirrored into broker A (target).

Driven as Airflow drives it: plan (``plan_bounded_run``), then one bounded run per planned task
(``run_planned_task``) with offsets in a ``connect-offsets``-style topic on the target.
"""

from __future__ import annotations

import logging
import time
import uuid
from typing import Any

import orjson
import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource

from kopycat.api.errors import ConnectError
from kopycat.connectors.mirror.offset_sync import decode_offset_sync
from kopycat.dev.kafka_broker import LocalKafkaBroker
from kopycat.dev.ports import free_port
from kopycat.runtime.bounded_plan import plan_bounded_run
from kopycat.runtime.bounded_run import run_planned_task
from tests.support.kafka import committed_offsets
from tests.support.mirror import PARTITIONS, create_topics, produce, read_partitions


def raw_offsets(bootstrap: str, topic: str, connector: str, *,
                client: dict[str, Any] | None = None) -> dict[bytes, Any]:
    """The last value per key of ``connector`` in the offsets topic, keys as raw bytes."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"check-{uuid.uuid4().hex}",
                         "enable.partition.eof": True, "auto.offset.reset": "earliest", **(client or {})})
    try:
        metadata = consumer.list_topics(topic, timeout=30).topics[topic]
        consumer.assign([TopicPartition(topic, p, 0) for p in metadata.partitions])
        left, latest = set(metadata.partitions), {}
        deadline = time.monotonic() + 60
        while left:
            assert time.monotonic() < deadline, f"timed out reading {topic}: partitions {left} not at their end"
            for message in consumer.consume(1000, timeout=0.2):
                if message.error():
                    left.discard(message.partition())
                elif orjson.loads(message.key())[0] == connector:
                    latest[message.key()] = orjson.loads(message.value())
        return latest
    finally:
        consumer.close()


def run_all(connector: dict[str, str], worker: dict[str, str]) -> list[Any]:
    summaries = [run_planned_task(connector, planned, worker) for planned in plan_bounded_run(connector, worker)]
    assert all(s.error is None for s in summaries)
    return summaries


def test_a_mirror_copies_partitions_exactly_resumes_from_mm2_offsets_and_picks_up_new_topics(
        kafka_broker: LocalKafkaBroker, kafka_broker_b: LocalKafkaBroker) -> None:
    target, source = kafka_broker.bootstrap_servers, kafka_broker_b.bootstrap_servers
    run = uuid.uuid4().hex[:8]
    topics = [f"mir{run}-{name}" for name in ("orders", "users", "audit")]
    create_topics(source, topics, {"retention.ms": "86400000"})
    produce(source, topics, 100_000)  # 300k records, as issue #8 asks
    name = f"mirror-{run}"
    connector = {"name": name, "connector.class": "org.apache.kafka.connect.mirror.MirrorSourceConnector",
                 "tasks.max": "2", "source.cluster.alias": "b", "target.cluster.alias": "a",
                 "source.cluster.bootstrap.servers": source, "target.cluster.bootstrap.servers": target,
                 "topics": f"mir{run}-.*", "replication.factor": "1",
                 "offset-syncs.topic.replication.factor": "1", "consumer.max.poll.records": "5000"}
    worker = {"bootstrap.servers": target, "offset.storage.topic": f"offsets-{run}",
              "offset.storage.replication.factor": "1", "offset.storage.partitions": "5"}

    started = time.monotonic()
    first = run_all(connector, worker)
    elapsed = time.monotonic() - started
    copied = sum(s.records for s in first)
    print(f"mirror: {copied} records in {elapsed:.1f} s (plan + 2 bounded runs) = {copied / elapsed:,.0f} records/s; "
          f"task copy time {max(s.duration_s for s in first):.1f} s")
    assert len(first) == 2 and copied == 300_000
    for topic in topics:
        assert read_partitions(target, f"b.{topic}") == read_partitions(source, topic), topic
    admin = AdminClient({"bootstrap.servers": target})  # must outlive its futures
    described = admin.describe_configs([ConfigResource(ConfigResource.Type.TOPIC, f"b.{topics[0]}")])
    assert next(iter(described.values())).result(30)["retention.ms"].value == "86400000"

    offsets = raw_offsets(target, f"offsets-{run}", name)
    key = f'["{name}",{{"cluster":"b","partition":1,"topic":"{topics[0]}"}}]'.encode()  # Java HashMap order
    assert offsets[key] == {"offset": 24_999}  # the last copied record's offset, as MM2 stores it
    assert len(offsets) == 3 * PARTITIONS
    assert committed_offsets(source, f"kopycat-mirror-{name}", topics[0], PARTITIONS) == {
        p: 25_000 for p in range(PARTITIONS)}
    # the session's "a" offset-syncs topic also holds other tests' syncs (test_mirror_checkpoint.py): ours only
    syncs = [sync for sync in (decode_offset_sync(k, v) for k, v in read_raw(source, "mm2-offset-syncs.a.internal"))
             if sync.topic.startswith(f"mir{run}-")]
    assert {(s.topic, s.partition) for s in syncs} == {(t, p) for t in topics for p in range(PARTITIONS)}
    assert all(s.upstream_offset == s.downstream_offset for s in syncs)  # fresh target: same offsets

    produce(source, topics, 1000, start=100_000)
    new_topic = f"mir{run}-payments"
    create_topics(source, [new_topic])
    produce(source, [new_topic], 400)
    second = run_all(connector, worker)
    assert sum(s.records for s in second) == 3 * 1000 + 400  # only what is new
    for topic in [*topics, new_topic]:
        assert read_partitions(target, f"b.{topic}") == read_partitions(source, topic), topic
    assert raw_offsets(target, f"offsets-{run}", name)[key] == {"offset": 25_249}


def read_raw(bootstrap: str, topic: str, *, client: dict[str, Any] | None = None) -> list[tuple[bytes, bytes]]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"check-{uuid.uuid4().hex}",
                         "enable.partition.eof": True, **(client or {})})
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        out = []
        while True:
            message = consumer.poll(10)
            assert message is not None, f"timed out reading {topic}"
            if message.error():
                return out
            out.append((message.key(), message.value()))
    finally:
        consumer.close()


def test_a_topic_pattern_matching_nothing_plans_no_tasks_with_a_warning(
        kafka_broker: LocalKafkaBroker, kafka_broker_b: LocalKafkaBroker, caplog: pytest.LogCaptureFixture) -> None:
    connector = {"name": f"mirror-none-{uuid.uuid4().hex[:6]}", "connector.class": "MirrorSourceConnector",
                 "source.cluster.bootstrap.servers": kafka_broker_b.bootstrap_servers,
                 "source.topic.whitelist": "no-such-topic-.*", "offset-syncs.topic.replication.factor": "1"}
    with caplog.at_level(logging.WARNING):
        assert plan_bounded_run(connector, {"bootstrap.servers": kafka_broker.bootstrap_servers}) == []
    assert any("no topic on the source cluster" in r.getMessage() for r in caplog.records)


def test_an_unreachable_source_cluster_fails_the_plan_naming_it_within_the_timeout() -> None:
    address = f"127.0.0.1:{free_port()}"
    connector = {"name": "mirror-down", "connector.class": "MirrorSourceConnector",
                 "source.bootstrap.servers": address, "topic.list.timeout.ms": "3000"}
    started = time.monotonic()
    with pytest.raises(ConnectError, match=f"source cluster at {address}.*source.cluster.bootstrap.servers"):
        plan_bounded_run(connector, {"bootstrap.servers": address})
    assert time.monotonic() - started < 15

"""MirrorCheckpointConnector and MirrorHeartbeatConnector between two real brokers: B (source) -> A (target).

Driven as Airflow drives them: plan, then one bounded run per planned task (``run_all``).
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kopycat.connectors.mirror.checkpoint import decode_checkpoint
from kopycat.connectors.mirror.heartbeat import decode_heartbeat
from kopycat.connectors.mirror.offset_sync import decode_offset_sync
from kopycat.dev.kafka_broker import LocalKafkaBroker
from kopycat.runtime.bounded_plan import plan_bounded_run
from kopycat.runtime.bounded_run import run_planned_task
from tests.support.kafka import committed_offsets

pytestmark = pytest.mark.integration

PARTITIONS = 2
RECORDS = 600  # per partition
GROUP_OFFSET = 437  # where the source group stands in each partition
TARGET_HEAD = 50  # records already in each remote partition: target offsets differ from source ones


def run_all(connector: dict[str, str], worker: dict[str, str]) -> list[Any]:
    summaries = [run_planned_task(connector, planned, worker) for planned in plan_bounded_run(connector, worker)]
    assert all(s.error is None for s in summaries)
    return summaries


def read_raw(bootstrap: str, topic: str) -> list[tuple[bytes, bytes]]:
    """Every (key, value) of partition 0 of ``topic``."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"check-{uuid.uuid4().hex}",
                         "enable.partition.eof": True})
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


def produce(bootstrap: str, topic: str, prefix: str, count: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
    for partition in range(PARTITIONS):
        for i in range(count):
            producer.produce(topic, value=f"{prefix}{partition}:{i}".encode(), partition=partition)
    assert producer.flush(30) == 0


def values_from(bootstrap: str, topic: str, partition: int, offset: int) -> list[bytes]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"check-{uuid.uuid4().hex}",
                         "enable.partition.eof": True})
    try:
        consumer.assign([TopicPartition(topic, partition, offset)])
        out = []
        while True:
            message = consumer.poll(10)
            assert message is not None, f"timed out reading {topic}-{partition}"
            if message.error():
                return out
            out.append(message.value())
    finally:
        consumer.close()


def commit_source_group(bootstrap: str, group: str, topic: str) -> None:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        consumer.commit(offsets=[TopicPartition(topic, p, GROUP_OFFSET) for p in range(PARTITIONS)],
                        asynchronous=False)
    finally:
        consumer.close()


def test_checkpoints_translate_a_source_group_without_skipping_records_and_sync_it_to_the_target(
        kafka_broker: LocalKafkaBroker, kafka_broker_b: LocalKafkaBroker) -> None:
    target, source = kafka_broker.bootstrap_servers, kafka_broker_b.bootstrap_servers
    run = uuid.uuid4().hex[:8]
    topic, group = f"cp{run}-orders", f"cp{run}-app"
    source_admin = AdminClient({"bootstrap.servers": source})  # must outlive its futures
    source_admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(30)
    admin = AdminClient({"bootstrap.servers": target})
    admin.create_topics([NewTopic(f"b.{topic}", PARTITIONS, 1)])[f"b.{topic}"].result(30)
    produce(target, f"b.{topic}", "old", TARGET_HEAD)
    produce(source, topic, "v", RECORDS)
    common = {"source.cluster.alias": "b", "target.cluster.alias": "a", "source.cluster.bootstrap.servers": source,
              "target.cluster.bootstrap.servers": target, "topics": f"cp{run}-.*"}
    mirror = {**common, "name": f"mirror-{run}", "connector.class": "MirrorSourceConnector", "tasks.max": "1",
              "replication.factor": "1", "offset-syncs.topic.replication.factor": "1"}
    worker = {"bootstrap.servers": target, "offset.storage.topic": f"offsets-{run}",
              "offset.storage.replication.factor": "1", "offset.storage.partitions": "5"}
    assert sum(s.records for s in run_all(mirror, worker)) == PARTITIONS * RECORDS
    commit_source_group(source, group, topic)

    checkpoints = {**common, "name": f"checkpoints-{run}", "tasks.max": "2",
                   "connector.class": "org.apache.kafka.connect.mirror.MirrorCheckpointConnector",
                   "groups": f"cp{run}-.*", "sync.group.offsets.enabled": "true",
                   "checkpoints.topic.replication.factor": "1"}
    summaries = run_all(checkpoints, worker)
    assert len(summaries) == 1 and summaries[0].records == PARTITIONS

    found = {}
    for key, value in read_raw(target, "b.checkpoints.internal"):
        checkpoint = decode_checkpoint(key, value)
        if checkpoint.group == group:
            found[(checkpoint.topic, checkpoint.partition)] = checkpoint
    assert set(found) == {(f"b.{topic}", p) for p in range(PARTITIONS)}
    syncs = [decode_offset_sync(k, v) for k, v in read_raw(source, "mm2-offset-syncs.a.internal")]
    for partition in range(PARTITIONS):
        checkpoint = found[(f"b.{topic}", partition)]
        assert checkpoint.upstream_offset == GROUP_OFFSET
        # MM2's translation: through a sync at or before the group's offset, one past it unless exact. Not
        # "at most offset.lag.max repeats": with 10 syncs in flight, later syncs replace pending ones (as in MM2)
        translations = {s.downstream_offset + (s.upstream_offset != GROUP_OFFSET) for s in syncs
                        if (s.topic, s.partition) == (topic, partition) and s.upstream_offset <= GROUP_OFFSET}
        assert checkpoint.downstream_offset in translations
        wanted = values_from(source, topic, partition, GROUP_OFFSET)
        resumed = values_from(target, f"b.{topic}", partition, checkpoint.downstream_offset)
        repeats = len(resumed) - len(wanted)
        assert 0 <= repeats and resumed[repeats:] == wanted  # nothing skipped
        before = values_from(source, topic, partition, 0)[:GROUP_OFFSET]
        assert resumed[:repeats] == before[len(before) - repeats:]  # the repeats are the records just before
    synced = committed_offsets(target, group, f"b.{topic}", PARTITIONS)
    assert synced == {p: found[(f"b.{topic}", p)].downstream_offset for p in range(PARTITIONS)}

    again = run_all(checkpoints, worker)  # the checkpoints are read back: nothing new to emit
    assert sum(s.records for s in again) == 0


def test_a_bounded_heartbeat_run_leaves_a_decodable_heartbeat(
        kafka_broker: LocalKafkaBroker) -> None:
    run = uuid.uuid4().hex[:8]
    connector = {"name": f"heartbeats-{run}", "connector.class": "MirrorHeartbeatConnector",
                 "source.cluster.alias": f"s{run}", "target.cluster.alias": f"t{run}",
                 "target.cluster.bootstrap.servers": kafka_broker.bootstrap_servers,
                 "heartbeats.topic.replication.factor": "1"}
    worker = {"bootstrap.servers": kafka_broker.bootstrap_servers, "offset.storage.topic": f"offsets-{run}",
              "offset.storage.replication.factor": "1", "offset.storage.partitions": "5"}
    summaries = run_all(connector, worker)
    assert [s.records for s in summaries] == [1]
    heartbeats = [decode_heartbeat(k, v) for k, v in read_raw(kafka_broker.bootstrap_servers, "heartbeats")]
    ours = [h for h in heartbeats if (h.source_alias, h.target_alias) == (f"s{run}", f"t{run}")]
    assert len(ours) == 1 and ours[0].timestamp > 1_700_000_000_000

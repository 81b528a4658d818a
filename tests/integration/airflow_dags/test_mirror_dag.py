"""dags/kopycat_shop_mirror.py as written: a scheduled MirrorMaker 2 sync between two real brokers.

Broker B plays the primary cluster, broker A the Kopycat cluster. Two scheduled runs with new
records in between: every record arrives once, in its partition, and the primary's consumer group
resumes on A at a translated offset that skips nothing.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition

from kopycat.connectors.mirror.checkpoint import decode_checkpoint
from kopycat.connectors.mirror.offset_sync import decode_offset_sync
from kopycat.dev.kafka_broker import LocalKafkaBroker
from kopycat_airflow.local import LocalAirflow
from tests.support.kafka import committed_offsets, consume_all, consume_records, create_topic, produce

pytestmark = [pytest.mark.integration, pytest.mark.timeout(1800)]

REPO = Path(__file__).resolve().parents[3]
PARTITIONS = 3
GROUP_OFFSET = 120  # where the primary's consumer group stands in each partition


def _produce(bootstrap: str, topic: str, first: int, count: int) -> None:
    for partition in range(PARTITIONS):
        produce(bootstrap, topic, [f"{partition}:{i}".encode() for i in range(first, first + count)],
                partition=partition)


def _by_partition(bootstrap: str, topic: str) -> dict[int, list[str]]:
    values = [v.decode() for v in consume_all(bootstrap, topic) if v is not None]
    return {p: [v for v in values if v.startswith(f"{p}:")] for p in range(PARTITIONS)}


def _checkpoints(bootstrap: str, group: str) -> dict[tuple[str, int], int]:
    """The last checkpoint per (remote topic, partition) of ``group``: its downstream offset."""
    found = {}
    for record in consume_records(bootstrap, "primary.checkpoints.internal"):
        checkpoint = decode_checkpoint(record.key(), record.value())
        if checkpoint.group == group:
            found[(checkpoint.topic, checkpoint.partition)] = checkpoint.downstream_offset
    return found


def _offset_syncs(bootstrap: str, topic: str) -> dict[int, list[tuple[int, int]]]:
    """(upstream, downstream) offset syncs per partition of ``topic``, from the primary's syncs topic."""
    syncs: dict[int, list[tuple[int, int]]] = {p: [] for p in range(PARTITIONS)}
    for record in consume_records(bootstrap, "mm2-offset-syncs.backup.internal"):
        sync = decode_offset_sync(record.key(), record.value())
        if sync.topic == topic:
            syncs[sync.partition].append((sync.upstream_offset, sync.downstream_offset))
    return syncs


def test_the_mirror_dag_syncs_the_primary_cluster_each_run_and_translates_its_consumer_groups(
        local_airflow: LocalAirflow, kafka_broker: LocalKafkaBroker, kafka_broker_b: LocalKafkaBroker) -> None:
    primary, backup = kafka_broker_b.bootstrap_servers, kafka_broker.bootstrap_servers
    run = uuid.uuid4().hex[:8]
    topics = [f"mir{run}_orders", f"mir{run}_customers"]
    group = f"mir{run}-reporting"
    for topic in topics:
        create_topic(primary, topic, PARTITIONS)
        _produce(primary, topic, 0, 200)
    consumer = Consumer({"bootstrap.servers": primary, "group.id": group})
    consumer.commit(offsets=[TopicPartition(topics[0], p, GROUP_OFFSET) for p in range(PARTITIONS)],
                    asynchronous=False)
    consumer.close()
    airflow = local_airflow.with_dags(REPO / "dags", {
        "KOPYCAT_MIRROR_SOURCE_BOOTSTRAP": primary, "KOPYCAT_MIRROR_TOPICS": f"mir{run}_.*",
        "KOPYCAT_MIRROR_GROUPS": f"mir{run}-.*"})

    first = airflow.run_dag("kopycat_shop_mirror", "2026-11-21T01:00:00Z")
    assert first["state"] == "success", first
    assert sum(r["records"] for r in first.results("shop-mirror-source.copy")) == 2 * PARTITIONS * 200
    for topic in topics:
        assert _by_partition(backup, f"primary.{topic}") == _by_partition(primary, topic), topic
    remote = f"primary.{topics[0]}"
    checkpoints, syncs = _checkpoints(backup, group), _offset_syncs(primary, topics[0])
    assert set(checkpoints) == {(remote, p) for p in range(PARTITIONS)}
    for (_, partition), offset in checkpoints.items():
        # MM2's translation: through the last offset sync at or before the group's offset, one past
        # it unless exact; the target is fresh, so offsets match and nothing before it is skipped
        before = max(s for s in syncs[partition] if s[0] <= GROUP_OFFSET)
        assert offset == before[1] + (before[0] != GROUP_OFFSET) <= GROUP_OFFSET, (partition, syncs[partition])
    assert committed_offsets(backup, group, remote, PARTITIONS) == {p: o for (_, p), o in checkpoints.items()}

    for topic in topics:
        _produce(primary, topic, 200, 50)
    second = airflow.run_dag("kopycat_shop_mirror", "2026-11-21T02:00:00Z")
    assert second["state"] == "success", second
    assert sum(r["records"] for r in second.results("shop-mirror-source.copy")) == 2 * PARTITIONS * 50  # only new
    for topic in topics:
        assert _by_partition(backup, f"primary.{topic}") == _by_partition(primary, topic), topic  # no duplicate

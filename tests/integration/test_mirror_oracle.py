"""Kopycat's MirrorMaker 2 records against Kafka's own MM2 code, both ways, between two real brokers.

Kopycat -> Kafka: what Kopycat's MirrorSource, MirrorCheckpoint and MirrorHeartbeat connectors write is read
by Kafka's ``OffsetSync``/``Checkpoint``/``Heartbeat.deserializeRecord``, ``RemoteClusterUtils.translateOffsets``,
``MirrorClient`` and ``OffsetSyncStore`` (tests/support/java/MirrorOracle.java), and must mean what Kopycat
meant. Kafka -> Kopycat: Kafka's MirrorSourceConnector, MirrorCheckpointConnector and MirrorHeartbeatConnector
run in the real Connect worker, and Kopycat's decoders and offset-sync store read their records to the values
Kafka's own classes read. Broker B is the source cluster, broker A (the worker's) the target.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest
from confluent_kafka import Consumer, TopicPartition

from kopycat.connectors.mirror.checkpoint import CheckpointStore, decode_checkpoint
from kopycat.connectors.mirror.heartbeat import decode_heartbeat
from kopycat.connectors.mirror.offset_sync import decode_offset_sync
from kopycat.connectors.mirror.offset_sync_store import OffsetSyncStore, TopicReader
from kopycat.dev.kafka_broker import LocalKafkaBroker
from kopycat.dev.kafka_connect import LocalKafkaConnect
from kopycat.runtime.bounded_plan import plan_bounded_run
from kopycat.runtime.bounded_run import run_planned_task
from tests.support.kafka import consume_records, create_topic, produce
from tests.support.mirror_oracle import MirrorOracle

# The Kafka -> Kopycat test may start a broker and the Connect worker (two JVMs) first.
pytestmark = [pytest.mark.integration, pytest.mark.timeout(1200)]

PARTITIONS = 2
RECORDS = 300  # per partition
GROUP_OFFSET = 217  # where the source group stands in each partition
TARGET_HEAD = 40  # records already in each remote partition: target offsets differ from source ones
BYTE_ARRAY = "org.apache.kafka.connect.converters.ByteArrayConverter"


def run_all(connector: dict[str, str], worker: dict[str, str]) -> int:
    """Plan, then one bounded run per planned task (as Airflow drives them); the records written."""
    summaries = [run_planned_task(connector, planned, worker) for planned in plan_bounded_run(connector, worker)]
    assert [s.error for s in summaries] == [None] * len(summaries)
    return sum(s.records for s in summaries)


def fill(bootstrap: str, topic: str, count: int, prefix: str) -> None:
    create_topic(bootstrap, topic, PARTITIONS)
    for partition in range(PARTITIONS):
        produce(bootstrap, topic, [f"{prefix}{partition}:{i}".encode() for i in range(count)], partition=partition)


def commit_group(bootstrap: str, group: str, topic: str) -> None:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        consumer.commit(offsets=[TopicPartition(topic, p, GROUP_OFFSET) for p in range(PARTITIONS)],
                        asynchronous=False)
    finally:
        consumer.close()


def raw(bootstrap: str, topic: str) -> list[tuple[bytes, bytes]]:
    """(key, value) of every record of ``topic`` in order, as a read_committed consumer sees them."""
    return [(m.key(), m.value()) for m in consume_records(bootstrap, topic, committed_only=True)
            if m.key() is not None and m.value() is not None]


def kopycat_translation(bootstrap: str, syncs_topic: str, group: str, topic: str) -> dict[int, int | None]:
    """Kopycat's OffsetSyncStore after reading every sync: GROUP_OFFSET of each source partition, translated."""
    store = OffsetSyncStore(TopicReader({"bootstrap.servers": bootstrap, "group.id": f"check-{uuid.uuid4().hex}"},
                                        syncs_topic, "source", 60.0))
    try:
        store.start(initialization_must_read_to_end=False)
        return {p: store.translate_downstream(group, topic, p, GROUP_OFFSET) for p in range(PARTITIONS)}
    finally:
        store.close()


def as_syncs(parsed: list[dict[str, Any]]) -> list[tuple[str, int, int, int]]:
    return [(s["topic"], s["partition"], s["upstream_offset"], s["downstream_offset"]) for s in parsed]


def as_checkpoints(parsed: list[dict[str, Any]], group: str) -> dict[tuple[str, int], tuple[int, int, str]]:
    """The last checkpoint per partition of ``group`` (later records replace earlier ones, as in MM2)."""
    return {(c["topic"], c["partition"]): (c["upstream_offset"], c["downstream_offset"], c["metadata"])
            for c in parsed if c["group"] == group}


def test_kafka_mm2_client_reads_kopycat_checkpoints_offset_syncs_and_heartbeats_to_the_same_offsets(
        kafka_broker: LocalKafkaBroker, kafka_broker_b: LocalKafkaBroker) -> None:
    target, source = kafka_broker.bootstrap_servers, kafka_broker_b.bootstrap_servers
    run = uuid.uuid4().hex[:8]
    source_alias, target_alias = f"b{run}", f"a{run}"
    topic, remote, group = f"or{run}-orders", f"b{run}.or{run}-orders", f"or{run}-app"
    syncs_topic, checkpoints_topic = f"mm2-offset-syncs.{target_alias}.internal", f"{source_alias}.checkpoints.internal"
    fill(target, remote, TARGET_HEAD, "old")
    fill(source, topic, RECORDS, "v")
    common = {"source.cluster.alias": source_alias, "target.cluster.alias": target_alias,
              "source.cluster.bootstrap.servers": source, "target.cluster.bootstrap.servers": target,
              "topics": f"or{run}-.*"}

    def worker(bootstrap: str, name: str) -> dict[str, str]:
        return {"bootstrap.servers": bootstrap, "offset.storage.topic": f"offsets-{name}-{run}",
                "offset.storage.replication.factor": "1", "offset.storage.partitions": "5"}

    mirror = {**common, "name": f"mirror-{run}", "connector.class": "MirrorSourceConnector", "tasks.max": "1",
              "replication.factor": "1", "offset-syncs.topic.replication.factor": "1"}
    assert run_all(mirror, worker(target, "a")) >= PARTITIONS * RECORDS
    commit_group(source, group, topic)
    checkpoints = {**common, "name": f"checkpoints-{run}", "tasks.max": "1",
                   "connector.class": "MirrorCheckpointConnector", "groups": f"or{run}-.*",
                   "checkpoints.topic.replication.factor": "1"}
    assert run_all(checkpoints, worker(target, "a")) == PARTITIONS
    beat = {**common, "name": f"beat-{run}", "connector.class": "MirrorHeartbeatConnector",
            "heartbeats.topic.replication.factor": "1"}
    assert run_all(beat, worker(target, "a")) == 1
    # one more hop: a mirror that copies only heartbeats (MM2 always replicates them) from A, as cluster
    # u<run>, into A again: A's heartbeats land in u<run>.heartbeats, and MirrorClient sees u<run> one hop
    # upstream. No heartbeat topic may appear on B: other tests mirror B and count every record they copy
    hop_alias = f"u{run}"
    hop = {"name": f"mirror-hop-{run}", "connector.class": "MirrorSourceConnector", "tasks.max": "1",
           "source.cluster.alias": hop_alias, "target.cluster.alias": f"t{run}",
           "source.cluster.bootstrap.servers": target, "target.cluster.bootstrap.servers": target,
           "topics": f"nothing{run}", "replication.factor": "1", "offset-syncs.topic.replication.factor": "1"}
    assert run_all(hop, worker(target, "a")) >= 1

    oracle = MirrorOracle({"a": target, "b": source})
    offsets = [{"topic": topic, "partition": p, "offset": GROUP_OFFSET} for p in range(PARTITIONS)]
    answer = oracle.ask(
        reads=[{"cluster": "b", "topic": syncs_topic, "kind": "offset_sync"},
               {"cluster": "a", "topic": checkpoints_topic, "kind": "checkpoint"},
               {"cluster": "a", "topic": f"{hop_alias}.heartbeats", "kind": "heartbeat"},
               {"cluster": "a", "topic": "heartbeats", "kind": "heartbeat"}],
        translations=[{"cluster": "a", "remote_alias": source_alias, "group": group}],
        sync_store_translations=[{"cluster": "b", "topic": syncs_topic, "group": group, "offsets": offsets}],
        topologies=[{"cluster": "a", "aliases": [hop_alias]}])
    java_syncs, java_checkpoints, java_remote_beats, java_beats = answer["reads"]

    # offset syncs: Kafka reads Kopycat's bytes to what Kopycat meant, and each sync is a true mapping
    assert as_syncs(java_syncs) == [tuple(decode_offset_sync(k, v)) for k, v in raw(source, syncs_topic)]
    data_syncs = [s for s in java_syncs if s["topic"] == topic]
    assert {s["partition"] for s in data_syncs} == set(range(PARTITIONS))
    assert all(s["downstream_offset"] == s["upstream_offset"] + TARGET_HEAD for s in data_syncs)

    # checkpoints: Kafka reads them, its OffsetSyncStore translates the group to the same downstream offsets,
    # and RemoteClusterUtils.translateOffsets hands a failing-over consumer exactly those
    kafka_store = {p["partition"]: p["downstream_offset"] for p in answer["sync_store_translations"][0]}
    assert kopycat_translation(source, syncs_topic, group, topic) == kafka_store
    expected = {(remote, p): (GROUP_OFFSET, kafka_store[p], "") for p in range(PARTITIONS)}
    assert as_checkpoints(java_checkpoints, group) == expected
    assert as_checkpoints([decode_checkpoint(k, v)._asdict() for k, v in raw(target, checkpoints_topic)],
                          group) == expected
    for partition in range(PARTITIONS):  # through a sync at or before the group: repeats, never a skip
        below = [s for s in data_syncs if s["partition"] == partition and s["upstream_offset"] <= GROUP_OFFSET]
        assert kafka_store[partition] in {s["downstream_offset"] + (s["upstream_offset"] != GROUP_OFFSET)
                                          for s in below}
        assert kafka_store[partition] <= GROUP_OFFSET + TARGET_HEAD
    translated = {(t["topic"], t["partition"]): t["offset"] for t in answer["translations"][0]}
    assert translated == {(remote, p): kafka_store[p] for p in range(PARTITIONS)}

    # heartbeats: Kafka reads the flow's beat, as written and as mirrored one hop on, and MirrorClient sees
    # the hop
    flow = (source_alias, target_alias)
    ours = [h for h in java_beats if (h["source_alias"], h["target_alias"]) == flow]
    assert len(ours) == 1 and ours[0]["timestamp"] > 1_700_000_000_000
    assert [h for h in java_remote_beats if (h["source_alias"], h["target_alias"]) == flow] == \
        [{**ours[0], "offset_in_topic": h["offset_in_topic"]} for h in java_remote_beats
         if (h["source_alias"], h["target_alias"]) == flow]
    kopycat_beats = [decode_heartbeat(k, v) for k, v in raw(target, "heartbeats")]
    assert [(h["source_alias"], h["target_alias"], h["timestamp"]) for h in java_beats] == \
        [(h.source_alias, h.target_alias, h.timestamp) for h in kopycat_beats]
    [topology] = answer["topologies"]
    assert topology["replication_hops"] == {hop_alias: 1}
    assert hop_alias in topology["upstream_clusters"]
    assert f"{hop_alias}.heartbeats" in topology["heartbeat_topics"]
    assert topology["remote_topics"][hop_alias] == [f"{hop_alias}.heartbeats"]
    assert checkpoints_topic in topology["checkpoint_topics"]


def mm2_config(kind: str, common: dict[str, str], **settings: str) -> dict[str, str]:
    """A Kafka MM2 connector's config for the Connect worker: bytes through unchanged, one replica."""
    return {**common, "connector.class": f"org.apache.kafka.connect.mirror.{kind}", "tasks.max": "1",
            "key.converter": BYTE_ARRAY, "value.converter": BYTE_ARRAY, **settings}


def wait_for_settled_checkpoints(oracle: MirrorOracle, source: str, names: dict[str, str],
                                 timeout_s: float = 300.0) -> tuple[dict[str, Any], dict[int, int | None]]:
    """Kafka's latest checkpoints for the group once they equal Kopycat's translation of every sync so far.

    Kafka's checkpoint task translates with the syncs it has read when it runs (every second here), so its
    first checkpoints may come from fewer syncs than the topic holds by now: wait until both agree.
    """
    deadline, last = time.monotonic() + timeout_s, None
    while time.monotonic() < deadline:
        answer = oracle.ask(reads=[{"cluster": "b", "topic": names["syncs"], "kind": "offset_sync"},
                                   {"cluster": "a", "topic": names["checkpoints"], "kind": "checkpoint"},
                                   {"cluster": "a", "topic": "heartbeats", "kind": "heartbeat"}])
        checkpoints = as_checkpoints(answer["reads"][1], names["group"])
        ours = kopycat_translation(source, names["syncs"], names["group"], names["topic"])
        last = (checkpoints, ours)
        if {p: checkpoints.get((names["remote"], p), (0, None, ""))[1] for p in range(PARTITIONS)} == ours:
            return answer, ours
        time.sleep(2)
    raise AssertionError(f"Kafka's checkpoints and Kopycat's translation did not agree in {timeout_s:.0f} s: {last}")


def test_kopycat_reads_kafka_mm2_offset_syncs_checkpoints_and_heartbeats_to_the_values_kafka_reads(
        kafka_broker: LocalKafkaBroker, kafka_broker_b: LocalKafkaBroker, kafka_connect: LocalKafkaConnect) -> None:
    target, source = kafka_broker.bootstrap_servers, kafka_broker_b.bootstrap_servers
    run = uuid.uuid4().hex[:8]
    source_alias, target_alias = f"b{run}", f"a{run}"
    names = {"topic": f"km{run}-orders", "remote": f"{source_alias}.km{run}-orders", "group": f"km{run}-app",
             "syncs": f"mm2-offset-syncs.{target_alias}.internal",
             "checkpoints": f"{source_alias}.checkpoints.internal"}
    fill(target, names["remote"], TARGET_HEAD, "old")
    fill(source, names["topic"], RECORDS, "v")
    commit_group(source, names["group"], names["topic"])
    common = {"source.cluster.alias": source_alias, "target.cluster.alias": target_alias,
              "source.cluster.bootstrap.servers": source, "target.cluster.bootstrap.servers": target,
              "topics": f"km{run}-.*"}
    connectors = {
        f"mm2-source-{run}": mm2_config("MirrorSourceConnector", common, **{
            "replication.factor": "1", "offset-syncs.topic.replication.factor": "1",
            "sync.topic.acls.enabled": "false"}),
        f"mm2-checkpoint-{run}": mm2_config("MirrorCheckpointConnector", common, **{
            "groups": f"km{run}-.*", "emit.checkpoints.interval.seconds": "1",
            "refresh.groups.interval.seconds": "1", "checkpoints.topic.replication.factor": "1"}),
        f"mm2-heartbeat-{run}": mm2_config("MirrorHeartbeatConnector", common, **{
            "emit.heartbeats.interval.seconds": "1", "heartbeats.topic.replication.factor": "1"}),
    }
    try:
        for name, config in connectors.items():
            kafka_connect.create_connector(name, config)
        for name in connectors:
            kafka_connect.wait_for_task_state(name, "RUNNING", timeout_s=180)
        oracle = MirrorOracle({"a": target, "b": source})
        answer, translated = wait_for_settled_checkpoints(oracle, source, names)
    finally:
        for name in connectors:
            kafka_connect.delete_connector(name)
    java_syncs, java_checkpoints, java_beats = answer["reads"]

    # Kafka's offset syncs, decoded by Kopycat as by Kafka; each maps a source offset to its copy
    kopycat_syncs = [tuple(decode_offset_sync(k, v)) for k, v in raw(source, names["syncs"])]
    assert kopycat_syncs[:len(java_syncs)] == as_syncs(java_syncs)
    data_syncs = [s for s in java_syncs if s["topic"] == names["topic"]]
    assert {s["partition"] for s in data_syncs} == set(range(PARTITIONS))
    assert all(s["downstream_offset"] == s["upstream_offset"] + TARGET_HEAD for s in data_syncs)

    # Kafka's checkpoints, decoded and loaded by Kopycat's CheckpointStore to what Kafka's Checkpoint reads
    expected = as_checkpoints(java_checkpoints, names["group"])
    assert {tp: c[1] for tp, c in expected.items()} == {(names["remote"], p): translated[p] for p in range(PARTITIONS)}
    assert all(c[0] == GROUP_OFFSET for c in expected.values())
    checkpoint_records = raw(target, names["checkpoints"])
    assert as_checkpoints([decode_checkpoint(k, v)._asdict() for k, v in checkpoint_records][:len(java_checkpoints)],
                          names["group"]) == expected
    store = CheckpointStore({names["group"]})
    assert store.load(TopicReader({"bootstrap.servers": target, "group.id": f"check-{uuid.uuid4().hex}"},
                                  names["checkpoints"], "target", 60.0))
    loaded = store.get(names["group"]) or {}
    assert {tp: (c.upstream_offset, c.downstream_offset, c.metadata) for tp, c in loaded.items()} == \
        as_checkpoints([decode_checkpoint(k, v)._asdict() for k, v in checkpoint_records], names["group"])

    # Kafka's heartbeats of this flow, decoded by Kopycat as by Kafka
    flow = (source_alias, target_alias)
    java_flow = [(h["source_alias"], h["target_alias"], h["timestamp"]) for h in java_beats
                 if (h["source_alias"], h["target_alias"]) == flow]
    kopycat_flow = [tuple(decode_heartbeat(k, v)) for k, v in raw(target, "heartbeats")]
    assert java_flow and all(t > 1_700_000_000_000 for _, _, t in java_flow)
    assert [h for h in kopycat_flow if h[:2] == flow][:len(java_flow)] == java_flow

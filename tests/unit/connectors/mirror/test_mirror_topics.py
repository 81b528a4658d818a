"""Topic selection, remote topic names, the task split and MM2's offset-sync records."""

from __future__ import annotations

import pytest

from kopycat.api.errors import ConfigError
from kopycat.connectors.mirror.offset_sync import (
    OffsetSync,
    PartitionState,
    decode_offset_sync,
    encode_key,
    encode_value,
)
from kopycat.connectors.mirror.replication_policy import (
    DefaultReplicationPolicy,
    IdentityReplicationPolicy,
    replication_policy,
)
from kopycat.connectors.mirror.source_config import MirrorSettings
from kopycat.connectors.mirror.source_connector import MirrorSourceConnector, deal_round_robin


def topic_filter(**extra: str):  # type: ignore[no-untyped-def]
    props = {"name": "m", "source.cluster.alias": "us", "target.cluster.alias": "eu",
             "source.cluster.bootstrap.servers": "s:1", **extra}
    return MirrorSettings.parse(props).topic_filter


def test_default_filter_copies_user_topics_and_leaves_internal_ones() -> None:
    f = topic_filter()
    kept = [t for t in ["orders", "audit.log", "__consumer_offsets", "connect-offsets-internal", "x.internal",
                        "orders.replica", "heartbeats", "mm2-offset-syncs.eu.internal", ".hidden"]
            if f.should_replicate(t)]
    assert kept == ["orders", "audit.log", "heartbeats"]


def test_topics_is_a_comma_separated_alternation_matched_on_the_whole_name() -> None:
    f = topic_filter(topics="orders, audit\\..*", **{"topics.exclude": "audit\\.secret"})
    assert [t for t in ["orders", "orders2", "audit.log", "audit.secret", "xaudit.log"] if f.should_replicate(t)] \
        == ["orders", "audit.log"]


def test_an_empty_topics_list_matches_nothing() -> None:
    assert not topic_filter(topics="").matches("orders")


def test_topics_that_came_from_the_target_are_cycles() -> None:
    f = topic_filter()
    assert f.should_replicate("asia.orders") and not f.should_replicate("eu.orders")
    assert not f.should_replicate("asia.eu.orders")


def test_default_policy_prefixes_the_alias_and_reads_it_back() -> None:
    policy = DefaultReplicationPolicy()
    assert policy.format_remote_topic("us", "orders.v1") == "us.orders.v1"
    assert policy.topic_source("us.orders.v1") == "us" and policy.upstream_topic("us.orders.v1") == "orders.v1"
    assert policy.topic_source("orders") is None and policy.topic_source("orders.") is None
    assert policy.original_topic("eu.us.orders") == "orders"
    assert policy.offset_syncs_topic("eu") == "mm2-offset-syncs.eu.internal"
    assert policy.checkpoints_topic("us") == "us.checkpoints.internal"


def test_a_custom_separator_applies_to_internal_topics_unless_turned_off() -> None:
    policy = replication_policy("replication.policy.class", "DefaultReplicationPolicy",
                                {"replication.policy.separator": "_"})
    assert policy.format_remote_topic("us", "orders") == "us_orders"
    assert policy.offset_syncs_topic("eu") == "mm2-offset-syncs_eu_internal"
    policy = replication_policy("replication.policy.class", "DefaultReplicationPolicy", {
        "replication.policy.separator": "_", "replication.policy.internal.topic.separator.enabled": "false"})
    assert policy.offset_syncs_topic("eu") == "mm2-offset-syncs.eu.internal"


def test_identity_policy_keeps_names_except_heartbeats() -> None:
    policy = replication_policy("replication.policy.class",
                                "org.apache.kafka.connect.mirror.IdentityReplicationPolicy",
                                {"source.cluster.alias": "us"})
    assert isinstance(policy, IdentityReplicationPolicy)
    assert policy.format_remote_topic("us", "orders") == "orders"
    assert policy.format_remote_topic("us", "heartbeats") == "us.heartbeats"
    assert policy.topic_source("orders") == "us" and policy.upstream_topic("orders") == "orders"


def test_an_unknown_policy_class_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="replication.policy.class"):
        replication_policy("replication.policy.class", "kopycat.api.errors.ConfigError", {})


def test_partitions_are_dealt_round_robin_as_mm2_does() -> None:
    partitions = [("t0", p) for p in range(8)] + [("t1", 0), ("t1", 1), ("t2", 0), ("t2", 1)]
    groups = deal_round_robin(partitions, 3)
    assert groups == [[("t0", 0), ("t0", 3), ("t0", 6), ("t1", 1)],
                      [("t0", 1), ("t0", 4), ("t0", 7), ("t2", 0)],
                      [("t0", 2), ("t0", 5), ("t1", 0), ("t2", 1)]]
    assert deal_round_robin([("a", 0)], 4) == [[("a", 0)]]


def test_task_configs_carry_the_props_and_mm2s_partition_keys() -> None:
    connector = MirrorSourceConnector()
    connector._settings = MirrorSettings.parse({"source.cluster.bootstrap.servers": "s:1"})
    connector._props = {"name": "m"}
    connector._partitions.replace([("a", 0), ("a", 1), ("b", 0)])
    assert connector.task_configs(2) == [
        {"name": "m", "task.assigned.partitions": "a-0,b-0", "task.index": "0"},
        {"name": "m", "task.assigned.partitions": "a-1", "task.index": "1"}]
    connector._partitions.replace([])
    assert connector.task_configs(2) == []


def test_offset_sync_bytes_equal_kafkas_protocol_schema_layout() -> None:
    # From org.apache.kafka.common.protocol.types.Schema (kafka-clients 4.1.1) writing
    # OffsetSync's KEY_SCHEMA/VALUE_SCHEMA for topic "orders.eu", partition 3, 4711 -> 42.
    assert encode_key("orders.eu", 3).hex() == "00096f72646572732e657500000003"
    assert encode_value(4711, 42).hex() == "0000000000001267000000000000002a"
    assert decode_offset_sync(bytes.fromhex("00096f72646572732e657500000003"),
                              bytes.fromhex("0000000000001267000000000000002a")) == OffsetSync("orders.eu", 3, 4711, 42)


def test_a_sync_is_due_first_then_after_offset_lag_max_or_a_gap() -> None:
    state = PartitionState(max_offset_lag=100)
    due = []
    for upstream in range(250):
        due.append(state.update(upstream, upstream + 1000))
        state.reset()
    assert [i for i, d in enumerate(due) if d] == [0, 101, 202]
    assert state.update(260, 1260)  # upstream skipped 250..259 (compaction): sync now
    state.reset()
    assert state.update(261, 5)  # the target went backwards (truncated): sync now

"""MirrorHeartbeatConnector and its task: MM2's heartbeat bytes, shapes and bounded runs."""

from __future__ import annotations

import struct

import pytest

from kopycat.api.bounded import BOUNDED_RUN_CONFIG
from kopycat.api.data import Schema
from kopycat.api.errors import DataError
from kopycat.connectors.mirror.heartbeat import (
    HEARTBEAT_CONFIG,
    Heartbeat,
    MirrorHeartbeatConnector,
    MirrorHeartbeatTask,
    decode_heartbeat,
    encode_heartbeat_key,
    encode_heartbeat_value,
)
from kopycat.plugins import connector_class
from kopycat.runtime.task_factory import with_converter_defaults

PROPS = {"name": "hb", "connector.class": "MirrorHeartbeatConnector", "source.cluster.alias": "us",
         "target.cluster.alias": "eu"}


def test_the_key_is_two_kafka_protocol_strings_source_alias_first() -> None:
    key = encode_heartbeat_key(Heartbeat("us", "eu-west", 0))
    assert key == b"\x00\x02us" + b"\x00\x07eu-west"


def test_the_value_is_version_0_as_int16_then_the_timestamp_as_big_endian_int64() -> None:
    value = encode_heartbeat_value(Heartbeat("us", "eu", 0x0102030405060708))
    assert value == bytes([0, 0, 1, 2, 3, 4, 5, 6, 7, 8])


def test_a_heartbeat_decodes_back_to_itself_and_garbage_is_a_data_error() -> None:
    heartbeat = Heartbeat("a\u00e9", "b", 1_700_000_000_123)
    assert decode_heartbeat(encode_heartbeat_key(heartbeat), encode_heartbeat_value(heartbeat)) == heartbeat
    with pytest.raises(DataError, match="Not an MM2 heartbeat"):
        decode_heartbeat(b"\x00\x05ab", b"\x00\x00")
    with pytest.raises(DataError, match="version 1"):
        decode_heartbeat(b"\x00\x01a\x00\x01b", struct.pack(">hq", 1, 5))


def test_mm2_keys_and_defaults_are_kept() -> None:
    values = HEARTBEAT_CONFIG.parse({})
    assert values["emit.heartbeats.enabled"] is True and values["emit.heartbeats.interval.seconds"] == 1
    assert values["heartbeats.topic.replication.factor"] == 3
    assert with_converter_defaults({"connector.class": "MirrorHeartbeat"})["value.converter"] == (
        "org.apache.kafka.connect.converters.ByteArrayConverter")


def test_the_kafka_class_name_and_short_names_resolve_to_the_connector() -> None:
    assert connector_class("org.apache.kafka.connect.mirror.MirrorHeartbeatConnector") is MirrorHeartbeatConnector
    assert connector_class("MirrorHeartbeat") is MirrorHeartbeatConnector


def test_the_connector_plans_one_task_without_a_source_cluster_and_none_when_disabled() -> None:
    connector = MirrorHeartbeatConnector()
    connector.start(PROPS)  # no target.cluster.bootstrap.servers: the topic is left to auto-creation
    assert connector.task_configs(5) == [PROPS]
    connector.start({**PROPS, "emit.heartbeats.enabled": "false"})
    assert connector.task_configs(5) == []


def test_a_bounded_run_emits_one_mm2_shaped_heartbeat_then_empty_batches() -> None:
    task = MirrorHeartbeatTask()
    task.start({**PROPS, BOUNDED_RUN_CONFIG: "true"})
    (record,) = task.poll() or []
    assert record.topic == "heartbeats" and record.kafka_partition == 0
    assert record.source_partition == {"sourceClusterAlias": "us", "targetClusterAlias": "eu"}
    assert record.source_offset == {"offset": 0}
    assert record.key_schema == Schema.BYTES_SCHEMA and record.value_schema == Schema.BYTES_SCHEMA
    heartbeat = decode_heartbeat(record.key, record.value)
    assert (heartbeat.source_alias, heartbeat.target_alias, heartbeat.timestamp) == ("us", "eu", record.timestamp)
    assert task.poll() == [] and task.poll() == []


def test_a_continuous_task_waits_an_interval_and_returns_none_once_stopped() -> None:
    task = MirrorHeartbeatTask()
    task.start({**PROPS, "emit.heartbeats.interval.seconds": "0"})
    assert len(task.poll() or []) == 1
    task.stop()
    assert task.poll() is None


def test_offsets_are_checked_as_mm2_does() -> None:
    connector = MirrorHeartbeatConnector()
    good = {"sourceClusterAlias": "us", "targetClusterAlias": "eu"}
    assert connector.alter_offsets(PROPS, {frozenset(): None}) is True
    with pytest.raises(Exception, match="targetClusterAlias"):
        connector.alter_offsets(PROPS, {_Frozen({"sourceClusterAlias": "us"}): {"offset": 0}})
    with pytest.raises(Exception, match="non-negative"):
        connector.alter_offsets(PROPS, {_Frozen(good): {"offset": -1}})


class _Frozen(dict):  # type: ignore[type-arg]
    """A hashable dict, as offsets maps are keyed by partitions."""

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(tuple(sorted(self.items())))

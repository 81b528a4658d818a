"""MirrorMaker 2's heartbeats: Kafka's ``MirrorHeartbeatConnector``, ``MirrorHeartbeatTask`` and ``Heartbeat``.

A heartbeat says "the flow from ``source`` to ``target`` was alive at this time". The task
writes one every ``emit.heartbeats.interval.seconds`` to partition 0 of ``heartbeats`` on the
worker's cluster (the target); a mirror of that cluster copies it on as ``<alias>.heartbeats``,
which is how MM2 tools (``MirrorClient``, ``RemoteClusterUtils``) find upstream clusters. The
records are byte-exact MM2 ones (Kafka protocol ``Schema`` types, big-endian):

    key   = STRING sourceClusterAlias + STRING targetClusterAlias
    value = INT16 version (0) + INT64 timestamp (epoch ms)

Source partition ``{"sourceClusterAlias", "targetClusterAlias"}``, offset ``{"offset": 0}``.
The connector creates the topic on ``target.cluster.bootstrap.servers`` (compacted, one
partition) when it is given. A bounded run (:mod:`kopycat.api.bounded`) emits one heartbeat and
then returns empty batches, so the run ends.
"""

from __future__ import annotations

import logging
import struct
import threading
import time
from collections.abc import Mapping
from typing import Any, Final, NamedTuple

from confluent_kafka.admin import AdminClient

from kopycat.api.bounded import is_bounded_run
from kopycat.api.config import ConfigDef, ConfigType, ConfigValue, Importance, Range, validate_across_keys
from kopycat.api.connector import SourceConnector
from kopycat.api.data import Schema
from kopycat.api.errors import ConnectError, DataError
from kopycat.api.records import SourceRecord
from kopycat.api.task import SourceTask
from kopycat.connectors.mirror.checkpoint import decode_string, encode_string
from kopycat.connectors.mirror.offset_checks import check_altered_offsets
from kopycat.connectors.mirror.source_config import (
    ADMIN_TIMEOUT_MS,
    DESTINATION_TOPICS_PREFIX,
    REPLICATION_POLICY_CLASS,
    REPLICATION_POLICY_SEPARATOR,
    SOURCE_BOOTSTRAP,
    SOURCE_CLUSTER_ALIAS,
    TARGET_BOOTSTRAP,
    TARGET_CLUSTER_ALIAS,
    MirrorSettings,
)
from kopycat.connectors.mirror.source_config import (
    CONFIG as SOURCE_CONFIG,
)
from kopycat.storage.topic_admin import create_topic_if_missing

__all__ = ["HEARTBEAT_CONFIG", "HEARTBEAT_VERSION", "Heartbeat", "MirrorHeartbeatConnector", "MirrorHeartbeatTask",
           "decode_heartbeat", "encode_heartbeat_key", "encode_heartbeat_value", "heartbeat_settings"]

log = logging.getLogger(__name__)

EMIT_HEARTBEATS_ENABLED: Final = "emit.heartbeats.enabled"
EMIT_HEARTBEATS_INTERVAL_SECONDS: Final = "emit.heartbeats.interval.seconds"
HEARTBEATS_TOPIC_REPLICATION_FACTOR: Final = "heartbeats.topic.replication.factor"
HEARTBEAT_VERSION: Final = 0
_VALUE_V0: Final = struct.Struct(">hq")
_SHARED_KEYS: Final = (SOURCE_CLUSTER_ALIAS, TARGET_CLUSTER_ALIAS, SOURCE_BOOTSTRAP, TARGET_BOOTSTRAP,
                       REPLICATION_POLICY_CLASS, REPLICATION_POLICY_SEPARATOR, DESTINATION_TOPICS_PREFIX,
                       ADMIN_TIMEOUT_MS, "key.converter", "value.converter", "header.converter")
_UNUSED_SOURCE: Final = "unused:0"


def _define(config: ConfigDef) -> ConfigDef:
    for name in _SHARED_KEYS:
        config.define_key(SOURCE_CONFIG.keys[name])
    return (config
            .define(EMIT_HEARTBEATS_ENABLED, ConfigType.BOOLEAN, True, None, Importance.LOW,
                    "Whether to emit heartbeats to the target cluster.", group="Heartbeats")
            .define(EMIT_HEARTBEATS_INTERVAL_SECONDS, ConfigType.LONG, 1, Range(min=0), Importance.LOW,
                    "Frequency of heartbeats.", group="Heartbeats")
            .define(HEARTBEATS_TOPIC_REPLICATION_FACTOR, ConfigType.SHORT, 3, Range(min=-1), Importance.LOW,
                    "Replication factor of the heartbeats topic (-1: the broker's default).", group="Heartbeats"))


HEARTBEAT_CONFIG: Final = _define(ConfigDef())
"""Kafka's ``MirrorHeartbeatConfig`` keys, plus the shared mirror keys the heartbeat uses."""


class Heartbeat(NamedTuple):
    """The flow ``source_alias`` -> ``target_alias`` was alive at ``timestamp`` (epoch ms)."""

    source_alias: str
    target_alias: str
    timestamp: int

    def connect_partition(self) -> dict[str, Any]:
        """``Heartbeat.connectPartition``: the source partition of the heartbeat record."""
        return {"sourceClusterAlias": self.source_alias, "targetClusterAlias": self.target_alias}


def encode_heartbeat_key(heartbeat: Heartbeat) -> bytes:
    """``Heartbeat.recordKey()``: STRING sourceClusterAlias, STRING targetClusterAlias."""
    return (encode_string(heartbeat.source_alias, "Source cluster alias")
            + encode_string(heartbeat.target_alias, "Target cluster alias"))


def encode_heartbeat_value(heartbeat: Heartbeat) -> bytes:
    """``Heartbeat.recordValue()``: INT16 version 0, INT64 timestamp."""
    return _VALUE_V0.pack(HEARTBEAT_VERSION, heartbeat.timestamp)


def decode_heartbeat(key: bytes, value: bytes) -> Heartbeat:
    """``Heartbeat.deserializeRecord``; DataError when the bytes are not a version 0 heartbeat."""
    try:
        source, position = decode_string(key, 0)
        target, _ = decode_string(key, position)
        version, timestamp = _VALUE_V0.unpack_from(value, 0)
        if version != HEARTBEAT_VERSION:
            raise struct.error(f"version {version}, but only version 0 exists")
    except (struct.error, UnicodeDecodeError) as exc:
        raise DataError(f"Not an MM2 heartbeat record (key {key[:60]!r}, value {value[:40]!r}): {exc}") from None
    return Heartbeat(source, target, timestamp)


def heartbeat_settings(props: Mapping[str, Any]) -> tuple[MirrorSettings, dict[str, Any]]:
    """The shared mirror settings and the heartbeat keys' values.

    The heartbeat never connects to the source cluster, so its bootstrap servers may be missing.
    """
    given = {k: v for k, v in props.items() if v is not None}
    if not str(given.get(SOURCE_BOOTSTRAP) or given.get("source.bootstrap.servers") or "").strip():
        given[SOURCE_BOOTSTRAP] = _UNUSED_SOURCE
    return MirrorSettings.parse(given), HEARTBEAT_CONFIG.parse(given)


class MirrorHeartbeatConnector(SourceConnector):
    """Creates the heartbeats topic and plans one task (Kafka's ``MirrorHeartbeatConnector``)."""

    def __init__(self) -> None:
        self._props: dict[str, str] = {}
        self._values: dict[str, Any] = {}

    def start(self, props: Mapping[str, str]) -> None:
        self._props = dict(props)
        settings, self._values = heartbeat_settings(props)
        if not self._values[EMIT_HEARTBEATS_ENABLED]:
            return
        admin_config = settings.target_admin_config("heartbeats-target-admin")
        topic = settings.policy.heartbeats_topic()
        if admin_config is None:
            log.info("Heartbeats %s: %s is not set, so topic %s is not created at plan time (the broker's "
                     "auto-creation must do it)", settings.name, TARGET_BOOTSTRAP, topic)
            return
        create_topic_if_missing(AdminClient(admin_config), topic, partitions=1,
                                replication_factor=self._values[HEARTBEATS_TOPIC_REPLICATION_FACTOR],
                                config={"cleanup.policy": "compact"}, timeout_s=settings[ADMIN_TIMEOUT_MS] / 1000)

    def task_class(self) -> type[MirrorHeartbeatTask]:
        return MirrorHeartbeatTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        """One task, or none with ``emit.heartbeats.enabled=false`` (MM2's)."""
        if not self._values:
            raise ConnectError("MirrorHeartbeatConnector.task_configs() called before start()")
        return [dict(self._props)] if self._values[EMIT_HEARTBEATS_ENABLED] else []

    def stop(self) -> None:
        """Nothing runs between plans."""

    def config(self) -> ConfigDef:
        return HEARTBEAT_CONFIG

    def validate(self, props: Mapping[str, str]) -> list[ConfigValue]:
        return validate_across_keys(super().validate(props), props, heartbeat_settings, TARGET_CLUSTER_ALIAS)

    def alter_offsets(self, props: Mapping[str, str], offsets: Mapping[Any, Mapping[str, Any] | None]) -> bool:
        """MM2's checks: partitions ``{sourceClusterAlias, targetClusterAlias}``, offsets ``{offset: n}``."""
        return check_altered_offsets(offsets, ("sourceClusterAlias", "targetClusterAlias"), with_partition=False)


class MirrorHeartbeatTask(SourceTask):
    """Emits a heartbeat per interval (Kafka's ``MirrorHeartbeatTask``); one in a bounded run."""

    def __init__(self) -> None:
        self._stopped = threading.Event()
        self._bounded = False
        self._emitted = False

    def start(self, props: Mapping[str, str]) -> None:
        settings, values = heartbeat_settings(props)
        self._source, self._target = settings.source_alias, settings.target_alias
        self._topic = settings.policy.heartbeats_topic()
        self._interval_s = float(values[EMIT_HEARTBEATS_INTERVAL_SECONDS])
        self._bounded = is_bounded_run(props)
        self._stopped.clear()
        self._emitted = False

    def poll(self) -> list[SourceRecord] | None:
        if self._bounded:
            if self._emitted:
                self._stopped.wait(0.1)  # emitted: the runner's idle clock ends the run
                return []
            self._emitted = True
            return [self._record()]
        if self._stopped.wait(self._interval_s):
            return None
        return [self._record()]

    def _record(self) -> SourceRecord:
        heartbeat = Heartbeat(self._source, self._target, int(time.time() * 1000))
        return SourceRecord(source_partition=heartbeat.connect_partition(), source_offset={"offset": 0},
                            topic=self._topic, kafka_partition=0, key_schema=Schema.BYTES_SCHEMA,
                            key=encode_heartbeat_key(heartbeat), value_schema=Schema.BYTES_SCHEMA,
                            value=encode_heartbeat_value(heartbeat), timestamp=heartbeat.timestamp)

    def stop(self) -> None:
        self._stopped.set()

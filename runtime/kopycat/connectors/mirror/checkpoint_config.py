"""The checkpoint connector's configuration: Kafka's ``MirrorCheckpointConfig`` keys and defaults.

The shared mirror keys (aliases, bootstrap servers, ``topics``, replication policy, offset-syncs
location, client prefixes) mean what they mean for :mod:`.source_config`, whose parsing is
reused, so the checkpoint connector of a mirror is configured like its source connector:

    groups                    ".*"                                   regexes of groups to checkpoint
    groups.exclude            "console-consumer-.*, connect-.*, __.*"  excludes win over includes
    emit.checkpoints.*        enabled true, every 60 s
    sync.group.offsets.*      enabled false, every 60 s: commit translated offsets on the target
    refresh.groups.*          enabled true, every 600 s (the standalone worker)
    checkpoints.topic.replication.factor   3

Where Kopycat differs: ``target.cluster.bootstrap.servers`` is required (checkpoints are read
back from and groups synced on the target), and ``group.filter.class``/``topic.filter.class``
are not supported (the default filters are built in).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from kopycat.api.config import ConfigDef, ConfigType, Importance, Range
from kopycat.api.errors import ConfigError
from kopycat.connectors.mirror.source_config import (
    ADMIN_TIMEOUT_MS,
    CONSUMER_POLL_TIMEOUT_MS,
    DESTINATION_TOPICS_PREFIX,
    EMIT_OFFSET_SYNCS_ENABLED,
    OFFSET_SYNCS_TOPIC_LOCATION,
    REPLICATION_POLICY_CLASS,
    REPLICATION_POLICY_SEPARATOR,
    SOURCE_BOOTSTRAP,
    SOURCE_CLUSTER_ALIAS,
    TARGET_BOOTSTRAP,
    TARGET_CLUSTER_ALIAS,
    TASK_INDEX_CONFIG,
    TOPICS,
    TOPICS_EXCLUDE,
    MirrorSettings,
)
from kopycat.connectors.mirror.source_config import (
    CONFIG as SOURCE_CONFIG,
)
from kopycat.connectors.mirror.topic_filter import compile_pattern_list

__all__ = ["CHECKPOINT_CONFIG", "GROUPS_EXCLUDE_DEFAULT", "TASK_CONSUMER_GROUPS", "CheckpointSettings",
           "GroupFilter", "check_mm2_rules"]

GROUPS: Final = "groups"
GROUPS_EXCLUDE: Final = "groups.exclude"
GROUPS_DEFAULT: Final = ".*"
GROUPS_EXCLUDE_DEFAULT: Final = "console-consumer-.*, connect-.*, __.*"
EMIT_CHECKPOINTS_ENABLED: Final = "emit.checkpoints.enabled"
EMIT_CHECKPOINTS_INTERVAL_SECONDS: Final = "emit.checkpoints.interval.seconds"
SYNC_GROUP_OFFSETS_ENABLED: Final = "sync.group.offsets.enabled"
SYNC_GROUP_OFFSETS_INTERVAL_SECONDS: Final = "sync.group.offsets.interval.seconds"
REFRESH_GROUPS_ENABLED: Final = "refresh.groups.enabled"
REFRESH_GROUPS_INTERVAL_SECONDS: Final = "refresh.groups.interval.seconds"
CHECKPOINTS_TOPIC_REPLICATION_FACTOR: Final = "checkpoints.topic.replication.factor"
TASK_CONSUMER_GROUPS: Final = "task.assigned.groups"
_SHARED_KEYS: Final = (
    SOURCE_CLUSTER_ALIAS, TARGET_CLUSTER_ALIAS, SOURCE_BOOTSTRAP, TARGET_BOOTSTRAP, TOPICS, TOPICS_EXCLUDE,
    REPLICATION_POLICY_CLASS, REPLICATION_POLICY_SEPARATOR, DESTINATION_TOPICS_PREFIX, ADMIN_TIMEOUT_MS,
    CONSUMER_POLL_TIMEOUT_MS, EMIT_OFFSET_SYNCS_ENABLED, OFFSET_SYNCS_TOPIC_LOCATION, "key.converter",
    "value.converter", "header.converter", TASK_INDEX_CONFIG)
_G = "Checkpoints"


def _define(config: ConfigDef) -> ConfigDef:
    for name in _SHARED_KEYS:
        config.define_key(SOURCE_CONFIG.keys[name])
    low, high = Importance.LOW, Importance.HIGH
    bool_, long_ = ConfigType.BOOLEAN, ConfigType.LONG
    return (config
            .define(GROUPS, ConfigType.LIST, GROUPS_DEFAULT, None, high, "Consumer groups to replicate: group "
                    "ids and regular expressions, comma separated.", group=_G)
            .define(GROUPS_EXCLUDE, ConfigType.LIST, GROUPS_EXCLUDE_DEFAULT, None, high, "Groups not to "
                    "replicate; excludes take precedence over includes.", group=_G)
            .define(EMIT_CHECKPOINTS_ENABLED, bool_, True, None, low, "Whether to replicate consumer offsets "
                    "to the target cluster (the connector cannot run without).", group=_G)
            .define(EMIT_CHECKPOINTS_INTERVAL_SECONDS, long_, 60, Range(min=0), low, "Frequency of checkpoints "
                    "(a bounded run makes one pass).", group=_G)
            .define(SYNC_GROUP_OFFSETS_ENABLED, bool_, False, None, low, "Whether to commit the translated "
                    "offsets to the same groups on the target, for groups with no active member there; "
                    "offsets only move forward.", group=_G)
            .define(SYNC_GROUP_OFFSETS_INTERVAL_SECONDS, long_, 60, Range(min=0), low, "Frequency of "
                    "consumer group offset sync.", group=_G)
            .define(REFRESH_GROUPS_ENABLED, bool_, True, None, low, "Look for new consumer groups while "
                    "running (the standalone worker); Airflow plans pick them up each run.", group=_G)
            .define(REFRESH_GROUPS_INTERVAL_SECONDS, long_, 600, Range(min=1), low, "Frequency of group "
                    "refresh.", group=_G)
            .define(CHECKPOINTS_TOPIC_REPLICATION_FACTOR, ConfigType.SHORT, 3, Range(min=-1), low,
                    "Replication factor of the checkpoints topic (-1: the broker's default).", group=_G)
            .define(TASK_CONSUMER_GROUPS, ConfigType.LIST, "", None, low, "Set by task_configs.", internal=True))


CHECKPOINT_CONFIG: Final = _define(ConfigDef())


@dataclass(frozen=True)
class GroupFilter:
    """Kafka's ``DefaultGroupFilter``: included and not excluded, whole-name regex matches."""

    include: re.Pattern[str] | None
    exclude: re.Pattern[str] | None

    def should_replicate_group(self, group: str) -> bool:
        included = self.include is not None and self.include.fullmatch(group) is not None
        return included and not (self.exclude is not None and self.exclude.fullmatch(group) is not None)


@dataclass(frozen=True)
class CheckpointSettings:
    """The shared mirror settings plus the checkpoint keys, parsed and cross-checked."""

    mirror: MirrorSettings
    values: Mapping[str, Any]
    group_filter: GroupFilter
    target_bootstrap: str

    @classmethod
    def parse(cls, props: Mapping[str, Any]) -> CheckpointSettings:
        mirror = MirrorSettings.parse(props)
        values = CHECKPOINT_CONFIG.parse({k: v for k, v in mirror.props.items()})
        if mirror.target_bootstrap is None:
            raise ConfigError(f"{TARGET_BOOTSTRAP} is missing: the checkpoint connector reads its previous "
                              f"checkpoints from the target cluster and syncs group offsets there; give its "
                              f"host:port list (the worker's bootstrap.servers)", key=TARGET_BOOTSTRAP)
        group_filter = GroupFilter(compile_pattern_list(GROUPS, values[GROUPS]),
                                   compile_pattern_list(GROUPS_EXCLUDE, values[GROUPS_EXCLUDE]))
        return cls(mirror, values, group_filter, mirror.target_bootstrap)

    def __getitem__(self, key: str) -> Any:
        return self.values[key]

    @property
    def checkpoints_topic(self) -> str:
        """``<source alias>.checkpoints.internal`` (the policy's ``checkpointsTopic``)."""
        return self.mirror.policy.checkpoints_topic(self.mirror.source_alias)

    @property
    def task_groups(self) -> list[str]:
        return [g.strip() for g in self.values[TASK_CONSUMER_GROUPS] or [] if g.strip()]

    @property
    def admin_timeout_s(self) -> float:
        return float(self.values[ADMIN_TIMEOUT_MS]) / 1000

    def target_consumer_config(self, role: str) -> dict[str, Any]:
        """A consumer of the target cluster (assign only, no commits): the target client settings."""
        config = self.mirror.target_admin_config(role) or {}
        config.update({"group.id": f"kopycat-{role}", "enable.auto.commit": False})
        return config

    def offset_syncs_consumer_config(self) -> tuple[dict[str, Any], str]:
        """``offsetSyncsTopicConsumerConfig``: the consumer and the cluster it reads."""
        if self.mirror.offset_syncs_at_source:
            config = self.mirror.source_consumer_config("offset-syncs-source-consumer")
            config.update({"group.id": "kopycat-offset-syncs-reader", "auto.offset.reset": "earliest"})
            return config, "source"
        return self.target_consumer_config("offset-syncs-target-consumer"), "target"


def check_mm2_rules(props: Mapping[str, Any]) -> dict[str, str]:
    """``MirrorCheckpointConfig.validate``: the keys that make the connector useless, with why."""
    invalid = {}
    if str(props.get(EMIT_CHECKPOINTS_ENABLED, "")).strip().lower() == "false":
        invalid[EMIT_CHECKPOINTS_ENABLED] = (f"MirrorCheckpointConnector can't run with {EMIT_CHECKPOINTS_ENABLED} "
                                             f"set to false")
    if str(props.get(EMIT_OFFSET_SYNCS_ENABLED, "")).strip().lower() == "false":
        invalid[EMIT_OFFSET_SYNCS_ENABLED] = "MirrorCheckpointConnector can't run without offset syncs"
    return invalid

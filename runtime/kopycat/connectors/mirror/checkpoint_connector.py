"""Replicate consumer group positions between clusters: Kafka's ``MirrorCheckpointConnector``.

Plans as Kafka's connector does, but synchronously in ``start`` (an Airflow plan task cannot
wait for MM2's scheduler): create ``<source alias>.checkpoints.internal`` on the target
(compacted, one partition), list the source cluster's consumer groups that pass ``groups``
minus ``groups.exclude`` and that hold offsets for at least one topic passing ``topics``
(``findConsumerGroups``). ``task_configs`` deals the groups round-robin over at most
``tasks.max`` tasks as ``task.assigned.groups`` plus ``task.index`` (MM2 cuts an unordered set
into contiguous blocks; which task gets which group is not part of any format). No groups, or
``emit.checkpoints.enabled=false``: no task configs.

While it runs (standalone worker) a monitor thread lists the groups again every
``refresh.groups.interval.seconds`` and asks for new task configs when they change; under
Airflow each plan lists them anew.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from kopycat.api.config import ConfigDef, ConfigValue, validate_across_keys
from kopycat.api.connector import SourceConnector
from kopycat.api.errors import ConfigError, ConnectError
from kopycat.connectors.mirror.checkpoint_config import (
    CHECKPOINT_CONFIG,
    CHECKPOINTS_TOPIC_REPLICATION_FACTOR,
    EMIT_CHECKPOINTS_ENABLED,
    REFRESH_GROUPS_ENABLED,
    REFRESH_GROUPS_INTERVAL_SECONDS,
    TASK_CONSUMER_GROUPS,
    CheckpointSettings,
    check_mm2_rules,
)
from kopycat.connectors.mirror.checkpoint_task import MirrorCheckpointTask, list_group_offsets
from kopycat.connectors.mirror.offset_checks import check_altered_offsets
from kopycat.connectors.mirror.refresh import RefreshMonitor
from kopycat.connectors.mirror.source_config import SOURCE_BOOTSTRAP, TASK_INDEX_CONFIG
from kopycat.connectors.mirror.source_connector import deal_round_robin
from kopycat.storage.topic_admin import create_topic_if_missing

__all__ = ["MirrorCheckpointConnector", "find_consumer_groups"]

log = logging.getLogger(__name__)


def find_consumer_groups(admin: AdminClient, settings: CheckpointSettings) -> list[str]:
    """``findConsumerGroups``: groups passing the group filter with offsets of a mirrored topic."""
    timeout_s = settings.admin_timeout_s
    try:
        listed = admin.list_consumer_groups(request_timeout=timeout_s).result(timeout_s).valid
    except KafkaException as exc:
        raise ConnectError(f"Could not list the consumer groups of the source cluster at "
                           f"{settings.mirror.source_bootstrap} within {timeout_s:.0f} s: {exc.args[0].str()}. "
                           f"Check that {SOURCE_BOOTSTRAP} names reachable brokers (and its security "
                           f"settings); admin.timeout.ms sets how long to wait") from None
    wanted = sorted(g.group_id for g in listed if settings.group_filter.should_replicate_group(g.group_id))
    topic_filter = settings.mirror.topic_filter
    found, irrelevant = [], []
    for group in wanted:
        offsets = list_group_offsets(admin, group, "source", timeout_s)
        (found if any(topic_filter.matches(topic) for topic, _ in offsets) else irrelevant).append(group)
    log.debug("Ignoring consumer groups with no offsets for topics the topic filter accepts: %s", irrelevant)
    return found


class MirrorCheckpointConnector(SourceConnector):
    """Creates the checkpoints topic, lists consumer groups, deals them to tasks."""

    def __init__(self) -> None:
        self._props: dict[str, str] = {}
        self._settings: CheckpointSettings | None = None
        self._groups: RefreshMonitor[str] = RefreshMonitor(
            self._refind_groups, lambda: self.context.request_task_reconfiguration(),
            retried=(ConnectError,))

    def start(self, props: Mapping[str, str]) -> None:
        invalid = check_mm2_rules(props)
        if invalid:
            key, problem = next(iter(invalid.items()))
            raise ConfigError(f"{problem}: remove {key} or set it to true", key=key)
        self._props = dict(props)
        settings = self._settings = CheckpointSettings.parse(props)
        self._create_checkpoints_topic(settings)
        groups = self._find_groups(settings)
        log.info("Started checkpoints %s (%s -> %s) with %d consumer groups", settings.mirror.name,
                 settings.mirror.source_alias, settings.mirror.target_alias, len(groups))
        self._groups.start(f"Checkpoints {settings.mirror.name}: consumer groups", groups,
                           settings[REFRESH_GROUPS_INTERVAL_SECONDS] if settings[REFRESH_GROUPS_ENABLED] else None)

    def _refind_groups(self) -> list[str]:
        assert self._settings is not None
        return self._find_groups(self._settings)

    def _create_checkpoints_topic(self, settings: CheckpointSettings) -> None:
        admin = AdminClient(settings.mirror.target_admin_config("checkpoint-target-admin") or {})
        create_topic_if_missing(admin, settings.checkpoints_topic, partitions=1,
                                replication_factor=settings[CHECKPOINTS_TOPIC_REPLICATION_FACTOR],
                                config={"cleanup.policy": "compact"}, timeout_s=settings.admin_timeout_s)

    def _find_groups(self, settings: CheckpointSettings) -> list[str]:
        groups = find_consumer_groups(AdminClient(settings.mirror.source_admin_config("checkpoint-source-admin")),
                                      settings)
        if not groups:
            log.warning("Checkpoints %s: no consumer group on the source cluster %s matches groups=%s (minus "
                        "groups.exclude) with offsets for topics=%s; there is nothing to checkpoint",
                        settings.mirror.name, settings.mirror.source_bootstrap, ",".join(settings["groups"]),
                        ",".join(settings.mirror["topics"]))
        return groups

    def task_class(self) -> type[MirrorCheckpointTask]:
        return MirrorCheckpointTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        if self._settings is None:
            raise ConnectError("MirrorCheckpointConnector.task_configs() called before start()")
        groups = self._groups.current()
        if not groups or not self._settings[EMIT_CHECKPOINTS_ENABLED]:
            return []
        return [{**self._props, TASK_CONSUMER_GROUPS: ",".join(dealt), TASK_INDEX_CONFIG: str(index)}
                for index, dealt in enumerate(deal_round_robin(groups, max_tasks))]

    def stop(self) -> None:
        self._groups.stop()

    def config(self) -> ConfigDef:
        return CHECKPOINT_CONFIG

    def validate(self, props: Mapping[str, str]) -> list[ConfigValue]:
        """Per-key checks, MM2's (checkpoints and offset syncs must be on), then the cross-key ones."""
        results = super().validate(props)
        by_name = {result.name: result for result in results}
        for key, problem in check_mm2_rules(props).items():
            by_name[key].add_error_message(problem)
        return validate_across_keys(results, props, CheckpointSettings.parse, SOURCE_BOOTSTRAP)

    def alter_offsets(self, props: Mapping[str, str], offsets: Mapping[Any, Mapping[str, Any] | None]) -> bool:
        """MM2's checks: partitions ``{group, topic, partition}``, offsets ``{offset: n >= 0}``."""
        return check_altered_offsets(offsets, ("group", "topic"), with_partition=True)

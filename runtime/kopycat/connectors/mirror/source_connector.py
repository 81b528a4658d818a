"""Mirror topics of another Kafka cluster into the worker's: MirrorMaker 2's ``MirrorSourceConnector``.

Plans as Kafka's connector does, but synchronously in ``start`` (an Airflow plan task has no time
to wait for MM2's scheduler): list the source topic-partitions that pass the topic filter (one
metadata call, bounded by ``admin.timeout.ms``), create the offset-syncs topic, create missing
remote topics on the target cluster with the source's partition count (and configs with
``sync.topic.configs.enabled``), add partitions to remote topics that have fewer, and keep
existing remote topics' configs in step. ``task_configs`` deals the partitions round-robin over
at most ``tasks.max`` tasks (``MirrorSourceConnector.taskConfigs``: the connector's props plus
``task.assigned.partitions`` and ``task.index``). No partitions: a warning and no task configs.

While it runs (standalone worker) a monitor thread lists the source again every
``refresh.topics.interval.seconds`` and asks for new task configs when partitions appear or go;
under Airflow the next plan picks them up. Topic ACL syncing is not done.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewPartitions,
)

from kopycat.api.config import ConfigDef, ConfigValue, validate_across_keys
from kopycat.api.connector import ExactlyOnceSupport, SourceConnector
from kopycat.api.errors import ConnectError
from kopycat.connectors.mirror.offset_checks import check_altered_offsets
from kopycat.connectors.mirror.refresh import RefreshMonitor
from kopycat.connectors.mirror.source_config import (
    ADMIN_TIMEOUT_MS,
    CONFIG,
    EMIT_OFFSET_SYNCS_ENABLED,
    OFFSET_SYNCS_TOPIC_REPLICATION_FACTOR,
    REFRESH_TOPICS_ENABLED,
    REFRESH_TOPICS_INTERVAL_SECONDS,
    REPLICATION_FACTOR,
    SOURCE_BOOTSTRAP,
    SYNC_TOPIC_CONFIGS_ENABLED,
    TASK_INDEX_CONFIG,
    TASK_TOPIC_PARTITIONS_CONFIG,
    MirrorSettings,
    encode_topic_partitions,
)
from kopycat.connectors.mirror.source_task import MirrorSourceTask
from kopycat.storage.topic_admin import create_topic_if_missing

__all__ = ["MirrorSourceConnector", "deal_round_robin"]

log = logging.getLogger(__name__)

_Partition = tuple[str, int]


_T = TypeVar("_T")


def deal_round_robin(items: Sequence[_T], max_tasks: int) -> list[list[_T]]:
    """``min(max_tasks, len(items))`` groups; item i goes to group i % groups (MM2's partition deal)."""
    count = min(max_tasks, len(items))
    return [list(items[index::count]) for index in range(count)]


def list_partitions(admin: AdminClient, settings: MirrorSettings, cluster: str, bootstrap: str
                    ) -> dict[str, int]:
    """Partition count of every topic on a cluster; ConnectError naming it when unreachable."""
    timeout_s = settings[ADMIN_TIMEOUT_MS] / 1000
    try:
        metadata = admin.list_topics(timeout=timeout_s)
    except KafkaException as exc:
        raise ConnectError(f"Could not list the topics of the {cluster} cluster at {bootstrap} within "
                           f"{timeout_s:.0f} s: {exc.args[0].str()}. Check that "
                           f"{SOURCE_BOOTSTRAP if cluster == 'source' else 'target.cluster.bootstrap.servers'} "
                           f"names reachable brokers (and its security settings); {ADMIN_TIMEOUT_MS} "
                           f"(topic.list.timeout.ms) sets how long to wait") from None
    return {name: len(topic.partitions) for name, topic in metadata.topics.items()
            if topic.error is None and topic.partitions}


class MirrorSourceConnector(SourceConnector):
    """Lists and creates topics, deals partitions to tasks, watches for new partitions."""

    def __init__(self) -> None:
        self._props: dict[str, str] = {}
        self._settings: MirrorSettings | None = None
        self._partitions: RefreshMonitor[_Partition] = RefreshMonitor(
            self._replan, lambda: self.context.request_task_reconfiguration())

    def start(self, props: Mapping[str, str]) -> None:
        self._props = dict(props)
        settings = self._settings = MirrorSettings.parse(props)
        partitions = self._plan(settings)
        log.info("Started mirror %s (%s -> %s) with %d topic-partitions", settings.name, settings.source_alias,
                 settings.target_alias, len(partitions))
        self._partitions.start(f"Mirror {settings.name}: source topic-partitions", partitions,
                               settings[REFRESH_TOPICS_INTERVAL_SECONDS] if settings[REFRESH_TOPICS_ENABLED] else None)

    def _replan(self) -> list[_Partition]:
        assert self._settings is not None
        return self._plan(self._settings)

    def _plan(self, settings: MirrorSettings) -> list[_Partition]:
        """Source partitions to copy; the offset-syncs topic and remote topics made ready."""
        source_admin = AdminClient(settings.source_admin_config())
        counts = list_partitions(source_admin, settings, "source", settings.source_bootstrap)
        wanted = {t: n for t, n in counts.items() if settings.topic_filter.should_replicate(t)}
        if not wanted:
            log.warning("Mirror %s: no topic on the source cluster %s matches topics=%s (minus topics.exclude "
                        "and internal topics); there is nothing to copy. Topics found: %s", settings.name,
                        settings.source_bootstrap, ",".join(settings["topics"]),
                        ", ".join(sorted(counts)[:20]) or "none")
        self._create_offset_syncs_topic(settings)
        target_config = settings.target_admin_config()
        if target_config is None:
            if wanted:
                log.info("Mirror %s: target.cluster.bootstrap.servers is not set, so remote topics are not "
                         "created at plan time (topic.creation.* or broker auto-creation must do it)",
                         settings.name)
        elif wanted:
            RemoteTopics(settings, source_admin, AdminClient(target_config)).make_ready(wanted)
        return sorted((topic, p) for topic, n in wanted.items() for p in range(n))

    def _create_offset_syncs_topic(self, settings: MirrorSettings) -> None:
        config = settings.offset_syncs_admin_config()
        if not settings[EMIT_OFFSET_SYNCS_ENABLED] or config is None:
            return
        create_topic_if_missing(AdminClient(config), settings.offset_syncs_topic, partitions=1,
                                replication_factor=settings[OFFSET_SYNCS_TOPIC_REPLICATION_FACTOR],
                                config={"cleanup.policy": "compact"}, timeout_s=settings[ADMIN_TIMEOUT_MS] / 1000)

    def task_class(self) -> type[MirrorSourceTask]:
        return MirrorSourceTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        if self._settings is None:
            raise ConnectError("MirrorSourceConnector.task_configs() called before start()")
        partitions = self._partitions.current()
        if not partitions:
            return []
        return [{**self._props, TASK_TOPIC_PARTITIONS_CONFIG: encode_topic_partitions(group),
                 TASK_INDEX_CONFIG: str(index)}
                for index, group in enumerate(deal_round_robin(partitions, max_tasks))]

    def stop(self) -> None:
        self._partitions.stop()

    def config(self) -> ConfigDef:
        return CONFIG

    def validate(self, props: Mapping[str, str]) -> list[ConfigValue]:
        """Per-key checks, then the cross-key ones (aliases, policy, bootstrap) on their key."""
        return validate_across_keys(super().validate(props), props, MirrorSettings.parse, SOURCE_BOOTSTRAP)

    def exactly_once_support(self, props: Mapping[str, str]) -> ExactlyOnceSupport | None:
        """SUPPORTED only with a read_committed source consumer, as MM2."""
        level = MirrorSettings.parse(props).source_consumer_config().get("isolation.level")
        return ExactlyOnceSupport.SUPPORTED if level == "read_committed" else ExactlyOnceSupport.UNSUPPORTED

    def alter_offsets(self, props: Mapping[str, str], offsets: Mapping[Any, Mapping[str, Any] | None]) -> bool:
        """MM2's checks: partitions ``{cluster, topic, partition}``, offsets ``{offset: n >= 0}``."""
        return check_altered_offsets(offsets, ("cluster", "topic"), with_partition=True)


class RemoteTopics:
    """Creates and grows remote topics and syncs their configs (MM2's ``computeAndCreateTopicPartitions``,
    ``createNewTopics``, ``createNewPartitions`` and ``syncTopicConfigs``)."""

    def __init__(self, settings: MirrorSettings, source: AdminClient, target: AdminClient) -> None:
        self.settings = settings
        self.source = source
        self.target = target
        self.timeout_s = settings[ADMIN_TIMEOUT_MS] / 1000

    def make_ready(self, wanted: Mapping[str, int]) -> None:
        settings = self.settings
        remote = {topic: settings.policy.format_remote_topic(settings.source_alias, topic) for topic in wanted}
        existing = list_partitions(self.target, settings, "target", settings.target_bootstrap or "")
        sync = settings[SYNC_TOPIC_CONFIGS_ENABLED]
        configs = self._source_configs(list(wanted)) if sync else {}
        for topic, count in wanted.items():
            name = remote[topic]
            if name not in existing:
                create_topic_if_missing(self.target, name, partitions=count,
                                        replication_factor=settings[REPLICATION_FACTOR],
                                        config=self._target_config(configs.get(topic, {})), timeout_s=self.timeout_s)
            elif existing[name] < count:
                self._add_partitions(name, count)
        present = {remote[t]: configs[t] for t in wanted if remote[t] in existing and t in configs}
        if present:
            self._sync_configs(present)

    def _source_configs(self, topics: list[str]) -> dict[str, dict[str, ConfigEntry]]:
        resources = [ConfigResource(ConfigResource.Type.TOPIC, topic) for topic in topics]
        out: dict[str, dict[str, ConfigEntry]] = {}
        for resource, future in self.source.describe_configs(resources, request_timeout=self.timeout_s).items():
            try:
                out[resource.name] = future.result(self.timeout_s)
            except KafkaException as exc:
                log.warning("Could not read the configs of source topic %s: %s", resource.name, exc)
        return out

    def _replicated(self, entries: Mapping[str, ConfigEntry]) -> list[ConfigEntry]:
        """MM2's ``targetConfig`` filter: writable, not sensitive, not static, not excluded."""
        exclude = self.settings.config_exclude
        return [e for e in entries.values()
                if not e.is_read_only and not e.is_sensitive and e.source != ConfigSource.STATIC_BROKER_CONFIG
                and not (exclude is not None and exclude.fullmatch(e.name))]

    def _target_config(self, entries: Mapping[str, ConfigEntry]) -> dict[str, str]:
        """Configs a new remote topic gets: the source's non-default ones (defaults from the target)."""
        return {e.name: e.value for e in self._replicated(entries) if not e.is_default and e.value is not None}

    def _add_partitions(self, topic: str, count: int) -> None:
        try:
            self.target.create_partitions([NewPartitions(topic, count)],
                                          request_timeout=self.timeout_s)[topic].result(self.timeout_s)
            log.info("Increased remote topic %s to %d partitions", topic, count)
        except KafkaException as exc:
            if exc.args[0].code() != KafkaError.INVALID_PARTITIONS:
                raise ConnectError(f"Could not add partitions to remote topic {topic} (to {count}, as on the source "
                                   f"cluster): {exc.args[0].str()}") from None

    def _sync_configs(self, by_remote: Mapping[str, Mapping[str, ConfigEntry]]) -> None:
        """Incremental alter: SET the source's non-default configs, DELETE the defaults (MM2's)."""
        resources = []
        for topic, entries in by_remote.items():
            ops = [ConfigEntry(e.name, None if e.is_default else e.value,
                               incremental_operation=AlterConfigOpType.DELETE if e.is_default
                               else AlterConfigOpType.SET) for e in self._replicated(entries)]
            resources.append(ConfigResource(ConfigResource.Type.TOPIC, topic, incremental_configs=ops))
        for resource, future in self.target.incremental_alter_configs(
                resources, request_timeout=self.timeout_s).items():
            try:
                future.result(self.timeout_s)
            except KafkaException as exc:
                log.warning("Could not alter the configuration of remote topic %s: %s", resource.name, exc)

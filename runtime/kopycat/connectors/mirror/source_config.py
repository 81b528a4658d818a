"""The mirror source's configuration: MirrorMaker 2's keys, plus the Kafka source proposal's.

Key names, types and defaults follow Kafka's ``MirrorConnectorConfig`` and ``MirrorSourceConfig``
(a Connect-mode MM2 config runs unchanged). The keys of the Kafka source connector proposal
(Comcast's MirrorTool / ``KafkaSourceConnector``) are accepted as aliases:

    source.topic.whitelist        -> topics (comma = alternation, as there)
    source.bootstrap.servers      -> source.cluster.bootstrap.servers
    source.auto.offset.reset      -> consumer.auto.offset.reset
    source.max.poll.records       -> consumer.max.poll.records (the batch size of one poll)
    topic.list.timeout.ms         -> admin.timeout.ms
    topic.list.poll.interval.ms   -> refresh.topics.interval.seconds (ms there)
    poll.loop.timeout.ms          -> consumer.poll.timeout.ms
    source.enable.auto.commit     -> source.group.offsets.commit.enabled
    destination.topics.prefix     -> names remote topics <prefix><topic> (PrefixReplicationPolicy)

Setting a key and its alias to different values is a ConfigError. Where Kopycat differs:

- ``source.cluster.alias`` defaults to ``source`` (MM2 requires it), so proposal-style configs run;
  such configs (``source.topic.whitelist`` or ``destination.topics.prefix`` set) keep topic names
  (plus the prefix) unless ``replication.policy.class`` is given, as the proposal's connector does;
- ``admin.timeout.ms`` defaults to 30 s (MM2: 60 s): a plan fails fast on an unreachable cluster;
- consumed offsets are committed to the source group ``kopycat-mirror-<connector>`` (or
  ``source.group.id``) for lag monitoring, as the proposal's connector does; never to resume;
- ``key.converter``/``value.converter``/``header.converter`` default to ByteArrayConverter, as the
  MM2 driver sets them, so records are copied byte for byte;
- ``reconfigure.tasks.on.leader.change`` is accepted and ignored (partitions are dealt round-robin).

Client settings for the source cluster, lowest precedence first: ``source.cluster.<key>`` and
``source.<key>``, then ``consumer.<key>``/``connector.consumer.<key>``/``source.consumer.<key>``
(consumer) or ``admin.<key>``/``connector.admin.<key>``/``source.admin.<key>`` (admin). Names are
librdkafka's (equal to Java's for the common ones); Java-only names are dropped.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from kopycat.api.config import CaseInsensitiveValidString, ConfigDef, ConfigType, Importance, Range
from kopycat.api.errors import ConfigError
from kopycat.connectors.mirror.replication_policy import (
    PrefixReplicationPolicy,
    ReplicationPolicy,
    replication_policy,
)
from kopycat.connectors.mirror.topic_filter import (
    TOPICS_EXCLUDE_DEFAULT,
    TOPICS_INCLUDE_DEFAULT,
    TopicFilter,
    compile_pattern_list,
)
from kopycat.kafka import librdkafka_config

__all__ = ["CONFIG", "TASK_INDEX_CONFIG", "TASK_TOPIC_PARTITIONS_CONFIG", "MirrorSettings",
           "decode_topic_partitions", "encode_topic_partitions"]

log = logging.getLogger(__name__)

SOURCE_CLUSTER_ALIAS: Final = "source.cluster.alias"
TARGET_CLUSTER_ALIAS: Final = "target.cluster.alias"
SOURCE_BOOTSTRAP: Final = "source.cluster.bootstrap.servers"
TARGET_BOOTSTRAP: Final = "target.cluster.bootstrap.servers"
TOPICS: Final = "topics"
TOPICS_EXCLUDE: Final = "topics.exclude"
REPLICATION_POLICY_CLASS: Final = "replication.policy.class"
REPLICATION_POLICY_SEPARATOR: Final = "replication.policy.separator"
DESTINATION_TOPICS_PREFIX: Final = "destination.topics.prefix"
REPLICATION_FACTOR: Final = "replication.factor"
SYNC_TOPIC_CONFIGS_ENABLED: Final = "sync.topic.configs.enabled"
CONFIG_PROPERTIES_EXCLUDE: Final = "config.properties.exclude"
REFRESH_TOPICS_ENABLED: Final = "refresh.topics.enabled"
REFRESH_TOPICS_INTERVAL_SECONDS: Final = "refresh.topics.interval.seconds"
ADMIN_TIMEOUT_MS: Final = "admin.timeout.ms"
CONSUMER_POLL_TIMEOUT_MS: Final = "consumer.poll.timeout.ms"
CONSUMER_AUTO_OFFSET_RESET: Final = "consumer.auto.offset.reset"
CONSUMER_MAX_POLL_RECORDS: Final = "consumer.max.poll.records"
OFFSET_LAG_MAX: Final = "offset.lag.max"
EMIT_OFFSET_SYNCS_ENABLED: Final = "emit.offset-syncs.enabled"
OFFSET_SYNCS_TOPIC_LOCATION: Final = "offset-syncs.topic.location"
OFFSET_SYNCS_TOPIC_REPLICATION_FACTOR: Final = "offset-syncs.topic.replication.factor"
HEARTBEATS_REPLICATION_ENABLED: Final = "heartbeats.replication.enabled"
INCLUDE_MESSAGE_HEADERS: Final = "include.message.headers"
SOURCE_GROUP_ID: Final = "source.group.id"
SOURCE_GROUP_COMMIT_ENABLED: Final = "source.group.offsets.commit.enabled"
RECONFIGURE_ON_LEADER_CHANGE: Final = "reconfigure.tasks.on.leader.change"
MAX_SHUTDOWN_WAIT_MS: Final = "max.shutdown.wait.ms"
TASK_TOPIC_PARTITIONS_CONFIG: Final = "task.assigned.partitions"
TASK_INDEX_CONFIG: Final = "task.index"
BYTE_ARRAY_CONVERTER: Final = "org.apache.kafka.connect.converters.ByteArrayConverter"
DEFAULT_POLICY: Final = "org.apache.kafka.connect.mirror.DefaultReplicationPolicy"
CONFIG_PROPERTIES_EXCLUDE_DEFAULT: Final = (
    r"follower\.replication\.throttled\.replicas, leader\.replication\.throttled\.replicas, "
    r"message\.timestamp\.difference\.max\.ms, message\.timestamp\.type, "
    r"unclean\.leader\.election\.enable, min\.insync\.replicas")

# alias -> (canonical key, how the alias's text becomes the canonical key's text)
ALIASES: Final[dict[str, tuple[str, Any]]] = {
    "source.topic.whitelist": (TOPICS, str),
    "source.bootstrap.servers": (SOURCE_BOOTSTRAP, str),
    "source.auto.offset.reset": (CONSUMER_AUTO_OFFSET_RESET, str),
    "source.max.poll.records": (CONSUMER_MAX_POLL_RECORDS, str),
    "source.consumer.max.poll.records": (CONSUMER_MAX_POLL_RECORDS, str),
    "topic.list.timeout.ms": (ADMIN_TIMEOUT_MS, str),
    "topic.list.poll.interval.ms": (REFRESH_TOPICS_INTERVAL_SECONDS, lambda ms: str(max(1, int(ms) // 1000))),
    "poll.loop.timeout.ms": (CONSUMER_POLL_TIMEOUT_MS, str),
    "source.enable.auto.commit": (SOURCE_GROUP_COMMIT_ENABLED, str),
}
_PROPOSAL_KEYS: Final = ("source.topic.whitelist", DESTINATION_TOPICS_PREFIX)
_CLIENT_PREFIXES: Final = ("cluster.", "consumer.", "admin.", "producer.")
_JAVA_ONLY: Final = frozenset({
    "key.deserializer", "value.deserializer", "key.serializer", "value.serializer", "interceptor.classes",
    "metric.reporters", "partition.assignment.strategy", "max.poll.records", "buffer.memory",
    "exclude.internal.topics", "default.api.timeout.ms", "partitioner.class",
})
_LIBRDKAFKA_RESET: Final = {"none": "error"}  # Java's "none" is librdkafka's "error"
_M, _C, _S = "Mirror", "Clusters", "Source clients"


def _define_keys(config: ConfigDef) -> ConfigDef:
    low, medium, high = Importance.LOW, Importance.MEDIUM, Importance.HIGH
    bool_, int_, long_, str_, list_ = (ConfigType.BOOLEAN, ConfigType.INT, ConfigType.LONG,
                                       ConfigType.STRING, ConfigType.LIST)
    return (config
            .define(SOURCE_CLUSTER_ALIAS, str_, "source", None, high, "Alias of the source cluster: names "
                    "remote topics (DefaultReplicationPolicy) and the source partitions of offsets.", group=_C)
            .define(TARGET_CLUSTER_ALIAS, str_, "target", None, high, "Alias of the target cluster (the "
                    "worker's): names the offset-syncs topic and stops cycles.", group=_C)
            .define(SOURCE_BOOTSTRAP, str_, None, None, high, "host:port list of the source cluster "
                    "(alias source.bootstrap.servers). Required.", group=_C)
            .define(TARGET_BOOTSTRAP, str_, None, None, high, "host:port list of the target cluster, the "
                    "worker's bootstrap.servers: where remote topics are created at plan time. Unset: "
                    "they are left to topic.creation.* or the broker's auto-creation.", group=_C)
            .define(TOPICS, list_, TOPICS_INCLUDE_DEFAULT, None, high, "Topics to replicate: regular "
                    "expressions, comma separated (alias source.topic.whitelist).", group=_M)
            .define(TOPICS_EXCLUDE, list_, TOPICS_EXCLUDE_DEFAULT, None, high, "Topics not to replicate; "
                    "excludes win over includes.", group=_M)
            .define(REPLICATION_POLICY_CLASS, str_, DEFAULT_POLICY, None, low, "How remote topics are "
                    "named: DefaultReplicationPolicy (<alias>.<topic>) or IdentityReplicationPolicy.", group=_M)
            .define(REPLICATION_POLICY_SEPARATOR, str_, ".", None, low, "Separator of remote topic names.",
                    group=_M)
            .define(DESTINATION_TOPICS_PREFIX, str_, None, None, medium, "The Kafka source proposal's naming: "
                    "remote topics are <prefix><topic>. Not with replication.policy.class.", group=_M)
            .define(REPLICATION_FACTOR, int_, 2, Range(min=-1), low, "Replication factor of created remote "
                    "topics (-1: the broker's default).", group=_M)
            .define(SYNC_TOPIC_CONFIGS_ENABLED, bool_, True, None, low, "Create remote topics with the source "
                    "topics' configs and keep existing ones in step at each plan.", group=_M)
            .define(CONFIG_PROPERTIES_EXCLUDE, list_, CONFIG_PROPERTIES_EXCLUDE_DEFAULT, None, low,
                    "Topic config properties (regexes) not replicated.", group=_M)
            .define(REFRESH_TOPICS_ENABLED, bool_, True, None, low, "Look for new topics and partitions "
                    "while running (the standalone worker); Airflow plans pick them up each run.", group=_M)
            .define(REFRESH_TOPICS_INTERVAL_SECONDS, long_, 600, Range(min=1), low, "How often to look "
                    "(alias topic.list.poll.interval.ms).", group=_M)
            .define(ADMIN_TIMEOUT_MS, long_, 30_000, Range(min=1), low, "Timeout of admin calls such as "
                    "listing topics (alias topic.list.timeout.ms).", group=_M)
            .define(CONSUMER_POLL_TIMEOUT_MS, long_, 1000, Range(min=0), low, "How long one poll waits for "
                    "records (alias poll.loop.timeout.ms).", group=_S)
            .define(CONSUMER_AUTO_OFFSET_RESET, str_, "earliest", CaseInsensitiveValidString(
                    ["earliest", "latest", "none"]), medium, "Where a partition with no stored offset starts "
                    "(alias source.auto.offset.reset).", group=_S)
            .define(CONSUMER_MAX_POLL_RECORDS, int_, 500, Range(min=1), low, "Most records one poll "
                    "returns (alias source.max.poll.records).", group=_S)
            .define(INCLUDE_MESSAGE_HEADERS, bool_, True, None, medium, "Copy record headers.", group=_M)
            .define(OFFSET_LAG_MAX, long_, 100, Range(min=0), low, "How far a remote partition may run "
                    "ahead of its last offset sync before a new one is sent.", group=_M)
            .define(EMIT_OFFSET_SYNCS_ENABLED, bool_, True, None, low, "Write MM2 offset syncs.", group=_M)
            .define(OFFSET_SYNCS_TOPIC_LOCATION, str_, "source", CaseInsensitiveValidString(
                    ["source", "target"]), low, "Cluster of the offset-syncs topic, as MM2 (source: "
                    "mm2-offset-syncs.<target alias>.internal; target: ...<source alias>...).", group=_M)
            .define(OFFSET_SYNCS_TOPIC_REPLICATION_FACTOR, int_, 3, Range(min=-1), low, "Replication factor "
                    "of the offset-syncs topic (-1: the broker's default).", group=_M)
            .define(HEARTBEATS_REPLICATION_ENABLED, bool_, True, None, low, "Replicate heartbeats topics even "
                    "when topics does not match them.", group=_M)
            .define(SOURCE_GROUP_ID, str_, None, None, medium, "Source consumer group the consumed offsets "
                    "are committed to (default kopycat-mirror-<connector name>).", group=_S)
            .define(SOURCE_GROUP_COMMIT_ENABLED, bool_, True, None, medium, "Commit consumed offsets to the "
                    "source group for lag monitoring; never used to resume.", group=_S)
            .define(RECONFIGURE_ON_LEADER_CHANGE, bool_, False, None, low, "Accepted for the Kafka source "
                    "proposal's configs; no effect.", group=_M)
            .define(MAX_SHUTDOWN_WAIT_MS, long_, 2000, Range(min=0), low, "How long stopping waits for "
                    "outstanding offset syncs.", group=_M)
            .define("key.converter", str_, BYTE_ARRAY_CONVERTER, None, low, "Bytes pass through.")
            .define("value.converter", str_, BYTE_ARRAY_CONVERTER, None, low, "Bytes pass through.")
            .define("header.converter", str_, BYTE_ARRAY_CONVERTER, None, low, "Bytes pass through.")
            .define(TASK_TOPIC_PARTITIONS_CONFIG, str_, "", None, low, "Set by task_configs.", internal=True)
            .define(TASK_INDEX_CONFIG, int_, 0, None, low, "Set by task_configs.", internal=True))


CONFIG: Final = _define_keys(ConfigDef())
_DEFINED: Final = frozenset(CONFIG.names()) | frozenset(ALIASES)


def _resolve_aliases(props: Mapping[str, Any]) -> dict[str, Any]:
    """``props`` with every alias moved to its canonical key; ConfigError when both disagree."""
    out = dict(props)
    for alias, (canonical, convert) in ALIASES.items():
        if props.get(alias) in (None, ""):
            continue
        try:
            value = convert(str(props[alias]).strip())
        except ValueError:
            raise ConfigError.for_key(alias, props[alias], "must be a number of milliseconds") from None
        given = out.get(canonical)
        if given not in (None, "") and str(given).strip() != value:
            raise ConfigError(f"{alias}={props[alias]!r} and {canonical}={given!r} disagree: they are the same "
                              f"setting (the Kafka source proposal's and MM2's names); keep one", key=alias)
        out[canonical] = value
    return out


def encode_topic_partitions(partitions: list[tuple[str, int]]) -> str:
    """MM2's ``task.assigned.partitions``: ``topic-partition`` items, comma separated."""
    return ",".join(f"{topic}-{partition}" for topic, partition in partitions)


def decode_topic_partitions(text: str) -> list[tuple[str, int]]:
    """``MirrorUtils.decodeTopicPartition`` for each item (the partition follows the last '-')."""
    out = []
    for item in (i.strip() for i in text.split(",")):
        topic, sep, partition = item.rpartition("-")
        if not item:
            continue
        if not sep or not partition.isdigit():
            raise ConfigError.for_key(TASK_TOPIC_PARTITIONS_CONFIG, text, f"item {item!r} is not <topic>-<partition>")
        out.append((topic, int(partition)))
    return out


@dataclass(frozen=True)
class MirrorSettings:
    """Parsed, alias-resolved settings both the connector and the task use."""

    values: Mapping[str, Any]
    props: Mapping[str, str]
    name: str
    source_alias: str
    target_alias: str
    source_bootstrap: str
    target_bootstrap: str | None
    policy: ReplicationPolicy
    topic_filter: TopicFilter
    config_exclude: Any

    @classmethod
    def parse(cls, props: Mapping[str, Any]) -> MirrorSettings:
        """Parse and cross-check; ConfigError naming the key, the value and the fix."""
        resolved = _resolve_aliases(props)
        values = CONFIG.parse(resolved)
        source_bootstrap = (values[SOURCE_BOOTSTRAP] or "").strip()
        if not source_bootstrap:
            raise ConfigError(f"{SOURCE_BOOTSTRAP} (or source.bootstrap.servers) is missing: give the source "
                              f"cluster's host:port list, e.g. {SOURCE_BOOTSTRAP}=broker1:9092", key=SOURCE_BOOTSTRAP)
        policy = _policy(props, resolved, values)
        source, target = values[SOURCE_CLUSTER_ALIAS], values[TARGET_CLUSTER_ALIAS]
        if source == target:
            raise ConfigError.for_key(TARGET_CLUSTER_ALIAS, target, f"equals {SOURCE_CLUSTER_ALIAS}: give the "
                                      f"two clusters different aliases")
        topic_filter = TopicFilter(compile_pattern_list(TOPICS, values[TOPICS]),
                                   compile_pattern_list(TOPICS_EXCLUDE, values[TOPICS_EXCLUDE]), policy,
                                   source, target, values[HEARTBEATS_REPLICATION_ENABLED])
        return cls(values, {k: str(v) for k, v in resolved.items() if v is not None},
                   str(props.get("name") or ""), source, target, source_bootstrap,
                   (values[TARGET_BOOTSTRAP] or "").strip() or None, policy, topic_filter,
                   compile_pattern_list(CONFIG_PROPERTIES_EXCLUDE, values[CONFIG_PROPERTIES_EXCLUDE]))

    def __getitem__(self, key: str) -> Any:
        return self.values[key]

    @property
    def group_id(self) -> str:
        return self.values[SOURCE_GROUP_ID] or f"kopycat-mirror-{self.name}"

    @property
    def offset_syncs_topic(self) -> str:
        """MM2's ``offsetSyncsTopic``: named after the cluster it is *not* on."""
        at_source = self.values[OFFSET_SYNCS_TOPIC_LOCATION].lower() == "source"
        return self.policy.offset_syncs_topic(self.target_alias if at_source else self.source_alias)

    @property
    def offset_syncs_at_source(self) -> bool:
        return bool(self.values[OFFSET_SYNCS_TOPIC_LOCATION].lower() == "source")

    def client_label(self, role: str) -> str:
        """MM2's ``addClientId``: ``<source>-><target>|<connector>|<role>``."""
        return f"{self.source_alias}->{self.target_alias}|{self.name}|{role}"

    def source_consumer_config(self, role: str = "replication-consumer") -> dict[str, Any]:
        """The source consumer: assign-only, offsets kept by Connect, group commits by hand."""
        reset = self.values[CONSUMER_AUTO_OFFSET_RESET].lower()
        config: dict[str, Any] = {"fetch.queue.backoff.ms": 10, "isolation.level": "read_uncommitted"}
        config.update(self._cluster_settings("source"))
        for prefix in ("consumer.", "connector.consumer.", "source.consumer."):
            config.update(self._prefixed(prefix))
        config.update({"bootstrap.servers": self.source_bootstrap, "group.id": self.group_id,
                       "auto.offset.reset": _LIBRDKAFKA_RESET.get(reset, reset),
                       "enable.auto.commit": False, "enable.auto.offset.store": False})
        config.setdefault("client.id", self.client_label(role))
        return librdkafka_config(config)

    def source_admin_config(self, role: str = "replication-source-admin") -> dict[str, Any]:
        config = self._cluster_settings("source")
        for prefix in ("admin.", "connector.admin.", "source.admin."):
            config.update(self._prefixed(prefix))
        config["bootstrap.servers"] = self.source_bootstrap
        config.setdefault("client.id", self.client_label(role))
        return librdkafka_config(config)

    def target_admin_config(self, role: str = "replication-target-admin") -> dict[str, Any] | None:
        """The target admin client, or None without ``target.cluster.bootstrap.servers``."""
        if self.target_bootstrap is None:
            return None
        config = self._cluster_settings("target")
        for prefix in ("admin.", "target.admin."):
            config.update(self._prefixed(prefix))
        config["bootstrap.servers"] = self.target_bootstrap
        config.setdefault("client.id", self.client_label(role))
        return librdkafka_config(config)

    def offset_syncs_admin_config(self) -> dict[str, Any] | None:
        if self.offset_syncs_at_source:
            return self.source_admin_config("offset-syncs-source-admin")
        return self.target_admin_config("offset-syncs-target-admin")

    def offset_syncs_producer_config(self) -> dict[str, Any] | None:
        """MM2's ``offsetSyncsTopicProducerConfig``; None when the target cluster is not known."""
        cluster = "source" if self.offset_syncs_at_source else "target"
        bootstrap = self.source_bootstrap if self.offset_syncs_at_source else self.target_bootstrap
        if bootstrap is None:
            return None
        config = self._cluster_settings(cluster)
        for prefix in ("producer.", f"{cluster}.producer."):
            config.update(self._prefixed(prefix))
        config["bootstrap.servers"] = bootstrap
        config.setdefault("client.id", self.client_label(f"offset-syncs-{cluster}-producer"))
        return librdkafka_config(config)

    def _cluster_settings(self, cluster: str) -> dict[str, Any]:
        """``<cluster>.cluster.<key>`` (MM2) and, for the source, ``source.<key>`` (the proposal)."""
        config: dict[str, Any] = {}
        if cluster == "source":
            for key, value in self.props.items():
                rest = key[len("source."):]
                if key.startswith("source.") and key not in _DEFINED and not rest.startswith(_CLIENT_PREFIXES):
                    config[rest] = value
        config.update(self._prefixed(f"{cluster}.cluster."))
        return config

    def _prefixed(self, prefix: str) -> dict[str, Any]:
        found = {}
        for key, value in self.props.items():
            if not key.startswith(prefix) or key in _DEFINED or key.startswith(prefix + "override."):
                continue
            name = key[len(prefix):]
            if name in _JAVA_ONLY:
                log.info("Ignoring %s: a Java client setting with no librdkafka equivalent", key)
                continue
            found[name] = value
        return found


def _policy(props: Mapping[str, Any], resolved: Mapping[str, Any], values: Mapping[str, Any]) -> ReplicationPolicy:
    """The replication policy: the proposal's prefix naming, or ``replication.policy.class``."""
    prefix = values[DESTINATION_TOPICS_PREFIX]
    explicit = props.get(REPLICATION_POLICY_CLASS) not in (None, "")
    proposal = any(props.get(key) not in (None, "") for key in _PROPOSAL_KEYS)
    if prefix is not None and explicit:
        raise ConfigError(f"{DESTINATION_TOPICS_PREFIX} and {REPLICATION_POLICY_CLASS} both name remote topics; "
                          f"keep one", key=DESTINATION_TOPICS_PREFIX)
    if proposal and not explicit:
        policy = PrefixReplicationPolicy(prefix or "")
        policy.configure(resolved)
        return policy
    return replication_policy(REPLICATION_POLICY_CLASS, values[REPLICATION_POLICY_CLASS], resolved)

"""How mirrored topics are named on the target cluster: MirrorMaker 2's ``ReplicationPolicy``.

Follows Kafka's ``ReplicationPolicy``, ``DefaultReplicationPolicy`` and
``IdentityReplicationPolicy`` (connect/mirror-client) method for method, so topic names, the
offset-syncs topic and the internal-topic and cycle checks agree with MM2's:

    DefaultReplicationPolicy   orders  ->  us-west.orders   (``replication.policy.separator``)
    IdentityReplicationPolicy  orders  ->  orders           (no cycle detection possible)
    PrefixReplicationPolicy    orders  ->  <prefix>orders   (Kopycat's: the Kafka source
                                                             connector proposal's
                                                             ``destination.topics.prefix``)

A policy is chosen by ``replication.policy.class``: Kafka's class name, its simple name or a
Python import path of a :class:`ReplicationPolicy` subclass.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from kopycat.api.config import resolve_class
from kopycat.api.errors import ConfigError

__all__ = [
    "DefaultReplicationPolicy", "IdentityReplicationPolicy", "PrefixReplicationPolicy",
    "ReplicationPolicy", "replication_policy",
]

SEPARATOR_CONFIG: Final = "replication.policy.separator"
INTERNAL_TOPIC_SEPARATOR_ENABLED_CONFIG: Final = "replication.policy.internal.topic.separator.enabled"
SOURCE_CLUSTER_ALIAS_CONFIG: Final = "source.cluster.alias"
SEPARATOR_DEFAULT: Final = "."


class ReplicationPolicy:
    """Kafka's ``ReplicationPolicy`` interface with its default methods.

    Subclasses implement :meth:`format_remote_topic`, :meth:`topic_source` and
    :meth:`upstream_topic`; ``configure`` receives the connector's properties.
    """

    def configure(self, props: Mapping[str, Any]) -> None:
        """Read the policy's settings from the connector properties (Kafka's ``Configurable``)."""

    def format_remote_topic(self, source_cluster_alias: str, topic: str) -> str:
        raise NotImplementedError

    def topic_source(self, topic: str) -> str | None:
        """The source cluster alias of a remote topic; None when ``topic`` is not remote."""
        raise NotImplementedError

    def upstream_topic(self, topic: str) -> str | None:
        """The topic's name one hop upstream; None when ``topic`` is not remote."""
        raise NotImplementedError

    def original_topic(self, topic: str) -> str:
        """The topic's name on the cluster it was first written to (may be many hops up)."""
        upstream = self.upstream_topic(topic)
        if upstream is None or upstream == topic:
            return topic
        return self.original_topic(upstream)

    def heartbeats_topic(self) -> str:
        return "heartbeats"

    def offset_syncs_topic(self, cluster_alias: str) -> str:
        return f"mm2-offset-syncs.{cluster_alias}.internal"

    def checkpoints_topic(self, cluster_alias: str) -> str:
        return f"{cluster_alias}.checkpoints.internal"

    def is_heartbeats_topic(self, topic: str) -> bool:
        return self.heartbeats_topic() == self.original_topic(topic)

    def is_checkpoints_topic(self, topic: str) -> bool:
        return topic.endswith(".checkpoints.internal")

    def is_mm2_internal_topic(self, topic: str) -> bool:
        return topic.endswith(".internal")

    def is_internal_topic(self, topic: str) -> bool:
        """MM2's internal topics, Kafka's (``__``/``.`` prefixed) and Connect's (``-internal``)."""
        kafka_internal = topic.startswith(("__", "."))
        connect_internal = topic.endswith(("-internal", ".internal"))
        return self.is_mm2_internal_topic(topic) or kafka_internal or connect_internal


def _java_split(pattern: re.Pattern[str], text: str) -> list[str]:
    """Java's ``Pattern.split(text)``: trailing empty strings are dropped."""
    parts = pattern.split(text)
    while parts and parts[-1] == "":
        parts.pop()
    return parts


class DefaultReplicationPolicy(ReplicationPolicy):
    """``<source alias><separator><topic>`` (Kafka's ``DefaultReplicationPolicy``)."""

    def __init__(self, separator: str = SEPARATOR_DEFAULT) -> None:
        self.separator = separator
        self._separator_pattern = re.compile(re.escape(separator))
        self.internal_separator_enabled = True

    def configure(self, props: Mapping[str, Any]) -> None:
        if props.get(SEPARATOR_CONFIG) is not None:
            self.separator = str(props[SEPARATOR_CONFIG])
            self._separator_pattern = re.compile(re.escape(self.separator))
            enabled = props.get(INTERNAL_TOPIC_SEPARATOR_ENABLED_CONFIG)
            if enabled is not None:
                self.internal_separator_enabled = str(enabled).strip().lower() == "true"

    def format_remote_topic(self, source_cluster_alias: str, topic: str) -> str:
        return f"{source_cluster_alias}{self.separator}{topic}"

    def topic_source(self, topic: str) -> str | None:
        parts = _java_split(self._separator_pattern, topic)
        return parts[0] if len(parts) >= 2 else None

    def upstream_topic(self, topic: str) -> str | None:
        source = self.topic_source(topic)
        return None if source is None else topic[len(source) + len(self.separator):]

    def _internal_separator(self) -> str:
        return self.separator if self.internal_separator_enabled else "."

    def _internal_suffix(self) -> str:
        return self._internal_separator() + "internal"

    def _checkpoints_topic_suffix(self) -> str:
        return self._internal_separator() + "checkpoints" + self._internal_suffix()

    def offset_syncs_topic(self, cluster_alias: str) -> str:
        return "mm2-offset-syncs" + self._internal_separator() + cluster_alias + self._internal_suffix()

    def checkpoints_topic(self, cluster_alias: str) -> str:
        return cluster_alias + self._checkpoints_topic_suffix()

    def is_checkpoints_topic(self, topic: str) -> bool:
        return topic.endswith(self._checkpoints_topic_suffix())

    def is_mm2_internal_topic(self, topic: str) -> bool:
        return topic.endswith(self._internal_suffix())


class IdentityReplicationPolicy(DefaultReplicationPolicy):
    """Topic names unchanged, except heartbeats (Kafka's ``IdentityReplicationPolicy``).

    Cannot tell a remote topic by its name, so MM2 cannot prevent cycles with it.
    """

    def __init__(self, separator: str = SEPARATOR_DEFAULT) -> None:
        super().__init__(separator)
        self.source_cluster_alias: str | None = None

    def configure(self, props: Mapping[str, Any]) -> None:
        super().configure(props)
        if props.get(SOURCE_CLUSTER_ALIAS_CONFIG) is not None:
            self.source_cluster_alias = str(props[SOURCE_CLUSTER_ALIAS_CONFIG])

    def _looks_like_heartbeat(self, topic: str | None) -> bool:
        return topic is not None and topic.endswith(self.heartbeats_topic())

    def format_remote_topic(self, source_cluster_alias: str, topic: str) -> str:
        if self._looks_like_heartbeat(topic):
            return super().format_remote_topic(source_cluster_alias, topic)
        return topic

    def topic_source(self, topic: str) -> str | None:
        if self._looks_like_heartbeat(topic):
            return super().topic_source(topic)
        return self.source_cluster_alias

    def upstream_topic(self, topic: str) -> str | None:
        if self._looks_like_heartbeat(topic):
            return super().upstream_topic(topic)
        return topic


class PrefixReplicationPolicy(IdentityReplicationPolicy):
    """``<prefix><topic>``: the Kafka source connector proposal's ``destination.topics.prefix``.

    An empty prefix names topics as Identity does. A topic carrying the prefix is taken as
    remote (its upstream name is the rest), which keeps MM2's cycle check working.
    """

    def __init__(self, prefix: str = "") -> None:
        super().__init__()
        self.prefix = prefix

    def format_remote_topic(self, source_cluster_alias: str, topic: str) -> str:
        return self.prefix + topic

    def topic_source(self, topic: str) -> str | None:
        if self.prefix and not topic.startswith(self.prefix):
            return None
        return self.source_cluster_alias

    def upstream_topic(self, topic: str) -> str | None:
        if not self.prefix:
            return topic
        return topic[len(self.prefix):] if topic.startswith(self.prefix) else None


_POLICIES: Final[dict[str, type[ReplicationPolicy]]] = {
    name: cls for cls in (DefaultReplicationPolicy, IdentityReplicationPolicy, PrefixReplicationPolicy)
    for name in (f"org.apache.kafka.connect.mirror.{cls.__name__}", cls.__name__,
                 f"{cls.__module__}.{cls.__name__}")
}


def replication_policy(key: str, class_name: str, props: Mapping[str, Any]) -> ReplicationPolicy:
    """The configured policy ``class_name`` names (Kafka's name, simple name or Python path)."""
    name = class_name.strip()
    cls = _POLICIES.get(name) or resolve_class(key, name)
    if not (isinstance(cls, type) and issubclass(cls, ReplicationPolicy)):
        raise ConfigError.for_key(key, class_name, "not a replication policy: use "
                                  "DefaultReplicationPolicy, IdentityReplicationPolicy or the import path "
                                  "of a kopycat.connectors.mirror.replication_policy.ReplicationPolicy subclass")
    policy = cls()
    policy.configure(props)
    return policy

"""Which source topics are mirrored: MirrorMaker 2's ``DefaultTopicFilter`` and its checks.

Follows Kafka's ``DefaultTopicFilter`` and ``MirrorUtils.compilePatternList``: ``topics`` and
``topics.exclude`` are lists of regular expressions joined into one alternation, matched against
the whole topic name; an empty list matches nothing. ``MirrorSourceConnector.shouldReplicateTopic``
then keeps heartbeats topics (with ``heartbeats.replication.enabled``) and drops internal topics
and cycles (a topic that came from the target cluster).

Java and Python regular expressions agree on the usual topic patterns (classes, ``.*``,
alternation, escapes); Java-only constructs (possessive quantifiers before Python 3.11, ``\\p{..}``)
are refused as ConfigError when the connector starts.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

from kopycat.api.errors import ConfigError
from kopycat.connectors.mirror.replication_policy import ReplicationPolicy

__all__ = ["TOPICS_EXCLUDE_DEFAULT", "TOPICS_INCLUDE_DEFAULT", "TopicFilter", "compile_pattern_list"]

TOPICS_INCLUDE_DEFAULT: Final = ".*"
TOPICS_EXCLUDE_DEFAULT: Final = r".*[\-\.]internal, .*\.replica, __.*"


def compile_pattern_list(key: str, patterns: Iterable[str]) -> re.Pattern[str] | None:
    """One pattern matching any of ``patterns``; None (matches nothing) for an empty list."""
    items = [p.strip() for p in patterns if p.strip()]
    if not items:
        return None
    joined = "|".join(items)
    try:
        return re.compile(joined)
    except re.error as exc:
        raise ConfigError.for_key(key, ", ".join(items), f"not a valid regular expression list ({exc}); "
                                  f"give regular expressions separated by commas, e.g. orders, audit\\..*") from None


@dataclass(frozen=True)
class TopicFilter:
    """MM2's topic selection: included, not excluded, not internal, not a cycle."""

    include: re.Pattern[str] | None
    exclude: re.Pattern[str] | None
    policy: ReplicationPolicy
    source_alias: str
    target_alias: str
    heartbeats_replication: bool = True

    def matches(self, topic: str) -> bool:
        """``DefaultTopicFilter.shouldReplicateTopic``: included and not excluded."""
        included = self.include is not None and self.include.fullmatch(topic) is not None
        excluded = self.exclude is not None and self.exclude.fullmatch(topic) is not None
        return included and not excluded

    def should_replicate(self, topic: str) -> bool:
        """``MirrorSourceConnector.shouldReplicateTopic``."""
        wanted = self.matches(topic) or (self.heartbeats_replication and self.policy.is_heartbeats_topic(topic))
        return wanted and not self.policy.is_internal_topic(topic) and not self.is_cycle(topic)

    def is_cycle(self, topic: str) -> bool:
        """Whether ``topic`` already came from the target cluster (MM2's ``isCycle``)."""
        source = self.policy.topic_source(topic)
        if source is None:
            return False
        if source == self.target_alias:
            return True
        upstream = self.policy.upstream_topic(topic)
        if upstream is None or upstream == topic:
            return False  # IdentityReplicationPolicy and the like cannot tell
        return self.is_cycle(upstream)

"""Creating the topics a source task writes to, with ``topic.creation.*`` (KIP-158).

Follows Kafka Connect's ``TopicCreation`` and ``TopicCreationGroup``: creation is on when the
worker has ``topic.creation.enable=true`` (the default) and the connector sets
``topic.creation.default.replication.factor`` and ``topic.creation.default.partitions``. Extra
groups listed in ``topic.creation.groups`` match topics by ``include``/``exclude`` regex lists;
the first group (in listed order) that matches a topic gives its settings, ``default`` matches
everything else. Every other ``topic.creation.<group>.<key>`` is a topic config
(``cleanup.policy``, ``retention.ms``...). Each topic is created at most once per task, before
its first record is produced; an existing topic is left as it is.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka.admin import AdminClient

from kopycat.api.errors import ConfigError
from kopycat.storage.topic_admin import create_topic_if_missing

__all__ = ["TopicCreationGroup", "TopicCreator", "topic_creation_groups"]

_PREFIX = "topic.creation."
_GROUP_KEYS = ("include", "exclude", "replication.factor", "partitions")


@dataclass(frozen=True)
class TopicCreationGroup:
    """The settings new topics matching ``include`` and not ``exclude`` are created with."""

    name: str
    partitions: int
    replication_factor: int
    include: tuple[re.Pattern[str], ...] = (re.compile(".*"),)
    exclude: tuple[re.Pattern[str], ...] = ()
    configs: dict[str, str] = field(default_factory=dict)

    def matches(self, topic: str) -> bool:
        return (any(p.fullmatch(topic) for p in self.include)
                and not any(p.fullmatch(topic) for p in self.exclude))


def _int_key(props: Mapping[str, Any], key: str, default: int | None) -> int:
    value = props.get(key)
    if value in (None, ""):
        if default is None:
            raise ConfigError(f"{key} is required to create topics: set it (-1 for the broker's "
                              f"default)", key=key)
        return default
    try:
        number = int(str(value).strip())
    except ValueError:
        raise ConfigError.for_key(key, value, "must be an integer (-1 for the broker's default)") from None
    if number == 0 or number < -1:
        raise ConfigError.for_key(key, value, "must be a positive number, or -1 for the broker's default")
    return number


def _patterns(props: Mapping[str, Any], key: str, default: str) -> tuple[re.Pattern[str], ...]:
    raw = props.get(key, default)
    items = raw if isinstance(raw, list) else [s.strip() for s in str(raw).split(",") if s.strip()]
    try:
        return tuple(re.compile(item) for item in items)
    except re.error as exc:
        raise ConfigError.for_key(key, raw, f"not a valid regular expression: {exc}") from None


def _group(name: str, props: Mapping[str, Any], default: TopicCreationGroup | None) -> TopicCreationGroup:
    prefix = f"{_PREFIX}{name}."
    return TopicCreationGroup(
        name,
        _int_key(props, prefix + "partitions", default.partitions if default else None),
        _int_key(props, prefix + "replication.factor", default.replication_factor if default else None),
        _patterns(props, prefix + "include", ".*" if default is None else ""),
        _patterns(props, prefix + "exclude", ""),
        {k[len(prefix):]: str(v) for k, v in props.items()
         if k.startswith(prefix) and k[len(prefix):] not in _GROUP_KEYS},
    )


def topic_creation_groups(props: Mapping[str, Any]) -> list[TopicCreationGroup] | None:
    """The groups, most specific first and ``default`` last; None when creation is off."""
    if not any(k.startswith(f"{_PREFIX}default.") for k in props):
        return None
    default = _group("default", props, None)
    names = props.get(f"{_PREFIX}groups") or []
    names = names if isinstance(names, list) else [n.strip() for n in str(names).split(",") if n.strip()]
    return [_group(name, props, default) for name in names if name != "default"] + [default]


class TopicCreator:
    """Creates missing topics for one task, each topic name checked once (Kafka's ``TopicCreation``)."""

    def __init__(self, admin_config: Mapping[str, Any], groups: Iterable[TopicCreationGroup],
                 timeout_s: float = 30.0) -> None:
        self.groups = list(groups)
        self.timeout_s = timeout_s
        self._admin_config = dict(admin_config)
        self._admin: AdminClient | None = None
        self._known: set[str] = set()

    def ensure(self, topics: Iterable[str]) -> None:
        """Create the topics not seen before; cheap when they all were."""
        for topic in topics:
            if topic in self._known:
                continue
            group = next(g for g in self.groups if g.matches(topic) or g.name == "default")
            if self._admin is None:
                self._admin = AdminClient(self._admin_config)
            create_topic_if_missing(self._admin, topic, partitions=group.partitions,
                                    replication_factor=group.replication_factor, config=group.configs,
                                    timeout_s=self.timeout_s)
            self._known.add(topic)

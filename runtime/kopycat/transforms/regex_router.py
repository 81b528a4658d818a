"""RegexRouter: rename topics with a regex and a ``$1``-style replacement.

Follows Kafka's ``org.apache.kafka.connect.transforms.RegexRouter``. The regex and replacement
are written for Java (``java.util.regex.Pattern``, ``Matcher.replaceFirst``) and translated
(:mod:`kopycat.transforms._java`), so Kafka configs such as ``regex=(.*)``,
``replacement=prefix-$1`` work unchanged.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar, Final, TypeVar

from kopycat.api.config import ConfigDef, ConfigType, Importance
from kopycat.api.errors import ConfigError
from kopycat.api.records import ConnectRecord
from kopycat.api.transforms import Transformation
from kopycat.transforms._java import JavaRegex, compile_java_regex, java_replacement
from kopycat.transforms._util import DeclaredConfig

__all__ = ["RegexRouter"]

logger = logging.getLogger(__name__)
R = TypeVar("R", bound=ConnectRecord)

REGEX: Final = "regex"
REPLACEMENT: Final = "replacement"
_MAX_CACHED_TOPICS: Final = 4096


class RegexRouter(DeclaredConfig, Transformation[R]):
    """Update the record topic using the configured regular expression and replacement string.

    If the regex matches the whole topic, the first match is replaced (Java's
    ``matches()`` then ``replaceFirst``); other topics pass unchanged. The new name is cached
    per topic, so a batch costs one dict lookup per record.
    """

    OVERVIEW_DOC: ClassVar[str] = (
        "Update the record topic using the configured regular expression and replacement string.")
    CONFIG_DEF: ClassVar[ConfigDef] = (
        ConfigDef()
        .define(REGEX, ConfigType.STRING, validator=JavaRegex(), importance=Importance.HIGH,
                doc="Regular expression to use for matching.")
        .define(REPLACEMENT, ConfigType.STRING, importance=Importance.HIGH, doc="Replacement string."))

    def __init__(self) -> None:
        self.regex: re.Pattern[str] = re.compile("")
        self.replacement = ""
        self._expand: Callable[[re.Match[str]], str] = lambda m: ""
        self._routes: dict[str, str | None] = {}

    def configure(self, configs: Mapping[str, Any]) -> None:
        parsed = self.CONFIG_DEF.parse(configs)
        self.regex = compile_java_regex(parsed[REGEX])
        self.replacement = parsed[REPLACEMENT]
        try:
            self._expand = java_replacement(self.replacement, self.regex)
        except ValueError as exc:
            raise ConfigError.for_key(REPLACEMENT, self.replacement,
                                      f"{exc} (for regex {parsed[REGEX]!r})") from None
        self._routes = {}

    def route(self, topic: str) -> str | None:
        """The new topic for ``topic``, or None when the regex does not match it."""
        try:
            return self._routes[topic]
        except KeyError:
            pass
        routed = self.regex.sub(self._expand, topic, count=1) if self.regex.fullmatch(topic) else None
        if len(self._routes) >= _MAX_CACHED_TOPICS:
            self._routes.clear()
        self._routes[topic] = routed
        if routed is None:
            logger.debug("Not rerouting topic '%s' as it does not match the configured regex", topic)
        else:
            logger.debug("Rerouting from topic '%s' to new topic '%s'", topic, routed)
        return routed

    def apply(self, record: R) -> R:
        topic = self.route(record.topic)
        if topic is None:
            return record
        routed: R = record.new_record(topic=topic)
        return routed

    def apply_batch(self, records: Sequence[R]) -> list[R]:
        route = self.route
        out = []
        for record in records:
            topic = route(record.topic)
            out.append(record if topic is None else record.new_record(topic=topic))
        return out

    def close(self) -> None:
        self._routes = {}

"""TopicNameMatches: true for records whose topic matches a regex.

Follows Kafka's ``org.apache.kafka.connect.transforms.predicates.TopicNameMatches`` (KIP-585);
the pattern is a Java regex, translated as in :mod:`kopycat.transforms._java`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, ClassVar, Final, TypeVar

from kopycat.api.config import CompositeValidator, ConfigDef, ConfigType, Importance, NonEmptyString
from kopycat.api.records import ConnectRecord
from kopycat.api.transforms import Predicate
from kopycat.transforms._java import JavaRegex, compile_java_regex
from kopycat.transforms._util import DeclaredConfig

__all__ = ["TopicNameMatches"]

R = TypeVar("R", bound=ConnectRecord)

PATTERN: Final = "pattern"
_MAX_CACHED_TOPICS: Final = 4096


class TopicNameMatches(DeclaredConfig, Predicate[R]):
    """True when the whole topic name matches ``pattern``; results are cached per topic."""

    OVERVIEW_DOC: ClassVar[str] = (
        "A predicate which is true for records with a topic name that matches the configured "
        "regular expression.")
    CONFIG_DEF: ClassVar[ConfigDef] = ConfigDef().define(
        PATTERN, ConfigType.STRING, validator=CompositeValidator.of(NonEmptyString(), JavaRegex()),
        importance=Importance.MEDIUM,
        doc="A Java regular expression for matching against the name of a record's topic.")

    def __init__(self) -> None:
        self.pattern: re.Pattern[str] | None = None
        self._matches: dict[str, bool] = {}

    def configure(self, configs: Mapping[str, Any]) -> None:
        self.pattern = compile_java_regex(self.CONFIG_DEF.parse(configs)[PATTERN])
        self._matches = {}

    def test(self, record: R) -> bool:
        topic = record.topic
        if topic is None or self.pattern is None:
            return False
        found = self._matches.get(topic)
        if found is None:
            found = self.pattern.fullmatch(topic) is not None
            if len(self._matches) >= _MAX_CACHED_TOPICS:
                self._matches.clear()
            self._matches[topic] = found
        return found

    def __repr__(self) -> str:
        return f"TopicNameMatches{{pattern={self.pattern.pattern if self.pattern else None}}}"

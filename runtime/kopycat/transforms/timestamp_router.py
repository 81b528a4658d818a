"""TimestampRouter: route records to ``<topic>-<formatted timestamp>`` style topics.

Follows Kafka's ``org.apache.kafka.connect.transforms.TimestampRouter``. ``timestamp.format``
is a ``java.text.SimpleDateFormat`` pattern (``yyyyMMdd``, ``yyyy-MM-dd'T'HH``), formatted in
UTC as Kafka does; see :class:`kopycat.transforms._java.SimpleDateFormat` for the letters.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Final, TypeVar

from kopycat.api.config import ConfigDef, ConfigType, Importance, LambdaValidator
from kopycat.api.errors import ConfigError, DataError
from kopycat.api.records import ConnectRecord
from kopycat.api.transforms import Transformation
from kopycat.transforms._java import SUPPORTED_LETTERS, SimpleDateFormat
from kopycat.transforms._util import DeclaredConfig

__all__ = ["TimestampRouter"]

R = TypeVar("R", bound=ConnectRecord)

TOPIC_FORMAT: Final = "topic.format"
TIMESTAMP_FORMAT: Final = "timestamp.format"
_MAX_CACHED: Final = 4096


def _check_format(name: str, value: Any) -> None:
    try:
        SimpleDateFormat(value)
    except ValueError as exc:
        raise ConfigError.for_key(name, value, f"{exc}; supported letters: {SUPPORTED_LETTERS}") from None


class TimestampRouter(DeclaredConfig, Transformation[R]):
    """Update the record's topic from the original topic and the record timestamp.

    ``${topic}`` and ``${timestamp}`` in ``topic.format`` are replaced (topic first, as in
    Kafka). A record without a timestamp is a DataError. Formatted names are cached per topic
    and the pattern's finest unit (a day for ``yyyyMMdd``), so a batch mostly costs lookups.
    """

    OVERVIEW_DOC: ClassVar[str] = (
        "Update the record's topic field as a function of the original topic value and the record "
        "timestamp. This is mainly useful for sink connectors, since the topic field is often used "
        "to determine the equivalent entity name in the destination system (e.g. database table or "
        "search index name).")
    CONFIG_DEF: ClassVar[ConfigDef] = (
        ConfigDef()
        .define(TOPIC_FORMAT, ConfigType.STRING, "${topic}-${timestamp}", None, Importance.HIGH,
                "Format string which can contain <code>${topic}</code> and <code>${timestamp}</code> "
                "as placeholders for the topic and timestamp, respectively.")
        .define(TIMESTAMP_FORMAT, ConfigType.STRING, "yyyyMMdd",
                LambdaValidator(_check_format, "a java.text.SimpleDateFormat pattern"), Importance.HIGH,
                "Format string for the timestamp that is compatible with <code>java.text.SimpleDateFormat</code>."))

    def __init__(self) -> None:
        self.topic_format = "${topic}-${timestamp}"
        self.timestamp_format = SimpleDateFormat("yyyyMMdd")
        self._topics: dict[tuple[str, int], str] = {}

    def configure(self, configs: Mapping[str, Any]) -> None:
        parsed = self.CONFIG_DEF.parse(configs)
        self.topic_format = parsed[TOPIC_FORMAT]
        self.timestamp_format = SimpleDateFormat(parsed[TIMESTAMP_FORMAT])
        self._topics = {}

    def topic_for(self, topic: str, timestamp: int) -> str:
        """The routed topic name for a record of ``topic`` at ``timestamp`` (epoch ms)."""
        key = (topic, timestamp // self.timestamp_format.resolution_ms)
        routed = self._topics.get(key)
        if routed is None:
            formatted = self.timestamp_format.format(timestamp)
            routed = self.topic_format.replace("${topic}", topic).replace("${timestamp}", formatted)
            if len(self._topics) >= _MAX_CACHED:
                self._topics.clear()
            self._topics[key] = routed
        return routed

    def apply(self, record: R) -> R:
        if record.timestamp is None:
            raise DataError(f"Timestamp missing on record: {record!r}")
        routed: R = record.new_record(topic=self.topic_for(record.topic, record.timestamp))
        return routed

    def apply_batch(self, records: Sequence[R]) -> list[R]:
        apply = self.apply
        return [apply(record) for record in records]

    def close(self) -> None:
        self._topics = {}

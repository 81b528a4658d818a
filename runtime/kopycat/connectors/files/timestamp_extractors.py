"""When a record happened, for time-based partitioning: Confluent's ``TimestampExtractor`` classes.

``Wallclock`` (the sink's clock), ``Record`` (the Kafka timestamp) and ``RecordField`` (a value
field holding epoch ms, a Timestamp or ISO 8601 text). Split from :mod:`.partitioners`, which
picks one from ``timestamp.extractor``.
"""

from __future__ import annotations

import datetime as dt
import re
from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any, Final

from kopycat.api.data import Struct, Timestamp
from kopycat.api.errors import ConfigError, DataError
from kopycat.api.records import SinkRecord

__all__ = ["TIMESTAMP_EXTRACTOR_CONFIG", "TIMESTAMP_FIELD_CONFIG", "RecordFieldTimestampExtractor",
           "RecordTimestampExtractor", "TimestampExtractor", "WallclockTimestampExtractor"]

TIMESTAMP_EXTRACTOR_CONFIG: Final = "timestamp.extractor"
TIMESTAMP_FIELD_CONFIG: Final = "timestamp.field"


class TimestampExtractor(ABC):
    """The time of a record for time-based partitioning (Confluent's ``TimestampExtractor``)."""

    @abstractmethod
    def extract(self, record: SinkRecord, now_ms: int) -> int:
        """Epoch ms; raises DataError when the record has no usable time."""


class WallclockTimestampExtractor(TimestampExtractor):
    """The sink's clock, as passed in ``now_ms`` (``WallclockTimestampExtractor``)."""

    def extract(self, record: SinkRecord, now_ms: int) -> int:
        return now_ms


class RecordTimestampExtractor(TimestampExtractor):
    """The record's Kafka timestamp (``RecordTimestampExtractor``)."""

    def extract(self, record: SinkRecord, now_ms: int) -> int:
        if record.timestamp is None:
            raise self.no_timestamp()
        return record.timestamp

    @staticmethod
    def no_timestamp() -> DataError:
        return DataError(f"it has no Kafka timestamp, which {TIMESTAMP_EXTRACTOR_CONFIG}=Record needs; use "
                         f"{TIMESTAMP_EXTRACTOR_CONFIG}=Wallclock or RecordField")


_EPOCH_MS_TEXT: Final = re.compile(r"-?[0-9]{1,19}")


class RecordFieldTimestampExtractor(TimestampExtractor):
    """A value field: epoch ms, a Timestamp or ISO 8601 text (``RecordFieldTimestampExtractor``).

    Text of up to 19 digits is epoch ms, as in Confluent; other text is ISO 8601, UTC when it
    names no offset. Fields nest as ``outer.inner`` in Structs and dicts.
    """

    def __init__(self, field_name: str) -> None:
        self.field_name, self._segments = field_name, field_name.split(".")
        if any(not segment.strip() for segment in self._segments):
            raise ConfigError.for_key(TIMESTAMP_FIELD_CONFIG, field_name, "RecordField needs the "
                                      "value field with the time, e.g. timestamp or meta.created")

    def extract(self, record: SinkRecord, now_ms: int) -> int:
        current: Any = record.value
        if not isinstance(current, Struct | Mapping):
            raise DataError(f"its value is {type(current).__name__}, not a Struct or a map with "
                            f"the field {self.field_name} ({TIMESTAMP_FIELD_CONFIG})")
        for segment in self._segments:
            if isinstance(current, Struct) and current.schema.field(segment) is not None:
                current = current.get(segment)
            else:
                current = current.get(segment) if isinstance(current, Mapping) else None
            if current is None:
                raise DataError(f"field {self.field_name} ({TIMESTAMP_FIELD_CONFIG}) is missing "
                                "or null")
        return self._millis(current)

    def _millis(self, value: Any) -> int:
        if isinstance(value, str) and not _EPOCH_MS_TEXT.fullmatch(value):
            try:
                value = dt.datetime.fromisoformat(value)
            except ValueError:
                raise DataError(f"field {self.field_name} is {value!r}, neither epoch ms nor an "
                                "ISO 8601 time such as 2026-11-23T05:00:00Z") from None
        if isinstance(value, dt.datetime):
            return Timestamp.from_logical(Timestamp.SCHEMA, value)
        if isinstance(value, int | float | str) and not isinstance(value, bool):
            try:
                return int(value)
            except (ValueError, OverflowError):  # NaN, infinity
                pass
        raise DataError(f"field {self.field_name} is {type(value).__name__} {value!r}; a timestamp "
                        "field must hold epoch ms, a Timestamp or ISO 8601 text")

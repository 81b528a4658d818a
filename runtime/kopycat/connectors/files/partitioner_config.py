"""The keys of a storage sink's partitioner: Confluent's ``PartitionerConfig`` plus ``directory.delim``.

Follows ``io.confluent.connect.storage.partitioner.PartitionerConfig`` (kafka-connect-storage-common):
the same keys, defaults, groups and ``PartitionerClassDependentsRecommender``. Names are accepted
simple (``FieldPartitioner``) or as Confluent's class names. The partitioners these keys build are in
:mod:`kopycat.connectors.files.partitioners`.
"""

from __future__ import annotations

import datetime as dt
import re
import zoneinfo
from collections.abc import Mapping, Sequence
from typing import Any, Final

from kopycat.api.config import ConfigDef, ConfigType, Importance, LambdaValidator, Width
from kopycat.api.errors import ConfigError
from kopycat.connectors.files.timestamp_extractors import TIMESTAMP_EXTRACTOR_CONFIG, TIMESTAMP_FIELD_CONFIG

__all__ = [
    "DIRECTORY_DELIM_CONFIG", "EXTRACTOR_NAMES", "LOCALE_CONFIG", "PARTITIONER_CLASS_CONFIG",
    "PARTITIONER_CONFIG", "PARTITIONER_NAMES", "PARTITION_DURATION_MS_CONFIG",
    "PARTITION_FIELD_NAME_CONFIG", "PATH_FORMAT_CONFIG", "TIMEZONE_CONFIG", "extractor_kind",
    "parse_timezone", "partitioner_kind",
]

PARTITIONER_CLASS_CONFIG: Final = "partitioner.class"
PARTITION_FIELD_NAME_CONFIG: Final = "partition.field.name"
PARTITION_DURATION_MS_CONFIG: Final = "partition.duration.ms"
PATH_FORMAT_CONFIG: Final = "path.format"
LOCALE_CONFIG: Final = "locale"
TIMEZONE_CONFIG: Final = "timezone"
DIRECTORY_DELIM_CONFIG: Final = "directory.delim"

PARTITIONER_NAMES: Final = ("DefaultPartitioner", "FieldPartitioner", "TimeBasedPartitioner",
                            "HourlyPartitioner", "DailyPartitioner")
EXTRACTOR_NAMES: Final = ("Wallclock", "Record", "RecordField")
_PACKAGE: Final = "io.confluent.connect.storage.partitioner."
_EXTRACTOR_AFFIXES: Final = (_PACKAGE + "TimeBasedPartitioner$", "TimestampExtractor")


def _kind(value: str, names: Sequence[str], prefix: str, suffix: str = "") -> str | None:
    """``FieldPartitioner`` for itself or for Confluent's full class name, else None."""
    if value.startswith(prefix) and value.endswith(suffix):
        value = value[len(prefix):len(value) - len(suffix)]
    return value if value in names else None


def partitioner_kind(value: str) -> str | None:
    """The simple name of the partitioner ``partitioner.class`` names (simple or Confluent's class name)."""
    return _kind(value, PARTITIONER_NAMES, _PACKAGE)


def extractor_kind(value: str) -> str | None:
    """The simple name of the extractor ``timestamp.extractor`` names (simple or Confluent's class name)."""
    return _kind(value, EXTRACTOR_NAMES, *_EXTRACTOR_AFFIXES)


def _names_validator(names: Sequence[str], prefix: str, suffix: str = "") -> LambdaValidator:
    def check(key: str, value: Any) -> None:
        if _kind(value, names, prefix, suffix) is None:
            raise ConfigError.for_key(key, value, f"use one of {', '.join(names)} (or the class "
                                      f"name {prefix}{names[0]}{suffix}); names are case-sensitive")
    return LambdaValidator(check, "one of " + ", ".join(names))


def _check_field_names(key: str, value: Any) -> None:
    """Confluent's ``PartitionFieldNameValidator``: no blank names nor blank ``a..b`` segments."""
    for name in value or []:
        if any(not segment.strip() for segment in name.split(".")):
            raise ConfigError.for_key(key, value, f"field name {name!r} is empty or has an "
                                      "empty segment; name fields as name or outer.inner")


def _check_timezone(key: str, value: Any) -> None:
    if value:
        parse_timezone(value)


def parse_timezone(zone_id: str) -> dt.tzinfo:
    """The zone Joda's ``DateTimeZone.forID`` names: an IANA ID, UTC, or a fixed ``+hh:mm``."""
    if zone_id in ("UTC", "UT", "GMT", "Z"):
        return dt.UTC
    fixed = re.fullmatch(r"(?:UTC|GMT|UT)?([+-])(\d{1,2})(?::?(\d{2}))?", zone_id)
    if fixed is not None and int(fixed[2]) < 24 and int(fixed[3] or 0) < 60:
        delta = dt.timedelta(hours=int(fixed[2]), minutes=int(fixed[3] or 0))
        return dt.timezone(-delta if fixed[1] == "-" else delta) if delta else dt.UTC
    try:
        return zoneinfo.ZoneInfo(zone_id)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
        raise ConfigError.for_key(TIMEZONE_CONFIG, zone_id, "not a time zone; use an IANA zone "
                                  "ID such as UTC, Europe/Berlin or America/New_York (case "
                                  "matters), or a fixed offset such as +01:00") from None


class _Recommender:
    """Keys that matter for the chosen partitioner (``PartitionerClassDependentsRecommender``)."""

    _TIME: Final = (LOCALE_CONFIG, TIMEZONE_CONFIG)
    _VISIBLE: Final = {"DefaultPartitioner": (), "FieldPartitioner": (PARTITION_FIELD_NAME_CONFIG,),
                       "HourlyPartitioner": _TIME, "DailyPartitioner": _TIME,
                       "TimeBasedPartitioner": (PARTITION_DURATION_MS_CONFIG, PATH_FORMAT_CONFIG,
                                                *_TIME)}

    def valid_values(self, name: str, parsed: Mapping[str, Any]) -> list[Any]:
        return list(PARTITIONER_NAMES) if name == PARTITIONER_CLASS_CONFIG else []

    def visible(self, name: str, parsed: Mapping[str, Any]) -> bool:
        kind = partitioner_kind(parsed.get(PARTITIONER_CLASS_CONFIG) or "")
        return name == PARTITIONER_CLASS_CONFIG or kind is None or name in self._VISIBLE[kind]


_GROUP: Final = "Partitioner"
_R: Final = _Recommender()
PARTITIONER_CONFIG: Final = (
    ConfigDef()
    .define(PARTITIONER_CLASS_CONFIG, ConfigType.STRING, _PACKAGE + "DefaultPartitioner",
            _names_validator(PARTITIONER_NAMES, _PACKAGE), Importance.HIGH,
            "How records are laid out in directories: DefaultPartitioner keeps Kafka partitions "
            "(partition=3), FieldPartitioner uses the values of partition.field.name, "
            "TimeBasedPartitioner (and its Hourly/Daily presets) a record's time bucket printed "
            "with path.format. Simple or Confluent's full class names.", order_in_group=1,
            width=Width.LONG, display_name="Partitioner Class", group=_GROUP,
            recommender=_R,
            dependents=(PARTITION_FIELD_NAME_CONFIG, PARTITION_DURATION_MS_CONFIG,
                        PATH_FORMAT_CONFIG, LOCALE_CONFIG, TIMEZONE_CONFIG))
    .define(PARTITION_FIELD_NAME_CONFIG, ConfigType.LIST, "", LambdaValidator(
                _check_field_names, "field names, nested as outer.inner"), Importance.MEDIUM,
            "The value fields FieldPartitioner partitions by, in directory order; nested fields "
            "as outer.inner.", order_in_group=2, display_name="Partition Field Name", group=_GROUP,
            recommender=_R)
    .define(PARTITION_DURATION_MS_CONFIG, ConfigType.LONG, -1, None, Importance.MEDIUM,
            "Length in ms of a TimeBasedPartitioner bucket, counted from local midnight of "
            "1970-01-01; -1 (the default) means no time-based partitioning.", order_in_group=3,
            width=Width.LONG, display_name="Partition Duration (ms)", group=_GROUP,
            recommender=_R)
    .define(PATH_FORMAT_CONFIG, ConfigType.STRING, "", None, Importance.MEDIUM,
            "Joda-Time pattern of a time bucket's directories: "
            "'year'=YYYY/'month'=MM/'day'=dd/'hour'=HH gives year=2015/month=12/day=07/hour=15.",
            order_in_group=4, width=Width.LONG, display_name="Path Format", group=_GROUP,
            recommender=_R)
    .define(LOCALE_CONFIG, ConfigType.STRING, "", None, Importance.MEDIUM,
            "Locale of month and day names in path.format, e.g. en-US; required by time-based "
            "partitioners, as in Confluent. Names are printed in English only.",
            order_in_group=5, width=Width.LONG, display_name="Locale", group=_GROUP,
            recommender=_R)
    .define(TIMEZONE_CONFIG, ConfigType.STRING, "", LambdaValidator(
                _check_timezone, "an IANA zone ID, UTC or a fixed offset +hh:mm"),
            Importance.MEDIUM,
            "Zone in which time buckets are cut and printed: an IANA ID such as UTC or "
            "Europe/Paris, or a fixed offset +hh:mm; required by time-based partitioners.",
            order_in_group=6, width=Width.LONG, display_name="Timezone", group=_GROUP,
            recommender=_R)
    .define(TIMESTAMP_EXTRACTOR_CONFIG, ConfigType.STRING, "Wallclock",
            _names_validator(EXTRACTOR_NAMES, *_EXTRACTOR_AFFIXES), Importance.MEDIUM,
            "Where a record's time comes from: Wallclock (the sink's clock), Record (the Kafka "
            "timestamp) or RecordField (the value field timestamp.field).", group=_GROUP,
            order_in_group=7, width=Width.LONG, display_name="Timestamp Extractor")
    .define(TIMESTAMP_FIELD_CONFIG, ConfigType.STRING, "timestamp", None, Importance.MEDIUM,
            "The value field the RecordField extractor reads (epoch ms, Timestamp or ISO 8601 "
            "text); nested as outer.inner.", group=_GROUP, order_in_group=8,
            width=Width.LONG, display_name="Record Field for Timestamp Extractor")
    .define(DIRECTORY_DELIM_CONFIG, ConfigType.STRING, "/", None, Importance.LOW,
            "Directory delimiter: between the topic and the encoded partition, and within it.",
            group=_GROUP, order_in_group=9, display_name="Directory Delimiter")
)
"""Confluent's ``PartitionerConfig`` keys plus ``directory.delim``, for a storage sink to merge."""

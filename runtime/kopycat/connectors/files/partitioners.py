"""Where a file/HDFS/S3 sink puts each record: Confluent's storage partitioners (issue #7).

Follows ``io.confluent.connect.storage.partitioner`` (kafka-connect-storage-common), with the
keys and defaults of its ``PartitionerConfig`` plus ``StorageCommonConfig``'s
``directory.delim``, so a Confluent HDFS/S3 sink config lays out the same directories here::

    DefaultPartitioner    orders/partition=3
    FieldPartitioner      orders/region=eu/country=DE          partition.field.name=region,country
    TimeBasedPartitioner  orders/year=2026/month=11/day=23/hour=05   path.format, duration, zone
    HourlyPartitioner, DailyPartitioner: TimeBasedPartitioner with Confluent's presets.

``path.format`` is a Joda-Time pattern: quoted literals and the letters y Y x C M d D w e E H k
K h m s S a G Z print as in Joda (names in English only); others raise. A time bucket is
``TimeBasedPartitioner.getPartition``: the instant moved to local time, truncated to a multiple
of ``partition.duration.ms`` counted from the local epoch (daily buckets start at local
midnight), moved back with Joda's ``convertLocalToUTC(local, false)``, printed in the zone.
Java's ``/`` truncates toward zero, so instants before 1970 round up, as in Confluent.

Differences, on purpose: a field value containing ``directory.delim`` is rejected (Confluent
writes it: extra directories, or a way out of the topic's directory through ``..``);
FieldPartitioner also reads schemaless (dict) values; ``partition.duration.ms=0`` is refused
(Confluent divides by zero); naive ISO times in a RecordField are UTC (Joda: the JVM's zone).
"""

from __future__ import annotations

import datetime as dt
import re
import zoneinfo
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from kopycat.api.config import ConfigDef, ConfigType, Importance, LambdaValidator, Width
from kopycat.api.data import INT_RANGES, LOGICAL_TYPES, Schema, Struct, Timestamp, Type
from kopycat.api.errors import ConfigError, DataError
from kopycat.api.records import SinkRecord

__all__ = [
    "DIRECTORY_DELIM_CONFIG", "EXTRACTOR_NAMES", "LOCALE_CONFIG", "PARTITIONER_CLASS_CONFIG",
    "PARTITIONER_CONFIG", "PARTITIONER_NAMES", "PARTITION_DURATION_MS_CONFIG",
    "PARTITION_FIELD_NAME_CONFIG", "PATH_FORMAT_CONFIG", "TIMESTAMP_EXTRACTOR_CONFIG",
    "TIMESTAMP_FIELD_CONFIG", "TIMEZONE_CONFIG", "DailyPartitioner", "DefaultPartitioner",
    "FieldPartitioner", "HourlyPartitioner", "Partitioner", "RecordFieldTimestampExtractor",
    "RecordTimestampExtractor", "TimeBasedPartitioner", "TimestampExtractor",
    "WallclockTimestampExtractor", "parse_timezone", "partitioner_from_config", "time_bucket",
]

PARTITIONER_CLASS_CONFIG: Final = "partitioner.class"
PARTITION_FIELD_NAME_CONFIG: Final = "partition.field.name"
PARTITION_DURATION_MS_CONFIG: Final = "partition.duration.ms"
PATH_FORMAT_CONFIG: Final = "path.format"
LOCALE_CONFIG: Final = "locale"
TIMEZONE_CONFIG: Final = "timezone"
TIMESTAMP_EXTRACTOR_CONFIG: Final = "timestamp.extractor"
TIMESTAMP_FIELD_CONFIG: Final = "timestamp.field"
DIRECTORY_DELIM_CONFIG: Final = "directory.delim"

PARTITIONER_NAMES: Final = ("DefaultPartitioner", "FieldPartitioner", "TimeBasedPartitioner",
                            "HourlyPartitioner", "DailyPartitioner")
EXTRACTOR_NAMES: Final = ("Wallclock", "Record", "RecordField")
_PACKAGE: Final = "io.confluent.connect.storage.partitioner."
_EXTRACTOR_AFFIXES: Final = (_PACKAGE + "TimeBasedPartitioner$", "TimestampExtractor")
_HOUR_MS: Final = 3_600_000
_CACHE_LIMIT: Final = 65_536
_UNSEEN: Final = -1  # no zone is 1 ms behind UTC: marks an hour not looked up yet


def _kind(value: str, names: Sequence[str], prefix: str, suffix: str = "") -> str | None:
    """``FieldPartitioner`` for itself or for Confluent's full class name, else None."""
    if value.startswith(prefix) and value.endswith(suffix):
        value = value[len(prefix):len(value) - len(suffix)]
    return value if value in names else None


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
        kind = _kind(parsed.get(PARTITIONER_CLASS_CONFIG) or "", PARTITIONER_NAMES, _PACKAGE)
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


def _located(record: SinkRecord | None, exc: DataError) -> DataError:
    """The error with where the record sits in Kafka (before any transform renamed it)."""
    if record is None:
        return DataError(f"Cannot partition records: {exc}")
    where = (f"topic {record.original_topic} partition {record.original_kafka_partition} "
             f"offset {record.original_kafka_offset}")
    return DataError(f"Cannot partition the record at {where}: {exc}")


class Partitioner(ABC):
    """Maps a record to its encoded partition, the directories below the topic's (``Partitioner``).

    An instance holds parsed settings and caches of computed paths; make one per task and call
    it from the task's thread.
    """

    def __init__(self, *, delim: str = "/") -> None:
        self.delim = delim

    @abstractmethod
    def encode_partition(self, record: SinkRecord, now_ms: int) -> str:
        """The encoded partition, e.g. ``partition=3``; a DataError names the record."""

    def encode_partitions(self, records: Sequence[SinkRecord], now_ms: int) -> list[str]:
        """:meth:`encode_partition` of each record, in order: the sink's call per batch."""
        return [self.encode_partition(record, now_ms) for record in records]

    def partitioned_path(self, topic: str, encoded: str) -> str:
        """``topic + delim + encoded`` (Confluent's ``generatePartitionedPath``)."""
        return f"{topic}{self.delim}{encoded}"

    def record_timestamp(self, record: SinkRecord, now_ms: int) -> int | None:
        """The time the sink's ``rotate.interval.ms`` measures; None without a time extractor."""
        return None


class DefaultPartitioner(Partitioner):
    """Keeps Kafka's partitioning: ``partition=<kafka partition>`` (``DefaultPartitioner``)."""

    def encode_partition(self, record: SinkRecord, now_ms: int) -> str:
        partition = record.kafka_partition
        return f"partition={'null' if partition is None else partition}"  # Java's String.valueOf

    def encode_partitions(self, records: Sequence[SinkRecord], now_ms: int) -> list[str]:
        names: dict[int | None, str] = {}
        return [names.get(r.kafka_partition) or names.setdefault(
            r.kafka_partition, self.encode_partition(r, now_ms)) for r in records]


_Plan = list[tuple[str, list[Any], bool]]
"""Per field name: its Field chain in a value schema, and whether its type may name a directory."""


class FieldPartitioner(Partitioner):
    """``name=value`` of value fields joined by the delimiter (Confluent's ``FieldPartitioner``).

    Struct fields of type INT8..INT64, STRING or BOOLEAN (not logical types) as in Confluent, or
    the same Python types in a dict; a null prints ``name=null``, a missing field raises.
    Field names are resolved once per value schema.
    """

    def __init__(self, field_names: Sequence[str], *, delim: str = "/") -> None:
        super().__init__(delim=delim)
        if not field_names:
            raise ConfigError.for_key(PARTITION_FIELD_NAME_CONFIG, "", "FieldPartitioner needs at "
                                      "least one field, e.g. partition.field.name=region,country")
        self.field_names = tuple(field_names)
        self._paths = [(name, name.split(".")) for name in self.field_names]
        self._plans: dict[Schema, _Plan] = {}

    def encode_partition(self, record: SinkRecord, now_ms: int) -> str:
        return self.encode_partitions([record], now_ms)[0]

    def encode_partitions(self, records: Sequence[SinkRecord], now_ms: int) -> list[str]:
        out, record = [], None
        try:
            for record in records:
                value = record.value
                if isinstance(value, Struct):
                    out.append(self._encode_struct(value))
                elif type(value) is dict or isinstance(value, Mapping):
                    out.append(self._encode_map(value))
                else:
                    raise DataError(f"its value is {type(value).__name__}, not a Struct or a map "
                                    "whose fields FieldPartitioner could read")
        except DataError as exc:
            raise _located(record, exc) from exc
        return out

    def _plan(self, schema: Schema) -> _Plan:
        plan = []
        for name, segments in self._paths:
            fields, current = [], schema
            for depth, segment in enumerate(segments):
                if current.type is not Type.STRUCT:
                    raise DataError(f"field {name}: {'.'.join(segments[:depth])} is a "
                                    f"{current.type.name}, not a struct")
                field = current.field(segment)
                if field is None:
                    known = ", ".join(f.name for f in current.fields)
                    raise DataError(f"field {name} is not in the value's schema (fields: {known})")
                fields.append(field)
                current = field.schema
            usable = current.type in (*INT_RANGES, Type.STRING, Type.BOOLEAN) \
                and current.name not in LOGICAL_TYPES
            plan.append((name, fields, usable))
        if len(self._plans) >= _CACHE_LIMIT:
            self._plans.clear()
        self._plans[schema] = plan
        return plan

    def _encode_struct(self, struct: Struct) -> str:
        parts = []
        for name, fields, usable in self._plans.get(struct.schema) or self._plan(struct.schema):
            value: Any = struct
            for field in fields:
                value = value.get(field)
                if value is None:
                    break
            if value is not None and not usable:
                schema = fields[-1].schema
                raise DataError(f"field {name} is a {schema.name or schema.type.name}; a partition "
                                "field must be an integer, a string or a boolean")
            parts.append(self._part(name, value))
        return self.delim.join(parts)

    def _encode_map(self, value: Mapping[str, Any]) -> str:
        parts = []
        for name, segments in self._paths:
            current: Any = value
            try:
                for segment in segments:
                    current = current[segment]
            except (KeyError, TypeError, IndexError):
                raise DataError(f"field {name} is missing from the value") from None
            parts.append(self._part(name, current))
        return self.delim.join(parts)

    def _part(self, name: str, value: Any) -> str:
        kind = type(value)
        if kind is str:
            if self.delim in value:
                raise DataError(f"field {name} is {value!r}, which holds the directory delimiter "
                                f"{self.delim!r}; clean the value with a transform or partition "
                                "by another field")
            return f"{name}={value}"
        if kind is int or kind is bool or value is None:
            return f"{name}={'null' if value is None else str(value).lower()}"
        if isinstance(value, int):  # an IntEnum, say: as its plain value
            return self._part(name, int(value))
        if isinstance(value, str):
            return self._part(name, str(value))
        raise DataError(f"field {name} is a {kind.__name__}; a partition field must be an "
                        "integer, a string or a boolean")


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
            raise DataError(f"it has no Kafka timestamp, which {TIMESTAMP_EXTRACTOR_CONFIG}="
                            f"Record needs; use {TIMESTAMP_EXTRACTOR_CONFIG}=Wallclock or "
                            "RecordField")
        return record.timestamp


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


def _offset_ms(zone: dt.tzinfo, utc_ms: int) -> int:
    try:
        offset = dt.datetime.fromtimestamp(utc_ms / 1000, zone).utcoffset()
    except (OverflowError, ValueError, OSError):
        raise DataError(f"timestamp {utc_ms} ms is outside years 1-9999") from None
    return (offset or dt.timedelta()) // dt.timedelta(milliseconds=1)


class _ZoneClock:
    """A zone's offsets at UTC instants, cached per UTC hour that has no transition.

    Joda's ``convertUTCToLocal`` and ``convertLocalToUTC(local, strict=false)``.
    """

    def __init__(self, zone: dt.tzinfo) -> None:
        self.zone = zone
        self._fixed = None if isinstance(zone, zoneinfo.ZoneInfo) else _offset_ms(zone, 0)
        self._by_hour: dict[int, int | None] = {}

    def offset_ms(self, utc_ms: int) -> int:
        if self._fixed is not None:
            return self._fixed
        hour = utc_ms // _HOUR_MS
        offset = self._by_hour.get(hour, _UNSEEN)
        if offset == _UNSEEN:
            first, last = (_offset_ms(self.zone, hour * _HOUR_MS + at) for at in (0, _HOUR_MS - 1))
            if len(self._by_hour) >= _CACHE_LIMIT:
                self._by_hour.clear()
            offset = self._by_hour[hour] = first if first == last else None
        return _offset_ms(self.zone, utc_ms) if offset is None else offset

    def local_to_utc(self, local_ms: int) -> int:
        """Joda's way; in a western zone's DST gap it keeps the first estimate, as Joda does.

        Joda compares ``nextTransition`` at both estimates: with transitions further apart than
        an offset change, the same as comparing the offsets there.
        """
        offset_local = self.offset_ms(local_ms)
        offset = self.offset_ms(local_ms - offset_local)
        in_gap = offset != offset_local and self.offset_ms(local_ms - offset) != offset
        if in_gap and offset_local < 0:
            offset = offset_local
        return local_ms - offset


def _truncate(local_ms: int, duration_ms: int) -> int:
    """``local / d * d`` with Java's ``/``, which truncates toward zero."""
    quotient = local_ms // duration_ms if local_ms >= 0 else -(-local_ms // duration_ms)
    return quotient * duration_ms


def time_bucket(duration_ms: int, utc_ms: int, zone: dt.tzinfo) -> int:
    """Start (epoch ms) of the bucket holding ``utc_ms``: Confluent's ``getPartition``."""
    clock = _ZoneClock(zone)
    return clock.local_to_utc(_truncate(utc_ms + clock.offset_ms(utc_ms), duration_ms))


_MONTHS: Final = ("January", "February", "March", "April", "May", "June", "July", "August",
                  "September", "October", "November", "December")
_DAYS: Final = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_NUMBERS: Final[dict[str, Callable[[dt.datetime], int]]] = {
    "C": lambda t: t.year // 100, "d": lambda t: t.day, "H": lambda t: t.hour,
    "m": lambda t: t.minute, "s": lambda t: t.second, "D": lambda t: t.timetuple().tm_yday,
    "w": lambda t: t.isocalendar()[1], "e": lambda t: t.isoweekday(), "M": lambda t: t.month,
    "k": lambda t: t.hour or 24, "K": lambda t: t.hour % 12, "h": lambda t: t.hour % 12 or 12,
}
_YEARS: Final[dict[str, Callable[[dt.datetime], int]]] = {
    "y": lambda t: t.year, "Y": lambda t: t.year, "x": lambda t: t.isocalendar()[0]}
_TEXTS: Final[dict[str, Callable[[dt.datetime, int], str]]] = {
    "M": lambda t, n: _MONTHS[t.month - 1][:3] if n == 3 else _MONTHS[t.month - 1],
    "E": lambda t, n: _DAYS[t.weekday()][:3] if n <= 3 else _DAYS[t.weekday()],
    "a": lambda t, n: "AM" if t.hour < 12 else "PM", "G": lambda t, n: "AD",
}
_LETTER: Final = re.compile(r"[A-Za-z]")


def _tokens(pattern: str) -> list[str]:
    """Joda's ``DateTimeFormat.parseToken``: runs of one letter, or ``'`` + literal text."""
    tokens, i = [], 0
    while i < len(pattern):
        if _LETTER.match(pattern, i):
            end = i + 1
            while end < len(pattern) and pattern[end] == pattern[i]:
                end += 1
            tokens.append(pattern[i:end])
            i = end
            continue
        text, quoted = ["'"], False
        while i < len(pattern) and (quoted or not _LETTER.match(pattern, i)):
            if pattern.startswith("''", i):
                text.append("'")
                i += 1
            elif pattern[i] == "'":
                quoted = not quoted
            else:
                text.append(pattern[i])
            i += 1
        tokens.append("".join(text))
    return tokens


def _printer(token: str, pattern: str, locale: str, zone_id: str) -> Callable[[dt.datetime], str]:
    """How Joda prints one token (``DateTimeFormat.parsePatternTo``)."""
    letter, n = token[0], len(token)
    if letter == "'":
        return lambda t: token[1:]
    if letter in _YEARS:
        year = _YEARS[letter]
        return (lambda t: f"{year(t) % 100:02d}") if n == 2 else (lambda t: f"{year(t):0{n}d}")
    if letter in _NUMBERS and (letter != "M" or n <= 2):
        number = _NUMBERS[letter]
        return lambda t: f"{number(t):0{n}d}"
    if letter == "S":
        return lambda t: f"{t.microsecond // 1000:03d}"[:n].ljust(n, "0")
    if letter == "Z":
        return _offset_printer(n == 2) if n <= 2 else (lambda t: zone_id)
    if letter not in _TEXTS:
        raise ConfigError.for_key(PATH_FORMAT_CONFIG, pattern, f"pattern letter {letter!r} "
                                  f"({token}) is not supported; use quoted literals and y Y x C M "
                                  "d D w e E H k K h m s S a G Z")
    if re.split(r"[-_]", locale)[0].lower() != "en":
        raise ConfigError.for_key(LOCALE_CONFIG, locale, f"{PATH_FORMAT_CONFIG} prints {token!r}, "
                                  "names only printed in English; use locale=en-US or numbers "
                                  "such as MM")
    text = _TEXTS[letter]
    return lambda t: text(t, n)


def _offset_printer(colon: bool) -> Callable[[dt.datetime], str]:
    """Joda's ``appendTimeZoneOffset("Z", colon, 2, 2)``: ``+0100``/``+01:00``, ``Z`` for 0."""
    def offset(t: dt.datetime) -> str:
        minutes = int((t.utcoffset() or dt.timedelta()).total_seconds()) // 60
        sign = "-" if minutes < 0 else "+"
        hours, minutes = divmod(abs(minutes), 60)
        return f"{sign}{hours:02d}{':' if colon else ''}{minutes:02d}" if hours or minutes else "Z"
    return offset


def _zone_id(zone: dt.tzinfo) -> str:
    """What Joda's ``ZZZ`` prints: the zone's ID, ``UTC``, or a fixed offset as ``+01:00``."""
    if isinstance(zone, zoneinfo.ZoneInfo):
        return zone.key
    return "UTC" if zone is dt.UTC else _offset_printer(True)(dt.datetime.now(zone))


class TimeBasedPartitioner(Partitioner):
    """A time bucket printed with a Joda pattern (Confluent's ``TimeBasedPartitioner``).

    A bucket's path is computed once; a batch costs one extract, one cached zone offset and one
    dict lookup per record, and with Wallclock one computation in all.
    """

    def __init__(self, duration_ms: int, path_format: str, timezone: str | dt.tzinfo,
                 extractor: TimestampExtractor, *, locale: str = "en", delim: str = "/") -> None:
        super().__init__(delim=delim)
        if duration_ms <= 0:
            raise ConfigError.for_key(PARTITION_DURATION_MS_CONFIG, duration_ms, "a time-based "
                                      "partitioner needs a positive bucket length in ms, e.g. "
                                      "3600000 for hourly directories")
        if not path_format.strip() or path_format == delim:
            raise ConfigError.for_key(PATH_FORMAT_CONFIG, path_format, "a time-based partitioner "
                                      "needs a Joda pattern, e.g. 'year'=YYYY/'month'=MM/'day'=dd")
        if delim and path_format.endswith(delim):
            path_format = path_format[:-len(delim)]
        self.zone = parse_timezone(timezone) if isinstance(timezone, str) else timezone
        self.duration_ms, self.path_format, self.extractor = duration_ms, path_format, extractor
        self._clock = _ZoneClock(self.zone)
        zone_id = _zone_id(self.zone)
        self._printers = [_printer(token, path_format, locale, zone_id)
                          for token in _tokens(path_format)]
        self._paths: dict[int, str] = {}

    def encode_partition(self, record: SinkRecord, now_ms: int) -> str:
        return self.encode_partitions([record], now_ms)[0]

    def encode_partitions(self, records: Sequence[SinkRecord], now_ms: int) -> list[str]:
        record, out = None, []
        try:
            if type(self.extractor) is WallclockTimestampExtractor:
                return [self.encode_timestamp(now_ms)] * len(records)
            extract, encode = self.extractor.extract, self.encode_timestamp
            for record in records:
                out.append(encode(extract(record, now_ms)))
        except DataError as exc:
            raise _located(record, exc) from exc
        return out

    def encode_timestamp(self, utc_ms: int) -> str:
        """The encoded partition of an instant (epoch ms)."""
        bucket = _truncate(utc_ms + self._clock.offset_ms(utc_ms), self.duration_ms)
        path = self._paths.get(bucket)
        if path is None:
            start = self._clock.local_to_utc(bucket)
            local = dt.datetime.fromtimestamp(start / 1000, self.zone)
            path = "".join([printer(local) for printer in self._printers])
            if len(self._paths) >= _CACHE_LIMIT:
                self._paths.clear()
            self._paths[bucket] = path
        return path

    def record_timestamp(self, record: SinkRecord, now_ms: int) -> int | None:
        try:
            return self.extractor.extract(record, now_ms)
        except DataError as exc:
            raise _located(record, exc) from exc

    def bucket_start(self, utc_ms: int) -> int:
        """Start (epoch ms) of the bucket holding ``utc_ms`` (see :func:`time_bucket`)."""
        return self._clock.local_to_utc(_truncate(utc_ms + self._clock.offset_ms(utc_ms), self.duration_ms))

    def encoded_between(self, start_ms: int, end_ms: int) -> list[str]:
        """The encoded partitions of the buckets meeting ``[start_ms, end_ms)``, in time order.

        Steps bucket by bucket; a bucket a DST change made longer than ``partition.duration.ms``
        is left in smaller steps (a quarter hour at most), so no bucket is skipped.
        """
        step = min(self.duration_ms, _HOUR_MS // 4)
        paths: list[str] = []
        at = start_ms
        while at < end_ms:
            path = self.encode_timestamp(at)
            if not paths or paths[-1] != path:
                paths.append(path)
            begin = self.bucket_start(at)
            at = max(at + step, begin + self.duration_ms)
            while at < end_ms and self.bucket_start(at) == begin:
                at += step
        return paths


class HourlyPartitioner(TimeBasedPartitioner):
    """``'year'=YYYY/'month'=MM/'day'=dd/'hour'=HH`` per hour (``HourlyPartitioner``)."""

    def __init__(self, timezone: str | dt.tzinfo, extractor: TimestampExtractor, *,
                 locale: str = "en", delim: str = "/") -> None:
        path_format = delim.join(("'year'=YYYY", "'month'=MM", "'day'=dd", "'hour'=HH"))
        super().__init__(_HOUR_MS, path_format, timezone, extractor, locale=locale, delim=delim)


class DailyPartitioner(TimeBasedPartitioner):
    """``'year'=YYYY/'month'=MM/'day'=dd`` per day (``DailyPartitioner``)."""

    def __init__(self, timezone: str | dt.tzinfo, extractor: TimestampExtractor, *,
                 locale: str = "en", delim: str = "/") -> None:
        path_format = delim.join(("'year'=YYYY", "'month'=MM", "'day'=dd"))
        super().__init__(24 * _HOUR_MS, path_format, timezone, extractor, locale=locale,
                         delim=delim)


def _extractor(values: Mapping[str, Any]) -> TimestampExtractor:
    kind = _kind(values[TIMESTAMP_EXTRACTOR_CONFIG], EXTRACTOR_NAMES, *_EXTRACTOR_AFFIXES)
    if kind == "RecordField":
        return RecordFieldTimestampExtractor(values[TIMESTAMP_FIELD_CONFIG])
    return RecordTimestampExtractor() if kind == "Record" else WallclockTimestampExtractor()


def partitioner_from_config(props: Mapping[str, str]) -> Partitioner:
    """The partitioner ``props`` configure; a ConfigError names the key, its value and the fix.

    As Confluent's ``configure``: time-based partitioners need ``timezone`` and ``locale``, and
    Hourly/Daily ignore ``partition.duration.ms`` and ``path.format``.
    """
    values = PARTITIONER_CONFIG.parse(props)
    kind = _kind(values[PARTITIONER_CLASS_CONFIG], PARTITIONER_NAMES, _PACKAGE)
    delim = values[DIRECTORY_DELIM_CONFIG]
    if kind == "DefaultPartitioner":
        return DefaultPartitioner(delim=delim)
    if kind == "FieldPartitioner":
        return FieldPartitioner(values[PARTITION_FIELD_NAME_CONFIG], delim=delim)
    for key, example in ((TIMEZONE_CONFIG, "UTC or Europe/Berlin"), (LOCALE_CONFIG, "en-US")):
        if not values[key]:
            raise ConfigError.for_key(key, values[key], f"{kind} needs {key}, e.g. {key}={example}")
    extractor = _extractor(values)
    zone, locale = values[TIMEZONE_CONFIG], values[LOCALE_CONFIG]
    if kind in ("HourlyPartitioner", "DailyPartitioner"):
        preset = HourlyPartitioner if kind == "HourlyPartitioner" else DailyPartitioner
        return preset(zone, extractor, locale=locale, delim=delim)
    return TimeBasedPartitioner(values[PARTITION_DURATION_MS_CONFIG], values[PATH_FORMAT_CONFIG],
                                zone, extractor, locale=locale, delim=delim)

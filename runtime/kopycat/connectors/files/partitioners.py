"""Where a file/HDFS/S3 sink puts each record: Confluent's storage partitioners.

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
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any, Final

from kopycat.api.data import INT_RANGES, LOGICAL_TYPES, Schema, Struct, Type
from kopycat.api.errors import ConfigError, DataError
from kopycat.api.record_batch import SinkRecordBatch
from kopycat.api.records import SinkRecord
from kopycat.connectors.files.joda_time import (
    HOUR_MS,
    UnsupportedPattern,
    ZoneClock,
    pattern_tokens,
    token_printer,
    truncate_toward_zero,
    zone_id,
)
from kopycat.connectors.files.partitioner_config import (
    DIRECTORY_DELIM_CONFIG,
    LOCALE_CONFIG,
    PARTITION_DURATION_MS_CONFIG,
    PARTITION_FIELD_NAME_CONFIG,
    PARTITIONER_CLASS_CONFIG,
    PARTITIONER_CONFIG,
    PATH_FORMAT_CONFIG,
    TIMEZONE_CONFIG,
    extractor_kind,
    parse_timezone,
    partitioner_kind,
)
from kopycat.connectors.files.timestamp_extractors import (
    TIMESTAMP_EXTRACTOR_CONFIG,
    TIMESTAMP_FIELD_CONFIG,
    RecordFieldTimestampExtractor,
    RecordTimestampExtractor,
    TimestampExtractor,
    WallclockTimestampExtractor,
)

__all__ = ["DailyPartitioner", "DefaultPartitioner", "FieldPartitioner", "HourlyPartitioner", "Partitioner",
           "TimeBasedPartitioner", "partitioner_from_config"]

_CACHE_LIMIT: Final = 65_536


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

    @property
    def partitions_batches(self) -> bool:
        """Whether :meth:`encode_batch` can place a SinkRecordBatch (values as columns, no records)."""
        return False

    def encode_batch(self, batch: SinkRecordBatch, now_ms: int) -> list[tuple[str, int, int]]:
        """The batch as runs of one encoded partition, ``(encoded, start, stop)`` by position, in order.

        Equal to grouping :meth:`encode_partitions` of the batch's records; only for partitioners
        that say :attr:`partitions_batches`.
        """
        raise NotImplementedError(f"{type(self).__name__} places records, not batches")

    def partitioned_path(self, topic: str, encoded: str) -> str:
        """``topic + delim + encoded`` (Confluent's ``generatePartitionedPath``)."""
        return f"{topic}{self.delim}{encoded}"

    def record_timestamp(self, record: SinkRecord, now_ms: int) -> int | None:
        """The time the sink's ``rotate.interval.ms`` measures; None without a time extractor."""
        return None


class DefaultPartitioner(Partitioner):
    """Keeps Kafka's partitioning: ``partition=<kafka partition>`` (``DefaultPartitioner``)."""

    def encode_partition(self, record: SinkRecord, now_ms: int) -> str:
        return self.encode_kafka_partition(record.kafka_partition)

    @property
    def partitions_batches(self) -> bool:
        return True

    def encode_batch(self, batch: SinkRecordBatch, now_ms: int) -> list[tuple[str, int, int]]:
        return [(self.encode_kafka_partition(batch.kafka_partition), 0, len(batch))]

    @staticmethod
    def encode_kafka_partition(partition: int | None) -> str:
        """The directory of a Kafka partition's records (a batch of one partition shares it)."""
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
        self._clock = ZoneClock(self.zone)
        zone_name = zone_id(self.zone)
        try:
            self._printers = [token_printer(token, path_format, locale, zone_name)
                              for token in pattern_tokens(path_format)]
        except UnsupportedPattern as exc:
            if exc.key == "pattern":
                raise ConfigError.for_key(PATH_FORMAT_CONFIG, path_format, str(exc)) from None
            raise ConfigError.for_key(LOCALE_CONFIG, locale, f"{PATH_FORMAT_CONFIG} {exc}") from None
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

    @property
    def partitions_batches(self) -> bool:
        """The Kafka timestamp or the wall clock place a batch; a value field needs the records."""
        return type(self.extractor) in (RecordTimestampExtractor, WallclockTimestampExtractor)

    def encode_batch(self, batch: SinkRecordBatch, now_ms: int) -> list[tuple[str, int, int]]:
        """One run when the earliest and latest timestamps share a bucket (buckets are intervals, so
        every record between does too); else each record's bucket, grouped."""
        if type(self.extractor) is WallclockTimestampExtractor:
            return [(self.encode_timestamp(now_ms), 0, len(batch))]
        stamps = list(batch.timestamps)
        if None in stamps:
            at = stamps.index(None)
            raise DataError(f"Cannot partition the record at topic {batch.topic} partition {batch.kafka_partition} "
                            f"offset {batch.offsets[at]}: {RecordTimestampExtractor.no_timestamp()}")
        low, high = min(stamps), max(stamps)  # type: ignore[type-var]  # no None, checked above
        if self.bucket_start(low) == self.bucket_start(high):
            return [(self.encode_timestamp(low), 0, len(stamps))]
        runs: list[tuple[str, int, int]] = []
        for index, encoded in enumerate(map(self.encode_timestamp, stamps)):  # type: ignore[arg-type]
            if runs and runs[-1][0] == encoded:
                runs[-1] = (encoded, runs[-1][1], index + 1)
            else:
                runs.append((encoded, index, index + 1))
        return runs

    def encode_timestamp(self, utc_ms: int) -> str:
        """The encoded partition of an instant (epoch ms)."""
        bucket = truncate_toward_zero(utc_ms + self._clock.offset_ms(utc_ms), self.duration_ms)
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
        return self._clock.local_to_utc(truncate_toward_zero(utc_ms + self._clock.offset_ms(utc_ms), self.duration_ms))

    def encoded_between(self, start_ms: int, end_ms: int) -> list[str]:
        """The encoded partitions of the buckets meeting ``[start_ms, end_ms)``, in time order.

        Steps bucket by bucket; a bucket a DST change made longer than ``partition.duration.ms``
        is left in smaller steps (a quarter hour at most), so no bucket is skipped.
        """
        step = min(self.duration_ms, HOUR_MS // 4)
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
        super().__init__(HOUR_MS, path_format, timezone, extractor, locale=locale, delim=delim)


class DailyPartitioner(TimeBasedPartitioner):
    """``'year'=YYYY/'month'=MM/'day'=dd`` per day (``DailyPartitioner``)."""

    def __init__(self, timezone: str | dt.tzinfo, extractor: TimestampExtractor, *,
                 locale: str = "en", delim: str = "/") -> None:
        path_format = delim.join(("'year'=YYYY", "'month'=MM", "'day'=dd"))
        super().__init__(24 * HOUR_MS, path_format, timezone, extractor, locale=locale,
                         delim=delim)


def _extractor(values: Mapping[str, Any]) -> TimestampExtractor:
    kind = extractor_kind(values[TIMESTAMP_EXTRACTOR_CONFIG])
    if kind == "RecordField":
        return RecordFieldTimestampExtractor(values[TIMESTAMP_FIELD_CONFIG])
    return RecordTimestampExtractor() if kind == "Record" else WallclockTimestampExtractor()


def partitioner_from_config(props: Mapping[str, str]) -> Partitioner:
    """The partitioner ``props`` configure; a ConfigError names the key, its value and the fix.

    As Confluent's ``configure``: time-based partitioners need ``timezone`` and ``locale``, and
    Hourly/Daily ignore ``partition.duration.ms`` and ``path.format``.
    """
    values = PARTITIONER_CONFIG.parse(props)
    kind = partitioner_kind(values[PARTITIONER_CLASS_CONFIG])
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

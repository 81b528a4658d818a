"""The storage sink's configuration: Confluent's HDFS/S3 sink keys, names and defaults.

Storage keys come from :mod:`~kopycat.connectors.files.store`, partitioner keys from
:mod:`~kopycat.connectors.files.partitioner_config`; this module adds the writer's: format, rotation
(``flush.size``, ``rotate.interval.ms``, ``rotate.schedule.interval.ms``), ``topics.dir``,
``schema.compatibility`` and ``behavior.on.null.values``. Confluent keys Kopycat does not act on
(``storage.class``, ``hadoop.conf.dir`` ...) are not defined, so a Confluent config with them still
starts; ``s3.part.size`` is acted on (the S3 store's multipart part size).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from kopycat.api.config import (
    CaseInsensitiveValidString,
    ConfigDef,
    ConfigType,
    Importance,
    LambdaValidator,
    NonEmptyString,
    Range,
)
from kopycat.api.errors import ConfigError
from kopycat.connectors.files.partitioner_config import PARTITIONER_CONFIG, TIMEZONE_CONFIG
from kopycat.connectors.files.record_formats import (
    AVRO_CODEC_CONFIG,
    AVRO_CODECS,
    FORMAT_CLASS_CONFIG,
    FORMAT_CLASSES,
    PARQUET_CODEC_CONFIG,
    PARQUET_CODECS,
)
from kopycat.connectors.files.store import STORE_CONFIG

__all__ = [
    "BEHAVIOR_ON_NULL_VALUES_CONFIG", "FILE_SINK_CONFIG", "FLUSH_SIZE_CONFIG", "ROTATE_INTERVAL_MS_CONFIG",
    "ROTATE_SCHEDULE_INTERVAL_MS_CONFIG", "SCHEMA_COMPATIBILITY_CONFIG", "TOPICS_DIR_CONFIG",
    "FileSinkSettings", "parse_file_sink_config",
]

TOPICS_DIR_CONFIG: Final = "topics.dir"
FLUSH_SIZE_CONFIG: Final = "flush.size"
ROTATE_INTERVAL_MS_CONFIG: Final = "rotate.interval.ms"
ROTATE_SCHEDULE_INTERVAL_MS_CONFIG: Final = "rotate.schedule.interval.ms"
SCHEMA_COMPATIBILITY_CONFIG: Final = "schema.compatibility"
BEHAVIOR_ON_NULL_VALUES_CONFIG: Final = "behavior.on.null.values"

SCHEMA_COMPATIBILITIES: Final = ("NONE", "BACKWARD", "FORWARD", "FULL")
NULL_BEHAVIORS: Final = ("fail", "ignore")


def _check_format(name: str, value: Any) -> None:
    if str(value) not in FORMAT_CLASSES:
        raise ConfigError.for_key(name, value, "is not a format: use parquet, json or avro (or Confluent's "
                                               "ParquetFormat/JsonFormat/AvroFormat class names)")


_WRITER: Final = "Writer"

FILE_SINK_CONFIG: Final = STORE_CONFIG.merge(PARTITIONER_CONFIG).merge(
    ConfigDef()
    .define(TOPICS_DIR_CONFIG, ConfigType.STRING, "topics", NonEmptyString(), Importance.HIGH,
            "The directory under store.url that holds one directory per topic.",
            group=_WRITER, order_in_group=1, display_name="Topics directory")
    .define(FORMAT_CLASS_CONFIG, ConfigType.STRING, "parquet",
            LambdaValidator(_check_format, "parquet | json | avro | Confluent format class"), Importance.HIGH,
            "The file format: parquet (values as columns; needs schemas), json (one JSON value per line) "
            "or avro (Avro container files as Confluent's AvroData maps schemas; needs schemas). "
            "Confluent's io.confluent.connect.{s3,hdfs}...ParquetFormat/JsonFormat/AvroFormat are accepted.",
            group=_WRITER, order_in_group=2, display_name="Format class")
    .define(PARQUET_CODEC_CONFIG, ConfigType.STRING, "snappy", CaseInsensitiveValidString.in_(*PARQUET_CODECS),
            Importance.LOW, "The Parquet compression codec.",
            group=_WRITER, order_in_group=3, display_name="Parquet codec")
    .define(AVRO_CODEC_CONFIG, ConfigType.STRING, "null", CaseInsensitiveValidString.in_(*AVRO_CODECS),
            Importance.LOW, "The Avro compression codec: null, deflate, snappy (needs python-snappy or "
            "cramjam) or bzip2.", group=_WRITER, order_in_group=3, display_name="Avro codec")
    .define(FLUSH_SIZE_CONFIG, ConfigType.INT, 100_000, Range(min=1), Importance.HIGH,
            "Records of one topic partition per commit: when this many are written the partition's "
            "files are committed. Confluent requires it; Kopycat defaults to 100000.",
            group=_WRITER, order_in_group=4, display_name="Flush size")
    .define(ROTATE_INTERVAL_MS_CONFIG, ConfigType.LONG, -1, Range(min=-1), Importance.MEDIUM,
            "Commit a partition's files when a record's time (the partitioner's timestamp "
            "extractor, else the Kafka timestamp) is this many ms past the files' first record; "
            "-1: off. Deterministic: replays cut the same files.",
            group=_WRITER, order_in_group=5, display_name="Rotate interval (ms)")
    .define(ROTATE_SCHEDULE_INTERVAL_MS_CONFIG, ConfigType.LONG, -1, Range(min=-1), Importance.MEDIUM,
            "Commit open files at wall-clock boundaries of this many ms (in `timezone`), even when no "
            "record arrives; -1: off.", group=_WRITER, order_in_group=6,
            display_name="Rotate schedule interval (ms)")
    .define(SCHEMA_COMPATIBILITY_CONFIG, ConfigType.STRING, "NONE",
            CaseInsensitiveValidString.in_(*SCHEMA_COMPATIBILITIES), Importance.MEDIUM,
            "What a change of the value schema does to a partition's open file (Confluent's "
            "StorageSchemaCompatibility). NONE: every change starts a new file. BACKWARD or FULL: a "
            "newer schema version starts a new file (and becomes the file's schema), an older one is "
            "projected onto the file's schema (Kafka's SchemaProjector: fields it lacks take their "
            "defaults). FORWARD: the mirror image, an older version starts a new file and a newer one "
            "is projected. A schema of another name always starts a new file. All but NONE need "
            "versioned value schemas (Schema Registry converters, or \"version\" in JsonConverter "
            "envelopes).",
            group=_WRITER, order_in_group=7, display_name="Schema compatibility")
    .define(BEHAVIOR_ON_NULL_VALUES_CONFIG, ConfigType.STRING, "fail",
            CaseInsensitiveValidString.in_(*NULL_BEHAVIORS), Importance.LOW,
            "What a record with a null value (tombstone) does: fail the task, or ignore it (its offset "
            "still counts as written).", group=_WRITER, order_in_group=8,
            display_name="Behavior for null values")
)
"""Every key of the storage sink (store, partitioner, writer)."""


@dataclass(frozen=True)
class FileSinkSettings:
    """The parsed keys the writer uses; ``values`` keeps them all (store and partitioner read theirs)."""

    values: Mapping[str, Any]
    topics_dir: str
    flush_size: int
    rotate_interval_ms: int
    rotate_schedule_interval_ms: int
    ignore_null_values: bool
    schema_compatibility: str
    """NONE, BACKWARD, FORWARD or FULL (upper case)."""


def parse_file_sink_config(props: Mapping[str, str]) -> FileSinkSettings:
    """Parse and check; raises :class:`ConfigError` naming the key, the value and the fix."""
    values = FILE_SINK_CONFIG.parse(props)
    if values[ROTATE_SCHEDULE_INTERVAL_MS_CONFIG] > 0 and not values.get(TIMEZONE_CONFIG):
        raise ConfigError.for_key(TIMEZONE_CONFIG, values.get(TIMEZONE_CONFIG),
                                  f"must name a time zone (e.g. UTC) when {ROTATE_SCHEDULE_INTERVAL_MS_CONFIG} "
                                  f"is set: scheduled rotation aligns to its clock, as in Confluent's sinks")
    return FileSinkSettings(
        values=values, topics_dir=str(values[TOPICS_DIR_CONFIG]).strip("/"),
        flush_size=int(values[FLUSH_SIZE_CONFIG]), rotate_interval_ms=int(values[ROTATE_INTERVAL_MS_CONFIG]),
        rotate_schedule_interval_ms=int(values[ROTATE_SCHEDULE_INTERVAL_MS_CONFIG]),
        ignore_null_values=str(values[BEHAVIOR_ON_NULL_VALUES_CONFIG]).lower() == "ignore",
        schema_compatibility=str(values[SCHEMA_COMPATIBILITY_CONFIG]).upper())


"""TimestampConverter: convert a timestamp field (or the whole key/value) between representations.

Follows Kafka's ``org.apache.kafka.connect.transforms.TimestampConverter`` (``$Key`` /
``$Value``). Every conversion goes through epoch milliseconds, as Kafka's goes through a
``java.util.Date``: ``string`` is text in the ``format`` pattern (a ``java.text.SimpleDateFormat``
pattern, read and written in UTC; see :mod:`kopycat.transforms._date_parse` for how it is
translated), ``unix`` an int in ``unix.precision`` units, and ``Date``/``Time``/``Timestamp``
Connect's logical types (``datetime.date``, ``datetime.time``, ``datetime.datetime``).
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Final, NamedTuple, TypeVar

from kopycat.api.config import ConfigDef, ConfigType, Importance, ValidString
from kopycat.api.data import Date, Schema, SchemaBuilder, Struct, Time, Timestamp, Type
from kopycat.api.errors import ConfigError, DataError
from kopycat.api.records import ConnectRecord
from kopycat.api.transforms import Transformation
from kopycat.transforms._date_parse import DateParser
from kopycat.transforms._java import SUPPORTED_LETTERS, SimpleDateFormat
from kopycat.transforms._util import (
    REPLACE_NULL_WITH_DEFAULT,
    REPLACE_NULL_WITH_DEFAULT_DOC,
    DeclaredConfig,
    SchemaCache,
    Side,
    copy_schema_basics,
    key_value_variants,
    require_map,
    require_struct_or_null,
)

__all__ = ["TimestampConverter"]

R = TypeVar("R", bound=ConnectRecord)

FIELD: Final = "field"
TARGET_TYPE: Final = "target.type"
FORMAT: Final = "format"
UNIX_PRECISION: Final = "unix.precision"
_PURPOSE: Final = "converting timestamp formats"
STRING, UNIX, DATE, TIME, TIMESTAMP = "string", "unix", "Date", "Time", "Timestamp"
_MS_PER_UNIT: Final = {"seconds": 1000, "milliseconds": 1}
_UNITS_PER_MS: Final = {"microseconds": 1000, "nanoseconds": 1_000_000}
_MS_PER_DAY: Final = 86_400_000
_EPOCH: Final = _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)
_SCHEMAS: Final = {
    STRING: (Schema.STRING_SCHEMA, Schema.OPTIONAL_STRING_SCHEMA),
    UNIX: (Schema.INT64_SCHEMA, Schema.OPTIONAL_INT64_SCHEMA),
    DATE: (Date.SCHEMA, Date.builder().optional().build()),
    TIME: (Time.SCHEMA, Time.builder().optional().build()),
    TIMESTAMP: (Timestamp.SCHEMA, Timestamp.builder().optional().build()),
}


class _Format(NamedTuple):
    writer: SimpleDateFormat
    reader: DateParser


def _truncate(numerator: int, denominator: int) -> int:
    """Java's integer division (toward zero), as ``TimeUnit`` conversions do."""
    quotient = abs(numerator) // denominator
    return -quotient if numerator < 0 else quotient


def _source_type(schema: Schema) -> str:
    """Kafka's ``timestampTypeFromSchema``: logical name first, then STRING or INT64."""
    by_name = {Timestamp.LOGICAL_NAME: TIMESTAMP, Date.LOGICAL_NAME: DATE, Time.LOGICAL_NAME: TIME}
    if schema.name in by_name:
        return by_name[schema.name]
    if schema.type is Type.STRING:
        return STRING
    if schema.type is Type.INT64:
        return UNIX
    raise DataError(f"Schema {schema!r} does not correspond to a known timestamp type format: "
                    "use a STRING, INT64, Date, Time or Timestamp field")


def _inferred_type(value: Any) -> str:
    """Kafka's ``inferTimestampType`` for schemaless values."""
    if isinstance(value, _dt.date | _dt.time):
        return TIMESTAMP
    if isinstance(value, int) and not isinstance(value, bool):
        return UNIX
    if isinstance(value, str):
        return STRING
    raise DataError(f"TimestampConverter does not support {type(value).__name__} objects as timestamps")


class TimestampConverter(Side, DeclaredConfig, Transformation[R]):
    """Convert ``field`` (or the whole key/value when empty) to ``target.type``.

    The source type comes from the schema (logical name, else STRING is ``string`` and INT64
    ``unix``) or, schemaless, from the value (datetime/date/time, int, str). Null stays null.
    Sub-millisecond parts are lost, as in Kafka.
    """

    Key: ClassVar[type[TimestampConverter[Any]]]
    Value: ClassVar[type[TimestampConverter[Any]]]

    OVERVIEW_DOC: ClassVar[str] = (
        "Convert timestamps between different formats such as Unix epoch, strings, and Connect Date/Timestamp "
        "types.Applies to individual fields or to the entire value.<p/>Use the concrete transformation type "
        "designed for the record key (<code>org.apache.kafka.connect.transforms.TimestampConverter$Key</code>) "
        "or value (<code>org.apache.kafka.connect.transforms.TimestampConverter$Value</code>).")
    CONFIG_DEF: ClassVar[ConfigDef] = (
        ConfigDef()
        .define(FIELD, ConfigType.STRING, "", None, Importance.HIGH,
                "The field containing the timestamp, or empty if the entire value is a timestamp")
        .define(TARGET_TYPE, ConfigType.STRING, validator=ValidString.in_(STRING, UNIX, DATE, TIME, TIMESTAMP),
                importance=Importance.HIGH,
                doc="The desired timestamp representation: string, unix, Date, Time, or Timestamp")
        .define(FORMAT, ConfigType.STRING, "", None, Importance.MEDIUM,
                "A SimpleDateFormat-compatible format for the timestamp. Used to generate the output when "
                "type=string or used to parse the input if the input is a string.")
        .define(UNIX_PRECISION, ConfigType.STRING, "milliseconds",
                ValidString.in_("nanoseconds", "microseconds", "milliseconds", "seconds"), Importance.LOW,
                "The desired Unix precision for the timestamp: seconds, milliseconds, microseconds, or "
                "nanoseconds. Used to generate the output when type=unix or used to parse the input if the input "
                "is a Long.Note: This SMT will cause precision loss during conversions from, and to, values with "
                "sub-millisecond components.")
        .define(REPLACE_NULL_WITH_DEFAULT, ConfigType.BOOLEAN, True, None, Importance.MEDIUM,
                REPLACE_NULL_WITH_DEFAULT_DOC))

    def __init__(self) -> None:
        self.field = ""
        self.target_type = TIMESTAMP
        self.format: _Format | None = None
        self.unix_precision = "milliseconds"
        self.replace_null_with_default = True
        self._schemas = SchemaCache()

    def configure(self, configs: Mapping[str, Any]) -> None:
        parsed = self.CONFIG_DEF.parse(configs)
        self.field, self.target_type = parsed[FIELD], parsed[TARGET_TYPE]
        self.unix_precision = parsed[UNIX_PRECISION]
        self.replace_null_with_default = parsed[REPLACE_NULL_WITH_DEFAULT]
        pattern = parsed[FORMAT]
        if self.target_type == STRING and not pattern.strip():
            raise ConfigError("TimestampConverter requires format option to be specified when using string "
                              f"timestamps: set {FORMAT} to a SimpleDateFormat pattern, e.g. yyyy-MM-dd", key=FORMAT)
        self.format = _compile(pattern) if pattern.strip() else None
        self._schemas = SchemaCache()

    def apply(self, record: R) -> R:
        schema = self.operating_schema(record)
        value = self.operating_value(record)
        if schema is None:
            if value is None or not self.field:
                return self.updated(record, None, self._convert(value, None))
            updated = dict(require_map(value, _PURPOSE))
            updated[self.field] = self._convert(updated.get(self.field), None)
            return self.updated(record, None, updated)
        if not self.field:
            target = _SCHEMAS[self.target_type][schema.optional]
            return self.updated(record, target, self._convert(value, _source_type(schema)))
        struct = require_struct_or_null(value, _PURPOSE)
        updated_schema = self._updated_schema(schema)
        return self.updated(record, updated_schema, self._convert_struct(struct, updated_schema))

    def apply_batch(self, records: Sequence[R]) -> list[R]:
        apply = self.apply
        return [apply(record) for record in records]

    def _updated_schema(self, schema: Schema) -> Schema:
        cached: Schema | None = self._schemas.get(schema)
        if cached is None:
            builder = copy_schema_basics(schema, SchemaBuilder.struct())
            for field in schema.fields:
                builder.field(field.name, _SCHEMAS[self.target_type][field.schema.optional]
                              if field.name == self.field else field.schema)
            if schema.optional:
                builder.optional()
            if schema.default is not None:
                builder.default_value(self._convert_struct(schema.default, builder.build()))
            cached = builder.build()
            self._schemas.put(schema, cached)
        return cached

    def _convert_struct(self, struct: Struct | None, updated_schema: Schema) -> Struct | None:
        if struct is None:
            return None
        read = struct.get if self.replace_null_with_default else struct.get_without_default
        values = [self._convert(read(field), _source_type(field.schema)) if field.name == self.field
                  else read(field) for field in struct.schema.fields]
        return Struct.of_values(updated_schema, values)

    def _convert(self, value: Any, source: str | None) -> Any:
        """Kafka's ``convertTimestamp``: to epoch ms from ``source`` (inferred when None), then to the target."""
        if value is None:
            return None
        return self._to_target(self._to_millis(value, source or _inferred_type(value)))

    def _to_millis(self, value: Any, source: str) -> int:
        if source == STRING:
            if not isinstance(value, str):
                raise DataError(f"Expected string timestamp to be a String, but found {type(value).__name__}")
            if self.format is None:
                raise DataError(f"Could not parse timestamp {value!r}: no {FORMAT} is configured; set {FORMAT} "
                                "to the SimpleDateFormat pattern of the input")
            try:
                return self.format.reader.parse(value)
            except ValueError as exc:
                raise DataError(f"Could not parse timestamp: {exc}") from None
        if source == UNIX:
            if not isinstance(value, int) or isinstance(value, bool):
                raise DataError(f"Expected Unix timestamp to be a Long, but found {type(value).__name__}")
            if self.unix_precision in _MS_PER_UNIT:
                return value * _MS_PER_UNIT[self.unix_precision]
            return _truncate(value, _UNITS_PER_MS[self.unix_precision])
        if isinstance(value, _dt.datetime):
            return int(Timestamp.from_logical(Timestamp.SCHEMA, value))
        if isinstance(value, _dt.date):
            return int(Date.from_logical(Date.SCHEMA, value)) * _MS_PER_DAY
        if isinstance(value, _dt.time):
            return int(Time.from_logical(Time.SCHEMA, value))
        raise DataError(f"Expected {source} to be a datetime, date or time, but found {type(value).__name__}")

    def _to_target(self, millis: int) -> Any:
        target = self.target_type
        if target == STRING:
            assert self.format is not None  # configure() requires it for string targets
            return self.format.writer.format(millis)
        if target == UNIX:
            if self.unix_precision in _MS_PER_UNIT:
                return _truncate(millis, _MS_PER_UNIT[self.unix_precision])
            return millis * _UNITS_PER_MS[self.unix_precision]
        if target == DATE:
            return Date.to_logical(Date.SCHEMA, millis // _MS_PER_DAY)
        if target == TIME:
            return Time.to_logical(Time.SCHEMA, millis % _MS_PER_DAY)
        return Timestamp.to_logical(Timestamp.SCHEMA, millis)

    def close(self) -> None:
        self._schemas = SchemaCache()


def _compile(pattern: str) -> _Format:
    """The writer and reader of ``pattern``; ConfigError naming the key, the pattern and the fix."""
    try:
        writer = SimpleDateFormat(pattern)
    except ValueError as exc:
        raise ConfigError.for_key(FORMAT, pattern, "TimestampConverter requires a SimpleDateFormat-compatible "
                                  f"pattern for string timestamps: {exc}. Use the letters {SUPPORTED_LETTERS} "
                                  "and quote literal text in single quotes, e.g. yyyy-MM-dd'T'HH:mm:ss") from None
    return _Format(writer, DateParser(writer))


TimestampConverter.Key, TimestampConverter.Value = key_value_variants(TimestampConverter)

"""InsertField: add the record's topic, partition, offset, timestamp or a constant as fields.

Follows Kafka's ``org.apache.kafka.connect.transforms.InsertField`` (``$Key`` / ``$Value``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Final, NamedTuple, TypeVar

from kopycat.api.config import ConfigDef, ConfigType, Importance
from kopycat.api.data import Schema, SchemaBuilder, Struct, Timestamp
from kopycat.api.errors import ConfigError
from kopycat.api.records import ConnectRecord
from kopycat.api.transforms import Transformation
from kopycat.transforms._util import (
    REPLACE_NULL_WITH_DEFAULT,
    REPLACE_NULL_WITH_DEFAULT_DOC,
    DeclaredConfig,
    SchemaCache,
    Side,
    copy_schema_basics,
    key_value_variants,
    require_map,
    require_sink_record,
    require_struct,
)

__all__ = ["InsertField"]

R = TypeVar("R", bound=ConnectRecord)

TOPIC_FIELD: Final = "topic.field"
PARTITION_FIELD: Final = "partition.field"
OFFSET_FIELD: Final = "offset.field"
TIMESTAMP_FIELD: Final = "timestamp.field"
STATIC_FIELD: Final = "static.field"
STATIC_VALUE: Final = "static.value"

_OPTIONALITY_DOC: Final = ("Suffix with <code>!</code> to make this a required field, or <code>?</code> "
                           "to keep it optional (the default).")
_PURPOSE: Final = "field insertion"
_OPTIONAL_TIMESTAMP_SCHEMA: Final = Timestamp.builder().optional().build()


class InsertionSpec(NamedTuple):
    """A field to insert: its name and whether its schema is optional (``name?``, ``name!``)."""

    name: str
    optional: bool

    @staticmethod
    def parse(spec: str | None) -> InsertionSpec | None:
        if spec is None:
            return None
        if spec.endswith("?"):
            return InsertionSpec(spec[:-1], True)
        if spec.endswith("!"):
            return InsertionSpec(spec[:-1], False)
        return InsertionSpec(spec, True)


class InsertField(Side, DeclaredConfig, Transformation[R]):
    """Insert fields from the record's metadata or a configured constant.

    Schemaless values (dicts) get the raw values (timestamp as epoch ms); Struct values get a
    schema with the new fields appended (STRING topic, INT32 partition, INT64 offset, Timestamp
    timestamp, STRING static value), cached per input schema. A null key/value passes through
    unchanged (a tombstone stays a tombstone). ``offset.field`` needs SinkRecords.
    """

    Key: ClassVar[type[InsertField[Any]]]
    Value: ClassVar[type[InsertField[Any]]]

    OVERVIEW_DOC: ClassVar[str] = (
        "Insert field(s) using attributes from the record metadata or a configured static value.")
    CONFIG_DEF: ClassVar[ConfigDef] = (
        ConfigDef()
        .define(TOPIC_FIELD, ConfigType.STRING, None, None, Importance.MEDIUM,
                f"Field name for Kafka topic. {_OPTIONALITY_DOC}")
        .define(PARTITION_FIELD, ConfigType.STRING, None, None, Importance.MEDIUM,
                f"Field name for Kafka partition. {_OPTIONALITY_DOC}")
        .define(OFFSET_FIELD, ConfigType.STRING, None, None, Importance.MEDIUM,
                f"Field name for Kafka offset - only applicable to sink connectors.<br/>{_OPTIONALITY_DOC}")
        .define(TIMESTAMP_FIELD, ConfigType.STRING, None, None, Importance.MEDIUM,
                f"Field name for record timestamp. {_OPTIONALITY_DOC}")
        .define(STATIC_FIELD, ConfigType.STRING, None, None, Importance.MEDIUM,
                f"Field name for static data field. {_OPTIONALITY_DOC}")
        .define(STATIC_VALUE, ConfigType.STRING, None, None, Importance.MEDIUM,
                "Static field value, if field name configured.")
        .define(REPLACE_NULL_WITH_DEFAULT, ConfigType.BOOLEAN, True, None, Importance.MEDIUM,
                REPLACE_NULL_WITH_DEFAULT_DOC))

    def __init__(self) -> None:
        self.topic_field: InsertionSpec | None = None
        self.partition_field: InsertionSpec | None = None
        self.offset_field: InsertionSpec | None = None
        self.timestamp_field: InsertionSpec | None = None
        self.static_field: InsertionSpec | None = None
        self.static_value: str | None = None
        self.replace_null_with_default = True
        self._schemas = SchemaCache()

    def configure(self, configs: Mapping[str, Any]) -> None:
        parsed = self.CONFIG_DEF.parse(configs)
        self.topic_field = InsertionSpec.parse(parsed[TOPIC_FIELD])
        self.partition_field = InsertionSpec.parse(parsed[PARTITION_FIELD])
        self.offset_field = InsertionSpec.parse(parsed[OFFSET_FIELD])
        self.timestamp_field = InsertionSpec.parse(parsed[TIMESTAMP_FIELD])
        self.static_field = InsertionSpec.parse(parsed[STATIC_FIELD])
        self.static_value = parsed[STATIC_VALUE]
        self.replace_null_with_default = parsed[REPLACE_NULL_WITH_DEFAULT]
        if not any((self.topic_field, self.partition_field, self.offset_field,
                    self.timestamp_field, self.static_field)):
            raise ConfigError(f"No field insertion configured: set at least one of {TOPIC_FIELD}, "
                              f"{PARTITION_FIELD}, {OFFSET_FIELD}, {TIMESTAMP_FIELD}, {STATIC_FIELD}")
        if self.static_field is not None and self.static_value is None:
            raise ConfigError.for_key(STATIC_VALUE, None, "No value specified for static field: "
                                      f"{self.static_field.name}")
        self._schemas = SchemaCache()

    def apply(self, record: R) -> R:
        value = self.operating_value(record)
        if value is None:
            return record
        if self.operating_schema(record) is None:
            return self._apply_schemaless(record, value)
        return self._apply_with_schema(record, value)

    def apply_batch(self, records: Sequence[R]) -> list[R]:
        apply = self.apply
        return [apply(record) for record in records]

    def _insertions(self, record: R, timestamp: Any) -> list[tuple[str, Any]]:
        """(field, value) pairs to set, in Kafka's order; absent metadata is left out."""
        out: list[tuple[str, Any]] = []
        if self.topic_field is not None:
            out.append((self.topic_field.name, record.topic))
        if self.partition_field is not None and record.kafka_partition is not None:
            out.append((self.partition_field.name, record.kafka_partition))
        if self.offset_field is not None:
            out.append((self.offset_field.name, require_sink_record(record, _PURPOSE).kafka_offset))
        if self.timestamp_field is not None and record.timestamp is not None:
            out.append((self.timestamp_field.name, timestamp))
        if self.static_field is not None and self.static_value is not None:
            out.append((self.static_field.name, self.static_value))
        return out

    def _apply_schemaless(self, record: R, value: Any) -> R:
        updated = dict(require_map(value, _PURPOSE))
        updated.update(self._insertions(record, record.timestamp))
        return self.updated(record, None, updated)

    def _apply_with_schema(self, record: R, value: Any) -> R:
        struct = require_struct(value, _PURPOSE)
        schema = self._schemas.get(struct.schema)
        if schema is None:
            schema = self._make_updated_schema(struct.schema)
            self._schemas.put(struct.schema, schema)
        read = struct.get if self.replace_null_with_default else struct.get_without_default
        values = [read(field) for field in struct.schema.fields]
        values.extend([None] * (len(schema.fields) - len(values)))
        timestamp = None
        if self.timestamp_field is not None and record.timestamp is not None:
            timestamp = Timestamp.to_logical(Timestamp.SCHEMA, record.timestamp)
        for name, inserted in self._insertions(record, timestamp):
            values[schema.field(name).index] = inserted
        return self.updated(record, schema, Struct.of_values(schema, values))

    def _make_updated_schema(self, schema: Schema) -> Schema:
        builder = copy_schema_basics(schema, SchemaBuilder.struct())
        for field in schema.fields:
            builder.field(field.name, field.schema)
        added = (
            (self.topic_field, Schema.OPTIONAL_STRING_SCHEMA, Schema.STRING_SCHEMA),
            (self.partition_field, Schema.OPTIONAL_INT32_SCHEMA, Schema.INT32_SCHEMA),
            (self.offset_field, Schema.OPTIONAL_INT64_SCHEMA, Schema.INT64_SCHEMA),
            (self.timestamp_field, _OPTIONAL_TIMESTAMP_SCHEMA, Timestamp.SCHEMA),
            (self.static_field, Schema.OPTIONAL_STRING_SCHEMA, Schema.STRING_SCHEMA),
        )
        for spec, optional, required in added:
            if spec is not None:
                builder.field(spec.name, optional if spec.optional else required)
        return builder.build()

    def close(self) -> None:
        self._schemas = SchemaCache()

    def __repr__(self) -> str:
        return f"{type(self).__qualname__}(topic={self.topic_field}, static={self.static_field})"


InsertField.Key, InsertField.Value = key_value_variants(InsertField)

"""SetSchemaMetadata: set the name and/or version of the key or value schema.

Follows Kafka's ``org.apache.kafka.connect.transforms.SetSchemaMetadata`` (``$Key`` / ``$Value``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Final, TypeVar

from kopycat.api.config import ConfigDef, ConfigType, Importance
from kopycat.api.data import Schema, Struct, Type
from kopycat.api.errors import ConfigError, DataError
from kopycat.api.records import ConnectRecord
from kopycat.api.transforms import Transformation
from kopycat.transforms._util import (
    REPLACE_NULL_WITH_DEFAULT,
    REPLACE_NULL_WITH_DEFAULT_DOC,
    DeclaredConfig,
    SchemaCache,
    Side,
    key_value_variants,
)

__all__ = ["SetSchemaMetadata"]

R = TypeVar("R", bound=ConnectRecord)

SCHEMA_NAME: Final = "schema.name"
SCHEMA_VERSION: Final = "schema.version"


class SetSchemaMetadata(Side, DeclaredConfig, Transformation[R]):
    """Give the side's schema a new name and/or version; everything else about it is kept.

    A Struct is rebuilt on the renamed schema (its values carried over, defaults applied unless
    ``replace.null.with.default=false``); other values are kept as they are. A record whose side
    is null without a schema passes through; one with a value but no schema is a DataError.
    """

    Key: ClassVar[type[SetSchemaMetadata[Any]]]
    Value: ClassVar[type[SetSchemaMetadata[Any]]]

    OVERVIEW_DOC: ClassVar[str] = (
        "Set the schema name, version or both on the record's key "
        "(<code>org.apache.kafka.connect.transforms.SetSchemaMetadata$Key</code>) or value "
        "(<code>org.apache.kafka.connect.transforms.SetSchemaMetadata$Value</code>) schema.")
    CONFIG_DEF: ClassVar[ConfigDef] = (
        ConfigDef()
        .define(SCHEMA_NAME, ConfigType.STRING, None, None, Importance.HIGH, "Schema name to set.")
        .define(SCHEMA_VERSION, ConfigType.INT, None, None, Importance.HIGH, "Schema version to set.")
        .define(REPLACE_NULL_WITH_DEFAULT, ConfigType.BOOLEAN, True, None, Importance.MEDIUM,
                REPLACE_NULL_WITH_DEFAULT_DOC))

    def __init__(self) -> None:
        self.schema_name: str | None = None
        self.schema_version: int | None = None
        self.replace_null_with_default = True
        self._schemas = SchemaCache()

    def configure(self, configs: Mapping[str, Any]) -> None:
        parsed = self.CONFIG_DEF.parse(configs)
        self.schema_name = parsed[SCHEMA_NAME]
        self.schema_version = parsed[SCHEMA_VERSION]
        self.replace_null_with_default = parsed[REPLACE_NULL_WITH_DEFAULT]
        if self.schema_name is None and self.schema_version is None:
            raise ConfigError(f"Neither schema name nor version configured: set {SCHEMA_NAME}, "
                              f"{SCHEMA_VERSION} or both")
        self._schemas = SchemaCache()

    def apply(self, record: R) -> R:
        value = self.operating_value(record)
        schema = self.operating_schema(record)
        if value is None and schema is None:
            return record
        if schema is None:
            raise DataError("Schema required for [updating schema metadata]")
        updated_schema = self._updated_schema(schema)
        if isinstance(value, Struct):
            read = value.get if self.replace_null_with_default else value.get_without_default
            value = Struct.of_values(updated_schema, [read(field) for field in schema.fields])
        return self.updated(record, updated_schema, value)

    def apply_batch(self, records: Sequence[R]) -> list[R]:
        apply = self.apply
        return [apply(record) for record in records]

    def _updated_schema(self, schema: Schema) -> Schema:
        cached: Schema | None = self._schemas.get(schema)
        if cached is None:
            is_map = schema.type is Type.MAP
            cached = Schema(
                schema.type, schema.optional, schema.default,
                self.schema_name if self.schema_name is not None else schema.name,
                self.schema_version if self.schema_version is not None else schema.version,
                schema.doc, schema.parameters, schema.fields if schema.type is Type.STRUCT else None,
                schema.key_schema if is_map else None,
                schema.value_schema if is_map or schema.type is Type.ARRAY else None)
            self._schemas.put(schema, cached)
        return cached

    def close(self) -> None:
        self._schemas = SchemaCache()


SetSchemaMetadata.Key, SetSchemaMetadata.Value = key_value_variants(SetSchemaMetadata)

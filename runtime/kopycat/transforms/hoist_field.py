"""HoistField: wrap the key/value in a one-field Struct (or dict).

Follows Kafka's ``org.apache.kafka.connect.transforms.HoistField`` (``$Key`` / ``$Value``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Final, TypeVar

from kopycat.api.config import ConfigDef, ConfigType, Importance
from kopycat.api.data import Schema, SchemaBuilder, Struct
from kopycat.api.records import ConnectRecord
from kopycat.api.transforms import Transformation
from kopycat.transforms._util import DeclaredConfig, SchemaCache, Side, key_value_variants

__all__ = ["HoistField"]

R = TypeVar("R", bound=ConnectRecord)

FIELD: Final = "field"


class HoistField(Side, DeclaredConfig, Transformation[R]):
    """Wrap data using the configured field name: ``{field: value}`` or a Struct with one field.

    The Struct's schema is ``struct{field: <original schema>}``, cached per original schema.
    The value is put with validation, so a null into a required schema fails as in Kafka.
    """

    Key: ClassVar[type[HoistField[Any]]]
    Value: ClassVar[type[HoistField[Any]]]

    OVERVIEW_DOC: ClassVar[str] = (
        "Wrap data using the specified field name in a Struct when schema present, or a Map in the "
        "case of schemaless data.")
    CONFIG_DEF: ClassVar[ConfigDef] = ConfigDef().define(
        FIELD, ConfigType.STRING, importance=Importance.MEDIUM,
        doc="Field name for the single field that will be created in the resulting Struct or Map.")

    def __init__(self) -> None:
        self.field_name = ""
        self._schemas = SchemaCache()

    def configure(self, configs: Mapping[str, Any]) -> None:
        self.field_name = self.CONFIG_DEF.parse(configs)[FIELD]
        self._schemas = SchemaCache()

    def apply(self, record: R) -> R:
        schema = self.operating_schema(record)
        value = self.operating_value(record)
        if schema is None:
            return self.updated(record, None, {self.field_name: value})
        updated_schema: Schema | None = self._schemas.get(schema)
        if updated_schema is None:
            updated_schema = SchemaBuilder.struct().field(self.field_name, schema).build()
            self._schemas.put(schema, updated_schema)
        return self.updated(record, updated_schema, Struct(updated_schema).put(self.field_name, value))

    def close(self) -> None:
        self._schemas = SchemaCache()


HoistField.Key, HoistField.Value = key_value_variants(HoistField)

"""ValueToKey: make the record key from fields of the value.

Follows Kafka's ``org.apache.kafka.connect.transforms.ValueToKey`` (one class, no ``$Key``/``$Value``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Final, TypeVar

from kopycat.api.config import ConfigDef, ConfigType, Importance
from kopycat.api.data import Schema, SchemaBuilder, Struct
from kopycat.api.errors import DataError
from kopycat.api.records import ConnectRecord
from kopycat.api.transforms import Transformation
from kopycat.transforms._util import (
    REPLACE_NULL_WITH_DEFAULT,
    REPLACE_NULL_WITH_DEFAULT_DOC,
    DeclaredConfig,
    NonEmptyList,
    SchemaCache,
    require_map,
    require_struct,
)

__all__ = ["ValueToKey"]

R = TypeVar("R", bound=ConnectRecord)

FIELDS: Final = "fields"
_PURPOSE: Final = "copying fields from value to key"


class ValueToKey(DeclaredConfig, Transformation[R]):
    """Replace the key with a new key formed from a subset of the value's fields.

    Schemaless: the key is ``{field: value.get(field)}``. With a schema: a Struct whose schema
    has the named fields in the configured order (cached per value schema); a field missing
    from the schema is a DataError. As in Kafka, a null value (tombstone) is an error.
    """

    OVERVIEW_DOC: ClassVar[str] = (
        "Replace the record key with a new key formed from a subset of fields in the record value.")
    CONFIG_DEF: ClassVar[ConfigDef] = (
        ConfigDef()
        .define(FIELDS, ConfigType.LIST, validator=NonEmptyList(), importance=Importance.HIGH,
                doc="Field names on the record value to extract as the record key.")
        .define(REPLACE_NULL_WITH_DEFAULT, ConfigType.BOOLEAN, True, None, Importance.MEDIUM,
                REPLACE_NULL_WITH_DEFAULT_DOC))

    def __init__(self) -> None:
        self.fields: tuple[str, ...] = ()
        self.replace_null_with_default = True
        self._schemas = SchemaCache()

    def configure(self, configs: Mapping[str, Any]) -> None:
        parsed = self.CONFIG_DEF.parse(configs)
        self.fields = tuple(parsed[FIELDS])
        self.replace_null_with_default = parsed[REPLACE_NULL_WITH_DEFAULT]
        self._schemas = SchemaCache()

    def apply(self, record: R) -> R:
        if record.value_schema is None:
            value = require_map(record.value, _PURPOSE)
            key = {name: value.get(name) for name in self.fields}
            schemaless: R = record.new_record(key_schema=None, key=key)
            return schemaless
        struct = require_struct(record.value, _PURPOSE)
        key_schema: Schema | None = self._schemas.get(struct.schema)
        if key_schema is None:
            builder = SchemaBuilder.struct()
            for name in self.fields:
                found = struct.schema.field(name)
                if found is None:
                    raise DataError(f"Field does not exist: {name}")
                builder.field(name, found.schema)
            key_schema = builder.build()
            self._schemas.put(struct.schema, key_schema)
        read = struct.get if self.replace_null_with_default else struct.get_without_default
        key_struct = Struct(key_schema)
        for name in self.fields:
            key_struct.put(name, read(name))
        keyed: R = record.new_record(key_schema=key_schema, key=key_struct, value_schema=struct.schema)
        return keyed

    def close(self) -> None:
        self._schemas = SchemaCache()

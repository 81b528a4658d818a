"""HeaderFrom: move or copy fields of the key/value into headers.

Follows Kafka's ``org.apache.kafka.connect.transforms.HeaderFrom`` (``$Key`` / ``$Value``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Final, TypeVar

from kopycat.api.config import ConfigDef, ConfigType, Importance, ValidString
from kopycat.api.data import Schema, SchemaBuilder, Struct
from kopycat.api.errors import ConfigError, DataError
from kopycat.api.records import ConnectRecord
from kopycat.api.transforms import Transformation
from kopycat.transforms._util import (
    REPLACE_NULL_WITH_DEFAULT,
    REPLACE_NULL_WITH_DEFAULT_DOC,
    DeclaredConfig,
    NonEmptyList,
    SchemaCache,
    Side,
    copy_schema_basics,
    key_value_variants,
    require_map,
    require_struct,
)

__all__ = ["HeaderFrom"]

R = TypeVar("R", bound=ConnectRecord)

FIELDS_FIELD: Final = "fields"
HEADERS_FIELD: Final = "headers"
OPERATION_FIELD: Final = "operation"
MOVE: Final = "move"
COPY: Final = "copy"


class HeaderFrom(Side, DeclaredConfig, Transformation[R]):
    """Add header ``headers[i]`` with the value (and schema) of field ``fields[i]``, for each i.

    ``move`` also removes the fields (the Struct schema without them is cached per input schema);
    ``copy`` leaves the key/value as it is. A field missing from a dict gives a null header.
    """

    Key: ClassVar[type[HeaderFrom[Any]]]
    Value: ClassVar[type[HeaderFrom[Any]]]

    OVERVIEW_DOC: ClassVar[str] = (
        "Moves or copies fields in the key/value of a record into that record's headers. Corresponding "
        "elements of <code>fields</code> and <code>headers</code> together identify a field and the header it "
        "should be moved or copied to. Use the concrete transformation type designed for the record key "
        "(<code>org.apache.kafka.connect.transforms.HeaderFrom$Key</code>) or value "
        "(<code>org.apache.kafka.connect.transforms.HeaderFrom$Value</code>).")
    CONFIG_DEF: ClassVar[ConfigDef] = (
        ConfigDef()
        .define(FIELDS_FIELD, ConfigType.LIST, validator=NonEmptyList(), importance=Importance.HIGH,
                doc="Field names in the record whose values are to be copied or moved to headers.")
        .define(HEADERS_FIELD, ConfigType.LIST, validator=NonEmptyList(), importance=Importance.HIGH,
                doc="Header names, in the same order as the field names listed in the fields configuration "
                    "property.")
        .define(OPERATION_FIELD, ConfigType.STRING, validator=ValidString.in_(MOVE, COPY),
                importance=Importance.HIGH,
                doc="Either <code>move</code> if the fields are to be moved to the headers (removed from the "
                    "key/value), or <code>copy</code> if the fields are to be copied to the headers (retained in "
                    "the key/value).")
        .define(REPLACE_NULL_WITH_DEFAULT, ConfigType.BOOLEAN, True, None, Importance.MEDIUM,
                REPLACE_NULL_WITH_DEFAULT_DOC))

    def __init__(self) -> None:
        self.fields: list[str] = []
        self.headers: list[str] = []
        self.move = False
        self.replace_null_with_default = True
        self._schemas = SchemaCache()

    def configure(self, configs: Mapping[str, Any]) -> None:
        parsed = self.CONFIG_DEF.parse(configs)
        self.fields, self.headers = parsed[FIELDS_FIELD], parsed[HEADERS_FIELD]
        if len(self.fields) != len(self.headers):
            raise ConfigError(f"'{FIELDS_FIELD}' config must have the same number of elements as "
                              f"'{HEADERS_FIELD}' config: {FIELDS_FIELD}={','.join(self.fields)} has "
                              f"{len(self.fields)}, {HEADERS_FIELD}={','.join(self.headers)} has "
                              f"{len(self.headers)}", key=HEADERS_FIELD)
        self.move = parsed[OPERATION_FIELD] == MOVE
        self.replace_null_with_default = parsed[REPLACE_NULL_WITH_DEFAULT]
        self._schemas = SchemaCache()

    @property
    def _purpose(self) -> str:
        return f"header {MOVE if self.move else COPY}"

    def apply(self, record: R) -> R:
        schema = self.operating_schema(record)
        if schema is None:
            return self._apply_schemaless(record)
        return self._apply_with_schema(record, schema)

    def apply_batch(self, records: Sequence[R]) -> list[R]:
        apply = self.apply
        return [apply(record) for record in records]

    def _apply_schemaless(self, record: R) -> R:
        value = require_map(self.operating_value(record), self._purpose)
        updated_value = dict(value)
        updated = self.updated(record, None, updated_value)
        for field, header in zip(self.fields, self.headers, strict=True):
            if self.move:
                updated_value.pop(field, None)
            updated.headers.add(header, value.get(field), None)
        return updated

    def _apply_with_schema(self, record: R, schema: Schema) -> R:
        struct = require_struct(self.operating_value(record), self._purpose)
        read = struct.get if self.replace_null_with_default else struct.get_without_default
        if self.move:
            updated_schema = self._moved_schema(schema)
            updated_value = Struct.of_values(updated_schema, [read(field.name) for field in updated_schema.fields])
        else:
            updated_schema, updated_value = schema, struct
        updated = self.updated(record, updated_schema, updated_value)
        for field_name, header in zip(self.fields, self.headers, strict=True):
            field = schema.field(field_name)
            if field is None:
                raise _missing_field(field_name, schema)
            updated.headers.add(header, read(field), field.schema)
        return updated

    def _moved_schema(self, schema: Schema) -> Schema:
        cached: Schema | None = self._schemas.get(schema)
        if cached is None:
            builder = copy_schema_basics(schema, SchemaBuilder.struct())
            for field in schema.fields:
                if field.name not in self.fields:
                    builder.field(field.name, field.schema)
            cached = builder.build()
            self._schemas.put(schema, cached)
        return cached

    def close(self) -> None:
        self._schemas = SchemaCache()


def _missing_field(field_name: str, schema: Schema) -> DataError:
    """The error for a field ``fields`` lists that the schema lacks (Kafka fails with an NPE)."""
    return DataError(f"HeaderFrom: field '{field_name}' is not in the schema "
                    f"(fields: {', '.join(f.name for f in schema.fields)}); fix the '{FIELDS_FIELD}' config")


HeaderFrom.Key, HeaderFrom.Value = key_value_variants(HeaderFrom)

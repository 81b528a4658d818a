"""ExtractField: replace the key/value with one of its fields (nested with ``field.syntax.version=V2``).

Follows Kafka's ``org.apache.kafka.connect.transforms.ExtractField`` (``$Key`` / ``$Value``) and
KIP-821's field paths (:mod:`kopycat.transforms.field_path`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Final, TypeVar

from kopycat.api.config import ConfigDef, ConfigType, Importance
from kopycat.api.errors import DataError
from kopycat.api.records import ConnectRecord
from kopycat.api.transforms import Transformation
from kopycat.transforms._util import (
    REPLACE_NULL_WITH_DEFAULT,
    REPLACE_NULL_WITH_DEFAULT_DOC,
    DeclaredConfig,
    Side,
    key_value_variants,
    require_map_or_null,
    require_struct_or_null,
)
from kopycat.transforms.field_path import FieldSyntaxVersion, SingleFieldPath

__all__ = ["ExtractField"]

R = TypeVar("R", bound=ConnectRecord)

FIELD: Final = "field"
_PURPOSE: Final = "field extraction"


class ExtractField(Side, DeclaredConfig, Transformation[R]):
    """Extract a field from a Struct (the field's schema becomes the new schema) or a dict.

    A null key/value stays null (with the field's schema when there is one). A field missing
    from a dict gives null; missing from a schema it is a DataError, ``Unknown field: <path>``
    (Kafka raises IllegalArgumentException with the same message).
    """

    Key: ClassVar[type[ExtractField[Any]]]
    Value: ClassVar[type[ExtractField[Any]]]

    OVERVIEW_DOC: ClassVar[str] = (
        "Extract the specified field from a Struct when schema present, or a Map in the case of "
        "schemaless data. Any null values are passed through unmodified.")
    CONFIG_DEF: ClassVar[ConfigDef] = FieldSyntaxVersion.append_config_to(
        ConfigDef()
        .define(FIELD, ConfigType.STRING, importance=Importance.MEDIUM, doc="Field name to extract.")
        .define(REPLACE_NULL_WITH_DEFAULT, ConfigType.BOOLEAN, True, None, Importance.MEDIUM,
                REPLACE_NULL_WITH_DEFAULT_DOC))

    def __init__(self) -> None:
        self.original_path = ""
        self.field_path = SingleFieldPath("", FieldSyntaxVersion.V1)
        self.replace_null_with_default = True

    def configure(self, configs: Mapping[str, Any]) -> None:
        parsed = self.CONFIG_DEF.parse(configs)
        self.original_path = parsed[FIELD]
        self.field_path = SingleFieldPath(self.original_path, FieldSyntaxVersion.from_config(parsed))
        self.replace_null_with_default = parsed[REPLACE_NULL_WITH_DEFAULT]

    def apply(self, record: R) -> R:
        schema = self.operating_schema(record)
        value = self.operating_value(record)
        if schema is None:
            mapping = require_map_or_null(value, _PURPOSE)
            return self.updated(record, None, self.field_path.value_from_map(mapping))
        struct = require_struct_or_null(value, _PURPOSE)
        field = self.field_path.field_from(schema)
        if field is None:
            raise DataError(f"Unknown field: {self.original_path}")
        extracted = self.field_path.value_from_struct(struct, self.replace_null_with_default)
        return self.updated(record, field.schema, extracted)

    def close(self) -> None:
        pass


ExtractField.Key, ExtractField.Value = key_value_variants(ExtractField)

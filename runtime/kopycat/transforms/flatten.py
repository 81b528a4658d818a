"""Flatten: nested Structs (or dicts) become top-level fields named by their path.

Follows Kafka's ``org.apache.kafka.connect.transforms.Flatten`` (``$Key`` / ``$Value``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Final, TypeVar

from kopycat.api.config import ConfigDef, ConfigType, Importance
from kopycat.api.data import Schema, SchemaBuilder, Struct, Type
from kopycat.api.errors import DataError
from kopycat.api.records import ConnectRecord
from kopycat.api.transforms import Transformation
from kopycat.transforms._util import (
    DeclaredConfig,
    SchemaCache,
    Side,
    copy_schema_basics,
    key_value_variants,
    require_map,
    require_struct,
)

__all__ = ["Flatten"]

R = TypeVar("R", bound=ConnectRecord)

DELIMITER: Final = "delimiter"
_PURPOSE: Final = "flattening"
_KEPT: Final = frozenset({Type.INT8, Type.INT16, Type.INT32, Type.INT64, Type.FLOAT32, Type.FLOAT64,
                          Type.BOOLEAN, Type.STRING, Type.BYTES, Type.ARRAY})
"""Types copied as they are; STRUCT recurses; MAP (with a schema) is refused, as in Kafka."""


def _schemaless_kept(value: Any) -> bool:
    """Whether a schemaless value is copied as it is (a primitive, bytes or a list)."""
    return isinstance(value, bool | int | float | str | bytes | bytearray | memoryview | list | tuple)


class Flatten(Side, DeclaredConfig, Transformation[R]):
    """Flatten nested data: field ``b`` inside ``a`` becomes ``a.b`` (``delimiter`` defaults to ``.``).

    Structs when a schema is present (a nested field's schema turns optional when a parent is
    optional, and takes its default from the parent's default), dicts otherwise (a nested dict
    flattens; None values stay). Arrays and their contents are not modified. A MAP field with a
    schema, or a Struct inside a schemaless dict, is a DataError naming the field. A null
    key/value passes through.
    """

    Key: ClassVar[type[Flatten[Any]]]
    Value: ClassVar[type[Flatten[Any]]]

    OVERVIEW_DOC: ClassVar[str] = (
        "Flatten a nested data structure, generating names for each field by concatenating the field names at "
        "each level with a configurable delimiter character. Applies to Struct when schema present, or a Map in "
        "the case of schemaless data. Array fields and their contents are not modified. The default delimiter is "
        "'.'.<p/>Use the concrete transformation type designed for the record key "
        "(<code>org.apache.kafka.connect.transforms.Flatten$Key</code>) or value "
        "(<code>org.apache.kafka.connect.transforms.Flatten$Value</code>).")
    CONFIG_DEF: ClassVar[ConfigDef] = ConfigDef().define(
        DELIMITER, ConfigType.STRING, ".", None, Importance.MEDIUM,
        "Delimiter to insert between field names from the input record when generating field names for the "
        "output record")

    def __init__(self) -> None:
        self.delimiter = "."
        self._schemas = SchemaCache()

    def configure(self, configs: Mapping[str, Any]) -> None:
        self.delimiter = self.CONFIG_DEF.parse(configs)[DELIMITER]
        self._schemas = SchemaCache()

    def apply(self, record: R) -> R:
        value = self.operating_value(record)
        if value is None:
            return record
        schema = self.operating_schema(record)
        if schema is None:
            flat: dict[str, Any] = {}
            self._flatten_map(require_map(value, _PURPOSE), "", flat)
            return self.updated(record, None, flat)
        struct = require_struct(value, _PURPOSE)
        updated_schema: Schema | None = self._schemas.get(schema)
        if updated_schema is None:
            builder = copy_schema_basics(schema, SchemaBuilder.struct())
            self._flatten_schema(schema, "", builder, schema.optional, schema.default)
            updated_schema = builder.build()
            self._schemas.put(schema, updated_schema)
        values: list[Any] = []
        _flatten_struct(schema, struct, values)
        return self.updated(record, updated_schema, Struct.of_values(updated_schema, values))

    def apply_batch(self, records: Sequence[R]) -> list[R]:
        apply = self.apply
        return [apply(record) for record in records]

    def _name(self, prefix: str, name: str) -> str:
        return f"{prefix}{self.delimiter}{name}" if prefix else name

    def _flatten_map(self, value: Mapping[str, Any], prefix: str, out: dict[str, Any]) -> None:
        for key, item in value.items():
            name = self._name(prefix, key)
            if item is None or _schemaless_kept(item):
                out[name] = item
            elif isinstance(item, Mapping):
                self._flatten_map(item, name, out)
            else:
                raise DataError(f"Flatten transformation does not support {type(item).__name__} for record "
                                f"without schemas (for field {name}).")

    def _flatten_schema(self, schema: Schema, prefix: str, builder: SchemaBuilder, optional: bool,
                        parent_default: Struct | None) -> None:
        for field in schema.fields:
            name = self._name(prefix, field.name)
            field_optional = optional or field.schema.optional
            default = field.schema.default
            if default is None and parent_default is not None:
                default = parent_default.get(field)
            if field.schema.type in _KEPT:
                builder.field(name, _field_schema(field.schema, field_optional, default))
            elif field.schema.type is Type.STRUCT:
                self._flatten_schema(field.schema, name, builder, field_optional, default)
            else:
                raise DataError(f"Flatten transformation does not support {field.schema.type.name} for record "
                                f"with schemas (for field {name}).")

    def close(self) -> None:
        self._schemas = SchemaCache()


def _flatten_struct(schema: Schema, struct: Struct | None, out: list[Any]) -> None:
    """The leaf values in schema order; a null nested Struct leaves all its leaves unset (null)."""
    for field in schema.fields:
        value = None if struct is None else struct.get(field)
        if field.schema.type is Type.STRUCT:
            _flatten_struct(field.schema, value, out)
        else:
            out.append(value)


def _field_schema(original: Schema, optional: bool, default: Any) -> Schema:
    """``original`` with its basics, made optional and given the parent's default as asked."""
    is_array = original.type is Type.ARRAY
    builder = copy_schema_basics(original, SchemaBuilder.array(original.value_schema) if is_array
                                 else SchemaBuilder(original.type))
    if optional:
        builder.optional()
    if default is not None:
        builder.default_value(default)
    return builder.build()


Flatten.Key, Flatten.Value = key_value_variants(Flatten)

"""Cast: change the type of top-level fields, or of the whole key/value.

Follows Kafka's ``org.apache.kafka.connect.transforms.Cast`` (``$Key`` / ``$Value``), including
Java's conversions: ints narrow by keeping the low bits (``int8`` of 300 is 44), floats
truncate and clamp, Decimals truncate, booleans are "non-zero", floats print as Java's
``Double.toString`` (``1.0E10``), bytes as base64 and Date/Time/Timestamp values as Kafka's
``Values.dateFormatFor`` (in UTC).
"""

from __future__ import annotations

import base64
import datetime as _dt
import decimal
from collections.abc import Mapping
from typing import Any, ClassVar, Final, TypeVar

from kopycat.api.config import ConfigDef, ConfigType, Importance, LambdaValidator
from kopycat.api.data import (
    LOGICAL_TYPES,
    Date,
    Decimal,
    Schema,
    SchemaBuilder,
    Struct,
    Time,
    Timestamp,
    Type,
)
from kopycat.api.errors import ConfigError, DataError
from kopycat.api.records import ConnectRecord
from kopycat.api.transforms import Transformation
from kopycat.java_numbers import f32, java_big_decimal, java_double, java_float
from kopycat.transforms._java import date_format_for, java_int, parse_java_double, parse_java_int
from kopycat.transforms._util import (
    REPLACE_NULL_WITH_DEFAULT,
    REPLACE_NULL_WITH_DEFAULT_DOC,
    DeclaredConfig,
    SchemaCache,
    Side,
    copy_schema_basics,
    java_split,
    key_value_variants,
    require_map,
    require_struct,
)

__all__ = ["Cast", "cast_value_to_type", "parse_field_types"]

R = TypeVar("R", bound=ConnectRecord)

SPEC: Final = "spec"
_PURPOSE: Final = "cast types"
WHOLE_VALUE_CAST: Final = None
"""The key of the whole-value cast in :func:`parse_field_types`' result (Kafka uses null too)."""

SUPPORTED_CAST_INPUT_TYPES: Final = (Type.INT8, Type.INT16, Type.INT32, Type.INT64, Type.FLOAT32,
                                     Type.FLOAT64, Type.BOOLEAN, Type.STRING, Type.BYTES)
SUPPORTED_CAST_OUTPUT_TYPES: Final = SUPPORTED_CAST_INPUT_TYPES[:-1]
_INT_BITS: Final = {Type.INT8: 8, Type.INT16: 16, Type.INT32: 32, Type.INT64: 64}


def _names(types: tuple[Type, ...]) -> str:
    return "[" + ", ".join(t.name for t in types) + "]"


def _target_type(text: str, mappings: list[str], key: str) -> Type:
    try:
        target = Type[text.strip().upper()]
    except KeyError:
        raise ConfigError.for_key(key, mappings, f"Invalid type found in casting spec: {text.strip()}; "
                                  f"supported types are {_names(SUPPORTED_CAST_OUTPUT_TYPES)}") from None
    if target not in SUPPORTED_CAST_OUTPUT_TYPES:
        raise ConfigError.for_key(key, mappings, f"Cast transformation does not support casting to "
                                  f"{target.name}; supported types are {_names(SUPPORTED_CAST_OUTPUT_TYPES)}")
    return target


def parse_field_types(mappings: list[str], key: str = SPEC) -> dict[str | None, Type]:
    """``field:type`` pairs (or one bare type for the whole value) as Kafka's ``parseFieldTypes``."""
    if not mappings:
        raise ConfigError.for_key(key, mappings, "Must specify at least one field to cast.")
    casts: dict[str | None, Type] = {}
    for mapping in mappings:
        parts = java_split(mapping, ":")
        if len(parts) > 2 or not parts:
            raise ConfigError.for_key(key, mappings, f"Invalid cast mapping: {mapping}; expected "
                                      "field:type or a single type")
        if len(parts) == 1:
            casts[WHOLE_VALUE_CAST] = _target_type(parts[0], mappings, key)
        else:
            casts[parts[0].strip()] = _target_type(parts[1], mappings, key)
    if WHOLE_VALUE_CAST in casts and len(mappings) > 1:
        raise ConfigError.for_key(key, mappings, "Cast transformations that specify a type to cast the "
                                  "entire value to may only specify a single cast in their spec")
    return casts


def _check_spec(name: str, value: Any) -> None:
    parse_field_types(value or [], name)


def _schemaless_type(value: Any) -> Type:
    """The schema type Kafka's ``ConnectSchema.schemaType`` infers from a value's class."""
    if isinstance(value, bool):
        return Type.BOOLEAN
    if isinstance(value, int):
        return Type.INT64
    if isinstance(value, float):
        return Type.FLOAT64
    if isinstance(value, str):
        return Type.STRING
    if isinstance(value, bytes | bytearray | memoryview):
        return Type.BYTES
    if isinstance(value, list | tuple):
        return Type.ARRAY
    if isinstance(value, Mapping):
        return Type.MAP
    if isinstance(value, Struct):
        return Type.STRUCT
    raise DataError(f"Cast transformation was passed a value of type {type(value).__name__} which is "
                    "not supported by Connect's data API")


def _encode_logical(schema: Schema, value: Any) -> Any:
    """Date/Time/Timestamp as their int representation (Kafka's ``encodeLogicalType``)."""
    if schema.name in (Date.LOGICAL_NAME, Time.LOGICAL_NAME, Timestamp.LOGICAL_NAME):
        return LOGICAL_TYPES[schema.name].from_logical(schema, value)
    return value


def _epoch_ms(schema: Schema, value: Any) -> int | None:
    """A logical date/time value as a ``java.util.Date``'s epoch ms, None if not one."""
    if schema.name == Date.LOGICAL_NAME:
        return Date.from_logical(schema, value) * 86_400_000
    if schema.name in (Time.LOGICAL_NAME, Timestamp.LOGICAL_NAME):
        return int(LOGICAL_TYPES[schema.name].from_logical(schema, value))
    return None


def _to_string(schema: Schema | None, value: Any) -> str:
    """Kafka's ``castToString``: Java's ``toString``, base64 for bytes, ISO text for dates."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return java_float(value) if schema is not None and schema.type is Type.FLOAT32 else java_double(value)
    if isinstance(value, decimal.Decimal):
        if schema is not None and schema.name == Decimal.LOGICAL_NAME:
            scale = Decimal.scale(schema)
            return java_big_decimal(Decimal.unscaled(value, scale), scale)
        return str(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return base64.b64encode(bytes(value)).decode("ascii")
    if schema is not None and isinstance(value, _dt.date | _dt.time):
        millis = _epoch_ms(schema, value)
        if millis is not None:
            return date_format_for(millis)
    return str(value)


def cast_value_to_type(schema: Schema | None, value: Any, target: Type) -> Any:
    """``value`` (of ``schema``, or schemaless) as a value of ``target`` (Kafka's ``castValueToType``)."""
    if value is None:
        return None
    inferred = _schemaless_type(value) if schema is None else schema.type
    if inferred not in SUPPORTED_CAST_INPUT_TYPES:
        raise DataError(f"Cast transformation does not support casting from {inferred.name}; "
                        f"supported types are {_names(SUPPORTED_CAST_INPUT_TYPES)}")
    if schema is not None and value.__class__ is int and schema.type in (Type.FLOAT32, Type.FLOAT64):
        value = f32(value) if schema.type is Type.FLOAT32 else float(value)  # a Java Float/Double
    if target is Type.STRING:
        return _to_string(schema, value)
    if schema is not None and schema.name is not None:
        value = _encode_logical(schema, value)
    try:
        return _CASTS[target](value)
    except ValueError as exc:
        raise DataError(f"Value ({value}) was out of range for requested data type {target.name}: "
                        f"{exc}") from None


def _number_cast(target: Type) -> Any:
    bits = _INT_BITS.get(target)

    def cast(value: Any) -> Any:
        if isinstance(value, bool):
            number: Any = int(value)
        elif isinstance(value, int | float | decimal.Decimal):
            number = value
        elif isinstance(value, str):
            if bits is not None:
                return parse_java_int(value, bits)
            number = parse_java_double(value)
        else:
            raise DataError(f"Unexpected type in Cast transformation: {type(value).__name__}")
        if bits is not None:
            return java_int(number, bits)
        if target is Type.FLOAT32:
            return f32(float(number))
        if target is Type.FLOAT64:
            return float(number)
        return java_int(number, 64) != 0  # BOOLEAN: Number.longValue() != 0
    return cast


def _boolean_cast(value: Any) -> bool:
    if isinstance(value, str):
        return value.lower() == "true"  # Boolean.parseBoolean
    return bool(_number_cast(Type.BOOLEAN)(value))


_CASTS: Final = {t: _number_cast(t) for t in _INT_BITS}
_CASTS.update({Type.FLOAT32: _number_cast(Type.FLOAT32), Type.FLOAT64: _number_cast(Type.FLOAT64),
               Type.BOOLEAN: _boolean_cast})


def _builder_for(target: Type) -> SchemaBuilder:
    return SchemaBuilder(target)


class Cast(Side, DeclaredConfig, Transformation[R]):
    """Cast fields of a Struct/dict, or the whole key/value, to another primitive type.

    ``spec`` is ``field1:type,field2:type`` or a single ``type`` for the whole value; types are
    int8, int16, int32, int64, float32, float64, boolean and string. Inputs may be any of those
    or bytes (to string only), and logical types (Date/Time/Timestamp as their int value or ISO
    text, Decimal as a number or its ``BigDecimal.toString``). Struct schemas keep field order,
    optionality and defaults (cast too); they are cached per input schema. Only top-level fields.

    One deliberate difference: a whole-value cast of a logical type drops the logical name and
    parameters, which Kafka copies onto the new schema and so yields records no converter can
    write (e.g. a STRING schema named ``...data.Decimal``).
    """

    Key: ClassVar[type[Cast[Any]]]
    Value: ClassVar[type[Cast[Any]]]

    OVERVIEW_DOC: ClassVar[str] = (
        "Cast fields or the entire key or value to a specific type, e.g. to force an integer field "
        "to a smaller width. Cast from integers, floats, boolean and string to any other type, and "
        "cast binary to string (base64 encoded).")
    CONFIG_DEF: ClassVar[ConfigDef] = (
        ConfigDef()
        .define(SPEC, ConfigType.LIST, validator=LambdaValidator(
                    _check_spec, "list of colon-delimited pairs, e.g. <code>foo:bar,abc:xyz</code>"),
                importance=Importance.HIGH,
                doc="List of fields and the type to cast them to of the form field1:type,field2:type "
                    "to cast fields of Maps or Structs. A single type to cast the entire value. Valid "
                    "types are int8, int16, int32, int64, float32, float64, boolean, and string. Note "
                    "that binary fields can only be cast to string.")
        .define(REPLACE_NULL_WITH_DEFAULT, ConfigType.BOOLEAN, True, None, Importance.MEDIUM,
                REPLACE_NULL_WITH_DEFAULT_DOC))

    def __init__(self) -> None:
        self.casts: dict[str | None, Type] = {}
        self.whole_value_cast_type: Type | None = None
        self.replace_null_with_default = True
        self._schemas = SchemaCache()

    def configure(self, configs: Mapping[str, Any]) -> None:
        parsed = self.CONFIG_DEF.parse(configs)
        self.casts = parse_field_types(parsed[SPEC])
        self.whole_value_cast_type = self.casts.get(WHOLE_VALUE_CAST)
        self.replace_null_with_default = parsed[REPLACE_NULL_WITH_DEFAULT]
        self._schemas = SchemaCache()

    def apply(self, record: R) -> R:
        value = self.operating_value(record)
        if value is None:
            return record
        schema = self.operating_schema(record)
        whole = self.whole_value_cast_type
        if schema is None:
            if whole is not None:
                return self.updated(record, None, cast_value_to_type(None, value, whole))
            mapping = require_map(value, _PURPOSE)
            updated = dict(mapping)
            for name, target in self.casts.items():
                if name is not None:
                    updated[name] = cast_value_to_type(None, mapping.get(name), target)
            return self.updated(record, None, updated)
        updated_schema = self._updated_schema(schema)
        if whole is not None:
            return self.updated(record, updated_schema, cast_value_to_type(schema, value, whole))
        struct = require_struct(value, _PURPOSE)
        read = struct.get if self.replace_null_with_default else struct.get_without_default
        values = []
        for field in struct.schema.fields:
            original = read(field)
            cast_to = self.casts.get(field.name)
            values.append(original if cast_to is None else cast_value_to_type(field.schema, original, cast_to))
        return self.updated(record, updated_schema, Struct.of_values(updated_schema, values))

    def _updated_schema(self, schema: Schema) -> Schema:
        cached: Schema | None = self._schemas.get(schema)
        if cached is not None:
            return cached
        whole = self.whole_value_cast_type
        if whole is not None:
            builder = _builder_for(whole)
            if schema.name in LOGICAL_TYPES:
                if schema.doc is not None:
                    builder.doc(schema.doc)
            else:
                copy_schema_basics(schema, builder)
        else:
            builder = copy_schema_basics(schema, SchemaBuilder.struct())
            for field in schema.fields:
                target = self.casts.get(field.name)
                if target is None:
                    builder.field(field.name, field.schema)
                    continue
                field_builder = _builder_for(target)
                if field.schema.optional:
                    field_builder.optional()
                if field.schema.default is not None:
                    field_builder.default_value(cast_value_to_type(field.schema, field.schema.default, target))
                builder.field(field.name, field_builder.build())
        if schema.optional:
            builder.optional()
        if schema.default is not None:
            builder.default_value(cast_value_to_type(schema, schema.default, builder.type))
        updated = builder.build()
        self._schemas.put(schema, updated)
        return updated

    def close(self) -> None:
        self._schemas = SchemaCache()


Cast.Key, Cast.Value = key_value_variants(Cast)

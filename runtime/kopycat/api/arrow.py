"""Connect schemas as Arrow types and back, for Parquet sinks, Spark and columnar batches.

Every Connect schema maps to a pyarrow type (DESIGN.md §2):

    INT8..INT64, FLOAT32/64, BOOLEAN  int8..int64, float32/64, bool_
    STRING, BYTES                     string, binary
    ARRAY, MAP, STRUCT                list_, map_, struct (children keep their own metadata)
    Decimal                           decimal128(precision, scale); precision from the
                                      ``connect.decimal.precision`` parameter (as Confluent's
                                      converters name it), else 38; decimal256 above 38
    Date, Time, Timestamp             date32, time32('ms'), timestamp('ms', tz='UTC')
    optional                          nullable

What Arrow cannot say is kept in the field's metadata under ``connect.*`` keys (name, version,
doc, parameters, default; ``optional`` for map keys, which Arrow requires non-null, and for the
top-level schema), so Connect -> Arrow -> Connect gives back an equal schema. Arrow types from
elsewhere map to the nearest Connect schema: unsigned ints to the next wider signed type
(uint64 to Decimal(20, 0)), large/view variants to their plain type, any date/time/timestamp
unit to the Connect logical type (sub-millisecond precision is then lost on the way back).
"""

from __future__ import annotations

import base64
import decimal
import json
from collections.abc import Mapping
from typing import Any, Final

import pyarrow as pa

from kopycat.api.data import Date, Decimal, Schema, SchemaBuilder, Struct, Time, Timestamp, Type, validate_value
from kopycat.api.errors import DataError

__all__ = [
    "PRECISION_PARAMETER", "from_arrow_field", "from_arrow_schema", "from_arrow_type",
    "to_arrow_field", "to_arrow_schema", "to_arrow_type",
]

PRECISION_PARAMETER: Final = "connect.decimal.precision"
DEFAULT_PRECISION: Final = 38
_NAME, _VERSION, _DOC = b"connect.name", b"connect.version", b"connect.doc"
_PARAMETERS, _DEFAULT, _OPTIONAL = b"connect.parameters", b"connect.default", b"connect.optional"

_PRIMITIVES: Final = {
    Type.INT8: pa.int8(), Type.INT16: pa.int16(), Type.INT32: pa.int32(), Type.INT64: pa.int64(),
    Type.FLOAT32: pa.float32(), Type.FLOAT64: pa.float64(), Type.BOOLEAN: pa.bool_(),
    Type.STRING: pa.string(), Type.BYTES: pa.binary(),
}
_FROM_PRIMITIVE: Final = {arrow_type: schema_type for schema_type, arrow_type in _PRIMITIVES.items()}
_LOGICAL_ARROW: Final = {Date.LOGICAL_NAME: pa.date32(), Time.LOGICAL_NAME: pa.time32("ms"),
                         Timestamp.LOGICAL_NAME: pa.timestamp("ms", tz="UTC")}
_WIDER: Final = {pa.uint8(): Type.INT16, pa.uint16(): Type.INT32, pa.uint32(): Type.INT64,
                 pa.float16(): Type.FLOAT32, pa.large_string(): Type.STRING,
                 pa.large_binary(): Type.BYTES, pa.string_view(): Type.STRING,
                 pa.binary_view(): Type.BYTES}


# ---------------------------------------------------------------- Connect -> Arrow

def to_arrow_type(schema: Schema) -> pa.DataType:
    """The Arrow type holding values of ``schema`` (nullability and metadata live on fields)."""
    if schema.name == Decimal.LOGICAL_NAME:
        scale = Decimal.scale(schema)
        precision = int((schema.parameters or {}).get(PRECISION_PARAMETER, DEFAULT_PRECISION))
        return pa.decimal128(precision, scale) if precision <= 38 else pa.decimal256(precision, scale)
    if schema.name in _LOGICAL_ARROW:
        return _LOGICAL_ARROW[schema.name]
    if schema.type in _PRIMITIVES:
        return _PRIMITIVES[schema.type]
    if schema.type is Type.ARRAY:
        return pa.list_(to_arrow_field("item", schema.value_schema))
    if schema.type is Type.MAP:
        key = to_arrow_field("key", schema.key_schema, nullable_allowed=False)
        return pa.map_(key, to_arrow_field("value", schema.value_schema))
    return pa.struct([to_arrow_field(field.name, field.schema) for field in schema.fields])


def to_arrow_field(name: str, schema: Schema, *, nullable_allowed: bool = True) -> pa.Field:
    """A named Arrow field: the type, nullable when optional, Connect details in metadata.

    ``nullable_allowed=False`` is for places Arrow requires non-null (map keys): optionality
    is then kept in the metadata only.
    """
    metadata = _metadata(schema, flag_optional=schema.optional and not nullable_allowed)
    return pa.field(name, to_arrow_type(schema), nullable=schema.optional and nullable_allowed,
                    metadata=metadata or None)


def to_arrow_schema(schema: Schema) -> pa.Schema:
    """An Arrow schema with one column per field of the STRUCT ``schema``."""
    if schema.type is not Type.STRUCT:
        raise DataError(f"Only a STRUCT schema maps to an Arrow schema, not {schema.type.name}")
    fields = [to_arrow_field(field.name, field.schema) for field in schema.fields]
    return pa.schema(fields, metadata=_metadata(schema, flag_optional=schema.optional) or None)


def _metadata(schema: Schema, flag_optional: bool) -> dict[bytes, bytes]:
    metadata: dict[bytes, bytes] = {}
    if schema.name is not None:
        metadata[_NAME] = schema.name.encode()
    if schema.version is not None:
        metadata[_VERSION] = str(schema.version).encode()
    if schema.doc is not None:
        metadata[_DOC] = schema.doc.encode()
    if schema.parameters is not None:
        metadata[_PARAMETERS] = json.dumps(dict(schema.parameters)).encode()
    if schema.default is not None:
        metadata[_DEFAULT] = json.dumps(_default_to_json(schema, schema.default)).encode()
    if flag_optional:
        metadata[_OPTIONAL] = b"true"
    return metadata


# ---------------------------------------------------------------- Arrow -> Connect

def from_arrow_type(arrow_type: pa.DataType, nullable: bool = True,
                    metadata: Mapping[bytes, bytes] | None = None) -> Schema:
    """The Connect schema for an Arrow type; ``metadata`` (``connect.*`` keys) restores details."""
    metadata = metadata or {}
    template = _template(arrow_type)
    schema = _replace(
        template,
        optional=nullable or metadata.get(_OPTIONAL) == b"true",
        name=metadata[_NAME].decode() if _NAME in metadata else template.name,
        version=int(metadata[_VERSION]) if _VERSION in metadata else template.version,
        doc=metadata[_DOC].decode() if _DOC in metadata else None,
        parameters=json.loads(metadata[_PARAMETERS]) if _PARAMETERS in metadata else template.parameters)
    if _DEFAULT not in metadata:
        return schema
    default = _default_from_json(schema, json.loads(metadata[_DEFAULT]))
    validate_value(schema, default, "default")
    return _replace(schema, default=default)


def from_arrow_field(field: pa.Field) -> Schema:
    """The Connect schema of one Arrow field."""
    return from_arrow_type(field.type, field.nullable, field.metadata)


def from_arrow_schema(arrow_schema: pa.Schema) -> Schema:
    """A STRUCT schema with one field per Arrow column, in order; schema metadata restores the rest."""
    return from_arrow_type(pa.struct(list(arrow_schema)), nullable=False, metadata=arrow_schema.metadata)


def _replace(schema: Schema, **changes: Any) -> Schema:
    """A copy of ``schema`` with some attributes changed."""
    attrs: dict[str, Any] = {
        "optional": schema.optional, "default": schema.default, "name": schema.name,
        "version": schema.version, "doc": schema.doc, "parameters": schema.parameters,
        "fields": schema.fields if schema.type is Type.STRUCT else None,
        "key_schema": schema.key_schema if schema.type is Type.MAP else None,
        "value_schema": schema.value_schema if schema.type in (Type.ARRAY, Type.MAP) else None,
    }
    attrs.update(changes)
    return Schema(schema.type, **attrs)


def _template(arrow_type: pa.DataType) -> Schema:
    """The required Connect schema (logical type included) that ``arrow_type`` holds."""
    if arrow_type in _FROM_PRIMITIVE:
        return Schema(_FROM_PRIMITIVE[arrow_type])
    if arrow_type in _WIDER:
        return Schema(_WIDER[arrow_type])
    if pa.types.is_decimal(arrow_type) or arrow_type == pa.uint64():
        precision, scale = (20, 0) if arrow_type == pa.uint64() else (arrow_type.precision, arrow_type.scale)
        return Decimal.builder(scale).parameter(PRECISION_PARAMETER, str(precision)).build()
    if pa.types.is_date(arrow_type):
        return Date.SCHEMA
    if pa.types.is_time(arrow_type):
        return Time.SCHEMA
    if pa.types.is_timestamp(arrow_type):
        return Timestamp.SCHEMA
    if pa.types.is_fixed_size_binary(arrow_type):
        return Schema.BYTES_SCHEMA
    if pa.types.is_dictionary(arrow_type):
        return _template(arrow_type.value_type)
    if pa.types.is_map(arrow_type):
        return SchemaBuilder.map(from_arrow_field(arrow_type.key_field),
                                 from_arrow_field(arrow_type.item_field)).build()
    if pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type) or pa.types.is_fixed_size_list(arrow_type):
        return SchemaBuilder.array(from_arrow_field(arrow_type.value_field)).build()
    if pa.types.is_struct(arrow_type):
        builder = SchemaBuilder.struct()
        for index in range(arrow_type.num_fields):
            builder.field(arrow_type.field(index).name, from_arrow_field(arrow_type.field(index)))
        return builder.build()
    raise DataError(f"Arrow type {arrow_type} has no Kafka Connect equivalent; cast it first")


# ---------------------------------------------------------------- defaults as JSON metadata

def _default_to_json(schema: Schema, value: Any) -> Any:
    """A default as plain JSON: bytes base64, Decimal text, Date days, Time/Timestamp ms."""
    if value is None:
        return None
    if schema.name == Decimal.LOGICAL_NAME:
        return str(value)
    if schema.name in (Date.LOGICAL_NAME, Time.LOGICAL_NAME, Timestamp.LOGICAL_NAME):
        return {Date.LOGICAL_NAME: Date, Time.LOGICAL_NAME: Time,
                Timestamp.LOGICAL_NAME: Timestamp}[schema.name].from_logical(schema, value)
    if schema.type is Type.BYTES:
        return base64.b64encode(bytes(value)).decode("ascii")
    if schema.type is Type.ARRAY:
        return [_default_to_json(schema.value_schema, v) for v in value]
    if schema.type is Type.MAP:
        return [[_default_to_json(schema.key_schema, k), _default_to_json(schema.value_schema, v)]
                for k, v in value.items()]
    if schema.type is Type.STRUCT:
        return {f.name: _default_to_json(f.schema, value.get_without_default(f.name)) for f in schema.fields}
    return value


def _default_from_json(schema: Schema, value: Any) -> Any:
    """The inverse of :func:`_default_to_json`."""
    if value is None:
        return None
    if schema.name == Decimal.LOGICAL_NAME:
        return decimal.Decimal(value)
    if schema.name == Date.LOGICAL_NAME:
        return Date.to_logical(schema, value)
    if schema.name == Time.LOGICAL_NAME:
        return Time.to_logical(schema, value)
    if schema.name == Timestamp.LOGICAL_NAME:
        return Timestamp.to_logical(schema, value)
    if schema.type is Type.BYTES:
        return base64.b64decode(value)
    if schema.type is Type.ARRAY:
        return [_default_from_json(schema.value_schema, v) for v in value]
    if schema.type is Type.MAP:
        return {_default_from_json(schema.key_schema, k): _default_from_json(schema.value_schema, v)
                for k, v in value}
    if schema.type is Type.STRUCT:
        struct = Struct(schema)
        for field in schema.fields:
            struct.put(field, _default_from_json(field.schema, value.get(field.name)))
        return struct
    if schema.type in (Type.FLOAT32, Type.FLOAT64):
        return float(value)
    return value


"""Avro schemas as Connect schemas and decoded Avro values as Connect values (Confluent's ``AvroData``).

The reverse of :mod:`kopycat.converters.avro_data`, following ``AvroData.toConnectSchema`` and
``toConnectData``::

    "int"       INT32; INT8 / INT16 with "connect.type"; Date with logicalType date, Time with time-millis
    "long"      INT64; Timestamp with logicalType timestamp-millis
    "float", "double", "boolean", "string", "bytes"   FLOAT32, FLOAT64, BOOLEAN, STRING, BYTES
    bytes + logicalType decimal   Decimal(scale), ``connect.decimal.precision`` when precision is not 64
    array       ARRAY; an array of ``MapEntry`` records (key, value) is a MAP with those key/value schemas
    map         MAP with required STRING keys
    record      STRUCT named by ``connect.name``, else the record's full name (not ``ConnectDefault*``)
    ["null", T] / [T, "null"]     T, optional
    enum        STRING with parameters io.confluent.connect.avro.Enum (its full name) and .Enum.<symbol>
    fixed       BYTES with parameter connect.fixed.size; named types keep their full name as Connect name

With ``connect.meta.data`` the ``connect.doc``, ``connect.version``, ``connect.parameters``,
``connect.default`` and ``connect.name`` properties restore what :func:`~kopycat.converters.avro_data.to_avro_schema`
wrote, so a Connect schema survives the round trip. Record docs and field docs become the struct's
``io.confluent.connect.avro.record.doc`` / ``...field.doc.<name>`` parameters; an Avro field default
becomes the field schema's default. Other unions (Confluent's ``io.confluent.connect.avro.Union``
structs) raise :class:`DataError`: no Connect schema Kopycat writes produces them.

Values: :func:`connect_values_converter` compiles a Connect schema into a function from what
fastavro decodes with :func:`plain_reader_schema` (logical types left as their encodings, so the
Connect logical conversions of :mod:`kopycat.api.logical` apply) to Connect values.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any, Final

from kopycat.api.data import LOGICAL_TYPES, Date, Decimal, Schema, SchemaBuilder, Struct, Time, Timestamp, Type
from kopycat.api.errors import DataError
from kopycat.converters.avro_data import (
    AVRO_ENUM_DEFAULT_PREFIX_PROP,
    AVRO_ENUM_DOC_PREFIX_PROP,
    AVRO_FIELD_DEFAULT_FLAG_PROP,
    AVRO_FIELD_DOC_PREFIX_PROP,
    AVRO_RECORD_DOC_PROP,
    AVRO_TYPE_ENUM,
    CONNECT_AVRO_DECIMAL_PRECISION_DEFAULT,
    CONNECT_AVRO_DECIMAL_PRECISION_PROP,
    CONNECT_DEFAULT_VALUE_PROP,
    CONNECT_DOC_PROP,
    CONNECT_INTERNAL_TYPE_NAME,
    CONNECT_NAME_PROP,
    CONNECT_PARAMETERS_PROP,
    CONNECT_TYPE_PROP,
    CONNECT_VERSION_PROP,
    DEFAULT_SCHEMA_NAME,
    KEY_FIELD,
    MAP_ENTRY_TYPE_NAME,
    NAMESPACE,
    VALUE_FIELD,
    AvroSchema,
)

__all__ = ["connect_values_converter", "plain_reader_schema", "to_connect_schema"]

log = logging.getLogger(__name__)

_SIMPLE: Final = {"float": Type.FLOAT32, "double": Type.FLOAT64, "boolean": Type.BOOLEAN, "string": Type.STRING,
                  "bytes": Type.BYTES, "enum": Type.STRING, "fixed": Type.BYTES}
_LOGICAL: Final = {("int", "date"): Date, ("int", "time-millis"): Time, ("long", "timestamp-millis"): Timestamp}
_DEFAULT_FULL_NAME: Final = f"{NAMESPACE}.{DEFAULT_SCHEMA_NAME}"
CONNECT_AVRO_FIXED_SIZE_PROP: Final = "connect.fixed.size"


def to_connect_schema(avro: AvroSchema, *, connect_meta_data: bool = True, version: int | None = None) -> Schema:
    """The Connect schema of a parsed Avro schema (``AvroData.toConnectSchema``).

    ``version`` is the schema's version in the registry: the top-level schema takes it when it
    carries no ``connect.version`` (as Confluent's AvroConverter passes it to AvroData).
    """
    return _Reader(connect_meta_data).schema(avro, None, {}, version=version)


def plain_reader_schema(avro: AvroSchema) -> AvroSchema:
    """``avro`` without ``logicalType`` properties: fastavro then hands back the encodings
    (unscaled bytes, days, ms) that the Connect logical types convert exactly."""
    if isinstance(avro, list):
        return [plain_reader_schema(branch) for branch in avro]
    if not isinstance(avro, dict):
        return avro
    out = {k: v for k, v in avro.items() if k != "logicalType"}
    if "fields" in out:
        out["fields"] = [{**f, "type": plain_reader_schema(f["type"])} for f in out["fields"]]
    for key in ("items", "values"):
        if key in out:
            out[key] = plain_reader_schema(out[key])
    return out


def _full_name(avro: dict[str, Any], space: str | None) -> str:
    name: str = avro["name"]
    if "." in name:
        return name
    space = avro.get("namespace", space)
    return f"{space}.{name}" if space else name


class _Reader:
    """One ``toConnectSchema`` call: named Avro types seen so far, for references by name."""

    def __init__(self, connect_meta_data: bool) -> None:
        self.meta = connect_meta_data
        self.named: dict[str, Any] = {}
        self.building: set[str] = set()
        """Records whose fields are being read: a reference to one of them is a cycle."""

    def schema(self, avro: AvroSchema, space: str | None, field_default: dict[str, Any],
               optional: bool = False, version: int | None = None) -> Schema:
        """``field_default`` is {} when there is none, else {"value": the Avro field default};
        ``version`` is the registry's, used when the schema carries no ``connect.version``."""
        if isinstance(avro, list):
            if len(avro) != 2 or "null" not in avro:
                raise DataError(f"Avro union {avro} is not supported: only [\"null\", T] maps to a Connect schema")
            branch = avro[1] if avro[0] == "null" else avro[0]
            return self.schema(branch, space, {}, optional=True)  # as AvroData: the field default is not passed on
        if isinstance(avro, str):
            if avro in self.named:
                avro = self.named[avro]
            elif space and f"{space}.{avro}" in self.named:
                avro = self.named[f"{space}.{avro}"]
            else:
                avro = {"type": avro}
        builder = self._base(avro, space)
        self._metadata(avro, builder, field_default, version, space)
        if optional:
            builder.optional()
        return builder.build()

    def _base(self, avro: dict[str, Any], space: str | None) -> SchemaBuilder:
        kind = avro["type"]
        if isinstance(kind, (dict, list)):  # {"type": {"type": "int"}}
            kind = avro["type"] = self.schema(kind, space, {}).type.name.lower()
        logical = _LOGICAL.get((kind, avro.get("logicalType")))
        if logical is not None:
            return logical.builder()
        if kind in ("bytes", "fixed") and avro.get("logicalType") == "decimal":
            builder = Decimal.builder(int(avro.get("scale", 0)))
            precision = avro.get("precision")
            if precision is not None and int(precision) != CONNECT_AVRO_DECIMAL_PRECISION_DEFAULT:
                builder.parameter(CONNECT_AVRO_DECIMAL_PRECISION_PROP, str(precision))
            return builder
        if kind == "int":
            return SchemaBuilder.type_({"int8": Type.INT8, "int16": Type.INT16}.get(avro.get(CONNECT_TYPE_PROP),
                                                                                    Type.INT32))
        if kind == "long":
            return SchemaBuilder.type_(Type.INT64)
        if kind == "enum":
            return self._enum(avro, space)
        if kind in _SIMPLE:
            builder = SchemaBuilder.type_(_SIMPLE[kind])
            if kind == "fixed":
                self.named[_full_name(avro, space)] = avro
                builder.parameter(CONNECT_AVRO_FIXED_SIZE_PROP, str(avro["size"]))
            return builder
        if kind == "map":
            return SchemaBuilder.map(Schema.STRING_SCHEMA, self.schema(avro["values"], space, {}))
        if kind == "array":
            items = avro["items"]
            entry = self.named.get(items, items) if isinstance(items, str) else items
            if _is_map_entry(entry):
                self.named[_full_name(entry, space)] = entry
                key, value = (self.schema(f["type"], entry.get("namespace", space), {}) for f in entry["fields"])
                return SchemaBuilder.map(key, value)
            return SchemaBuilder.array(self.schema(items, space, {}))
        if kind == "record":
            return self._record(avro, space)
        raise DataError(f"Avro type {kind!r} has no Connect schema")

    def _enum(self, avro: dict[str, Any], space: str | None) -> SchemaBuilder:
        """An enum is a STRING whose parameters keep the enum's name, symbols, doc and default."""
        full = _full_name(avro, space)
        self.named[full] = avro
        builder = SchemaBuilder.string()
        if self.meta and avro.get("doc") is not None:
            builder.parameter(AVRO_ENUM_DOC_PREFIX_PROP + avro["name"].rpartition(".")[2], avro["doc"])
        if self.meta and avro.get("default") is not None:
            builder.parameter(AVRO_ENUM_DEFAULT_PREFIX_PROP + avro["name"].rpartition(".")[2], avro["default"])
        builder.parameter(AVRO_TYPE_ENUM, full)
        for symbol in avro["symbols"]:
            builder.parameter(f"{AVRO_TYPE_ENUM}.{symbol}", symbol)
        return builder

    def _record(self, avro: dict[str, Any], space: str | None) -> SchemaBuilder:
        full = _full_name(avro, space)
        if full in self.building:
            raise DataError(f"Avro record {full} refers to itself: recursive schemas have no Connect schema here")
        self.named[full] = avro
        self.building.add(full)
        inner_space = full.rpartition(".")[0] or None
        builder = SchemaBuilder.struct()
        if self.meta and avro.get("doc") is not None:
            builder.parameter(AVRO_RECORD_DOC_PROP, avro["doc"])
        for field in avro["fields"]:
            if self.meta and field.get("doc") is not None:
                builder.parameter(AVRO_FIELD_DOC_PREFIX_PROP + field["name"], field["doc"])
            default = {"value": field["default"]} if "default" in field else {}
            builder.field(field["name"], self.schema(field["type"], inner_space, default))
        self.building.discard(full)
        return builder

    def _metadata(self, avro: dict[str, Any], builder: SchemaBuilder, field_default: dict[str, Any],
                  version: int | None, space: str | None) -> None:
        """Doc, version, parameters, default and name, in ``toConnectSchema``'s order and conditions."""
        if self.meta and avro.get(CONNECT_DOC_PROP) is not None:
            builder.doc(avro[CONNECT_DOC_PROP])
        found = avro.get(CONNECT_VERSION_PROP, version)
        if found is not None:
            builder.version(int(found))
        params = avro.get(CONNECT_PARAMETERS_PROP)
        if self.meta and params:
            builder.parameters({str(k): str(v) for k, v in params.items()})
        for key, value in avro.items():
            if key.startswith("avro"):
                builder.parameter(key, value if isinstance(value, str) else json.dumps(value))
        connect_default = avro.get(CONNECT_DEFAULT_VALUE_PROP)
        if not field_default:
            default = connect_default
        else:
            default = field_default["value"]
            if self.meta and connect_default is None:
                builder.parameter(AVRO_FIELD_DEFAULT_FLAG_PROP, "true")
        if default is not None:
            try:
                builder.default_value(_from_default_json(builder.build(), default))
            except (DataError, ValueError, TypeError, AttributeError) as exc:
                log.warning("Ignoring invalid default %r for Avro schema %s: %s", default, avro.get("name"), exc)
        name = avro.get(CONNECT_NAME_PROP)
        if name is None and avro["type"] in ("record", "enum", "fixed"):
            name = _full_name(avro, space)
        if name is not None and not name.startswith(_DEFAULT_FULL_NAME):
            builder.name(name)


def _is_map_entry(avro: Any) -> bool:
    if not isinstance(avro, dict) or avro.get("type") != "record":
        return False
    names = [f["name"] for f in avro.get("fields", ())]
    return names == [KEY_FIELD, VALUE_FIELD] and (
        _full_name(avro, None) == f"{NAMESPACE}.{MAP_ENTRY_TYPE_NAME}"
        or avro.get(CONNECT_INTERNAL_TYPE_NAME) == MAP_ENTRY_TYPE_NAME)


def _from_default_json(schema: Schema, value: Any) -> Any:
    """A default in Avro JSON as a Connect value (``defaultValueFromAvro``): bytes are ISO-8859-1 text."""
    if value is None:
        return None
    if schema.type is Type.BYTES:
        value = value.encode("latin-1") if isinstance(value, str) else bytes(value)
    elif schema.type is Type.ARRAY:
        return [_from_default_json(schema.value_schema, v) for v in value]
    elif schema.type is Type.MAP:
        pairs = value.items() if isinstance(value, dict) else value
        return {_from_default_json(schema.key_schema, k): _from_default_json(schema.value_schema, v) for k, v in pairs}
    elif schema.type is Type.STRUCT:
        struct = Struct(schema)
        for field in schema.fields:
            struct.put(field, _from_default_json(field.schema, value.get(field.name)))
        return struct
    elif schema.type in (Type.FLOAT32, Type.FLOAT64):
        value = float(value)
    logical = LOGICAL_TYPES.get(schema.name) if schema.name else None
    return value if logical is None else logical.to_logical(schema, value)


_Convert = Callable[[Any], Any]


def connect_values_converter(schema: Schema) -> _Convert:
    """Compile ``schema`` once into fastavro's decoded value -> Connect value (``AvroData.toConnectData``)."""
    convert = _converter(schema)
    if convert is None:
        return _same
    return lambda value: None if value is None else convert(value)


def _converter(schema: Schema) -> _Convert | None:
    logical = LOGICAL_TYPES.get(schema.name) if schema.name else None
    if logical is not None:
        to_logical = logical.to_logical
        return lambda value: to_logical(schema, value)
    if schema.type is Type.ARRAY:
        element = _converter(schema.value_schema)
        return None if element is None else lambda values: [None if v is None else element(v) for v in values]
    if schema.type is Type.MAP:
        key = _converter(schema.key_schema) or _same
        value = _converter(schema.value_schema) or _same
        if schema.key_schema.type is Type.STRING and not schema.key_schema.optional:
            return lambda mapping: {k: None if v is None else value(v) for k, v in mapping.items()}
        return lambda entries: {None if e[KEY_FIELD] is None else key(e[KEY_FIELD]):
                                None if e[VALUE_FIELD] is None else value(e[VALUE_FIELD]) for e in entries}
    if schema.type is Type.STRUCT:
        fields = [(f.name, _converter(f.schema) or _same) for f in schema.fields]
        of_values = Struct.of_values
        return lambda record: of_values(schema, [None if (v := record.get(name)) is None else convert(v)
                                                 for name, convert in fields])
    return None


def _same(value: Any) -> Any:
    return value

"""A Singer stream's JSON Schema as a Connect schema, and its records' values as Connect values.

Singer (https://hub.meltano.com/singer/spec) describes each stream with a JSON Schema in its
SCHEMA message; a Connect record needs a :class:`~kopycat.api.Schema`. The mapping follows what
Singer targets do with the same schemas (Meltano's SDK ``to_sql_type``, pipelinewise's targets):

=============================================  =============================================
JSON Schema                                    Connect
=============================================  =============================================
``{"type": ["null", T]}`` / ``anyOf`` with null  T, optional
``integer``                                    INT64
``number``                                     FLOAT64
``number`` with ``multipleOf`` (0.01)          Decimal, scale from ``multipleOf`` (2)
``string`` with format ``singer.decimal``      Decimal, scale from ``multipleOf`` or the connector's
                                               ``singer.decimal.scale``
``string`` with format ``date-time``/``date``/``time``  Timestamp / Date / Time
``string``, ``boolean``                        STRING, BOOLEAN
``object`` with ``properties``                 STRUCT, fields in ``properties`` order
``object`` with ``additionalProperties`` {T}   MAP of STRING to T
``array`` with ``items``                       ARRAY
anything else (several types, no type, ``{}``)  STRING: a string as it is, any other value as
                                               compact JSON
=============================================  =============================================

A property is optional unless the schema lists it in ``required`` and does not allow null: a
Singer record may leave out any property it does not require. A decimal never rounds silently:
a value with more digits than the scale is a :class:`~kopycat.api.DataError` naming the field.

The sink goes the other way (:func:`json_schema_of`, :func:`json_writer`), by the same table read
right to left: every Connect integer type becomes ``integer``, FLOAT32/64 ``number``, Decimal
``number`` with ``multipleOf`` 10^-scale (written as a JSON number, so a value a float cannot
hold exactly is a DataError rather than a rounded number), BYTES a base64 ``string``
(``contentEncoding``), an optional schema a ``["null", T]`` union and a required STRUCT field
a ``required`` property. A schema read from a tap's SCHEMA and written back gives the same
Connect schema again.
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from kopycat.api import DataError, Date, Decimal, Schema, SchemaBuilder, Struct, Time, Timestamp

__all__ = [
    "StreamSchema", "ValueReader", "connect_schema", "json_schema_of", "json_writer", "key_schema", "stream_schema",
    "value_reader",
]

ValueReader = Callable[[Any], Any]
"""Turns one non-null JSON value of a record into its Connect value."""

_SIMPLE = {"integer": SchemaBuilder.int64, "number": SchemaBuilder.float64, "boolean": SchemaBuilder.bool,
           "string": SchemaBuilder.string}
_TEMPORAL = {"date-time": Timestamp.builder, "date": Date.builder, "time": Time.builder}
_TEMPORAL_FORMATS = {Timestamp.LOGICAL_NAME: "date-time", Date.LOGICAL_NAME: "date", Time.LOGICAL_NAME: "time"}
_JSON_TYPES = {"INT8": "integer", "INT16": "integer", "INT32": "integer", "INT64": "integer", "FLOAT32": "number",
               "FLOAT64": "number", "BOOLEAN": "boolean", "STRING": "string", "BYTES": "string"}


class StreamSchema:
    """One stream's Connect value and key schemas, and the reader that turns its records into Structs."""

    def __init__(self, stream: str, schema: Schema, key_properties: Sequence[str]) -> None:
        self.stream = stream
        self.schema = schema
        self.read = value_reader(schema, stream)
        self.key_properties = list(key_properties)
        self.key_schema = key_schema(stream, schema, self.key_properties)

    def value(self, record: Mapping[str, Any]) -> Struct:
        """The record's value; a property the schema does not name is a DataError."""
        struct: Struct = self.read(record)
        return struct

    def key(self, value: Struct) -> Struct | None:
        """The key struct of ``key_properties`` taken from the value, or None when the stream has no key."""
        if self.key_schema is None:
            return None
        return Struct.of_values(self.key_schema, [value.get(name) for name in self.key_properties])


def stream_schema(stream: str, json_schema: Mapping[str, Any], key_properties: Sequence[str], *,
                  decimal_scale: int) -> StreamSchema:
    """The StreamSchema of a SCHEMA message; its top level must be an object with properties."""
    if not isinstance(json_schema.get("properties"), Mapping):
        raise DataError(f"Singer stream {stream!r}: its schema is not an object with properties: "
                        f"{json.dumps(json_schema)[:200]}")
    return StreamSchema(stream, connect_schema(json_schema, decimal_scale, optional=False), key_properties)


def key_schema(stream: str, value_schema: Schema, key_properties: Sequence[str]) -> Schema | None:
    """A STRUCT of the key properties, with their value schemas; None without key properties."""
    if not key_properties:
        return None
    builder = SchemaBuilder.struct()
    for name in key_properties:
        field = value_schema.field(name)
        if field is None:
            raise DataError(f"Singer stream {stream!r}: key property {name!r} is not among its schema's "
                            f"properties ({', '.join(f.name for f in value_schema.fields)})")
        builder.field(name, field.schema)
    return builder.build()


def connect_schema(node: Mapping[str, Any], scale: int, *, optional: bool) -> Schema:
    """The Connect schema of one JSON Schema node; ``optional`` when its parent lets it be absent."""
    types, nullable, node = _types(node)
    builder = _builder(types, node, scale)
    if optional or nullable:
        builder.optional()
    return builder.build()


def _types(node: Mapping[str, Any]) -> tuple[list[str], bool, Mapping[str, Any]]:
    """(non-null type names, whether null is allowed, the node that describes the non-null value)."""
    if "anyOf" in node and "type" not in node:
        options = [option for option in node["anyOf"] if isinstance(option, Mapping)]
        values = [option for option in options if _type_list(option) != ["null"]]
        nullable = len(values) < len(options)
        if len(values) == 1:
            types, inner_nullable, inner = _types(values[0])
            return types, nullable or inner_nullable, inner
        return ["json"], nullable, node
    names = _type_list(node)
    types = [name for name in names if name != "null"]
    return types, len(types) < len(names) or not names, node


def _type_list(node: Mapping[str, Any]) -> list[str]:
    declared = node.get("type", [])
    return [declared] if isinstance(declared, str) else list(declared)


def _builder(types: list[str], node: Mapping[str, Any], scale: int) -> SchemaBuilder:
    kind = types[0] if len(types) == 1 else "json"
    fmt = node.get("format")
    if kind == "object" and isinstance(node.get("properties"), Mapping):
        required = set(node.get("required", ()))
        builder = SchemaBuilder.struct()
        for name, child in node["properties"].items():
            builder.field(name, connect_schema(child, scale, optional=name not in required))
        return builder
    if kind == "object" and isinstance(node.get("additionalProperties"), Mapping):
        return SchemaBuilder.map(Schema.STRING_SCHEMA,
                                 connect_schema(node["additionalProperties"], scale, optional=False))
    if kind == "array" and isinstance(node.get("items"), Mapping):
        return SchemaBuilder.array(connect_schema(node["items"], scale, optional=False))
    if kind == "number" and "multipleOf" in node or kind in ("number", "string") and fmt == "singer.decimal":
        return Decimal.builder(_scale(node["multipleOf"]) if "multipleOf" in node else scale)
    if kind == "string" and fmt in _TEMPORAL:
        return _TEMPORAL[fmt]()
    return _SIMPLE.get(kind, SchemaBuilder.string)()


def _scale(multiple_of: Any) -> int:
    """The decimal places of ``multipleOf``: 0.01 -> 2, 1 -> 0."""
    exponent = decimal.Decimal(str(multiple_of)).normalize().as_tuple().exponent
    return max(0, -int(exponent))


def value_reader(schema: Schema, path: str) -> ValueReader:
    """How a JSON value of ``schema`` becomes its Connect value; errors name ``path``."""
    logical = schema.name
    if logical == Decimal.LOGICAL_NAME:
        return _decimal_reader(Decimal.scale(schema), path)
    if logical == Timestamp.LOGICAL_NAME:
        return _timestamp
    if logical == Date.LOGICAL_NAME:
        return _date
    if logical == Time.LOGICAL_NAME:
        return _time
    kind = schema.type.name
    if kind == "STRUCT":
        return _struct_reader(schema, path)
    if kind == "ARRAY":
        element = value_reader(schema.value_schema, f"{path}[]")
        return lambda items: [None if item is None else element(item) for item in items]
    if kind == "MAP":
        entry = value_reader(schema.value_schema, f"{path}.*")
        return lambda items: {key: None if item is None else entry(item) for key, item in items.items()}
    return _PRIMITIVE_READERS.get(kind, _json_text)


def _struct_reader(schema: Schema, path: str) -> ValueReader:
    readers = [(field.name, value_reader(field.schema, f"{path}.{field.name}")) for field in schema.fields]
    names = {name for name, _ in readers}
    # The readers type every value they get, so what Struct.validate would still find is a required
    # field left out; checking only those keeps its per-value walk off the hot path.
    required = [(field.index, field.name) for field in schema.fields
                if not field.schema.optional and field.schema.default is None]

    def read(value: Any) -> Struct:
        if type(value) is not dict and not isinstance(value, Mapping):  # ABC checks are slow: a record's are dicts
            raise DataError(f"{path}: expected a JSON object, got {json.dumps(value)[:100]}")
        unknown = value.keys() - names
        if unknown:
            raise DataError(f"{path}: properties {sorted(unknown)} are not in the stream's schema")
        values = [None if (item := value.get(name)) is None else reader(item) for name, reader in readers]
        for index, name in required:
            if values[index] is None:
                raise DataError(f"{path}: Invalid value: null used for required field {name}, "
                                f"schema type: {schema.fields[index].schema.type.name}")
        return Struct.of_values(schema, values)

    return read


def _decimal_reader(scale: int, path: str) -> ValueReader:
    quantum = decimal.Decimal(1).scaleb(-scale)

    def read(value: Any) -> decimal.Decimal:
        number = decimal.Decimal(str(value))  # a float's str() is its shortest round-trip text
        scaled = number.quantize(quantum)
        if scaled != number:
            raise DataError(f"{path}: {value} has more than {scale} decimal places; raise singer.decimal.scale "
                            f"or give the property a finer multipleOf")
        return scaled

    return read


def _timestamp(value: str) -> dt.datetime:
    parsed = dt.datetime.fromisoformat(value.replace("Z", "+00:00") if value.endswith("Z") else value)
    return parsed if parsed.tzinfo is None else parsed.astimezone(dt.UTC)


def _date(value: str) -> dt.date:
    return dt.date.fromisoformat(value[:10])


def _time(value: str) -> dt.time:
    return dt.time.fromisoformat(value)


def _json_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))


_PRIMITIVE_READERS: dict[str, ValueReader] = {"INT64": int, "FLOAT64": float, "BOOLEAN": bool}


def json_schema_of(schema: Schema) -> dict[str, Any]:
    """The JSON Schema of a Connect schema, as a Singer SCHEMA message carries it (the inverse of
    :func:`connect_schema`)."""
    node = _json_node(schema)
    if schema.optional:
        node["type"] = ["null", node["type"]] if isinstance(node.get("type"), str) else node["type"]
    return node


def _json_node(schema: Schema) -> dict[str, Any]:
    logical = schema.name
    if logical == Decimal.LOGICAL_NAME:
        return {"type": "number", "multipleOf": float(decimal.Decimal(1).scaleb(-Decimal.scale(schema)))}
    if logical in _TEMPORAL_FORMATS:
        return {"type": "string", "format": _TEMPORAL_FORMATS[logical]}
    kind = schema.type.name
    if kind == "STRUCT":
        return {"type": "object", "properties": {f.name: json_schema_of(f.schema) for f in schema.fields},
                "required": [f.name for f in schema.fields if not f.schema.optional]}
    if kind == "ARRAY":
        return {"type": "array", "items": json_schema_of(schema.value_schema)}
    if kind == "MAP":
        return {"type": "object", "additionalProperties": json_schema_of(schema.value_schema)}
    if kind == "BYTES":
        return {"type": "string", "contentEncoding": "base64"}
    return {"type": _JSON_TYPES[kind]}


ValueWriter = Callable[[Any], Any]


def json_writer(schema: Schema, path: str) -> ValueWriter:
    """How a non-null Connect value of ``schema`` becomes the JSON value a RECORD carries; errors name ``path``."""
    logical = schema.name
    if logical == Decimal.LOGICAL_NAME:
        return _decimal_writer(path)
    if logical in _TEMPORAL_FORMATS:
        return _isoformat
    kind = schema.type.name
    if kind == "STRUCT":
        writers = [(f.name, json_writer(f.schema, f"{path}.{f.name}")) for f in schema.fields]
        return lambda struct: {name: None if (item := struct.get(name)) is None else write(item)
                               for name, write in writers}
    if kind == "ARRAY":
        element = json_writer(schema.value_schema, f"{path}[]")
        return lambda items: [None if item is None else element(item) for item in items]
    if kind == "MAP":
        entry = json_writer(schema.value_schema, f"{path}.*")
        return lambda items: {str(key): None if item is None else entry(item) for key, item in items.items()}
    if kind == "BYTES":
        return lambda data: base64.b64encode(bytes(data)).decode("ascii")
    return _as_is


def _decimal_writer(path: str) -> ValueWriter:
    def write(value: decimal.Decimal) -> float:
        number = float(value)
        if decimal.Decimal(repr(number)) != value:
            raise DataError(f"{path}: the decimal {value} has more digits than a JSON number a Singer target reads "
                            f"as a float holds exactly; cast the field to a string (Cast SMT) to keep every digit")
        return number

    return write


def _isoformat(value: dt.date | dt.time) -> str:
    return value.isoformat()


def _as_is(value: Any) -> Any:
    return value

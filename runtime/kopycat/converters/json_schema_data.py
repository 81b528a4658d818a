"""Connect schemas and values <-> JSON Schema and JSON, as Confluent's ``JsonSchemaData`` maps them.

Follows ``io.confluent.connect.json.JsonSchemaData`` (``fromConnectSchema``/``fromConnectData`` and
``toConnectSchema``/``toConnectData``) with its defaults::

    INT8..INT64            {"type": "integer", "connect.type": "int8" | ... | "int64"}
    FLOAT32, FLOAT64       {"type": "number", "connect.type": "float32" | "float64"}
    BOOLEAN, STRING        {"type": "boolean"}, {"type": "string"}
    BYTES                  {"type": "string", "connect.type": "bytes"}, values as base64
    ARRAY                  {"type": "array", "items": ...}
    MAP, string keys       {"type": "object", "additionalProperties": ..., "connect.type": "map"}
    MAP, other keys        {"type": "array", "items": {"type": "object", "properties": {key, value}},
                           "connect.type": "map"}, values as [{"key": k, "value": v}, ...]
    STRUCT                 {"type": "object", "properties": {...}}; each property carries its
                           ``connect.index`` (the field's position)
    name, doc, version     "title", "description", "connect.version"
    parameters             "connect.parameters" (those not in io.confluent.connect.json)
    default                "default"
    optional               {"oneOf": [{"type": "null"}, <the schema>]}, ``connect.index`` on the oneOf
    Decimal                BYTES as above with title org.apache.kafka.connect.data.Decimal and the
                           scale in its parameters; the value the base64 of the unscaled two's
                           complement bytes (``decimal.format=BASE64``) or a number (``NUMERIC``)
    Date, Time, Timestamp  INT32, INT32, INT64 with their logical names as titles: days, ms, ms

Reading back also takes what other JSON Schema writers produce: ``integer`` without ``connect.type``
is INT64, ``number`` FLOAT64, ``"type": [T, "null"]`` and ``anyOf``/``oneOf`` with null are optional,
``enum`` is a STRING with ``io.confluent.connect.json.Enum`` parameters, local ``$ref``s to
``definitions``/``$defs`` are resolved, and properties without ``connect.index`` keep their order.
A ``oneOf``/``anyOf`` of several non-null types is a STRUCT named ``io.confluent.connect.json.OneOf``
with an optional field ``io.confluent.connect.json.OneOf.field.<i>`` per type (optional when null
is one of them); a value goes to the first simple type it is an instance of, else to the struct
sharing most property names with it, and such a struct is written back as that ``oneOf``. An
``allOf`` is read as ``allOfToConnectSchema`` reads it: the properties of all the objects it
combines (through references) as one struct. Not covered: recursive references and untyped
schemas; they are a :class:`DataError`.
"""

from __future__ import annotations

import base64
import binascii
import decimal as _decimal
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from kopycat.api.data import LOGICAL_TYPES, Decimal, Schema, SchemaBuilder, Struct, Type
from kopycat.api.errors import DataError
from kopycat.converters.json_schema_all_of import all_of_choice, all_of_properties

__all__ = ["JsonSchemaOptions", "dumps", "from_connect_value", "to_connect_schema", "to_connect_value",
           "to_json_schema"]

NAMESPACE: Final = "io.confluent.connect.json"
CONNECT_TYPE_PROP: Final = "connect.type"
CONNECT_VERSION_PROP: Final = "connect.version"
CONNECT_PARAMETERS_PROP: Final = "connect.parameters"
CONNECT_INDEX_PROP: Final = "connect.index"
JSON_TYPE_ENUM: Final = NAMESPACE + ".Enum"
JSON_TYPE_ONE_OF: Final = NAMESPACE + ".OneOf"
KEY_FIELD: Final = "key"
VALUE_FIELD: Final = "value"
NULL_MARKER: Final = "<NULL>"

_NUMBER_TYPES: Final = {Type.INT8: "integer", Type.INT16: "integer", Type.INT32: "integer", Type.INT64: "integer",
                        Type.FLOAT32: "number", Type.FLOAT64: "number"}
_CONNECT_TYPES: Final = {t.value: t for t in (Type.INT8, Type.INT16, Type.INT32, Type.INT64, Type.FLOAT32,
                                              Type.FLOAT64)}


@dataclass(frozen=True)
class JsonSchemaOptions:
    """The ``JsonSchemaDataConfig`` keys the mapping follows."""

    decimal_numeric: bool = False
    """``decimal.format=NUMERIC``: Decimals as JSON numbers instead of base64 strings."""
    additional_properties: bool = True
    """``object.additional.properties``: false writes ``"additionalProperties": false`` on structs."""
    optional_for_nonrequired: bool = False
    """``use.optional.for.nonrequired``: properties not listed in ``required`` read as optional."""


# ---------------------------------------------------------------------- Connect schema -> JSON Schema

def to_json_schema(schema: Schema, options: JsonSchemaOptions = JsonSchemaOptions(),
                   index: int | None = None, ignore_optional: bool = False) -> dict[str, Any]:
    """The JSON Schema of a Connect schema (``JsonSchemaData.fromConnectSchema``), as JSON-ready objects."""
    if _is_union(schema):  # oneOf its members, each with its index; null first when optional
        branches = [to_json_schema(_required(f.schema), options, f.index, True) for f in schema.fields]
        out_union: dict[str, Any] = {"oneOf": [{"type": "null"}, *branches] if schema.optional else branches}
        if index is not None:
            out_union[CONNECT_INDEX_PROP] = index
        return out_union
    if schema.type is Type.STRUCT and schema.optional:
        out: dict[str, Any] = {"oneOf": [{"type": "null"}, to_json_schema(_required(schema), options)]}
        if index is not None:
            out[CONNECT_INDEX_PROP] = index
        return out
    body, props = _body(schema, options)
    out = {}
    if schema.name is not None:
        out["title"] = schema.name
    if schema.doc is not None:
        out["description"] = schema.doc
    if schema.default is not None:
        out["default"] = from_connect_value(schema, schema.default, options)
    out.update(body)
    if schema.version is not None:
        props[CONNECT_VERSION_PROP] = schema.version
    params = {k: v for k, v in (schema.parameters or {}).items() if not k.startswith(NAMESPACE)}
    if params:
        props[CONNECT_PARAMETERS_PROP] = params
    if schema.optional and not ignore_optional:
        out.update(props)
        wrapped: dict[str, Any] = {"oneOf": [{"type": "null"}, out]}
        if index is not None:
            wrapped[CONNECT_INDEX_PROP] = index
        return wrapped
    if index is not None:
        props[CONNECT_INDEX_PROP] = index
    out.update(props)
    return out


def _body(schema: Schema, options: JsonSchemaOptions) -> tuple[dict[str, Any], dict[str, Any]]:
    """The type's own keywords and its ``connect.type``."""
    if schema.type in _NUMBER_TYPES:
        return {"type": _NUMBER_TYPES[schema.type]}, {CONNECT_TYPE_PROP: schema.type.value}
    if schema.type is Type.BOOLEAN:
        return {"type": "boolean"}, {}
    if schema.type is Type.STRING:
        params = schema.parameters or {}
        if JSON_TYPE_ENUM in params:
            prefix = JSON_TYPE_ENUM + "."
            symbols = [None if k[len(prefix):] == NULL_MARKER else k[len(prefix):]
                       for k in params if k.startswith(prefix)]
            return {"enum": symbols}, {}
        return {"type": "string"}, {}
    if schema.type is Type.BYTES:
        numeric = schema.name == Decimal.LOGICAL_NAME and options.decimal_numeric
        return {"type": "number" if numeric else "string"}, {CONNECT_TYPE_PROP: "bytes"}
    if schema.type is Type.ARRAY:
        return {"type": "array", "items": to_json_schema(schema.value_schema, options)}, {}
    if schema.type is Type.MAP:
        if _string_keyed(schema):
            return ({"type": "object", "additionalProperties": to_json_schema(schema.value_schema, options)},
                    {CONNECT_TYPE_PROP: "map"})
        entry = {"type": "object", "properties": {KEY_FIELD: to_json_schema(schema.key_schema, options, 0),
                                                  VALUE_FIELD: to_json_schema(schema.value_schema, options, 1)}}
        return {"type": "array", "items": entry}, {CONNECT_TYPE_PROP: "map"}
    out: dict[str, Any] = {"type": "object", "properties": {
        f.name: to_json_schema(f.schema, options, f.index) for f in schema.fields}}
    if not options.additional_properties:
        out["additionalProperties"] = False
    return out, {}


def _required(schema: Schema) -> Schema:
    """``JsonSchemaData.nonOptional``: the same schema, required."""
    kind = schema.type
    return Schema(kind, False, schema.default, schema.name, schema.version, schema.doc, schema.parameters,
                  schema.fields if kind is Type.STRUCT else None, schema.key_schema if kind is Type.MAP else None,
                  schema.value_schema if kind in (Type.MAP, Type.ARRAY) else None)


def _is_union(schema: Schema) -> bool:
    return schema.type is Type.STRUCT and schema.name == JSON_TYPE_ONE_OF


def _string_keyed(schema: Schema) -> bool:
    return schema.key_schema.type is Type.STRING and not schema.key_schema.optional


# ---------------------------------------------------------------------- Connect value -> JSON

def from_connect_value(schema: Schema, value: Any, options: JsonSchemaOptions = JsonSchemaOptions()) -> Any:
    """A Connect value as JSON-ready objects (``JsonSchemaData.fromConnectData``); a Decimal stays a
    :class:`decimal.Decimal` when written as a number (:func:`dumps` prints it exactly)."""
    if value is None:
        if schema.default is not None:
            return from_connect_value(schema, schema.default, options)
        return None
    if schema.name == Decimal.LOGICAL_NAME:
        if options.decimal_numeric:
            return _decimal.Decimal(value)
        return base64.b64encode(Decimal.from_logical(schema, value)).decode("ascii")
    logical = LOGICAL_TYPES.get(schema.name) if schema.name else None
    if logical is not None:
        return logical.from_logical(schema, value)
    kind = schema.type
    if kind in _NUMBER_TYPES:
        return _number(kind, value)
    if kind is Type.BYTES:
        return base64.b64encode(bytes(value)).decode("ascii")
    if kind is Type.ARRAY:
        return [from_connect_value(schema.value_schema, v, options) for v in value]
    if kind is Type.MAP:
        keys, values = schema.key_schema, schema.value_schema
        if _string_keyed(schema):
            return {str(k): from_connect_value(values, v, options) for k, v in value.items()}
        return [{KEY_FIELD: from_connect_value(keys, k, options), VALUE_FIELD: from_connect_value(values, v, options)}
                for k, v in value.items()]
    if _is_union(schema):  # the first member set
        member = next((f for f in schema.fields if value.get(f) is not None), None)
        return None if member is None else from_connect_value(member.schema, value.get(member), options)
    if kind is Type.STRUCT:
        if not isinstance(value, Struct) or value.schema != schema:
            raise DataError(f"Mismatching schema: a struct of {schema.name or 'the schema'} was expected, "
                            f"got {type(value).__name__}")
        out = {}
        for field in schema.fields:
            item = value.get(field)
            if item is not None or field.schema.optional:
                out[field.name] = from_connect_value(field.schema, item, options)
        return out
    if kind is Type.BOOLEAN and not isinstance(value, bool):
        raise TypeError(f"a boolean was expected, got {type(value).__name__}")
    if kind is Type.STRING and not isinstance(value, str):
        raise TypeError(f"a string was expected, got {type(value).__name__}")
    return value


def dumps(value: Any) -> str:
    """Compact JSON as Jackson writes it; a :class:`decimal.Decimal` is printed as its exact number."""
    if isinstance(value, _decimal.Decimal):
        return str(value)
    if isinstance(value, dict):
        return "{" + ",".join(json.dumps(k, ensure_ascii=False) + ":" + dumps(v) for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ",".join(dumps(v) for v in value) + "]"
    return json.dumps(value, ensure_ascii=False)


# ---------------------------------------------------------------------- JSON Schema -> Connect schema

def to_connect_schema(json_schema: Mapping[str, Any] | bool, version: int | None = None,
                      options: JsonSchemaOptions = JsonSchemaOptions()) -> Schema:
    """The Connect schema of a JSON Schema (``JsonSchemaData.toConnectSchema``); ``version`` is the
    registry's, taken when the schema carries no ``connect.version``."""
    return _ToConnect(json_schema, options).schema(json_schema, version)


class _ToConnect:
    """One ``toConnectSchema`` call: the root document, for local ``$ref``s."""

    def __init__(self, root: Mapping[str, Any] | bool, options: JsonSchemaOptions) -> None:
        self.root = root
        self.options = options
        self.resolving: set[str] = set()

    def schema(self, node: Mapping[str, Any] | bool, version: int | None = None, optional: bool = False) -> Schema:
        if not isinstance(node, Mapping):
            raise DataError(f"JSON Schema {node!r} has no Connect schema (an untyped value)")
        if "$ref" in node:
            return self._reference(node["$ref"], version, optional)
        if "allOf" in node:
            return self._all_of(node, version, optional)
        builder = self._builder(node)
        if isinstance(builder, Schema):  # a union with null: the other branch, optional
            return builder
        title = node.get("title")
        if title is not None:
            builder.name(title)
        connect_version = node.get(CONNECT_VERSION_PROP, version)
        if connect_version is not None:
            builder.version(int(connect_version))
        if node.get("description") is not None:
            builder.doc(node["description"])
        if node.get(CONNECT_PARAMETERS_PROP):
            builder.parameters({str(k): str(v) for k, v in node[CONNECT_PARAMETERS_PROP].items()})
        if "default" in node and node["default"] is not None:
            builder.default_value(to_connect_value(builder.build(), node["default"]))
        if optional:
            builder.optional()
        return builder.build()

    def _all_of(self, node: Mapping[str, Any], version: int | None, optional: bool) -> Schema:
        """``allOfToConnectSchema``: the properties of every object the ``allOf`` combines (through
        references and nested ``allOf``s) as one unnamed struct, in the order met; without properties,
        a combined member, else an enum's, a formatted string's or a referenced member's schema."""
        members = [{k: v for k, v in node.items() if k != "allOf"}, *node["allOf"]]
        properties, required = all_of_properties(members, self._target)
        if properties:
            builder = SchemaBuilder.struct()
            for name, sub in properties.items():
                builder.field(name, self.schema(sub, None, self.options.optional_for_nonrequired
                                                and name not in required))
            return (builder.optional() if optional else builder).build()
        chosen = all_of_choice([m for m in members if isinstance(m, Mapping)])
        if chosen is None:
            raise DataError(f"JSON Schema allOf {json.dumps(node['allOf'])[:200]} has no Connect schema: it "
                            f"combines no object properties, union, enum, formatted string or reference")
        return self.schema(chosen, version, optional)

    def _target(self, ref: str) -> Any:
        if not ref.startswith("#"):
            raise DataError(f"JSON Schema reference {ref!r} is not local: referenced schemas are not supported")
        target: Any = self.root
        for part in filter(None, ref[1:].split("/")):
            if not isinstance(target, Mapping) or part not in target:
                raise DataError(f"JSON Schema reference {ref!r} does not resolve in the schema")
            target = target[part]
        return target

    def _reference(self, ref: str, version: int | None, optional: bool) -> Schema:
        if not ref.startswith("#"):
            raise DataError(f"JSON Schema reference {ref!r} is not local: referenced schemas are not supported")
        if ref in self.resolving:
            raise DataError(f"JSON Schema reference {ref!r} refers to itself: recursive schemas have no Connect schema")
        target = self._target(ref)
        self.resolving.add(ref)
        try:
            return self.schema(target, version, optional)
        finally:
            self.resolving.discard(ref)

    def _builder(self, node: Mapping[str, Any]) -> SchemaBuilder | Schema:
        for combiner in ("oneOf", "anyOf"):
            if combiner in node:
                return self._union(node, node[combiner])
        if "enum" in node or "const" in node:
            symbols = node["enum"] if "enum" in node else [node["const"]]
            builder = SchemaBuilder.string().parameter(JSON_TYPE_ENUM, "")
            for symbol in symbols:
                text = NULL_MARKER if symbol is None else str(symbol)
                builder.parameter(f"{JSON_TYPE_ENUM}.{text}", text)
            return builder
        kind = node.get("type")
        if isinstance(kind, list):
            branches = [{**node, "type": t} for t in kind]
            return self._union(node, branches)
        connect_type = node.get(CONNECT_TYPE_PROP)
        if kind == "boolean":
            return SchemaBuilder.bool()
        if kind in ("integer", "number"):
            if connect_type == "bytes":
                return SchemaBuilder.bytes()
            if connect_type in _CONNECT_TYPES:
                return SchemaBuilder(_CONNECT_TYPES[connect_type])
            return SchemaBuilder.int64() if kind == "integer" else SchemaBuilder.float64()
        if kind == "string":
            return SchemaBuilder.bytes() if connect_type == "bytes" else SchemaBuilder.string()
        if kind == "array":
            items = node.get("items")
            if not isinstance(items, Mapping):
                raise DataError("JSON Schema array did not specify the items type")
            if connect_type == "map" and items.get("type") == "object":
                properties = items.get("properties", {})
                return SchemaBuilder.map(self.schema(properties[KEY_FIELD]), self.schema(properties[VALUE_FIELD]))
            return SchemaBuilder.array(self.schema(items))
        if kind == "object":
            if connect_type == "map":
                return SchemaBuilder.map(Schema.STRING_SCHEMA, self.schema(node.get("additionalProperties", {})))
            return self._struct(node)
        raise DataError(f"JSON Schema {json.dumps(node)[:200]} has no Connect schema (no type Kopycat maps)")

    def _union(self, node: Mapping[str, Any], branches: list[Any]) -> Schema:
        non_null = [b for b in branches if not (isinstance(b, Mapping) and b.get("type") == "null")]
        if len(non_null) == 1 and len(branches) == 2:
            branch = non_null[0]
            if "type" in node and not isinstance(node["type"], list):
                branch = {**node, **branch}
            elif isinstance(node.get("type"), list):
                branch = {k: v for k, v in node.items() if k != "type"} | branch
            return self.schema(branch, None, optional=True)
        if len(branches) == 1:  # flatten.singleton.unions
            return self.schema(branches[0])
        builder = SchemaBuilder.struct().name(JSON_TYPE_ONE_OF)
        for number, branch in enumerate(non_null):
            builder.field(f"{JSON_TYPE_ONE_OF}.field.{number}", self.schema(branch, None, optional=True))
        if len(non_null) < len(branches):
            builder.optional()
        return builder.build()

    def _struct(self, node: Mapping[str, Any]) -> SchemaBuilder:
        properties: Mapping[str, Any] = node.get("properties", {})
        ordered: dict[int, tuple[str, Any]] = {}
        for name, sub in properties.items():
            index = sub.get(CONNECT_INDEX_PROP) if isinstance(sub, Mapping) else None
            ordered[len(ordered) if index is None else int(index)] = (name, sub)
        required = set(node.get("required", ()))
        builder = SchemaBuilder.struct()
        for _, (name, sub) in sorted(ordered.items()):
            optional = self.options.optional_for_nonrequired and name not in required
            builder.field(name, self.schema(sub, None, optional))
        return builder


# ---------------------------------------------------------------------- JSON -> Connect value

def to_connect_value(schema: Schema, value: Any) -> Any:
    """A JSON value (parsed with decimals exact) as the Connect value of ``schema`` (``toConnectData``)."""
    if value is None:
        if schema.default is not None:
            return schema.default
        return None
    if schema.name == Decimal.LOGICAL_NAME:
        if isinstance(value, (int, float, _decimal.Decimal)):
            return _decimal.Decimal(value)
        return Decimal.to_logical(schema, _base64(value))
    logical = LOGICAL_TYPES.get(schema.name) if schema.name else None
    if logical is not None:
        return logical.to_logical(schema, int(value))
    kind = schema.type
    if kind in _NUMBER_TYPES:
        return _number(kind, value)
    if kind is Type.BYTES:
        return _base64(value) if isinstance(value, str) else _decimal.Decimal(value)
    if kind is Type.ARRAY:
        return [to_connect_value(schema.value_schema, v) for v in value]
    if kind is Type.MAP:
        if _string_keyed(schema):
            if not isinstance(value, Mapping):
                raise DataError(f"Maps with string fields should be encoded as JSON objects, but found {value!r}")
            return {k: to_connect_value(schema.value_schema, v) for k, v in value.items()}
        return {to_connect_value(schema.key_schema, e.get(KEY_FIELD)): to_connect_value(schema.value_schema,
                                                                                       e.get(VALUE_FIELD))
                for e in value}
    if _is_union(schema):
        return _union_value(schema, value)
    if kind is Type.STRUCT:
        if not isinstance(value, Mapping):
            raise DataError(f"Structs should be encoded as JSON objects, but found {type(value).__name__}")
        struct = Struct(schema)
        for field in schema.fields:
            item = to_connect_value(field.schema, value.get(field.name))
            if item is not None:
                struct.put(field, item)
        return struct
    return value


def _union_value(schema: Schema, value: Any) -> Struct:
    """The union struct with the member the value fits: the first simple type it is an instance of,
    else the struct member sharing most property names with it (Confluent's ``matchStructSchema``)."""
    best, best_score = None, 0
    for member in schema.fields:
        if _is_instance(member.schema, value):
            return Struct(schema).put(member, to_connect_value(member.schema, value))
        score = _match_struct(member.schema, value)
        if score > best_score:
            best, best_score = member, score
    if best is None:
        raise DataError("Did not find matching oneof field for data")
    return Struct(schema).put(best, to_connect_value(best.schema, value))


def _is_instance(schema: Schema, value: Any) -> bool:
    """``isInstanceOfSchemaTypeForSimpleSchema``: JSON text is never BYTES, a struct never simple."""
    kind = schema.type
    if kind in (Type.INT8, Type.INT16, Type.INT32, Type.INT64):
        return isinstance(value, int) and not isinstance(value, bool)
    if kind in (Type.FLOAT32, Type.FLOAT64):
        return isinstance(value, (int, float, _decimal.Decimal)) and not isinstance(value, bool)
    simple = {Type.BOOLEAN: bool, Type.STRING: str, Type.BYTES: _decimal.Decimal, Type.ARRAY: list,
              Type.MAP: (dict, list)}.get(kind)
    return simple is not None and isinstance(value, simple)


def _match_struct(schema: Schema, value: Any) -> int:
    if schema.type is not Type.STRUCT or not isinstance(value, Mapping):
        return 0
    shared = [f for f in schema.fields if f.name in value]
    return len(shared) + sum(_match_struct(f.schema, value[f.name]) for f in shared)


def _number(kind: Type, value: Any) -> int | float:
    """A number as Python's int (the integer types) or float."""
    return int(value) if _NUMBER_TYPES[kind] == "integer" else float(value)


def _base64(text: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise DataError(f"Invalid bytes field: {exc}") from None

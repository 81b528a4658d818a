"""Connect schemas as JsonConverter writes and reads them: the ``schema`` of the envelope.

Mirrors ``asJsonSchema`` and ``asConnectSchema`` of Kafka's ``org.apache.kafka.connect.json.JsonConverter``:
the same type names, key order and messages. A schema's ``default`` is written and read with the value
codec of :mod:`kopycat.converters._jsoncodec`, so it is byte-for-byte what Kafka writes.
"""

from __future__ import annotations

from typing import Any, Final

from kopycat.api.data import Schema, SchemaBuilder, Type
from kopycat.api.errors import DataError
from kopycat.converters._jsoncodec import Options, decoder, encoder

__all__ = ["TYPES_BY_NAME", "TYPE_NAMES", "connect_schema", "schema_json"]

TYPE_NAMES: Final = {
    Type.INT8: "int8", Type.INT16: "int16", Type.INT32: "int32", Type.INT64: "int64",
    Type.FLOAT32: "float", Type.FLOAT64: "double", Type.BOOLEAN: "boolean", Type.STRING: "string",
    Type.BYTES: "bytes", Type.ARRAY: "array", Type.MAP: "map", Type.STRUCT: "struct",
}
TYPES_BY_NAME: Final = {name: schema_type for schema_type, name in TYPE_NAMES.items()}


# ---------------------------------------------------------------- Connect schema -> JSON schema

def schema_json(schema: Schema, options: Options) -> dict[str, Any]:
    """``asJsonSchema``: keys in Kafka's order (type, items/keys/values/fields, optional,
    name, version, doc, parameters, default); a struct field's own keys, then ``field``."""
    result: dict[str, Any] = {"type": TYPE_NAMES[schema.type]}
    if schema.type is Type.ARRAY:
        result["items"] = schema_json(schema.value_schema, options)
    elif schema.type is Type.MAP:
        result["keys"] = schema_json(schema.key_schema, options)
        result["values"] = schema_json(schema.value_schema, options)
    elif schema.type is Type.STRUCT:
        result["fields"] = [{**schema_json(f.schema, options), "field": f.name} for f in schema.fields]
    result["optional"] = schema.optional
    for key in ("name", "version", "doc"):
        if getattr(schema, key) is not None:
            result[key] = getattr(schema, key)
    if schema.parameters is not None:
        result["parameters"] = dict(schema.parameters)
    if schema.default is not None:
        encode = encoder(schema, options)
        result["default"] = schema.default if encode is None else encode(schema.default)
    return result


# ---------------------------------------------------------------- JSON schema -> Connect schema

def connect_schema(obj: Any, options: Options) -> Schema | None:
    """``asConnectSchema``: a Connect schema from its JSON form; None for JSON null."""
    if obj is None:
        return None
    if obj.__class__ is not dict or not isinstance(obj.get("type"), str):
        raise DataError("Schema must contain 'type' field")
    builder = _builder_for(obj, options)
    if obj.get("optional") is True:
        builder.optional()
    else:
        builder.required()
    if isinstance(obj.get("name"), str):
        builder.name(obj["name"])
    version = obj.get("version")
    if isinstance(version, int) and not isinstance(version, bool):
        builder.version(version)
    if isinstance(obj.get("doc"), str):
        builder.doc(obj["doc"])
    params = obj.get("parameters")
    if params.__class__ is dict:
        for key, value in params.items():
            if not isinstance(value, str):
                raise DataError("Schema parameters must have string values.")
            builder.parameter(key, value)
    if "default" in obj:
        default = decoder(builder.build(), options)(obj["default"], "default")
        if default is not None:
            builder.default_value(default)
    return builder.build()


def _builder_for(obj: dict[str, Any], options: Options) -> SchemaBuilder:
    type_name = obj["type"]
    if type_name == "array":
        items = obj.get("items")
        if items is None:
            raise DataError("Array schema did not specify the element type")
        return SchemaBuilder.array(_required(connect_schema(items, options)))
    if type_name == "map":
        if "keys" not in obj:
            raise DataError("Map schema did not specify the key type")
        if "values" not in obj:
            raise DataError("Map schema did not specify the value type")
        return SchemaBuilder.map(_required(connect_schema(obj["keys"], options)),
                                 _required(connect_schema(obj["values"], options)))
    if type_name == "struct":
        fields = obj.get("fields")
        if fields.__class__ is not list:
            raise DataError("Struct schema's \"fields\" argument is not an array.")
        builder = SchemaBuilder.struct()
        for field in fields:
            name = field.get("field") if field.__class__ is dict else None
            if not isinstance(name, str):
                raise DataError("Struct schema's field name not specified properly")
            builder.field(name, _required(connect_schema(field, options)))
        return builder
    if type_name not in TYPES_BY_NAME:
        raise DataError(f"Unknown schema type: {type_name}")
    return SchemaBuilder(TYPES_BY_NAME[type_name])


def _required(schema: Schema | None) -> Schema:
    if schema is None:
        raise DataError("Nested schemas may not be null")
    return schema

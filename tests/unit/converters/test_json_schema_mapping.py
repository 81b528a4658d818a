"""Connect <-> JSON Schema as Confluent's JsonSchemaData maps it, both ways, without a registry.

Every Connect type (the Avro mapping's cases), optional and default values, nested structs, arrays
and maps go to a JSON Schema and JSON text and come back to the same schema and value; the JSON
Schema carries Confluent's keywords (``connect.type``, ``connect.index``, ``title``, oneOf with null).
"""

from __future__ import annotations

import decimal
import json
from typing import Any

import pytest

from kopycat.api.data import Decimal, Schema, SchemaBuilder, Struct, Type
from kopycat.api.errors import ConfigError, DataError
from kopycat.converters.json_schema import JsonSchemaConverter
from kopycat.converters.json_schema_data import (
    JsonSchemaOptions,
    dumps,
    from_connect_value,
    to_connect_schema,
    to_connect_value,
    to_json_schema,
)
from tests.unit.converters.test_avro_mapping import CASES


def _round_trip(schema: Schema, value: Any, options: JsonSchemaOptions | None = None) -> tuple[Schema, Any]:
    options = options or JsonSchemaOptions()
    text = dumps(to_json_schema(schema, options))
    back = to_connect_schema(json.loads(text), options=options)
    payload = dumps(from_connect_value(schema, value, options))
    return back, to_connect_value(back, json.loads(payload, parse_float=decimal.Decimal))


@pytest.mark.parametrize(("schema", "value"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_every_connect_type_survives_json_schema_and_json_round_trip(schema: Schema, value: Any) -> None:
    assert _round_trip(schema, value) == (schema, value)


def test_json_schema_keywords_are_confluents() -> None:
    assert to_json_schema(Schema.INT8_SCHEMA) == {"type": "integer", "connect.type": "int8"}
    assert to_json_schema(Schema.OPTIONAL_STRING_SCHEMA, index=3) == {
        "oneOf": [{"type": "null"}, {"type": "string"}], "connect.index": 3}
    assert to_json_schema(Decimal.schema(2)) == {
        "title": "org.apache.kafka.connect.data.Decimal", "type": "string", "connect.type": "bytes",
        "connect.version": 1, "connect.parameters": {"scale": "2"}}
    assert to_json_schema(Decimal.schema(2), JsonSchemaOptions(decimal_numeric=True))["type"] == "number"
    assert to_json_schema(SchemaBuilder.map(Schema.STRING_SCHEMA, Schema.INT32_SCHEMA).build()) == {
        "type": "object", "additionalProperties": {"type": "integer", "connect.type": "int32"}, "connect.type": "map"}
    assert dumps(from_connect_value(Decimal.schema(2), decimal.Decimal("1.50"), JsonSchemaOptions(True))) == "1.50"


def test_a_nested_struct_with_optional_and_default_fields_comes_back_with_defaults_filled() -> None:
    address = (SchemaBuilder.struct().name("com.acme.Address").field("city", Schema.STRING_SCHEMA)
               .field("zip", Schema.OPTIONAL_STRING_SCHEMA).optional().build())
    schema = (SchemaBuilder.struct().name("com.acme.Customer").doc("a customer").version(4)
              .field("id", Schema.INT64_SCHEMA)
              .field("tier", SchemaBuilder.string().default_value("basic").build())
              .field("score", SchemaBuilder.float64().optional().default_value(0.5).build())
              .field("home", address).field("tags", SchemaBuilder.array(Schema.STRING_SCHEMA).optional().build())
              .build())
    value = Struct(schema).put("id", 1).put("home", Struct(address).put("city", "Oslo"))
    back, read = _round_trip(schema, value)
    assert back == schema
    assert read.get("tier") == "basic" and read.get("score") == 0.5 and read.get("home").get("city") == "Oslo"
    assert read.get("tags") is None


def test_schemas_from_other_writers_map_as_confluents() -> None:
    schema = to_connect_schema({
        "$defs": {"Item": {"type": "object", "properties": {"sku": {"type": "string"}}}},
        "title": "Cart", "type": "object", "properties": {
            "n": {"type": "integer"}, "x": {"type": "number"}, "maybe": {"type": ["string", "null"]},
            "items": {"type": "array", "items": {"$ref": "#/$defs/Item"}}, "kind": {"enum": ["a", "b"]},
            "opt": {"anyOf": [{"type": "boolean"}, {"type": "null"}]}}}, version=3)
    item = SchemaBuilder.struct().field("sku", Schema.STRING_SCHEMA).build()
    kind = SchemaBuilder.string().parameters({"io.confluent.connect.json.Enum": "",
                                              "io.confluent.connect.json.Enum.a": "a",
                                              "io.confluent.connect.json.Enum.b": "b"}).build()
    assert schema == (SchemaBuilder.struct().name("Cart").version(3).field("n", Schema.INT64_SCHEMA)
                      .field("x", Schema.FLOAT64_SCHEMA).field("maybe", Schema.OPTIONAL_STRING_SCHEMA)
                      .field("items", SchemaBuilder.array(item).build()).field("kind", kind)
                      .field("opt", Schema.OPTIONAL_BOOLEAN_SCHEMA).build())
    with pytest.raises(DataError, match="allOf"):
        to_connect_schema({"allOf": [{"type": "string"}, {"type": "integer"}]})
    with pytest.raises(DataError, match="refers to itself"):
        to_connect_schema({"$defs": {"N": {"type": "object", "properties": {"n": {"$ref": "#/$defs/N"}}}},
                           "$ref": "#/$defs/N"})


def test_a_union_of_several_types_is_confluents_one_of_struct_both_ways() -> None:
    json_schema = {"oneOf": [{"type": "null"}, {"type": "string"}, {"type": "integer"},
                             {"type": "object", "title": "P", "properties": {"x": {"type": "number"}}}]}
    schema = to_connect_schema(json_schema)
    field = "io.confluent.connect.json.OneOf.field."
    assert schema.name == "io.confluent.connect.json.OneOf" and schema.optional
    assert [(f.name, f.schema.type, f.schema.optional) for f in schema.fields] == [
        (field + "0", Type.STRING, True), (field + "1", Type.INT64, True), (field + "2", Type.STRUCT, True)]
    assert to_connect_value(schema, 7).get(field + "1") == 7
    point = to_connect_value(schema, {"x": 1.5}).get(field + "2")
    assert point.get("x") == 1.5
    assert from_connect_value(schema, to_connect_value(schema, "s")) == "s"
    assert to_connect_schema(to_json_schema(schema)) == schema
    with pytest.raises(DataError, match="matching oneof"):
        to_connect_value(schema, [1])


def test_configuration_and_bytes_without_the_magic_byte() -> None:
    with pytest.raises(ConfigError, match="decimal.format"):
        JsonSchemaConverter().configure({"schema.registry.url": "http://127.0.0.1:1", "decimal.format": "HEX"})
    converter = JsonSchemaConverter()
    converter.configure({"schema.registry.url": "http://127.0.0.1:1"}, False)
    for data in (b"", b"{}", b"\x01\x00\x00\x00\x01{}"):
        with pytest.raises(DataError, match="unknown magic byte"):
            converter.to_connect_data("t", data)

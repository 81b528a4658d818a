"""JSON Schema ``allOf`` and ``$ref``/``definitions`` read into Connect schemas as Confluent's
``JsonSchemaData.allOfToConnectSchema`` reads them (see :mod:`kopycat.converters.json_schema_all_of`)."""

from __future__ import annotations

from typing import Any

import pytest

from kopycat.api.data import Schema, SchemaBuilder, Type
from kopycat.api.errors import DataError
from kopycat.converters.json_schema_data import JsonSchemaOptions, to_connect_schema, to_connect_value

MONEY = {"type": "object", "properties": {"units": {"type": "integer"}, "currency": {"type": "string"}},
         "required": ["units"]}
ORDER: dict[str, Any] = {
    "title": "Order", "definitions": {
        "Money": MONEY,
        "Base": {"type": "object", "properties": {"id": {"type": "integer"}, "note": {"type": "string"}},
                 "required": ["id"]}},
    "allOf": [{"$ref": "#/definitions/Base"},
              {"type": "object", "properties": {"total": {"$ref": "#/definitions/Money"},
                                                "note": {"type": "string", "maxLength": 9}},
               "required": ["total", "note"]}]}


def test_an_all_of_of_a_reference_and_an_object_is_one_struct_of_their_properties_in_order() -> None:
    schema = to_connect_schema(ORDER, 3)
    money = SchemaBuilder.struct().field("units", Schema.INT64_SCHEMA).field("currency", Schema.STRING_SCHEMA).build()
    # "note" is redefined by the second object in place; allOf's struct has no name or version (as Confluent's)
    assert schema == (SchemaBuilder.struct().field("id", Schema.INT64_SCHEMA).field("note", Schema.STRING_SCHEMA)
                      .field("total", money).build())
    value = to_connect_value(schema, {"id": 7, "note": "rush", "total": {"units": 12, "currency": "EUR"}})
    assert (value.get("id"), value.get("note"), value.get("total").get("units")) == (7, "rush", 12)


def test_with_optional_for_nonrequired_the_object_defining_a_property_last_says_if_it_is_required() -> None:
    schema = to_connect_schema(ORDER, None, JsonSchemaOptions(optional_for_nonrequired=True))
    assert [(f.name, f.schema.optional) for f in schema.fields] == [("id", False), ("note", False),
                                                                    ("total", False)]
    assert [f.schema.optional for f in schema.field("total").schema.fields] == [False, True]


def test_nested_all_ofs_and_the_objects_own_properties_are_collected_too() -> None:
    node = {"type": "object", "properties": {"a": {"type": "boolean"}},
            "allOf": [{"allOf": [{"properties": {"b": {"type": "number"}}}, {"$ref": "#/definitions/M"}]}],
            "definitions": {"M": MONEY}}
    assert [(f.name, f.schema.type) for f in to_connect_schema(node).fields] == [
        ("a", Type.BOOLEAN), ("b", Type.FLOAT64), ("units", Type.INT64), ("currency", Type.STRING)]


@pytest.mark.parametrize(("members", "expected"), [
    ([{"type": "string"}, {"enum": ["A", "B"]}],
     SchemaBuilder.string().parameter("io.confluent.connect.json.Enum", "")
     .parameter("io.confluent.connect.json.Enum.A", "A").parameter("io.confluent.connect.json.Enum.B", "B").build()),
    ([{"type": "string"}, {"const": "X"}], Schema.STRING_SCHEMA),
    ([{"type": "integer"}, {"enum": [1, 2]}], Schema.INT64_SCHEMA),
    ([{"type": "string", "format": "date"}, {"type": "number"}], Schema.FLOAT64_SCHEMA),
    ([{"type": "string", "format": "email"}], Schema.STRING_SCHEMA),
    ([{"oneOf": [{"type": "null"}, {"type": "integer"}]}, {"type": "string"}], Schema.OPTIONAL_INT64_SCHEMA),
    ([{"$ref": "#/definitions/Code"}], Schema.STRING_SCHEMA),
], ids=["enum-string", "const-string", "enum-number", "formatted-number", "formatted-string", "combined", "ref"])
def test_an_all_of_without_properties_stands_for_one_member_by_confluents_precedence(
        members: list[Any], expected: Schema) -> None:
    assert to_connect_schema({"allOf": members, "definitions": {"Code": {"type": "string"}}}) == expected


def test_an_all_of_of_nothing_mappable_is_a_data_error_naming_it() -> None:
    with pytest.raises(DataError, match=r"JSON Schema allOf \[\{\"minimum\": 1\}\] has no Connect schema"):
        to_connect_schema({"allOf": [{"minimum": 1}]})

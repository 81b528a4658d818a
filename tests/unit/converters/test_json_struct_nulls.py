"""The compiled struct encoder writes fixed null forms inline (a Debezium envelope's null ``before``) and
still leaves a required null to the generic path's error: the same bytes as Kafka's JsonConverter."""

from __future__ import annotations

import orjson
import pytest

from kopycat.api.data import Schema, SchemaBuilder, Struct
from kopycat.api.errors import DataError
from kopycat.converters.json import JsonConverter

TOPIC = "t"
INNER = SchemaBuilder.struct().name("inner").optional().field("x", Schema.INT32_SCHEMA).build()
SCHEMA = (SchemaBuilder.struct().name("outer")
          .field("id", Schema.INT64_SCHEMA)
          .field("plain", Schema.OPTIONAL_STRING_SCHEMA)
          .field("defaulted", SchemaBuilder.string().optional().default_value("false").build())
          .field("required_default", SchemaBuilder.int32().default_value(7).build())
          .field("nested", INNER)
          .build())


def payload(value: Struct, replace_null_with_default: str = "true") -> object:
    converter = JsonConverter()
    converter.configure({"schemas.enable": "false", "replace.null.with.default": replace_null_with_default}, False)
    return orjson.loads(converter.from_connect_data(TOPIC, SCHEMA, value))


def test_nulls_with_a_fixed_form_are_written_inline_as_kafka_writes_them() -> None:
    value = Struct.of_values(SCHEMA, [1, None, None, None, None])
    assert payload(value) == {"id": 1, "plain": None, "defaulted": "false", "required_default": 7, "nested": None}
    set_value = Struct.of_values(SCHEMA, [2, "a", "b", 3, Struct.of_values(INNER, [4])])
    assert payload(set_value) == {"id": 2, "plain": "a", "defaulted": "b", "required_default": 3, "nested": {"x": 4}}


def test_without_replace_null_with_default_an_optional_null_stays_null_and_a_required_one_fails() -> None:
    assert payload(Struct.of_values(SCHEMA, [1, None, None, 5, None]), "false") == {
        "id": 1, "plain": None, "defaulted": None, "required_default": 5, "nested": None}
    with pytest.raises(DataError, match="required and has no default value.*required_default"):
        payload(Struct.of_values(SCHEMA, [1, None, None, None, None]), "false")
    with pytest.raises(DataError, match="null used for required field id"):
        payload(Struct.of_values(SCHEMA, [None, "a", "b", 3, None]))

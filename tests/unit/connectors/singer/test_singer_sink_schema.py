"""Connect schemas and values as Singer SCHEMA and RECORD content (the sink's side of json_schema.py),
and the offsets a target's echoed state carries."""

from __future__ import annotations

import datetime as dt
import decimal

import pytest

from kopycat.api import DataError, Date, Decimal, Schema, SchemaBuilder, Struct, Time, Timestamp
from kopycat.api.records import TopicPartition
from kopycat.connectors.singer.json_schema import connect_schema, json_schema_of, json_writer
from kopycat.connectors.singer.sink_config import offsets_of, state_value

ORDER = (SchemaBuilder.struct().field("id", Schema.INT64_SCHEMA).field("small", Schema.INT16_SCHEMA)
         .field("ratio", Schema.OPTIONAL_FLOAT64_SCHEMA).field("amount", Decimal.schema(2))
         .field("at", Timestamp.SCHEMA).field("day", Date.builder().optional().build()).field("clock", Time.SCHEMA)
         .field("blob", Schema.OPTIONAL_BYTES_SCHEMA)
         .field("customer", SchemaBuilder.struct().field("name", Schema.STRING_SCHEMA)
                .field("email", Schema.OPTIONAL_STRING_SCHEMA).optional().build())
         .field("tags", SchemaBuilder.array(Schema.STRING_SCHEMA).build())
         .field("counts", SchemaBuilder.map(Schema.STRING_SCHEMA, Schema.INT64_SCHEMA).build()).build())


def test_a_connect_schema_becomes_json_schema_with_nulls_required_formats_and_multiple_of() -> None:
    node = json_schema_of(ORDER)
    properties = node["properties"]
    assert node["type"] == "object"
    assert node["required"] == ["id", "small", "amount", "at", "clock", "tags", "counts"]
    assert properties["id"] == properties["small"] == {"type": "integer"}
    assert properties["ratio"] == {"type": ["null", "number"]}
    assert properties["amount"] == {"type": "number", "multipleOf": 0.01}
    assert properties["at"] == {"type": "string", "format": "date-time"}
    assert properties["day"] == {"type": ["null", "string"], "format": "date"}
    assert properties["blob"] == {"type": ["null", "string"], "contentEncoding": "base64"}
    assert properties["customer"]["type"] == ["null", "object"]
    assert properties["customer"]["required"] == ["name"]
    assert properties["counts"] == {"type": "object", "additionalProperties": {"type": "integer"}}


def test_json_schema_read_back_gives_the_same_connect_schema_but_for_integer_widths_and_bytes() -> None:
    back = connect_schema(json_schema_of(ORDER), 9, optional=False)
    expected = {f.name: f.schema for f in ORDER.fields}
    got = {f.name: f.schema for f in back.fields}
    assert got.keys() == expected.keys()
    assert got["small"] == Schema.INT64_SCHEMA  # JSON Schema has one integer type
    assert got["blob"] == Schema.OPTIONAL_STRING_SCHEMA  # base64 text, as a tap would send bytes
    assert all(got[name] == expected[name] for name in expected if name not in ("small", "blob"))


def test_values_become_json_values_the_target_reads() -> None:
    value = (Struct(ORDER).put("id", 1).put("small", 2).put("amount", decimal.Decimal("12.34"))
             .put("at", dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC)).put("clock", dt.time(10, 30))
             .put("blob", b"\x00\xff").put("customer", Struct(ORDER.field("customer").schema).put("name", "Ann"))
             .put("tags", ["a"]).put("counts", {"x": 3}))
    assert json_writer(ORDER, "orders")(value) == {
        "id": 1, "small": 2, "ratio": None, "amount": 12.34, "at": "2026-01-02T03:04:05+00:00", "day": None,
        "clock": "10:30:00", "blob": "AP8=", "customer": {"name": "Ann", "email": None}, "tags": ["a"],
        "counts": {"x": 3}}


def test_a_decimal_a_json_number_cannot_hold_exactly_is_an_error_naming_the_field() -> None:
    schema = SchemaBuilder.struct().field("amount", Decimal.schema(2)).build()
    write = json_writer(schema, "orders")
    with pytest.raises(DataError, match=r"orders\.amount: the decimal 12345678901234567\.89 .*Cast SMT"):
        write(Struct(schema).put("amount", decimal.Decimal("12345678901234567.89")))


def test_the_state_carries_offsets_by_topic_and_an_echo_gives_them_back() -> None:
    offsets = {TopicPartition("orders", 0): 10, TopicPartition("orders", 3): 7, TopicPartition("users", 0): 1}
    state = state_value(offsets)
    assert state == {"kopycat_offsets": {"orders": {"0": 10, "3": 7}, "users": {"0": 1}}}
    assert offsets_of(state, "target-x") == offsets


def test_an_echo_without_our_offsets_is_an_error_naming_the_target_and_the_fix() -> None:
    with pytest.raises(DataError, match=r"target-x.*without 'kopycat_offsets'.*must echo the STATE values"):
        offsets_of({"bookmarks": {}}, "target-x")
    with pytest.raises(DataError, match=r"target-x.*echoed offsets Kopycat did not send"):
        offsets_of({"kopycat_offsets": {"orders": {"zero": 1}}}, "target-x")

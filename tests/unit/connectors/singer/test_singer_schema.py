"""Singer JSON Schemas as Connect schemas, and Singer records as Connect values."""

from __future__ import annotations

import datetime as dt
import decimal

import pytest

from kopycat.api import DataError, Date, Decimal, Schema, SchemaBuilder, Time, Timestamp, Type
from kopycat.connectors.singer.json_schema import stream_schema
from kopycat.connectors.singer.state_gate import StateGate

ORDERS = {
    "type": "object", "required": ["id", "updated_at"],
    "properties": {
        "id": {"type": ["integer"]},
        "updated_at": {"type": ["string"], "format": "date-time"},
        "customer": {"type": ["object", "null"], "required": ["name"], "additionalProperties": True,
                     "properties": {"name": {"type": ["string"]}, "email": {"type": ["string", "null"]}}},
        "amount": {"type": ["number", "null"], "multipleOf": 0.01},
        "price_exact": {"type": ["string", "null"], "format": "singer.decimal"},
        "shipped_on": {"type": ["string", "null"], "format": "date"},
        "at": {"anyOf": [{"type": "string", "format": "time"}, {"type": "null"}]},
        "tags": {"type": ["array", "null"], "items": {"type": ["string"]}},
        "attributes": {"type": "object", "additionalProperties": {"type": "integer"}},
        "ratio": {"type": "number"},
        "flag": {"type": "boolean"},
        "anything": {},
        "either": {"type": ["string", "integer"]},
    },
}


def test_types_formats_and_nullable_unions_map_to_connect_schemas() -> None:
    schema = stream_schema("orders", ORDERS, ["id"], decimal_scale=9).schema
    fields = {field.name: field.schema for field in schema.fields}
    assert fields["id"] == Schema.INT64_SCHEMA
    assert fields["updated_at"] == Timestamp.SCHEMA
    assert fields["customer"] == SchemaBuilder.struct().field("name", Schema.STRING_SCHEMA).field(
        "email", Schema.OPTIONAL_STRING_SCHEMA).optional().build()
    assert fields["amount"] == Decimal.builder(2).optional().build()
    assert fields["price_exact"] == Decimal.builder(9).optional().build()
    assert fields["shipped_on"] == Date.builder().optional().build()
    assert fields["at"] == Time.builder().optional().build()
    assert fields["tags"] == SchemaBuilder.array(Schema.STRING_SCHEMA).optional().build()
    assert fields["attributes"] == SchemaBuilder.map(Schema.STRING_SCHEMA, Schema.INT64_SCHEMA
                                                     ).optional().build()
    assert fields["ratio"] == Schema.OPTIONAL_FLOAT64_SCHEMA
    assert fields["flag"] == Schema.OPTIONAL_BOOLEAN_SCHEMA
    assert fields["anything"] == Schema.OPTIONAL_STRING_SCHEMA
    assert fields["either"] == Schema.OPTIONAL_STRING_SCHEMA
    assert not schema.optional


def test_a_record_becomes_a_struct_and_its_key_properties_the_key() -> None:
    orders = stream_schema("orders", ORDERS, ["id"], decimal_scale=9)
    value = orders.value({
        "id": 7, "updated_at": "2026-01-07T10:00:00+00:00", "customer": {"name": "Ann", "email": None},
        "amount": 8.75, "price_exact": "7.123456789", "shipped_on": "2026-02-07", "at": "12:30:00",
        "tags": ["a"], "attributes": {"size": 3}, "ratio": 1, "anything": {"x": [1, 2]}, "either": 5})
    assert value.get("updated_at") == dt.datetime(2026, 1, 7, 10, tzinfo=dt.UTC)
    assert value.get("customer").get("name") == "Ann" and value.get("customer").get("email") is None
    assert value.get("amount") == decimal.Decimal("8.75")
    assert value.get("price_exact") == decimal.Decimal("7.123456789")
    assert value.get("shipped_on") == dt.date(2026, 2, 7)
    assert value.get("at") == dt.time(12, 30)
    assert value.get("attributes") == {"size": 3}
    assert value.get("ratio") == 1.0 and isinstance(value.get("ratio"), float)
    assert value.get("anything") == '{"x":[1,2]}' and value.get("either") == "5"
    assert value.get("flag") is None and value.get("tags") == ["a"]
    key = orders.key(value)
    assert key is not None and key.schema.type is Type.STRUCT and key.get("id") == 7


def test_a_decimal_with_more_places_than_its_scale_fails_instead_of_rounding() -> None:
    orders = stream_schema("orders", ORDERS, [], decimal_scale=2)
    with pytest.raises(DataError, match="price_exact.*more than 2 decimal places"):
        orders.value({"id": 1, "updated_at": "2026-01-01T00:00:00Z", "price_exact": "1.005"})
    assert orders.key_schema is None


def test_a_missing_required_property_or_an_unknown_one_is_a_data_error() -> None:
    orders = stream_schema("orders", ORDERS, ["id"], decimal_scale=9)
    with pytest.raises(DataError, match="required field id, schema type: INT64"):
        orders.value({"updated_at": "2026-01-01T00:00:00Z"})
    with pytest.raises(DataError, match="surprise"):
        orders.value({"id": 1, "updated_at": "2026-01-01T00:00:00Z", "surprise": 1})


def test_a_key_property_missing_from_the_schema_names_the_properties_found() -> None:
    with pytest.raises(DataError, match="key property 'order_id'"):
        stream_schema("orders", ORDERS, ["order_id"], decimal_scale=9)


def test_the_last_record_before_a_state_carries_it_and_the_others_the_state_before() -> None:
    gate: StateGate[str] = StateGate({"s": 0}, limit=100)
    for entry in ("r1", "r2"):
        gate.record(entry)
    gate.state({"s": 1})
    gate.state({"s": 2})
    assert gate.take() == []  # held until something follows the STATE
    gate.record("r3")
    assert gate.take() == [("r1", {"s": 0}), ("r2", {"s": 2})]
    gate.end()
    assert gate.take() == [("r3", {"s": 2})]  # after the last STATE: that state


def test_a_long_run_without_state_is_released_carrying_the_previous_state() -> None:
    gate: StateGate[int] = StateGate(None, limit=3)
    for entry in range(4):
        gate.record(entry)
    assert gate.take() == [(0, None), (1, None), (2, None)]
    gate.state({"s": 1})
    gate.end()
    assert gate.take() == [(3, {"s": 1})]

"""A Singer stream with nested fields (an object, an array, a map) goes through JsonConverter's column
path: the Arrow batch SingerSourceTask builds encodes to the record path's bytes, so the engine does
not fall back to records (which would turn the stream's later batches into records)."""

from __future__ import annotations

import pytest

from kopycat.api import to_arrow_batch
from kopycat.connectors.singer.json_schema import stream_schema
from kopycat.converters.json import JsonConverter
from tests.unit.connectors.singer.test_singer_schema import ORDERS

RECORDS = [
    {"id": 1, "updated_at": "2026-01-01T00:00:01+00:00", "customer": {"name": "Ann", "email": None},
     "amount": 1.25, "price_exact": "1.123456789", "shipped_on": "2026-02-02", "at": "12:30:00",
     "tags": ["a", 'quote "b"'], "attributes": {"x": 1, "é": 2}, "ratio": 0.5, "flag": True,
     "anything": {"deep": [1, 2]}, "either": 3},
    {"id": 2, "updated_at": "2026-01-01T00:00:02+00:00", "customer": None, "tags": [], "attributes": {}},
    {"id": 3, "updated_at": "2026-01-01T00:00:03+00:00", "customer": {"name": "Bo 😀"}, "tags": None},
]


@pytest.mark.parametrize("schemas", ["true", "false"])
def test_a_nested_stream_batch_encodes_as_columns_to_the_record_paths_bytes(schemas: str) -> None:
    orders = stream_schema("orders", ORDERS, ["id"], decimal_scale=9)
    values = [orders.value(record) for record in RECORDS]
    converter = JsonConverter()
    converter.configure({"schemas.enable": schemas}, is_key=False)
    array = to_arrow_batch(orders.schema, values).to_struct_array()
    columns = converter.from_arrow_array("orders", orders.schema, array)
    assert columns is not None, "a nested Singer stream must stay on the column path"
    assert columns.to_pylist() == converter.from_connect_data_batch("orders", orders.schema, values)
    assert b'"customer":null' in columns[1].as_py() and b'"tags":[]' in columns[1].as_py()
    assert b'"tags":null' in columns[2].as_py()

"""to_arrow_batch: Connect structs as Arrow columns, nested values and defaults included."""

from __future__ import annotations

import datetime as dt
import decimal

import pyarrow as pa
import pytest

from kopycat.api.arrow import to_arrow_schema
from kopycat.api.arrow_values import from_arrow_array, to_arrow_batch
from kopycat.api.data import Date, Decimal, Schema, SchemaBuilder, Struct, Time, Timestamp
from kopycat.api.errors import DataError

LINE = SchemaBuilder.struct().name("line").field("sku", Schema.STRING_SCHEMA).field("qty", Schema.INT32_SCHEMA).build()
ORDER = (SchemaBuilder.struct().name("order")
         .field("id", Schema.INT64_SCHEMA)
         .field("amount", Decimal.schema(2))
         .field("day", Date.SCHEMA).field("at", Time.SCHEMA).field("ts", Timestamp.SCHEMA)
         .field("status", SchemaBuilder.string().default_value("new").build())
         .field("note", Schema.OPTIONAL_STRING_SCHEMA)
         .field("first_line", LINE)
         .field("lines", SchemaBuilder.array(LINE).build())
         .field("tags", SchemaBuilder.map(Schema.STRING_SCHEMA, Schema.OPTIONAL_INT32_SCHEMA).build())
         .build())


def order(n: int) -> Struct:
    line = Struct(LINE).put("sku", f"s{n}").put("qty", n)
    return (Struct(ORDER).put("id", n).put("amount", decimal.Decimal("1.50") * n)
            .put("day", dt.date(2026, 11, 23)).put("at", dt.time(5, 6, 7, 8000))
            .put("ts", dt.datetime(2026, 11, 23, 5, 6, 7, tzinfo=dt.UTC))
            .put("first_line", line).put("lines", [line, line]).put("tags", {"a": n, "b": None}))


def test_a_batch_has_the_arrow_schema_and_the_values_row_for_row() -> None:
    batch = to_arrow_batch(ORDER, [order(1), order(2)])
    assert batch.schema == to_arrow_schema(ORDER)
    first = batch.to_pylist()[0]
    assert first == {
        "id": 1, "amount": decimal.Decimal("1.50"), "day": dt.date(2026, 11, 23), "at": dt.time(5, 6, 7, 8000),
        "ts": dt.datetime(2026, 11, 23, 5, 6, 7, tzinfo=dt.UTC), "status": "new", "note": None,
        "first_line": {"sku": "s1", "qty": 1}, "lines": [{"sku": "s1", "qty": 1}] * 2,
        "tags": [("a", 1), ("b", None)]}
    assert batch.column("id").to_pylist() == [1, 2]


def test_an_empty_batch_keeps_the_schema() -> None:
    batch = to_arrow_batch(ORDER, [])
    assert batch.num_rows == 0 and batch.schema == to_arrow_schema(ORDER)


def test_a_value_arrow_cannot_hold_names_the_field() -> None:
    small = SchemaBuilder.struct().field("price", SchemaBuilder.bytes().name(Decimal.LOGICAL_NAME)
                                         .parameter("scale", "2").parameter("connect.decimal.precision", "3")
                                         .build()).build()
    value = Struct(small).put("price", decimal.Decimal("12345.67"))
    with pytest.raises(DataError, match="Field price does not fit Arrow type decimal128"):
        to_arrow_batch(small, [value])


def test_a_reused_arrow_schema_gives_the_same_batch() -> None:
    arrow_schema = to_arrow_schema(ORDER)
    assert to_arrow_batch(ORDER, [order(3)], arrow_schema).equals(to_arrow_batch(ORDER, [order(3)]))
    assert isinstance(arrow_schema, pa.Schema)


def test_nested_values_read_back_from_arrow_as_the_structs_they_were() -> None:
    inner = SchemaBuilder.struct().name("Inner").field("n", Schema.INT32_SCHEMA).build()
    schema = (SchemaBuilder.struct().field("inner", inner)
              .field("tags", SchemaBuilder.array(Schema.OPTIONAL_STRING_SCHEMA).optional().build())
              .field("counts", SchemaBuilder.map(Schema.INT32_SCHEMA, inner).optional().build())
              .field("at", Timestamp.SCHEMA).build())
    struct = (Struct(schema).put("inner", Struct(inner).put("n", 1)).put("tags", ["a", None, "b"])
              .put("counts", {2: Struct(inner).put("n", 3)}).put("at", dt.datetime(2026, 11, 24, 12, 0, 1, 5000)))
    empty = Struct(schema).put("inner", Struct(inner).put("n", 0)).put("at", dt.datetime(1969, 12, 31))
    back = from_arrow_array(schema, to_arrow_batch(schema, [struct, empty]).to_struct_array())
    assert back[0].get("inner") == struct.get("inner") and back[0].get("tags") == ["a", None, "b"]
    assert back[0].get("counts") == {2: Struct(inner).put("n", 3)}
    assert back[0].get("at") == dt.datetime(2026, 11, 24, 12, 0, 1, 5000, tzinfo=dt.UTC)
    assert back[1].get("tags") is None and back[1].get("counts") is None

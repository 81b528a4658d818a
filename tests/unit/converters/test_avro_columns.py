"""The AvroConverter's columnar methods give the record path's rows and bytes, or None.

Oracle: the record path of the same converter (``to_connect_data_batch`` then
``to_arrow_batch``; ``from_arrow_array`` values then ``from_connect_data_batch``), on a registry
kept in memory.
"""

from __future__ import annotations

import datetime as dt
import decimal
import struct
from typing import Any

import pyarrow as pa
import pytest

from kopycat.api.arrow_values import from_arrow_array, to_arrow_batch
from kopycat.api.data import Date, Decimal, Schema, SchemaBuilder, Struct, Time, Timestamp
from kopycat.converters.avro import AvroConverter
from kopycat.converters.schema_registry import RegisteredSchema, SchemaRegistryError

ROW = (SchemaBuilder.struct().name("test.Row").version(1)
       .field("id", Schema.INT64_SCHEMA).field("tiny", Schema.INT8_SCHEMA).field("small", Schema.OPTIONAL_INT16_SCHEMA)
       .field("qty", Schema.INT32_SCHEMA).field("ratio", Schema.FLOAT32_SCHEMA)
       .field("price", Schema.OPTIONAL_FLOAT64_SCHEMA).field("paid", Schema.OPTIONAL_BOOLEAN_SCHEMA)
       .field("note", Schema.OPTIONAL_STRING_SCHEMA).field("blob", Schema.OPTIONAL_BYTES_SCHEMA)
       .field("amount", Decimal.builder(2).optional().build()).field("day", Date.builder().optional().build())
       .field("at", Time.SCHEMA).field("created", Timestamp.builder().optional().build())
       .field("status", SchemaBuilder.string().optional().default_value("new").build())
       .build())
UTC = dt.UTC


class MemoryRegistry:
    """What the converter asks a registry, answered from memory: an id per subject and schema, from 1."""

    def __init__(self) -> None:
        self.texts: list[str] = []
        self.subjects: dict[tuple[str, str], int] = {}

    def register(self, subject: str, schema: str, *, normalize: bool = False, schema_type: str | None = None) -> int:
        if (subject, schema) not in self.subjects:
            self.texts.append(schema)
            self.subjects[(subject, schema)] = len(self.texts)
        return self.subjects[(subject, schema)]

    def schema_by_id(self, schema_id: int) -> str:
        if not 0 < schema_id <= len(self.texts):
            raise SchemaRegistryError(f"Schema {schema_id} not found", 404, 40403)
        return self.texts[schema_id - 1]

    def version_of(self, subject: str, schema: str, *, schema_type: str | None = None) -> RegisteredSchema:
        if (subject, schema) not in self.subjects:
            raise SchemaRegistryError(f"Schema not found under {subject}", 404, 40403)
        return RegisteredSchema(self.subjects[(subject, schema)], schema, subject, 1)


def converter(registry: MemoryRegistry) -> AvroConverter:
    out = AvroConverter(client=registry)  # type: ignore[arg-type]
    out.configure({"schema.registry.url": "http://unused"}, is_key=False)
    return out


def row(n: int, schema: Schema = ROW) -> Struct:
    values: dict[str, Any] = {
        "id": 2**40 + n, "tiny": -3, "small": None if n % 2 else n, "qty": n, "ratio": n / 3,
        "price": None if n % 5 == 0 else n * 1.25, "paid": None if n % 7 == 0 else bool(n % 2),
        "note": None if n % 3 == 0 else f"note é {n}", "blob": None if n % 4 == 0 else b"\x00\xff" * (n % 3),
        "amount": None if n % 6 == 0 else decimal.Decimal(n * 101).scaleb(-2),
        "day": None if n % 9 == 0 else dt.date(1950, 1, 1) + dt.timedelta(days=n * 37),
        "at": dt.time(n % 24, n % 60, n % 60, (n % 1000) * 1000),
        "created": None if n % 8 == 0 else dt.datetime(1960, 1, 1, tzinfo=UTC) + dt.timedelta(milliseconds=n * 977_531),
        "status": None if n % 2 else "shipped"}
    out = Struct(schema)
    for name, value in values.items():
        out.put(name, value)
    return out


def record_rows(avro: AvroConverter, values: list[bytes | None]) -> pa.StructArray:
    decoded = avro.to_connect_data_batch("t", values)
    return to_arrow_batch(decoded[0].schema, [d.value for d in decoded]).to_struct_array()


def test_framed_values_decode_to_the_record_paths_rows() -> None:
    registry = MemoryRegistry()
    values = converter(registry).from_connect_data_batch("t", ROW, [row(n) for n in range(500)])
    reader = converter(registry)
    decoded = reader.to_arrow_array("t", values)
    assert decoded is not None
    assert decoded.schema == reader.to_connect_data("t", values[0]).schema
    assert decoded.value.equals(record_rows(reader, values))
    assert decoded.value.field("status").to_pylist()[:2] == ["shipped", "new"]  # a null takes the default


def test_arrow_columns_encode_to_the_record_paths_bytes() -> None:
    registry = MemoryRegistry()
    columns = to_arrow_batch(ROW, [row(n) for n in range(500)]).to_struct_array()
    writer = converter(registry)
    encoded = writer.from_arrow_array("t", ROW, columns)
    assert encoded is not None and encoded.type == pa.binary()
    expected = converter(registry).from_connect_data_batch("t", ROW, from_arrow_array(ROW, columns))
    assert encoded.to_pylist() == expected


def test_several_schema_ids_of_one_connect_schema_decode_in_batch_order() -> None:
    registry = MemoryRegistry()
    writer = converter(registry)
    first = writer.from_connect_data_batch("a", ROW, [row(n) for n in range(0, 10)])
    second = writer.from_connect_data_batch("b", ROW, [row(n) for n in range(10, 20)])
    mixed = [value for pair in zip(first, second, strict=True) for value in pair]
    reader = converter(registry)
    decoded = reader.to_arrow_array("t", mixed)
    assert decoded is not None and decoded.value.equals(record_rows(reader, mixed))


def test_what_the_record_path_would_decode_differently_or_report_gives_none() -> None:
    registry = MemoryRegistry()
    values = converter(registry).from_connect_data_batch("t", ROW, [row(n) for n in range(5)])
    reader = converter(registry)
    assert reader.to_arrow_array("t", [*values, None]) is None  # a tombstone
    assert reader.to_arrow_array("t", [*values, b"{}"]) is None  # no magic byte
    assert reader.to_arrow_array("t", [*values, struct.pack(">bI", 0, 99) + values[0][5:]]) is None  # unknown id
    assert reader.to_arrow_array("t", [values[0] + b"\x00", *values[1:]]) is None  # a record ends early
    assert reader.to_arrow_array("t", [values[0][:-1], *values[1:]]) is None  # truncated
    other = SchemaBuilder.struct().name("test.Other").field("id", Schema.INT64_SCHEMA).build()
    different = converter(registry).from_connect_data("t", other, Struct(other).put("id", 1))
    assert reader.to_arrow_array("t", [*values, different]) is None  # schemas that differ


def test_a_date_the_data_model_cannot_hold_takes_the_record_path() -> None:
    schema = SchemaBuilder.struct().name("test.Day").field("day", Date.SCHEMA).build()
    registry = MemoryRegistry()
    writer = converter(registry)
    good = writer.from_connect_data("t", schema, Struct(schema).put("day", dt.date(2024, 2, 29)))
    header = good[:5]
    # days 3,000,000 after 1970 is past year 9999: zigzag varint of 3,000,000
    too_late = header + bytes([0x80, 0x9B, 0xEE, 0x02])
    reader = converter(registry)
    with pytest.raises(Exception, match="outside years"):
        reader.to_connect_data("t", too_late)
    assert reader.to_arrow_array("t", [good, too_late]) is None
    assert reader.to_arrow_array("t", [good]) is not None


ITEM = (SchemaBuilder.struct().name("test.Item").optional()
        .field("sku", Schema.STRING_SCHEMA).field("price", Decimal.builder(2).build())
        .field("at", Timestamp.builder().optional().build())
        .field("size", SchemaBuilder.int32().optional().default_value(1).build()).build())
NESTED = (SchemaBuilder.struct().name("test.Order").version(1)
          .field("id", Schema.INT64_SCHEMA).field("item", ITEM)
          .field("items", SchemaBuilder.array(ITEM).optional().build())
          .field("tags", SchemaBuilder.array(Schema.OPTIONAL_STRING_SCHEMA).build())
          .field("days", SchemaBuilder.array(Date.SCHEMA).optional().build())
          .field("attrs", SchemaBuilder.map(Schema.STRING_SCHEMA, Schema.OPTIONAL_INT64_SCHEMA).optional().build())
          .field("lines", SchemaBuilder.map(Schema.STRING_SCHEMA, SchemaBuilder.array(ITEM).build()).build())
          .field("grid", SchemaBuilder.array(SchemaBuilder.array(Schema.INT32_SCHEMA).build()).build())
          .build())


def item(n: int) -> Struct | None:
    if n % 5 == 0:
        return None
    return (Struct(ITEM).put("sku", f"sku-{n}").put("price", decimal.Decimal(n * 7).scaleb(-2))
            .put("at", None if n % 3 == 0 else dt.datetime(2026, 1, 1, tzinfo=UTC) + dt.timedelta(seconds=n))
            .put("size", None if n % 2 else n))


def nested(n: int) -> Struct:
    """Order ``n``: nulls at every level (struct, list, element, map, map value), empty lists and maps."""
    return (Struct(NESTED).put("id", n).put("item", item(n))
            .put("items", None if n % 4 == 0 else [item(n + k) for k in range(n % 3)])
            .put("tags", [None if k % 2 else f"t{k}" for k in range(n % 4)])
            .put("days", None if n % 6 == 0 else [dt.date(2000, 1, 1) + dt.timedelta(days=n + k) for k in range(2)])
            .put("attrs", None if n % 7 == 0 else {f"k{k}": None if k == 1 else n * k for k in range(n % 3)})
            .put("lines", {f"line{k}": [item(n + k)] if item(n + k) else [] for k in range(n % 2 + 1)})
            .put("grid", [[n, k] for k in range(n % 3)]))


def leaves(array: pa.Array, path: str = "") -> dict[str, list[Any]]:
    """Every child column by path, with its values and nulls under null parents too (Parquet checks them)."""
    if pa.types.is_struct(array.type):
        out: dict[str, list[Any]] = {path: array.is_valid().to_pylist()}
        for i in range(array.type.num_fields):
            out |= leaves(array.field(i), f"{path}.{array.type.field(i).name}")
        return out
    if pa.types.is_map(array.type):
        return {path: array.offsets.to_pylist(), **leaves(array.keys, path + "{key}"),
                **leaves(array.items, path + "{value}")}
    if pa.types.is_list(array.type):
        return {path: array.offsets.to_pylist(), **leaves(array.values, path + "[]")}
    return {path: array.to_pylist()}


def test_nested_structs_arrays_and_maps_decode_to_the_record_paths_rows() -> None:
    registry = MemoryRegistry()
    values = converter(registry).from_connect_data_batch("t", NESTED, [nested(n) for n in range(300)])
    reader = converter(registry)
    decoded = reader.to_arrow_array("t", values)
    assert decoded is not None, "nested records must take the columnar path"
    expected = record_rows(reader, values)
    assert decoded.value.equals(expected)
    assert leaves(decoded.value) == leaves(expected)  # what equals() skips: the children of a null
    assert decoded.value.field("item").null_count == 60 and decoded.value.field("attrs").null_count == 43
    assert decoded.value.to_pylist()[1]["item"]["size"] == 1  # a nested null takes its field's default


def test_nested_arrow_columns_encode_to_the_record_paths_bytes() -> None:
    registry = MemoryRegistry()
    columns = to_arrow_batch(NESTED, [nested(n) for n in range(300)]).to_struct_array()
    expected = converter(registry).from_connect_data_batch("t", NESTED, from_arrow_array(NESTED, columns))
    for part in (columns, columns.slice(7, 150)):  # a slice's offsets do not start at zero
        encoded = converter(registry).from_arrow_array("t", NESTED, part)
        assert encoded is not None, "nested columns must take the columnar path"
        assert encoded.to_pylist() == expected[part.offset:part.offset + len(part)]


def test_maps_of_non_string_keys_and_elements_with_defaults_take_the_record_path() -> None:
    by_int = SchemaBuilder.map(Schema.INT32_SCHEMA, Schema.STRING_SCHEMA).build()
    defaulted = SchemaBuilder.array(SchemaBuilder.int32().optional().default_value(0).build()).build()
    for field, value in (("by_int", {1: "a"}), ("defaulted", [None, 2])):
        inner = by_int if field == "by_int" else defaulted
        schema = SchemaBuilder.struct().name("test.Outer").field(field, inner).build()
        registry = MemoryRegistry()
        row_value = Struct(schema).put(field, value)
        encoded = converter(registry).from_connect_data("t", schema, row_value)
        assert converter(registry).to_arrow_array("t", [encoded]) is None, field
        columns = to_arrow_batch(schema, [row_value]).to_struct_array()
        assert converter(registry).from_arrow_array("t", schema, columns) is None, field

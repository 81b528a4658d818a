"""Parquet files keep a dictionary only for the columns whose values repeat, and read back the same rows."""

from __future__ import annotations

import datetime as dt
import decimal

import pyarrow as pa
import pyarrow.parquet as pq

from kopycat.api.data import Date, Decimal, Schema, SchemaBuilder, Struct, Timestamp
from kopycat.api.records import SinkRecord
from kopycat.connectors.files.parquet_dictionary import SAMPLE_ROWS, dictionary_columns
from kopycat.connectors.files.record_formats import ParquetFormat

ROWS = 3 * SAMPLE_ROWS
ORDER = (SchemaBuilder.struct().name("order").field("id", Schema.INT64_SCHEMA)
         .field("country", Schema.STRING_SCHEMA).field("customer", Schema.STRING_SCHEMA)
         .field("price", Decimal.schema(2)).field("created", Timestamp.SCHEMA).field("day", Date.SCHEMA)
         .field("active", Schema.BOOLEAN_SCHEMA).field("note", Schema.OPTIONAL_STRING_SCHEMA).build())
BASE = dt.datetime(2026, 11, 1, tzinfo=dt.UTC)
REPEATING = ["country", "day", "active", "note"]


def order(n: int) -> Struct:
    created = BASE + dt.timedelta(seconds=n)
    return (Struct(ORDER).put("id", n).put("country", ("DE", "FR", "NL")[n % 3]).put("customer", f"customer-{n:08d}")
            .put("price", decimal.Decimal(n * 7919 % 10_000_000) / 100).put("created", created)
            .put("day", created.date()).put("active", n % 2 == 0)
            .put("note", None if n % 4 else "gift wrap"))


def written(rows: int) -> pq.ParquetFile:
    contents = ParquetFormat("snappy").new_file(ORDER)
    contents.add([SinkRecord(topic="orders", kafka_partition=0, key_schema=None, key=None,
                              value_schema=ORDER, value=order(n), kafka_offset=n) for n in range(rows)])
    stream = pa.BufferOutputStream()
    contents.write_to(stream)
    return pq.ParquetFile(pa.BufferReader(stream.getvalue()))


def dictionary_encoded(file: pq.ParquetFile) -> set[str]:
    """The columns whose every row group has a dictionary page."""
    metadata = file.metadata
    columns = [metadata.row_group(0).column(i) for i in range(metadata.num_columns)]
    assert metadata.num_row_groups == 1
    return {column.path_in_schema for column in columns if column.has_dictionary_page}


def test_columns_of_distinct_values_are_written_plain_and_repeating_ones_with_a_dictionary() -> None:
    file = written(ROWS)
    assert dictionary_encoded(file) == set(REPEATING) - {"active"}  # Parquet has no BOOLEAN dictionary
    table = file.read()
    assert table.num_rows == ROWS
    assert table.column("id").to_pylist() == list(range(ROWS))
    assert table.to_pylist()[ROWS - 1] == {
        "id": ROWS - 1, "country": ("DE", "FR", "NL")[(ROWS - 1) % 3], "customer": f"customer-{ROWS - 1:08d}",
        "price": decimal.Decimal((ROWS - 1) * 7919 % 10_000_000) / 100,
        "created": BASE + dt.timedelta(seconds=ROWS - 1), "day": dt.date(2026, 11, 1), "active": False,
        "note": None}
    assert table.column("note").null_count == ROWS - ROWS // 4


def test_the_choice_is_made_on_the_first_rows_only() -> None:
    schema = pa.schema([("code", pa.int64())])
    repeating_then_distinct = pa.table({"code": [n % 7 for n in range(SAMPLE_ROWS)] + list(range(SAMPLE_ROWS))},
                                       schema=schema)
    assert dictionary_columns(repeating_then_distinct) == ["code"]
    assert dictionary_columns(repeating_then_distinct.slice(SAMPLE_ROWS)) == []


def test_columns_of_nulls_only_and_nested_columns_keep_arrows_default() -> None:
    nulls = pa.table({"note": pa.array([None] * 10, pa.string())})
    assert dictionary_columns(nulls) == ["note"]
    nested = pa.table({"id": list(range(10)), "tags": [["a"]] * 10})
    assert dictionary_columns(nested) is True


def test_a_file_smaller_than_the_sample_is_decided_on_all_its_rows() -> None:
    file = written(100)
    assert dictionary_encoded(file) == {"country", "day", "note"}
    assert file.read().column("customer").to_pylist() == [f"customer-{n:08d}" for n in range(100)]

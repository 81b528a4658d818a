"""Which columns of a Parquet file are dictionary encoded: those whose values repeat.

Follows parquet-mr, which Confluent's ``ParquetFormat`` writes with: its
``FallbackValuesWriter`` starts each column with a dictionary and keeps it only when the first
page comes out smaller that way than plain (``DictionaryValuesWriter.isCompressionSatisfying``:
encoded indices plus dictionary under the raw size). Arrow's writer keeps every column's dictionary
until it passes ``dictionary_pagesize_limit`` (1 MiB), so a column of distinct values that stays
under it (an id, a timestamp, an amount: 100,000 int64 are 800 kB) is written as a dictionary of
every value plus an index per row: a larger file, and half of the sink's Parquet write time
(hashing every value) in the bench's orders. Here the same test as parquet-mr's is made once per
file on its first :data:`SAMPLE_ROWS` rows; a column that passes is handed to Arrow's dictionary
writer as before (with its own 1 MiB fallback), one that fails is written plain. Either way the
values read back are the same; only the encoding and the file size differ.
"""

from __future__ import annotations

from typing import Final

import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["SAMPLE_ROWS", "dictionary_columns"]

SAMPLE_ROWS: Final = 8192
"""Rows of a file that decide its encodings: about one data page of parquet-mr (1 MB) of narrow columns."""
_OFFSET_BYTES: Final = 4
"""What PLAIN adds to each BYTE_ARRAY value: its length."""


def dictionary_columns(table: pa.Table) -> bool | list[str]:
    """``write_table``'s ``use_dictionary``: the columns whose sampled values repeat enough to pay for a
    dictionary, or True (Arrow's default, every column) when a column is nested (its leaves are named by
    paths, which this does not test)."""
    if any(pa.types.is_nested(field.type) for field in table.schema):
        return True
    sample = table.slice(0, SAMPLE_ROWS)
    return [field.name for field, column in zip(table.schema, sample.columns, strict=True)
            if _dictionary_pays(column)]


def _dictionary_pays(column: pa.ChunkedArray) -> bool:
    """parquet-mr's test on ``column``: indices (bit-packed, as wide as the distinct count needs) plus the
    dictionary (each distinct value once, plain) smaller than the values plain."""
    rows = len(column) - column.null_count
    if rows == 0:
        return True  # all null: no values to store either way; Arrow's default stands
    width = _plain_width(column, rows)
    if width is None:
        return True  # a type without a plain width to compare: Arrow's default stands
    distinct = pc.count_distinct(column).as_py()
    index_bytes = rows * max(1, (distinct - 1).bit_length()) / 8
    return distinct * width + index_bytes < rows * width


def _plain_width(column: pa.ChunkedArray, rows: int) -> float | None:
    """A value's mean size in PLAIN encoding (fixed-width types: their width; strings and bytes: length + 4)."""
    kind = column.type
    if pa.types.is_boolean(kind):
        return 1 / 8
    if any(test(kind) for test in (pa.types.is_binary, pa.types.is_string, pa.types.is_large_binary,
                                   pa.types.is_large_string)):
        return pc.sum(pc.binary_length(column)).as_py() / rows + _OFFSET_BYTES
    try:
        return float(kind.byte_width)
    except ValueError:  # no fixed width (the null type)
        return None

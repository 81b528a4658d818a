"""JsonConverter's column path escapes strings as its record path does, for every code point.

The column path writes a string column with anything to escape by one ``orjson.dumps`` of the
whole column split back by numpy (:mod:`kopycat.converters.json_arrow_writer`); the record path
writes each value on its own. Every code point 0..0x10FFFF (surrogates excluded: Arrow's utf8
cannot hold them) goes through both, in runs of consecutive code points and one per string (so
each also starts and ends a text), and so do strings built to fool the split: commas and quotes
side by side, backslashes before ``u00``, trailing backslashes, empty strings and nulls.
"""

from __future__ import annotations

from functools import cache

import pyarrow as pa
import pytest

from kopycat.api.data import Schema, SchemaBuilder, Struct, Type
from kopycat.arrow_buffers import string_array
from kopycat.converters.json import JsonConverter

RUN = 512
"""Code points per string of the runs."""

TRICKY = ["", '"', '","', ',"', '",', "\\", "\\\\", 'a\\",\\"b', "\\u001f", "\\\x1f", "\x1f\\", '\\",",',
          "[", "]", '["a", "b"]', "\x00", "\x7f", "\u2028\u2029", "\ud7ff\ue000", "\U00010000\U0010ffff",
          "😀,\"😀\"", 'end\\', '\\"', "\x08\x0c\n\r\t", "plain"]


def code_points() -> list[str]:
    """Every code point but the surrogates."""
    return [chr(code) for code in range(0x110000) if not 0xD800 <= code <= 0xDFFF]


@cache
def chunks() -> tuple[list[str], ...]:
    """Strings of RUN consecutive code points, a few thousand per chunk (the record path is the slow side)."""
    points = code_points()
    runs = ["".join(points[start:start + RUN]) for start in range(0, len(points), RUN)]
    return tuple(runs[start:start + 400] for start in range(0, len(runs), 400))


def converter(schemas: bool = True) -> JsonConverter:
    result = JsonConverter()
    result.configure({"schemas.enable": str(schemas).lower()}, is_key=False)
    return result


def assert_same_bytes(schema: Schema, texts: list[str | None], column: pa.Array, first: int = 0) -> None:
    """The column path's bytes for ``column`` equal the record path's for ``texts`` (field ``n``
    counting from ``first``), both converters."""
    for schemas in (True, False):
        if schema.type is Type.STRING:
            values: list[object] = list(texts)
        else:
            values = [Struct(schema).put("s", text).put("n", first + index) for index, text in enumerate(texts)]
        records = converter(schemas).from_connect_data_batch("t", schema, values)
        columns = converter(schemas).from_arrow_array("t", schema, column)
        assert columns is not None, "the column path must take string columns"
        assert columns.to_pylist() == records


def struct_column(texts: list[str | None]) -> pa.StructArray:
    ids = pa.array(range(len(texts)), pa.int64())
    return pa.StructArray.from_arrays([string_array(texts), ids], names=["s", "n"])


def struct_schema(optional: bool) -> Schema:
    text = Schema.OPTIONAL_STRING_SCHEMA if optional else Schema.STRING_SCHEMA
    return SchemaBuilder.struct().field("s", text).field("n", Schema.INT64_SCHEMA).build()


@pytest.mark.parametrize("index", range(len(chunks())))
def test_runs_of_every_code_point_encode_as_the_record_path(index: int) -> None:
    texts: list[str | None] = list(chunks()[index])
    assert_same_bytes(Schema.STRING_SCHEMA, texts, string_array(texts))  # a top-level string
    assert_same_bytes(struct_schema(False), texts, struct_column(texts))  # a field without nulls
    with_nulls = [None if i % 5 == 2 else text for i, text in enumerate(texts)]
    assert_same_bytes(struct_schema(True), with_nulls, struct_column(with_nulls))  # a field with nulls


def test_each_code_point_alone_starts_and_ends_a_text() -> None:
    texts: list[str | None] = code_points()
    assert_same_bytes(struct_schema(False), texts, struct_column(texts))


@pytest.mark.parametrize("optional", [False, True])
def test_strings_shaped_like_the_lists_separators_split_where_they_should(optional: bool) -> None:
    texts: list[str | None] = [a + b for a in TRICKY for b in TRICKY]
    if optional:
        texts = [None if i % 7 == 3 else text for i, text in enumerate(texts)]
    assert_same_bytes(struct_schema(optional), texts, struct_column(texts))


def test_a_sliced_column_encodes_only_its_own_strings() -> None:
    texts: list[str | None] = ['"a"', "b", "\\", None, "\x01", "ok"] * 10
    column = struct_column(texts).slice(7, 40)
    assert_same_bytes(struct_schema(True), texts[7:47], column, first=7)

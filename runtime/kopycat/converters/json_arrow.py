"""JsonConverter envelopes straight to Arrow columns: the columnar fast path of sinks.

Beyond Kafka Connect (DESIGN.md §2, columnar fast path). A batch of envelopes that all start with
the same schema text (the prefix :class:`~kopycat.converters.json.JsonConverter` already keys its
cache on) is decoded without one Python object per record: the payload objects are cut out of the
envelopes, joined as JSON lines and parsed by pyarrow's JSON reader against the Arrow types the
schema's JSON form takes (int64 for every integer, base64 strings for bytes and decimals), then
each column becomes the Arrow type of its Connect schema (:func:`kopycat.api.arrow.to_arrow_schema`)
with the checks the record path makes: integer ranges, dates, times and timestamps inside what the
data model holds, decimals inside their precision, required fields present.

The rule is *identical or nothing*: anything this path would decode differently from the record
path (``to_connect_data`` then :func:`kopycat.api.arrow_values.to_arrow_batch`) makes it answer
None, and the caller decodes the batch record by record, which also names a bad record. So a null
where a default applies, a non-finite float, a payload that is not one plain object, text pyarrow
rejects, a schema with nested types: all None, never a different value.
"""

from __future__ import annotations

import binascii
import re
from array import array
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import accumulate, repeat
from typing import Final

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pa_json

from kopycat.api.arrow import to_arrow_schema
from kopycat.api.data import INT_RANGES, Date, Decimal, Schema, Time, Timestamp, Type
from kopycat.api.errors import DataError
from kopycat.converters.base64_integers import unscaled_int64

__all__ = ["EnvelopeColumns", "PayloadLines", "envelope_columns", "payload_lines"]

_LOGICAL_INTS: Final = {Date.LOGICAL_NAME: Date, Time.LOGICAL_NAME: Time, Timestamp.LOGICAL_NAME: Timestamp}
_MINUS_ZERO_INTEGER: Final = re.compile(rb"-0(?![.eE])")
_READ_BLOCK: Final = 1 << 24
"""pyarrow's JSON block size for a consumed batch (a few MB at most); a larger text gets a block its size."""

Finish = Callable[[pa.Array], pa.Array | None]
"""A column as read from JSON -> the column of its Connect schema's Arrow type; None: not this path."""


@dataclass(frozen=True)
class EnvelopeColumns:
    """How the payloads of one value schema are read: the JSON reader's schema and each column's finish."""

    schema: Schema
    arrow_schema: pa.Schema
    parse_options: pa_json.ParseOptions
    """The JSON reader's schema: the type each field's JSON is read as (int64 for every integer...)."""
    finishes: tuple[Finish, ...]
    float_columns: tuple[int, ...] = ()
    """The FLOAT32/FLOAT64 fields' indexes, checked for the integer token ``-0``."""

    def decode(self, lines: PayloadLines) -> pa.StructArray | None:
        """The payload objects as a StructArray of :attr:`arrow_schema`'s fields.

        None when the text is not exactly one JSON object per payload that the record path would
        decode to the same values.
        """
        text, count = lines.text, lines.count
        if _newlines(text) != count - 1:  # a payload spread over lines breaks the framing
            return None
        if not text.isascii() and not _utf8(text):  # pyarrow's reader passes invalid UTF-8 through
            return None
        try:
            options = _read_options(len(text))
            table = pa_json.read_json(pa.py_buffer(text), read_options=options, parse_options=self.parse_options)
        except (pa.ArrowException, ValueError):  # not JSON pyarrow takes, a type mismatch, bad UTF-8
            return None
        if table.num_rows != count:  # two objects on one line
            return None
        columns = []
        for finish, column in zip(self.finishes, table.columns, strict=True):
            finished = finish(column.chunk(0) if column.num_chunks == 1 else column.combine_chunks())  # (no copy)
            if finished is None:
                return None
            columns.append(finished)
        if _integer_negative_zero(text, columns, self.float_columns):
            return None
        return pa.StructArray.from_arrays(columns, fields=list(self.arrow_schema))


@dataclass(frozen=True)
class PayloadLines:
    """Payloads cut out of their envelopes, one per line, for the JSON reader."""

    text: bytes
    count: int


def payload_lines(envelopes: Sequence[bytes], head: bytes) -> PayloadLines | None:
    """``{...}`` of each ``head{...}}`` (one schema's envelope prefix, then an object payload), as lines.

    None unless every value is such an envelope. The cut is two C-level maps (``removeprefix`` of
    ``head{`` and ``removesuffix`` of the closing brace), not a Python slice per value: a cut that
    did not happen leaves a value longer, so one length sum checks all of them, where a
    ``startswith``, ``endswith`` and slice each would cost three Python calls per record.
    """
    count = len(envelopes)
    opening = head + b"{"
    try:
        text = b"{" + b"\n{".join(map(bytes.removesuffix, map(bytes.removeprefix, envelopes, repeat(opening)),
                                      repeat(b"}")))
        total = sum(map(len, envelopes))
    except TypeError:  # a null value (a tombstone)
        return None
    if not count or len(text) != total - count * (len(opening) + 1) + 2 * count - 1:
        return None
    return PayloadLines(text, count)


def _read_options(size: int) -> pa_json.ReadOptions:
    """The whole text as one block, parsed on this thread.

    Not on pyarrow's threads: several blocks parsed in parallel finish sooner but spend more CPU
    in all, and CPU is what bounds a worker whose cores also run its other tasks (and, in tests,
    the broker), so a whole sink run is faster with one block. One block also means no line can
    straddle two.
    """
    return _ONE_BLOCK if size < _READ_BLOCK else pa_json.ReadOptions(use_threads=False, block_size=size + 1)


_ONE_BLOCK: Final = pa_json.ReadOptions(use_threads=False, block_size=_READ_BLOCK)


def _newlines(text: bytes) -> int:
    """``text.count(b"\\n")``, by numpy: seven times faster than the bytes method's byte-at-a-time search."""
    return int(np.count_nonzero(np.frombuffer(text, np.uint8) == _NEWLINE))


_NEWLINE: Final = ord("\n")


def _utf8(text: bytes) -> bool:
    try:
        text.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


@lru_cache(maxsize=256)
def envelope_columns(schema: Schema, replace_null_with_default: bool) -> EnvelopeColumns | None:
    """The columnar reading of ``schema``'s payloads; None when the schema has no such reading.

    A STRUCT whose fields are primitives or Decimal/Date/Time/Timestamp has one; nested structs,
    arrays, maps and decimals wider than 38 digits take the record path.
    """
    if schema.type is not Type.STRUCT or not schema.fields:
        return None
    arrow_schema = to_arrow_schema(schema)
    read_fields, finishes = [], []
    for field, arrow_field in zip(schema.fields, arrow_schema, strict=True):
        column = _column(field.schema, arrow_field.type, replace_null_with_default)
        if column is None:
            return None
        read_type, finish = column
        read_fields.append(pa.field(field.name, read_type))
        finishes.append(finish)
    options = pa_json.ParseOptions(explicit_schema=pa.schema(read_fields), unexpected_field_behavior="ignore")
    floats = tuple(i for i, field in enumerate(schema.fields) if field.schema.type in (Type.FLOAT32, Type.FLOAT64))
    return EnvelopeColumns(schema, arrow_schema, options, tuple(finishes), floats)


def _column(schema: Schema, arrow_type: pa.DataType, replace_null: bool) -> tuple[pa.DataType, Finish] | None:
    """(the type pyarrow reads the field's JSON as, how that column is finished)."""
    if schema.default is not None and replace_null:
        nulls = _NO_NULLS  # a null becomes the default on the record path: left to it
    else:
        nulls = _ANY_NULLS if schema.optional else _NO_NULLS
    logical = _LOGICAL_INTS.get(schema.name or "")
    if schema.name == Decimal.LOGICAL_NAME:
        return (pa.string(), _checked(nulls, _decimal_finish(schema, arrow_type))) if pa.types.is_decimal128(
            arrow_type) else None
    if logical is not None:
        return pa.int64(), _checked(nulls, _logical_finish(schema, logical, arrow_type))
    if schema.type in INT_RANGES:
        low, high = INT_RANGES[schema.type]
        return pa.int64(), _checked(nulls, _int_finish(low, high, arrow_type))
    if schema.type in (Type.FLOAT32, Type.FLOAT64):
        return pa.float64(), _checked(nulls, _float_finish(arrow_type))
    if schema.type is Type.BOOLEAN:
        return pa.bool_(), _checked(nulls, _same)
    if schema.type is Type.STRING:
        return pa.string(), _checked(nulls, _same)
    if schema.type is Type.BYTES:
        return pa.string(), _checked(nulls, _bytes_finish)
    return None


_ANY_NULLS, _NO_NULLS = True, False


def _checked(nulls_allowed: bool, finish: Finish) -> Finish:
    if nulls_allowed:
        return finish
    return lambda column: None if column.null_count else finish(column)


def _same(column: pa.Array) -> pa.Array:
    return column


def _bounds(column: pa.Array) -> tuple[int, int] | None:
    """The column's least and greatest value; None when every value is null."""
    if column.null_count == len(column):
        return None
    found = pc.min_max(column)
    return found["min"].as_py(), found["max"].as_py()


def _int_finish(low: int, high: int, arrow_type: pa.DataType) -> Finish:
    def finish(column: pa.Array) -> pa.Array | None:
        bounds = _bounds(column)
        return column.cast(arrow_type) if bounds is None or low <= bounds[0] <= bounds[1] <= high else None
    return finish


def _float_finish(arrow_type: pa.DataType) -> Finish:
    """float64 as parsed (shortest-exact, as orjson); FLOAT32 rounds it once, as the record path's ``f32``.

    Non-finite numbers (bare ``NaN`` tokens, which only the lenient record path reads) take it.
    """
    def finish(column: pa.Array) -> pa.Array | None:
        if column.null_count != len(column) and not pc.all(pc.is_finite(column)).as_py():
            return None
        return column if arrow_type == pa.float64() else column.cast(arrow_type, safe=False)
    return finish


def _has_negative_zero(column: pa.Array) -> bool:
    """Any -0.0 in the data buffer (a null's slot may count: it only costs a text search)."""
    dtype = np.float32 if column.type == pa.float32() else np.float64
    values = np.frombuffer(column.buffers()[1], dtype=dtype, count=column.offset + len(column))[column.offset:]
    return bool(np.any(np.signbit(values[values == 0])))


def _integer_negative_zero(text: bytes, columns: Sequence[pa.Array], float_columns: tuple[int, ...]) -> bool:
    """Whether a float column holds a -0.0 that may have been the integer token ``-0``.

    pyarrow reads ``-0`` into a float column as -0.0; Jackson and the record path read the integer
    zero, 0.0, and Parquet keeps the sign. Only a batch holding a negative zero pays for the text
    search (a ``-0`` inside a string also sends the batch to the record path: slower, never wrong).
    """
    return (any(_has_negative_zero(columns[i]) for i in float_columns)
            and _MINUS_ZERO_INTEGER.search(text) is not None)


def _logical_finish(schema: Schema, logical: type, arrow_type: pa.DataType) -> Finish:
    """Date/Time/Timestamp ints: the data model's range (its ``to_logical`` on the extremes), then the type."""
    low, high = INT_RANGES[Type.INT64 if logical is Timestamp else Type.INT32]

    def finish(column: pa.Array) -> pa.Array | None:
        bounds = _bounds(column)
        if bounds is not None:
            if not low <= bounds[0] <= bounds[1] <= high:
                return None
            try:
                logical.to_logical(schema, bounds[0])  # type: ignore[attr-defined]
                logical.to_logical(schema, bounds[1])  # type: ignore[attr-defined]
            except DataError:
                return None
        storage = pa.int64() if logical is Timestamp else pa.int32()
        return column.cast(storage).view(arrow_type)
    return finish


def _base64_values(column: pa.Array) -> list[bytes | None] | None:
    """Each string's bytes as the record path decodes them (strict base64); None if any is not."""
    a2b = binascii.a2b_base64
    try:
        return [None if text is None else a2b(text, strict_mode=True) for text in column.to_pylist()]
    except (binascii.Error, ValueError):
        return None


def _bytes_finish(column: pa.Array) -> pa.Array | None:
    values = _base64_values(column)
    if values is None:
        return None
    ends = array("i", [0] * (column.offset + 1))
    ends.extend(accumulate(len(value or b"") for value in values))
    data = b"".join(value or b"" for value in values)
    return _with_nulls_of(column, pa.binary(), [pa.py_buffer(ends), pa.py_buffer(data)])


def _with_nulls_of(column: pa.Array, arrow_type: pa.DataType, buffers: list[pa.Buffer]) -> pa.Array:
    """An array of ``arrow_type`` over ``buffers`` (laid out from ``column.offset``) with ``column``'s nulls.

    Built from buffers, not ``pa.array``: converting a Python list makes pyarrow import pandas
    (half a second) to check for its types.
    """
    return pa.Array.from_buffers(arrow_type, len(column), [column.buffers()[0] if column.null_count else None,
                                                           *buffers], null_count=column.null_count,
                                 offset=column.offset)


def _decimal_finish(schema: Schema, arrow_type: pa.DataType) -> Finish:
    """Base64 unscaled two's-complement integers into decimal128, inside the precision.

    Zero-length bytes fail on the record path, so they leave this one. Canonical base64 of up to 8
    bytes is decoded by numpy (:mod:`kopycat.converters.base64_integers`); other texts value by value.
    Up to 64-bit integers are widened into the 16-byte buffer with numpy; wider ones are written
    into it value by value.
    """
    limit = 10 ** arrow_type.precision
    int64_low, int64_high = INT_RANGES[Type.INT64]

    def finish(column: pa.Array) -> pa.Array | None:
        if column.null_count == len(column):
            return _with_nulls_of(column, arrow_type, [pa.py_buffer(bytes(16 * (column.offset + len(column))))])
        if pc.min_max(pc.binary_length(column))["min"].as_py() == 0:  # (no Python scalar: see _with_nulls_of)
            return None
        as_int64 = unscaled_int64(column)
        if as_int64 is not None:
            return _int64_decimals(column, arrow_type, as_int64, limit)
        unscaled = _unscaled(column)
        if unscaled is None:
            return None
        low, high = min(unscaled), max(unscaled)  # nulls are 0, inside every precision
        if int64_low <= low and high <= int64_high:
            return _int64_decimals(column, arrow_type, np.array(unscaled, np.int64), limit)
        if not -limit < low <= high < limit:
            return None
        padded = [0] * column.offset + unscaled
        data = b"".join([number.to_bytes(16, "little", signed=True) for number in padded])
        return _with_nulls_of(column, arrow_type, [pa.py_buffer(data)])
    return finish


def _int64_decimals(column: pa.Array, arrow_type: pa.DataType, unscaled: np.ndarray, limit: int) -> pa.Array | None:
    """decimal128 from int64 unscaled values (nulls 0) inside ``limit``: each the low word of its 16 bytes,
    the sign extended into the high word (pyarrow's int64 -> decimal128 cast took twice as long)."""
    if not -limit < int(unscaled.min()) <= int(unscaled.max()) < limit:
        return None
    words = np.zeros((column.offset + len(unscaled), 2), np.int64)  # little-endian 128 bits: low word, then high
    words[column.offset:, 0] = unscaled
    words[column.offset:, 1] = unscaled >> 63  # the sign, extended
    return _with_nulls_of(column, arrow_type, [pa.py_buffer(words)])


def _unscaled(column: pa.Array) -> list[int] | None:
    """Each base64 string as the signed big-endian integer it encodes (a null as 0); None if any is not
    strict base64."""
    values = _base64_values(column)
    if values is None:
        return None
    from_bytes = int.from_bytes
    return [0 if value is None else from_bytes(value, "big", signed=True) for value in values]

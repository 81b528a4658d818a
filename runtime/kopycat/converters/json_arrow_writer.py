"""JsonConverter's bytes for a whole Arrow array at once: the source side of the columnar path.

A :class:`~kopycat.api.record_batch.SourceRecordBatch` holds a table's rows as columns. Each field
becomes one StringArray of its JSON texts and ``binary_join_element_wise`` joins the envelope
head, the keys, the texts and the tail into every record's bytes, with no Python object per
record. The rule is the decoder's (:mod:`kopycat.converters.json_arrow`): identical or nothing.

- Arrow kernels write a text where Arrow's text is Jackson's: integers, booleans, Date, Time and
  Timestamp (their integers), and strings with nothing to escape (no quote, backslash, control
  character or character outside the BMP).
- Decimals (BASE64) whose unscaled values fit 64 bits are encoded with numpy, as Kafka's
  ``Decimal.fromLogical`` + Jackson's base64 would: the shortest two's-complement big-endian bytes.
- Everything else (doubles, floats, bytes, NUMERIC decimals, the strings above) goes value by value
  through the record path's own encoder, :func:`kopycat.converters._jsoncodec.encoder`.
- Nulls become ``null`` or the field's default, as the record path writes them; a null in a
  required field without default, a nested type or a null top-level value answers None, and the
  runner converts record by record (which reports the bad value).
"""

from __future__ import annotations

from array import array
from collections.abc import Callable
from itertools import accumulate
from typing import Any, Final

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc

from kopycat.api.data import Date, Decimal, Schema, Time, Timestamp, Type
from kopycat.converters._jsoncodec import Options, encoder
from kopycat.converters._jsonformat import fix_escapes, needs_fix

__all__ = ["json_texts"]

_INTEGERS: Final = frozenset({Type.INT8, Type.INT16, Type.INT32, Type.INT64})
_AS_INTEGER: Final = {Date.LOGICAL_NAME: pa.int32(), Time.LOGICAL_NAME: pa.int32(),
                      Timestamp.LOGICAL_NAME: pa.int64()}
_NESTED: Final = frozenset({Type.STRUCT, Type.ARRAY, Type.MAP})
_ESCAPED: Final = r'[\x00-\x1f"\\\x{10000}-\x{10ffff}]'
"""Characters Jackson escapes (or writes as a surrogate pair): their strings take the slow path."""
_B64: Final = np.frombuffer(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/", np.uint8)
_PAD: Final = ord("=")
_QUOTE: Final = ord('"')
_FALSE: Final = pa.Array.from_buffers(pa.bool_(), 1, [None, pa.py_buffer(b"\0")])[0]


def _json(value: Any) -> str:
    """A JSON-ready value's text, with Jackson's escapes."""
    data = orjson.dumps(value)
    return (fix_escapes(data) if needs_fix(data) else data).decode()


def json_texts(schema: Schema, values: pa.Array, options: Options, head: str, tail: str) -> pa.Array | None:
    """``head + payload + tail`` for each value, as a BinaryArray; None where the record path must do it."""
    if values.null_count:
        return None
    if schema.type is Type.STRUCT:
        pieces = _struct_pieces(schema, values, options)
        if pieces is None:
            return None
        pieces[0] = head + pieces[0]
        pieces[-1] = pieces[-1] + tail
    else:
        texts = _field_texts(schema, values, options)
        if texts is None:
            return None
        pieces = [head, texts, tail]
    if len(pieces) == 1:  # a struct without fields: the same text for every value
        return _strings(pieces * len(values)).cast(pa.binary())
    joined = pc.binary_join_element_wise(*[_text(p) if isinstance(p, str) else p for p in pieces], _text(""))
    return joined.cast(pa.binary())


def _struct_pieces(schema: Schema, values: pa.StructArray, options: Options) -> list[Any] | None:
    """``{"name":`` texts ``,"name2":`` texts ... ``}``: constant pieces between the field columns."""
    pieces: list[Any] = []
    prefix = "{"
    for index, field in enumerate(schema.fields):
        texts = _field_texts(field.schema, values.field(index), options)
        if texts is None:
            return None
        pieces += [prefix + _json(field.name) + ":", texts]
        prefix = ","
    pieces.append("}" if pieces else "{}")
    return pieces


def _field_texts(schema: Schema, column: pa.Array, options: Options) -> pa.Array | None:
    """The JSON text of each value of one column, nulls included (None: not identical here)."""
    if schema.type in _NESTED:
        return None
    texts = _fast_texts(schema, column, options)
    if texts is None:
        texts = _value_texts(encoder(schema, options), column)
    if not column.null_count:
        return texts
    null_text = _null_text(schema, options)
    return None if null_text is None else pc.fill_null(texts, _text(null_text))


def _fast_texts(schema: Schema, column: pa.Array, options: Options) -> pa.Array | None:
    name = schema.name
    if name in _AS_INTEGER:
        return pc.cast(column.cast(_AS_INTEGER[name]), pa.string())
    if name == Decimal.LOGICAL_NAME:
        return None if options.decimal_numeric else _decimal_texts(column)
    if name is not None:
        return None
    if schema.type in _INTEGERS or schema.type is Type.BOOLEAN:
        return pc.cast(column, pa.string())
    if schema.type is Type.STRING:
        return _string_texts(column)
    return None


def _string_texts(column: pa.Array) -> pa.Array:
    """Quoted as they are, except the strings Jackson escapes, which the record path writes."""
    quote = _text('"')
    texts = pc.binary_join_element_wise(quote, column, quote, _text(""))
    odd = pc.match_substring_regex(column, _ESCAPED)
    if not pc.any(odd).as_py():
        return texts
    odd = pc.fill_null(odd, _FALSE)
    fixed = [_json(value) for value in pc.filter(column, odd).to_pylist()]
    return pc.replace_with_mask(texts, odd, _strings(fixed))


def _value_texts(encode: Callable[[Any], Any] | None, column: pa.Array) -> pa.Array:
    """The slow path: the record path's encoder on each value."""
    values = column.to_pylist()
    if encode is None:
        texts = [None if value is None else _json(value) for value in values]
    else:
        texts = [None if value is None else _json(encode(value)) for value in values]
    return _strings(texts)


def _null_text(schema: Schema, options: Options) -> str | None:
    """What the record path writes for a null: the default, ``null``, or None (an error)."""
    if schema.default is not None and options.replace_null_with_default:
        encode = encoder(schema, options)
        return _json(schema.default if encode is None else encode(schema.default))
    return "null" if schema.optional else None


def _decimal_texts(column: pa.Array) -> pa.Array | None:
    """Quoted base64 of each unscaled value's shortest two's-complement bytes (Java's
    ``BigInteger.toByteArray``); None unless every value fits 64 bits."""
    if not pa.types.is_decimal128(column.type):
        return None
    count = len(column)
    words = np.frombuffer(column.buffers()[1], np.int64)[2 * column.offset: 2 * (column.offset + count)]
    low, high = words[0::2], words[1::2]
    if column.null_count:  # a null slot may hold any bits: make it 0, its text is replaced
        valid = np.asarray(column.is_valid())
        low, high = np.where(valid, low, 0), np.where(valid, high, 0)
    if not np.array_equal(high, low >> 63):
        return None
    magnitude = np.where(low < 0, ~low, low)
    lengths = np.ones(count, np.int64)
    for k in range(1, 8):
        lengths += magnitude >= (1 << (8 * k - 1))
    big_endian = low.astype(">i8").view(np.uint8).reshape(-1, 8)
    data_bytes = np.zeros((count, 9), np.uint8)  # each value's bytes first, zeros after: 3 groups of 3
    for length in range(1, 9):
        rows = lengths == length
        data_bytes[rows, :length] = big_endian[rows, 8 - length:]
    triples = data_bytes.reshape(count, 3, 3).astype(np.uint32)
    bits = (triples[..., 0] << 16) | (triples[..., 1] << 8) | triples[..., 2]
    sextets = np.stack([(bits >> shift) & 63 for shift in (18, 12, 6, 0)], axis=-1).reshape(count, 12)
    chars = np.empty((count, 14), np.uint8)  # the quote, 12 base64 characters at most, the quote
    chars[:, 0] = _QUOTE
    chars[:, 1:13] = _B64[sextets]
    text_lengths = (lengths + 2) // 3 * 4
    rows = np.arange(count)
    short = lengths % 3  # 1: the last two characters are padding, 2: the last one
    chars[rows[short != 0], text_lengths[short != 0]] = _PAD
    chars[rows[short == 1], text_lengths[short == 1] - 1] = _PAD
    chars[rows, text_lengths + 1] = _QUOTE
    offsets = np.zeros(count + 1, np.int32)
    np.cumsum(text_lengths + 2, out=offsets[1:])
    data = chars[np.arange(14) < (text_lengths + 2)[:, None]]
    return pa.Array.from_buffers(pa.string(), count, [_validity(column), pa.py_buffer(offsets), pa.py_buffer(data)])


def _validity(column: pa.Array) -> pa.Buffer | None:
    """A validity bitmap starting at bit 0 for a column's nulls (None without nulls)."""
    if not column.null_count:
        return None
    return pa.py_buffer(np.packbits(np.asarray(column.is_valid()), bitorder="little"))


def _text(text: str) -> pa.Scalar:
    """A string scalar built from buffers: ``pa.scalar`` and ``pa.array`` of Python values import
    pandas (half a second) the first time, which a source run never needs."""
    return _strings([text])[0]


def _strings(texts: list[str | None]) -> pa.Array:
    """A StringArray of Python strings (None: null), built from buffers (see :func:`_text`)."""
    encoded = [b"" if text is None else text.encode() for text in texts]
    offsets = array("i", [0])
    offsets.extend(accumulate(map(len, encoded)))
    validity = None
    if None in texts:
        validity = pa.py_buffer(np.packbits(np.array([text is not None for text in texts]), bitorder="little"))
    return pa.Array.from_buffers(pa.string(), len(texts), [validity, pa.py_buffer(offsets),
                                                           pa.py_buffer(b"".join(encoded))])

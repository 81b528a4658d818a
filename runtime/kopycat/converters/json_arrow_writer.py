"""JsonConverter's bytes for a whole Arrow array at once: the source side of the columnar path.

A :class:`~kopycat.api.record_batch.SourceRecordBatch` holds a table's rows as columns. Each field
becomes one StringArray of its JSON texts and ``binary_join_element_wise`` joins the envelope
head, the keys, the texts and the tail into every record's bytes, with no Python object per
record. The rule is the decoder's (:mod:`kopycat.converters.json_arrow`): identical or nothing.

- Arrow kernels write a text where Arrow's text is Jackson's: integers, booleans, Date, Time and
  Timestamp (their integers), and strings with nothing to escape (no quote, backslash, control
  character or character outside the BMP). A schema name that is not a Connect logical type
  (Debezium's ``io.debezium.time.MicroTimestamp``, ``io.debezium.data.Enum``) is written by its
  type, as Kafka's JsonConverter does.
- A string column with something to escape is written by one ``orjson.dumps`` of its list, fixed
  to Jackson's escapes as the record path fixes each value (:mod:`kopycat.converters._jsonformat`),
  and split back into texts by numpy: no Python call per value.
- Decimals (BASE64) whose unscaled values fit 64 bits are encoded with numpy, as Kafka's
  ``Decimal.fromLogical`` + Jackson's base64 would: the shortest two's-complement big-endian bytes.
- Everything else (doubles, floats, bytes, NUMERIC decimals) goes value by value
  through the record path's own encoder, :func:`kopycat.converters._jsoncodec.encoder`.
- A nested STRUCT is its fields' texts joined between constant pieces, as the top level is; its
  fields are read over its non-null values only (a null struct's children may hold anything).
  An ARRAY's and a MAP's elements are written once over the flattened values and joined per
  list by ``binary_join``; a map with a repeated key answers None.
- Nulls (top-level values included) become ``null`` or the field's default, as the record path
  writes them; a null in a required field without default answers None, and the runner converts
  record by record (which reports the bad value).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc

from kopycat.api.data import LOGICAL_TYPES, Date, Decimal, Schema, Time, Timestamp, Type
from kopycat.arrow_buffers import (
    MAX_OFFSET,
    bitmap,
    boolean_array,
    string_array,
    string_scalar,
    valid_mask,
)
from kopycat.converters._jsoncodec import Options, encoder
from kopycat.converters._jsonformat import fix_escapes, needs_fix
from kopycat.converters.base64_integers import base64_of_int64

__all__ = ["json_texts"]

_INTEGERS: Final = frozenset({Type.INT8, Type.INT16, Type.INT32, Type.INT64})
_AS_INTEGER: Final = {Date.LOGICAL_NAME: pa.int32(), Time.LOGICAL_NAME: pa.int32(),
                      Timestamp.LOGICAL_NAME: pa.int64()}
_NESTED: Final = frozenset({Type.STRUCT, Type.ARRAY, Type.MAP})
_QUOTE: Final = ord('"')
_BACKSLASH: Final = ord("\\")
_COMMA: Final = ord(",")


def _json(value: Any) -> str:
    """A JSON-ready value's text, with Jackson's escapes."""
    data = orjson.dumps(value)
    return (fix_escapes(data) if needs_fix(data) else data).decode()


def json_texts(schema: Schema, values: pa.Array, options: Options, head: str, tail: str) -> pa.Array | None:
    """``head + payload + tail`` for each value, as a BinaryArray; None where the record path must do it."""
    if schema.type is Type.STRUCT and not values.null_count:
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
        if isinstance(texts, _Unquoted):
            pieces = [head + '"', texts.texts, '"' + tail]
    return _joined(pieces, len(values)).view(pa.binary())  # the same layout: no kernel, no copy


def _joined(pieces: list[Any], count: int) -> pa.Array:
    """The constant texts and text columns of ``pieces`` joined value by value."""
    if len(pieces) == 1:  # a struct without fields: the same text for every value
        return string_array(pieces * count)
    return pc.binary_join_element_wise(*[string_scalar(p) if isinstance(p, str) else p for p in pieces],
                                       string_scalar(""))


def _struct_pieces(schema: Schema, values: pa.StructArray, options: Options) -> list[Any] | None:
    """``{"name":`` texts ``,"name2":`` texts ... ``}``: constant pieces between the field columns."""
    pieces: list[Any] = []
    prefix = "{"
    for index, field in enumerate(schema.fields):
        texts = _field_texts(field.schema, values.field(index), options)
        if texts is None:
            return None
        quote = '"' if isinstance(texts, _Unquoted) else ""
        pieces += [prefix + _json(field.name) + ":" + quote, texts.texts if quote else texts]
        prefix = quote + ","
    pieces.append(prefix[:-1] + "}" if pieces else "{}")
    return pieces


class _Unquoted:
    """Texts whose quotes go into the constant pieces around them (strings without nulls): one
    less join per column."""

    def __init__(self, texts: pa.Array) -> None:
        self.texts = texts


def _field_texts(schema: Schema, column: pa.Array, options: Options) -> pa.Array | _Unquoted | None:
    """The JSON text of each value of one column, nulls included (None: not identical here)."""
    if schema.type in _NESTED:
        return _nested_texts(schema, column, options)
    if schema.type is Type.STRING and schema.name not in LOGICAL_TYPES and not column.null_count:
        unquoted = _string_texts(column, quoted=False)
        return None if unquoted is None else _Unquoted(unquoted)
    texts = _fast_texts(schema, column, options)
    if texts is None:
        texts = _value_texts(encoder(schema, options), column)
    if not column.null_count:
        return texts
    null_text = _null_text(schema, options)
    return None if null_text is None else pc.fill_null(texts, string_scalar(null_text))


def _nested_texts(schema: Schema, column: pa.Array, options: Options) -> pa.Array | None:
    """A STRUCT's, ARRAY's or MAP's texts, built from its children's texts, with a null's text
    (its default or ``null``) where the column is null."""
    null_text = _null_text(schema, options) if column.null_count else None
    if column.null_count and null_text is None:
        return None
    if schema.type is Type.STRUCT:
        texts = _struct_texts(schema, column, options)
    elif schema.type is Type.ARRAY:
        texts = _array_texts(schema, column, options)
    else:
        texts = _map_texts(schema, column, options)
    if texts is None or null_text is None:
        return texts
    return pc.fill_null(texts, string_scalar(null_text))


def _struct_texts(schema: Schema, column: pa.StructArray, options: Options) -> pa.Array | None:
    """Each struct's ``{...}``, null where the column is null. The fields are read over the
    non-null structs only: a null struct's fields may hold anything (a null in a required field)."""
    if not column.null_count:
        pieces = _struct_pieces(schema, column, options)
        return None if pieces is None else _joined(pieces, len(column))
    valid = boolean_array(valid_mask(column))
    pieces = _struct_pieces(schema, column.filter(valid), options)
    if pieces is None:
        return None
    texts = _joined(pieces, len(column) - column.null_count)
    return pc.replace_with_mask(pa.nulls(len(column), pa.string()), valid, texts)


def _array_texts(schema: Schema, column: pa.Array, options: Options) -> pa.Array | None:
    """Each list's ``[a,b]``, null where the column is null: the elements' texts are made once
    over the flattened values (what the lists hold, honouring slices and null lists)."""
    if not (pa.types.is_list(column.type) or pa.types.is_large_list(column.type)):
        return None
    items = _texts(schema.value_schema, column.flatten(), options)
    return None if items is None else _bracketed(column, items, "[", "]")


def _map_texts(schema: Schema, column: pa.Array, options: Options) -> pa.Array | None:
    """Each map as the record path writes it (Kafka's ``convertToJson``): ``{"k":v}`` for STRING
    keys, ``[[k,v]]`` pairs for others. None where a map repeats a key (the record path's dict
    keeps one of them) and for float keys (the dict merges 0.0 and -0.0, Arrow's grouping does not)."""
    if not pa.types.is_map(column.type) or schema.key_schema.type in (Type.FLOAT32, Type.FLOAT64):
        return None
    offsets = np.frombuffer(column.buffers()[1], np.int32, len(column) + 1, column.offset * 4).copy()
    nulls = boolean_array(~valid_mask(column)) if column.null_count else None
    offset_array = pa.Array.from_buffers(pa.int32(), len(offsets), [None, pa.py_buffer(offsets)])
    lists = pa.ListArray.from_arrays(offset_array, column.values, mask=nulls)  # a map's flatten has no kernel
    entries = lists.flatten()
    keys, values = entries.field(0), entries.field(1)
    if _repeats_a_key(lists, keys):
        return None
    key_texts, value_texts = _texts(schema.key_schema, keys, options), _texts(schema.value_schema, values, options)
    if key_texts is None or value_texts is None:
        return None
    if schema.key_schema.type is Type.STRING:
        pairs = pc.binary_join_element_wise(key_texts, value_texts, string_scalar(":"))
        return _bracketed(lists, pairs, "{", "}")
    pairs = pc.binary_join_element_wise(string_scalar("["), key_texts, string_scalar(","), value_texts,
                                        string_scalar("]"), string_scalar(""))
    return _bracketed(lists, pairs, "[", "]")


def _texts(schema: Schema, column: pa.Array, options: Options) -> pa.Array | None:
    """:func:`_field_texts` with strings quoted: the texts of an array's or a map's parts."""
    texts = _field_texts(schema, column, options)
    if not isinstance(texts, _Unquoted):
        return texts
    quote = string_scalar('"')
    return pc.binary_join_element_wise(quote, texts.texts, quote, string_scalar(""))


def _bracketed(lists: pa.Array, items: pa.Array, opening: str, closing: str) -> pa.Array:
    """``opening + ",".join(list's item texts) + closing`` per list (``items`` holds the texts of
    ``lists.flatten()``), null where ``lists`` is null."""
    lengths = pc.fill_null(pc.list_value_length(lists), 0).to_numpy()
    offsets = np.zeros(len(lists) + 1, np.int64 if pa.types.is_large_list(lists.type) else np.int32)
    np.cumsum(lengths, out=offsets[1:])
    list_type = pa.large_list(pa.string()) if offsets.dtype == np.int64 else pa.list_(pa.string())
    grouped = pa.Array.from_buffers(list_type, len(lists), [_validity(lists), pa.py_buffer(offsets)],
                                    children=[items])
    joined = pc.binary_join(grouped, string_scalar(","))
    return pc.binary_join_element_wise(string_scalar(opening), joined, string_scalar(closing), string_scalar(""))


def _repeats_a_key(lists: pa.Array, keys: pa.Array) -> bool:
    """Whether any map holds a key twice (one hash grouping over (map index, key))."""
    if len(keys) < 2:
        return False
    lengths = pc.fill_null(pc.list_value_length(lists), 0).to_numpy()
    owners = np.repeat(np.arange(len(lists), dtype=np.int64), lengths)
    table = pa.table({"owner": pa.Array.from_buffers(pa.int64(), len(owners), [None, pa.py_buffer(owners)]),
                      "key": keys})
    try:
        return table.group_by(["owner", "key"]).aggregate([]).num_rows != len(keys)  # type: ignore[no-any-return]
    except pa.ArrowNotImplementedError:  # keys Arrow cannot group (nested types): the record path's
        return True


def _fast_texts(schema: Schema, column: pa.Array, options: Options) -> pa.Array | None:
    name = schema.name
    if name in _AS_INTEGER:
        return pc.cast(column.view(_AS_INTEGER[name]), pa.string())  # the integers as they are stored
    if name == Decimal.LOGICAL_NAME:
        return None if options.decimal_numeric else _decimal_texts(column)
    if name in LOGICAL_TYPES:
        return None
    if schema.type in _INTEGERS or schema.type is Type.BOOLEAN:
        return pc.cast(column, pa.string())
    if schema.type is Type.STRING:
        return _string_texts(column)
    return None


def _string_texts(column: pa.Array, quoted: bool = True) -> pa.Array | None:
    """The strings as JSON texts (quoted, or for :class:`_Unquoted` not): as they are when no
    string holds a byte Jackson escapes, else all at once by :func:`_escaped_texts`."""
    if _needs_escapes(column):
        return _escaped_texts(column, quoted)
    if not quoted:
        return column
    quote = string_scalar('"')
    return pc.binary_join_element_wise(quote, column, quote, string_scalar(""))


def _needs_escapes(column: pa.Array) -> bool:
    """Whether a string holds a byte Jackson escapes (a quote, a backslash, a control character)
    or starting a character outside the BMP (written as a surrogate pair), by one numpy pass over
    the UTF-8 bytes (a null's bytes, if any, count too: they only cost the exact path)."""
    start = column.offset
    offsets = np.frombuffer(column.buffers()[1], np.int32, len(column) + 1, start * 4)
    data = np.frombuffer(column.buffers()[2], np.uint8)[offsets[0]:offsets[-1]]
    return bool(((data < 0x20) | (data == _QUOTE) | (data == _BACKSLASH) | (data >= 0xF0)).any())


def _escaped_texts(column: pa.Array, quoted: bool) -> pa.Array | None:
    """Every string's text from one ``orjson.dumps`` of the column's list, fixed to Jackson's
    escapes once, then split back into a StringArray by numpy; None beyond int32 offsets.

    Nulls are written as empty strings and keep the column's validity (the caller fills in
    their text).
    """
    strings = pc.fill_null(column, string_scalar("")) if column.null_count else column
    data = orjson.dumps(strings.to_pylist())
    if needs_fix(data):
        data = fix_escapes(data)
    if len(data) > MAX_OFFSET:
        return None
    chars = np.frombuffer(data, np.uint8)
    opening, closing = _text_quotes(chars)
    keep = np.zeros(len(chars) + 1, np.int8)  # +1 at each text's start, -1 after its end
    keep[opening + (0 if quoted else 1)] += 1
    keep[closing + (1 if quoted else 0)] -= 1
    text = chars[np.cumsum(keep[:-1], dtype=np.int8).view(np.bool_)]
    offsets = np.zeros(len(column) + 1, np.int32)
    np.cumsum(closing - opening + (1 if quoted else -1), out=offsets[1:])
    return pa.Array.from_buffers(pa.string(), len(column),
                                 [_validity(column), pa.py_buffer(offsets), pa.py_buffer(text)])


def _text_quotes(chars: Any) -> tuple[Any, Any]:
    """The positions of each text's opening and closing quote in a JSON list of strings: the quotes
    not escaped, i.e. after an even run of backslashes (``chars[0]`` is the list's ``[``)."""
    positions = np.arange(len(chars), dtype=np.int32)
    last_other = np.maximum.accumulate(np.where(chars == _BACKSLASH, np.int32(0), positions))
    quotes = np.flatnonzero(chars == _QUOTE)
    unescaped = quotes[(quotes - 1 - last_other[quotes - 1]) % 2 == 0]
    return unescaped[0::2], unescaped[1::2]


def _value_texts(encode: Callable[[Any], Any] | None, column: pa.Array) -> pa.Array:
    """The slow path: the record path's encoder on each value."""
    values = column.to_pylist()
    if encode is None:
        texts = [None if value is None else _json(value) for value in values]
    else:
        texts = [None if value is None else _json(encode(value)) for value in values]
    return string_array(texts)


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
        valid = valid_mask(column)
        low, high = np.where(valid, low, 0), np.where(valid, high, 0)
    if not np.array_equal(high, low >> 63):
        return None
    base64, text_lengths = base64_of_int64(low)
    chars = np.empty((count, 14), np.uint8)  # the quote, 12 base64 characters at most, the quote
    chars[:, 0] = _QUOTE
    chars[:, 1:13] = base64
    chars[np.arange(count), text_lengths + 1] = _QUOTE
    offsets = np.zeros(count + 1, np.int32)
    np.cumsum(text_lengths + 2, out=offsets[1:])
    data = chars[np.arange(14) < (text_lengths + 2)[:, None]]
    return pa.Array.from_buffers(pa.string(), count, [_validity(column), pa.py_buffer(offsets), pa.py_buffer(data)])


def _validity(column: pa.Array) -> pa.Buffer | None:
    """A validity bitmap starting at bit 0 for a column's nulls (None without nulls)."""
    return bitmap(valid_mask(column)) if column.null_count else None

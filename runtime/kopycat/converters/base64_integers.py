"""int64 <-> base64 of big-endian two's-complement bytes, a column at a time with numpy.

Kafka Connect's JsonConverter writes a Decimal (``decimal.format=BASE64``) as the base64 of its
unscaled value's shortest two's-complement bytes (``Decimal.fromLogical``, Java's
``BigInteger.toByteArray``). Encoding or decoding them one value at a time (``int.to_bytes`` /
``a2b_base64`` then ``int.from_bytes``) is a Python call per decimal, slower than the rest of the
columnar paths; here a column takes a few array operations, for the JSON column writer and the
sink's JSON decoder.

Decoding (:func:`unscaled_int64`)
takes only canonical base64 of 1 to 8 bytes: length a multiple of 4 (4, 8 or 12), alphabet
characters, and at most two trailing ``=``. Anything else answers None and the caller decodes
value by value, where ``binascii.a2b_base64(strict_mode=True)`` decides; on the texts taken here
that function gives the same bytes (the unused low bits of the last character are ignored by both).
"""

from __future__ import annotations

from typing import Final

import numpy as np
import pyarrow as pa

from kopycat.arrow_buffers import valid_mask

__all__ = ["base64_of_int64", "unscaled_int64"]

_ALPHABET: Final = np.frombuffer(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/", np.uint8)
_PAD: Final = ord("=")
_PAIRS: Final = (_ALPHABET[np.arange(4096) >> 6].astype("<u2") | _ALPHABET[np.arange(4096) & 63].astype("<u2") << 8)
"""12 bits -> their two base64 characters, the first in the low byte (read back as bytes in order)."""
_HALF_SHIFTS: Final = np.array([52, 40, 28, 16, 4], np.uint64)
_BYTE_LIMITS: Final = np.array([(1 << (8 * k - 1)) - 1 for k in range(1, 8)], np.int64)
"""The largest magnitude (or ~value of a negative) that k two's-complement bytes hold, k = 1..7."""
_INVALID: Final = 255
_SEXTETS: Final = np.full(256, _INVALID, np.uint8)
_SEXTETS[_ALPHABET] = np.arange(64, dtype=np.uint8)
_SEXTETS[_PAD] = 0


def base64_of_int64(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each int64 as the base64 of its shortest two's-complement bytes: a (count, 12) matrix of
    characters (``=``-padded; what follows a text's end is undefined) and each text's length."""
    count = len(values)
    lengths = np.searchsorted(_BYTE_LIMITS, np.where(values < 0, ~values, values), side="left") + 1
    # The shortest bytes are the last ``length`` of the 8 big-endian ones: shifted to the front,
    # zeros follow, as base64 pads the last group.
    front = values.view(np.uint64) << ((8 - lengths) * 8).astype(np.uint64)
    # 72 bits (the 8 bytes and a zero byte) are six 12-bit halves, each two characters of _PAIRS.
    halves = np.empty((count, 6), np.uint64)
    halves[:, :5] = (front[:, None] >> _HALF_SHIFTS) & np.uint64(0xFFF)
    halves[:, 5] = (front & np.uint64(0xF)) << np.uint64(8)
    chars = _PAIRS[halves].view(np.uint8)
    text_lengths = (lengths + 2) // 3 * 4
    rows = np.arange(count)
    short = lengths % 3  # 1: the last two characters are padding, 2: the last one
    chars[rows[short != 0], text_lengths[short != 0] - 1] = _PAD
    chars[rows[short == 1], text_lengths[short == 1] - 2] = _PAD
    return chars, text_lengths


def unscaled_int64(column: pa.Array) -> np.ndarray | None:
    """Each string of ``column`` (a StringArray) as its int64 integer, nulls as 0; None if any is not taken.

    The texts are read as little-endian 32-bit words, one per 4-character group, and each half word
    (two characters) is looked up in a 65,536-entry table: two lookups per group, fewer array
    operations than gathering a character matrix and decoding it character by character. Every
    slot's length must be 0, 4, 8 or 12, nulls' too, so that the groups start at the data's start; a
    null's text, if any, must be base64 as well (pyarrow's readers leave nulls empty).
    """
    count = len(column)
    _, offset_buffer, data_buffer = column.buffers()
    offsets = np.frombuffer(offset_buffer, np.int32, count + 1, column.offset * 4)
    lengths = np.diff(offsets)
    valid = valid_mask(column)
    if (lengths & 3).any() or lengths.max(initial=0) > _MAX_TEXT or not lengths[valid].all():
        return None
    first, total = int(offsets[0]), int(offsets[-1] - offsets[0])
    result = np.zeros(count, np.int64)
    if not total:
        return result
    words = np.frombuffer(data_buffer, "<u4", total // 4, first)
    head, tail = _HEAD_PAIRS[words & 0xFFFF], _TAIL_PAIRS[words >> 16]
    if ((head | tail) & _BAD).any():
        return None
    pads = tail >> _PAD_SHIFT
    texts = np.flatnonzero(lengths)
    last = (offsets[texts + 1] - first) // 4 - 1  # each text's last group
    if int(pads.sum()) != int(pads[last].sum()):  # "=" only in a text's last group
        return None
    rows = valid[texts]
    valued = texts[rows]  # the texts of non-null slots
    decoded = _texts_value(head.astype(np.uint64) << np.uint64(12) | (tail & _SEXTET_PAIR), pads,
                           last[rows], lengths[valued] // 4)
    if decoded is None:
        return None
    result[valued] = decoded
    return result


def _texts_value(groups: np.ndarray, pads: np.ndarray, last: np.ndarray, counts: np.ndarray) -> np.ndarray | None:
    """Texts of 1 to 3 groups (24 bits each, ``last`` the index of each text's last) as signed integers.

    A text's groups are placed from the top of 64 bits down (three groups are 72 bits: a text of at
    most 8 bytes then has padding in its last byte, which falls off), and an arithmetic shift right
    by 64 minus the text's bits drops the padding and extends the sign. None when a text holds more
    than 8 bytes.
    """
    sizes = 3 * counts - pads[last]  # the bytes each text holds
    if (sizes > 8).any():
        return None
    top = np.uint64(40)
    placed = groups[last] << (top - np.uint64(24) * (counts - 1).astype(np.uint64))  # 1: << 40, 2: << 16
    two, three = counts > 1, counts > 2
    if two.any():
        before = groups[last - 1] << top
        if three.any():
            before = np.where(three, before >> np.uint64(24) | groups[last - 2] << top, before)
            placed = np.where(three, groups[last] >> np.uint64(8), placed)
        placed |= np.where(two, before, np.uint64(0))
    return placed.view(np.int64) >> (64 - 8 * sizes).astype(np.int64)


def _pair_tables() -> tuple[np.ndarray, np.ndarray]:
    """Half-word (two characters, the first in the low byte) -> 12 bits, for a group's head and tail.

    A tail also takes ``x=`` (one padding character) and ``==`` (two), their count above the 12
    bits; ``=`` anywhere else, or a character outside the alphabet, is :data:`_BAD`.
    """
    pair = np.arange(1 << 16)
    first, second = _SEXTETS[pair & 0xFF].astype(np.uint16), _SEXTETS[pair >> 8].astype(np.uint16)
    first_pad, second_pad = (pair & 0xFF) == _PAD, (pair >> 8) == _PAD
    bad = (first == _INVALID) | (second == _INVALID)
    value = np.where(bad, 0, first << 6 | second).astype(np.uint16)
    head = np.where(bad | first_pad | second_pad, _BAD, value).astype(np.uint16)
    tail_pads = np.where(first_pad & second_pad, 2, np.where(second_pad, 1, 0)).astype(np.uint16)
    tail_bad = bad | (first_pad & ~second_pad)
    tail = np.where(tail_bad, _BAD, value | tail_pads << _PAD_SHIFT).astype(np.uint16)
    return head, tail


_MAX_TEXT: Final = 12
"""Base64 of 7-9 bytes; 9 bytes never fit int64 in shortest form, and are refused."""
_SEXTET_PAIR: Final = np.uint16(0xFFF)
_PAD_SHIFT: Final = np.uint16(12)
_BAD: Final = np.uint16(0x8000)
_HEAD_PAIRS, _TAIL_PAIRS = _pair_tables()

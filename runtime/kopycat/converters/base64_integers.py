"""int64 <-> base64 of big-endian two's-complement bytes, a column at a time with numpy.

Kafka Connect's JsonConverter writes a Decimal (``decimal.format=BASE64``) as the base64 of its
unscaled value's shortest two's-complement bytes (``Decimal.fromLogical``, Java's
``BigInteger.toByteArray``). Encoding or decoding them one value at a time (``int.to_bytes`` /
``a2b_base64`` then ``int.from_bytes``) cost the columnar paths about 1 µs per decimal; here a
column takes a few array operations, for the JSON column writer and the sink's JSON decoder.

Decoding (:func:`unscaled_int64`)
takes only canonical base64 of 1 to 8 bytes: length a multiple of 4 (4, 8 or 12), alphabet
characters, and at most two trailing ``=``. Anything else answers None and the caller decodes
value by value, where ``binascii.a2b_base64(strict_mode=True)`` decides; on the texts taken here
that function gives the same bytes (the unused low bits of the last character are ignored by both).
"""

from __future__ import annotations

from typing import Any, Final

import numpy as np
import pyarrow as pa

from kopycat.arrow_buffers import valid_mask

__all__ = ["base64_of_int64", "unscaled_int64"]

_ALPHABET: Final = np.frombuffer(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/", np.uint8)
_PAD: Final = ord("=")
_BYTE_LIMITS: Final = np.array([(1 << (8 * k - 1)) - 1 for k in range(1, 8)], np.int64)
"""The largest magnitude (or ~value of a negative) that k two's-complement bytes hold, k = 1..7."""
_INVALID: Final = 255
_SEXTETS: Final = np.full(256, _INVALID, np.uint8)
_SEXTETS[_ALPHABET] = np.arange(64, dtype=np.uint8)
_SEXTETS[_PAD] = 0
_TEXT_LENGTHS: Final = (4, 8, 12)
"""Base64 lengths of 1-3, 4-6 and 7-9 bytes; 9 bytes never fit int64 in shortest form, and are refused."""


def base64_of_int64(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each int64 as the base64 of its shortest two's-complement bytes: a (count, 12) matrix of
    characters (``=``-padded; what follows a text's end is undefined) and each text's length."""
    count = len(values)
    lengths = np.searchsorted(_BYTE_LIMITS, np.where(values < 0, ~values, values), side="left") + 1
    # The shortest bytes are the last ``length`` of the 8 big-endian ones: shifted to the front,
    # zeros follow, as base64 pads the last group.
    front = values.view(np.uint64) << ((8 - lengths) * 8).astype(np.uint64)
    octets = np.zeros((count, 9), np.uint8)
    octets[:, :8] = front.astype(">u8").view(np.uint8).reshape(count, 8)
    triples = octets.reshape(count, 3, 3).astype(np.uint32)
    bits = (triples[..., 0] << 16) | (triples[..., 1] << 8) | triples[..., 2]
    chars = _ALPHABET[np.stack([(bits >> shift) & 63 for shift in (18, 12, 6, 0)], axis=-1).reshape(count, 12)]
    text_lengths = (lengths + 2) // 3 * 4
    rows = np.arange(count)
    short = lengths % 3  # 1: the last two characters are padding, 2: the last one
    chars[rows[short != 0], text_lengths[short != 0] - 1] = _PAD
    chars[rows[short == 1], text_lengths[short == 1] - 2] = _PAD
    return chars, text_lengths


def unscaled_int64(column: pa.Array) -> np.ndarray | None:
    """Each string of ``column`` (a StringArray) as its int64 integer, nulls as 0; None if any is not taken."""
    count = len(column)
    _, offset_buffer, data_buffer = column.buffers()
    offsets = np.frombuffer(offset_buffer, np.int32, count + 1, column.offset * 4)
    lengths = np.diff(offsets)
    valid = valid_mask(column)
    if not np.isin(lengths[valid], _TEXT_LENGTHS).all():
        return None
    data = np.frombuffer(data_buffer, np.uint8) if data_buffer is not None else np.empty(0, np.uint8)
    result = np.zeros(count, np.int64)
    for length in _TEXT_LENGTHS:
        rows = np.flatnonzero(valid & (lengths == length))
        if len(rows):
            decoded = _decoded(data[offsets[rows, None] + np.arange(length)])
            if decoded is None:
                return None
            result[rows] = decoded
    return result


def _decoded(texts: Any) -> np.ndarray | None:
    """Rows of base64 characters (all one length) as signed big-endian integers; None if any is not taken."""
    sextets = _SEXTETS[texts]
    if (sextets == _INVALID).any():
        return None
    pads = texts == _PAD
    padding = pads[:, -1].astype(np.int64) + pads[:, -2]
    if pads[:, :-2].any() or (pads[:, -2] & ~pads[:, -1]).any():  # "=" only at the end, "=x" never
        return None
    groups = sextets.astype(np.uint32).reshape(len(texts), -1, 4)
    words = (groups[:, :, 0] << 18) | (groups[:, :, 1] << 12) | (groups[:, :, 2] << 6) | groups[:, :, 3]
    octets = np.stack([(words >> 16) & 0xFF, (words >> 8) & 0xFF, words & 0xFF], axis=2).reshape(len(texts), -1)
    sizes = octets.shape[1] - padding  # the bytes each text holds
    if (sizes > 8).any():
        return None
    kept = min(octets.shape[1], 8)
    head = np.zeros(len(texts), np.uint64)
    for index in range(kept):
        head = (head << np.uint64(8)) | octets[:, index].astype(np.uint64)
    unsigned = head >> ((kept - sizes) * 8).astype(np.uint64)  # the first ``sizes`` bytes, big-endian
    bits = (sizes * 8).astype(np.uint64)
    negative = (unsigned >> (bits - np.uint64(1))) & np.uint64(1)
    # sign extension: subtract 2**bits from negatives (for 64 bits the uint64 wraps to the same int64)
    extended = unsigned - (negative << np.minimum(bits, np.uint64(63)) << (bits == 64).astype(np.uint64))
    return extended.view(np.int64)

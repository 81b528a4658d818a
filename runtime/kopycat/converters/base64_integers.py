"""Base64 texts of big-endian two's-complement integers to int64, a column at a time with numpy.

Kafka Connect's JsonConverter writes a Decimal (``decimal.format=BASE64``) as the base64 of its
unscaled value's shortest two's-complement bytes (``Decimal.fromLogical``). Decoding them one
value at a time (``a2b_base64`` then ``int.from_bytes``) cost the columnar sink path about 1 µs
per decimal. Here every value of one text length is decoded in a few array operations.

Only canonical base64 of 1 to 8 bytes is taken: length a multiple of 4 (4, 8 or 12), alphabet
characters, and at most two trailing ``=``. Anything else answers None and the caller decodes
value by value, where ``binascii.a2b_base64(strict_mode=True)`` decides; on the texts taken here
that function gives the same bytes (the unused low bits of the last character are ignored by both).
"""

from __future__ import annotations

from typing import Any, Final

import numpy as np
import pyarrow as pa

from kopycat.arrow_buffers import valid_mask

__all__ = ["unscaled_int64"]

_ALPHABET: Final = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
_PAD: Final = ord("=")
_INVALID: Final = 255
_SEXTETS: Final = np.full(256, _INVALID, np.uint8)
_SEXTETS[np.frombuffer(_ALPHABET, np.uint8)] = np.arange(64, dtype=np.uint8)
_SEXTETS[_PAD] = 0
_TEXT_LENGTHS: Final = (4, 8, 12)
"""Base64 lengths of 1-3, 4-6 and 7-9 bytes; 9 bytes never fit int64 in shortest form, and are refused."""


def unscaled_int64(column: pa.Array) -> np.ndarray | None:
    """Each string of ``column`` (a StringArray) as its int64 integer, nulls as 0; None if any is not taken."""
    count = len(column)
    offsets = np.frombuffer(column.buffers()[1], np.int32, count + 1, column.offset * 4)
    lengths = np.diff(offsets)
    valid = valid_mask(column)
    if not np.isin(lengths[valid], _TEXT_LENGTHS).all():
        return None
    data = np.frombuffer(column.buffers()[2], np.uint8) if column.buffers()[2] is not None else np.empty(0, np.uint8)
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

"""Arrow arrays built straight from buffers, for the columnar paths.

``pa.array`` and ``pa.scalar`` of Python values make pyarrow import pandas (half a second, a
tenth of a short run) the first time, and convert value by value. The columnar converters and
sources build their arrays from joined bytes, lengths and numpy masks here instead.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Final

import numpy as np
import pyarrow as pa

__all__ = ["bitmap", "boolean_array", "string_array", "string_scalar", "valid_mask", "variable_array"]

MAX_OFFSET: Final = (1 << 31) - 1
"""The bytes a string or binary array's int32 offsets address."""


def bitmap(mask: Any) -> pa.Buffer:
    """A validity (or boolean) bitmap of a numpy bool array, bit 0 first."""
    return pa.py_buffer(np.packbits(mask, bitorder="little"))


def valid_mask(column: pa.Array) -> Any:
    """A numpy bool array, True where ``column`` holds a value: its validity bitmap unpacked.

    ``np.asarray(column.is_valid())`` would convert a BooleanArray, which imports pandas.
    """
    count = len(column)
    validity = column.buffers()[0]
    if validity is None:
        return np.ones(count, np.bool_)
    bits = np.unpackbits(np.frombuffer(validity, np.uint8), count=column.offset + count, bitorder="little")
    return bits[column.offset:].astype(np.bool_)


def boolean_array(mask: Any) -> pa.Array:
    """A BooleanArray of a numpy bool array."""
    return pa.Array.from_buffers(pa.bool_(), len(mask), [None, bitmap(mask)])


def variable_array(arrow_type: pa.DataType, data: bytes, lengths: Iterable[int], count: int,
                   validity: pa.Buffer | None = None) -> pa.Array | None:
    """A string or binary array over ``data``, value i being the next ``lengths[i]`` bytes; None
    when ``data`` is beyond what int32 offsets address."""
    if len(data) > MAX_OFFSET:
        return None
    offsets = np.zeros(count + 1, np.int32)  # a C loop over the lengths, not an int object per sum
    np.cumsum(np.fromiter(lengths, np.int32, count), dtype=np.int32, out=offsets[1:])
    return pa.Array.from_buffers(arrow_type, count, [validity, pa.py_buffer(offsets), pa.py_buffer(data)])


def string_array(texts: Sequence[str | None]) -> pa.Array:
    """A StringArray of Python strings (None: null); small arrays only (the slow paths' texts)."""
    encoded = [b"" if text is None else text.encode() for text in texts]
    validity = bitmap(np.array([text is not None for text in texts])) if None in texts else None
    array_ = variable_array(pa.string(), b"".join(encoded), map(len, encoded), len(texts), validity)
    assert array_ is not None, "string_array is for small arrays"
    return array_


def string_scalar(text: str) -> pa.Scalar:
    """A string scalar, built from buffers (see the module docstring)."""
    return string_array([text])[0]

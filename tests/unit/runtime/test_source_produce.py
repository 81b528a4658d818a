"""byte_count: bytes of a produced batch's values, read from the offsets buffer.

Checked against Arrow's own length kernel on the shapes converters hand the runner: sliced
arrays (a file's batches are slices of a chunk), nulls, large binary, UTF-8 strings viewed as binary,
empty.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from kopycat.runtime.source_produce import byte_count

ARRAYS = {
    "binary": pa.array([b"ab", b"cde", b"f"]),
    "with nulls": pa.array([b"ab", None, b"cdef", None]),
    "sliced": pa.array([b"ab", b"cde", b"fghi", b"j"]).slice(1, 2),
    "sliced to the end": pa.array([b"ab", b"cde", b"fghi"]).slice(2),
    "large binary sliced": pa.array([b"ab", b"cde", b"fghi"], pa.large_binary()).slice(1),
    "utf-8 strings viewed as binary": pa.array(["é€", "x", "𝄞"]).view(pa.binary()).slice(1),
    "all empty values": pa.array([b"", b""]),
}


@pytest.mark.parametrize("values", ARRAYS.values(), ids=ARRAYS.keys())
def test_byte_count_equals_the_sum_of_value_lengths(values: pa.Array) -> None:
    assert byte_count(values) == (pc.sum(pc.binary_length(values)).as_py() or 0)


def test_byte_count_of_an_empty_array_is_zero() -> None:
    assert byte_count(pa.array([], pa.binary())) == 0
    assert byte_count(pa.array([b"abc"]).slice(1)) == 0

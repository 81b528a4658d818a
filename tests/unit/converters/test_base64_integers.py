"""base64_integers: numpy base64 of two's-complement int64s must equal Python's value-by-value codec."""

from __future__ import annotations

import base64
import binascii
import random

import numpy as np
import pyarrow as pa
import pytest

from kopycat.arrow_buffers import valid_mask
from kopycat.converters.base64_integers import base64_of_int64, unscaled_int64


def shortest_base64(number: int) -> str:
    """As Kafka's JsonConverter writes a Decimal's unscaled value (BigInteger.toByteArray, then base64)."""
    size = (number if number >= 0 else ~number).bit_length() // 8 + 1
    return base64.b64encode(number.to_bytes(size, "big", signed=True)).decode()


def python_decoded(text: str | None) -> int:
    if text is None:
        return 0
    return int.from_bytes(binascii.a2b_base64(text.encode(), strict_mode=True), "big", signed=True)


EDGES = [0, 1, -1, 127, 128, -128, -129, 32767, -32768, 2**31 - 1, -(2**31), 2**63 - 1, -(2**63)]


def test_every_byte_length_and_sign_decodes_as_python_does() -> None:
    rng = random.Random(7)
    numbers = EDGES + [rng.randint(-(2 ** (bits - 1)), 2 ** (bits - 1) - 1) for bits in range(1, 65) for _ in range(50)]
    texts: list[str | None] = [shortest_base64(n) for n in numbers]
    texts[5::17] = [None] * len(texts[5::17])
    column = pa.array(texts, pa.string())
    decoded = unscaled_int64(column)
    assert decoded is not None
    assert decoded.tolist() == [python_decoded(text) for text in texts]
    part = column.slice(11, 400)  # an offset into shared buffers
    assert unscaled_int64(part).tolist() == [python_decoded(text) for text in texts[11:411]]  # type: ignore[union-attr]


def test_unused_low_bits_of_the_last_character_are_ignored_as_python_does() -> None:
    texts = ["AB==", "AAB=", "/+==", "//8="]  # "B" leaves a 1 in bits no byte holds
    assert unscaled_int64(pa.array(texts, pa.string())).tolist() == [python_decoded(t) for t in texts]  # type: ignore[union-attr]


@pytest.mark.parametrize("odd", ["AAAA=", "A===", "=AAA", "AA=A", "AA A", "AA\nA", "AQIDBAUGBwgJ", "AA==AA==", "",
                                 "AAAAAAAAAAAA", "QUJD-A=="])
def test_texts_outside_canonical_base64_of_up_to_8_bytes_are_left_to_the_value_by_value_path(odd: str) -> None:
    assert unscaled_int64(pa.array(["AQ==", odd], pa.string())) is None


def with_null_text(text: bytes) -> pa.Array:
    """["AQ==", null, "Ag=="] where the null's slot still holds ``text`` (Arrow allows it)."""
    data = b"AQ==" + text + b"Ag=="
    offsets = np.array([0, 4, 4 + len(text), 8 + len(text)], np.int32)
    return pa.Array.from_buffers(pa.string(), 3, [pa.py_buffer(np.packbits([1, 0, 1], bitorder="little")),
                                                  pa.py_buffer(offsets), pa.py_buffer(data)], null_count=1)


def test_a_null_slot_holding_base64_decodes_to_zero_and_any_other_text_is_left_to_the_value_by_value_path() -> None:
    assert unscaled_int64(with_null_text(b"AAAA")).tolist() == [1, 0, 2]  # type: ignore[union-attr]
    assert unscaled_int64(with_null_text(b"AB")) is None  # the groups after it would be misread
    assert unscaled_int64(with_null_text(b"A?==")) is None


def test_a_column_of_nulls_decodes_to_zeros() -> None:
    assert unscaled_int64(pa.array([None, None], pa.string())).tolist() == [0, 0]  # type: ignore[union-attr]


def test_valid_mask_follows_the_bitmap_of_a_sliced_column() -> None:
    values = [None if i % 3 == 0 else i for i in range(37)]
    column = pa.array(values, pa.int64())
    assert valid_mask(column.slice(5, 20)).tolist() == [v is not None for v in values[5:25]]
    assert valid_mask(pa.array([1, 2], pa.int64())).tolist() == [True, True]


def test_encoding_writes_java_s_shortest_bytes_and_decoding_reads_them_back() -> None:
    rng = random.Random(11)
    numbers = EDGES + [rng.randint(-(2 ** (bits - 1)), 2 ** (bits - 1) - 1) for bits in range(1, 65) for _ in range(20)]
    chars, lengths = base64_of_int64(np.array(numbers, np.int64))
    texts = [bytes(row[:length]).decode() for row, length in zip(chars, lengths, strict=True)]
    assert texts == [shortest_base64(n) for n in numbers]
    assert unscaled_int64(pa.array(texts, pa.string())).tolist() == numbers  # type: ignore[union-attr]

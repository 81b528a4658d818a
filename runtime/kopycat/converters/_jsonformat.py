"""How Jackson (inside Kafka's JsonConverter) writes numbers and escapes strings.

orjson writes the same bytes as Jackson for ints, strings (raw UTF-8, the same short escapes)
and doubles between 10^-3 and 10^7 (both print the shortest round-tripping digits). It differs
on the rest, which this module fixes:

- doubles outside [10^-3, 10^7): Jackson calls ``Double.toString`` -> ``1.0E10``, ``1.0E-4``
  (orjson: ``1e+16``, ``0.0001``); NaN and infinities are written as the strings ``"NaN"``,
  ``"Infinity"``, ``"-Infinity"`` (Jackson's default ``WRITE_NAN_AS_STRINGS``);
- FLOAT32 values: ``Float.toString``, the shortest digits that identify the 32-bit float;
- Decimals with ``decimal.format=NUMERIC``: ``BigDecimal.toString`` (``1.56``, ``1E-10``, ``1E+3``);
- control characters without a short escape: Jackson writes ``\\u001F`` (upper case hex),
  orjson ``\\u001f``.

``Double.toString`` is taken as specified since JDK 19 (shortest digits; for one-digit results
the closest two-digit decimal), by :mod:`kopycat.java_numbers`.
"""

from __future__ import annotations

import math
import re
from typing import Any, Final

import orjson

from kopycat.java_numbers import java_double, java_float

__all__ = ["fix_escapes", "json_double", "json_float", "needs_fix"]

_Fragment: Final = orjson.Fragment
_NON_FINITE: Final = {math.inf: b'"Infinity"', -math.inf: b'"-Infinity"'}


def json_double(value: Any) -> Any:
    """A FLOAT64 value for orjson: the float itself where orjson writes Jackson's bytes."""
    if value.__class__ is float and (1e-3 <= value < 1e7 or -1e7 < value <= -1e-3 or value == 0):
        return value
    value = float(value)
    if value != value:
        return _Fragment(b'"NaN"')
    if value in _NON_FINITE:
        return _Fragment(_NON_FINITE[value])
    return _Fragment(java_double(value).encode())


def json_float(value: Any) -> Any:
    """A FLOAT32 value for orjson, written as ``Float.toString`` does."""
    text = java_float(float(value))
    return _Fragment(f'"{text}"'.encode() if text[-1] in "Ny" else text.encode())


_LOWER_HEX_ESCAPE: Final = re.compile(rb"(?<!\\)((?:\\\\)*)\\u00([01][a-f])")


_SUPPLEMENTARY: Final = re.compile(rb"[\xf0-\xf4][\x80-\xbf]{3}")


def _surrogate_pair(match: re.Match[bytes]) -> bytes:
    code = ord(match.group().decode("utf-8")) - 0x10000
    return b"\\u%04X\\u%04X" % (0xD800 + (code >> 10), 0xDC00 + (code & 0x3FF))


def needs_fix(data: bytes) -> bool:
    """Whether orjson's output differs from Jackson's: a ``\\u00XX`` escape or a non-ASCII byte."""
    return b"\\u00" in data or not data.isascii()


def fix_escapes(data: bytes) -> bytes:
    """Rewrite orjson's output into Jackson's where they differ.

    - ``\\u00XX`` escapes get upper-case hex, as Jackson writes them;
    - characters outside the BMP become escaped surrogate pairs (``\\uD83D\\uDE00``): Jackson's
      UTF8JsonGenerator writes them so unless COMBINE_UNICODE_SURROGATES_IN_UTF8 is on (off by
      default, also in Kafka Connect; checked against Kafka 4.1.1's JsonConverter). Outside
      strings JSON text is ASCII, so every 4-byte UTF-8 sequence is inside a string.
    """
    if b"\\u00" in data:
        data = _LOWER_HEX_ESCAPE.sub(lambda m: m.group(1) + b"\\u00" + m.group(2).upper(), data)
    if not data.isascii():
        data = _SUPPLEMENTARY.sub(_surrogate_pair, data)
    return data

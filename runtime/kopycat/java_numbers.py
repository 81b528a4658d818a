"""Numbers as Java prints them: ``Double.toString``, ``Float.toString``, ``BigDecimal.toString``.

Kafka Connect is Java, so where it turns a number into text (Jackson in JsonConverter, the Cast
transform's ``String.valueOf``, StringConverter) the text is Java's. These functions give the same
text from Python floats and unscaled decimals, for the converters and the transforms alike.

``Double.toString`` is taken as specified since JDK 19 (shortest digits; for one-digit results the
closest two-digit decimal). JDK 17 prints longer, non-shortest digits for some values (checked
against Kafka 4.1.1 in tests/integration/test_json_converter_interop.py); both parse to the same number.
"""

from __future__ import annotations

import math
import struct

__all__ = ["f32", "java_big_decimal", "java_double", "java_float"]


def _format(negative: bool, digits: str, exponent: int) -> str:
    """Java's layout of ``d1.d2...dn x 10^exponent``: plain in [10^-3, 10^7), else ``d.dddEn``."""
    sign = "-" if negative else ""
    if -3 <= exponent < 7:
        if exponent >= 0:
            whole = digits[: exponent + 1].ljust(exponent + 1, "0")
            return f"{sign}{whole}.{digits[exponent + 1:] or '0'}"
        return f"{sign}0.{'0' * (-exponent - 1)}{digits}"
    return f"{sign}{digits[0]}.{digits[1:] or '0'}E{exponent}"


def _shortest(text: str) -> tuple[bool, str, int]:
    """Sign, significant digits (no trailing zeros) and exponent of a ``%e``/repr string."""
    negative = text.startswith("-")
    mantissa, _, exp = text.lstrip("-").partition("e")
    whole, _, fraction = mantissa.partition(".")
    digits = (whole + fraction).lstrip("0")
    exponent = (int(exp) if exp else 0) + len(whole.lstrip("0")) - 1
    if not whole.lstrip("0"):  # 0.000123 -> exponent from the leading zeros of the fraction
        exponent = (int(exp) if exp else 0) - (len(fraction) - len(fraction.lstrip("0"))) - 1
    return negative, digits.rstrip("0") or "0", exponent


def java_double(x: float) -> str:
    """``Double.toString(x)`` (JDK 19+)."""
    if x != x:
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    if x == 0:
        return "-0.0" if math.copysign(1.0, x) < 0 else "0.0"
    negative, digits, exponent = _shortest(repr(x))
    if len(digits) == 1:  # Java then picks the closest of the two-digit decimals
        negative, digits, exponent = _shortest(f"{x:.1e}")
    return _format(negative, digits, exponent)


def f32(x: float) -> float:
    """``x`` rounded to the nearest 32-bit float (Java's ``(float) x``); too large gives infinity."""
    try:
        return struct.unpack("<f", struct.pack("<f", x))[0]  # type: ignore[no-any-return]
    except OverflowError:
        return math.copysign(math.inf, x)


def java_float(x: float) -> str:
    """``Float.toString((float) x)``: shortest digits that identify the 32-bit float."""
    single = f32(x)
    if single != single or math.isinf(single) or single == 0:
        return java_double(single)
    for places in range(9):
        text = f"{single:.{places}e}"
        if f32(float(text)) == single:
            break
    if places == 0:
        text = f"{single:.1e}"
    return _format(*_shortest(text))


def java_big_decimal(unscaled: int, scale: int) -> str:
    """``BigDecimal.toString()`` of ``unscaled x 10^-scale`` (what Jackson writes for NUMERIC)."""
    coefficient = str(abs(unscaled))
    sign = "-" if unscaled < 0 else ""
    adjusted = -scale + len(coefficient) - 1
    if scale >= 0 and adjusted >= -6:
        if scale == 0:
            return sign + coefficient
        if len(coefficient) > scale:
            return f"{sign}{coefficient[:-scale]}.{coefficient[-scale:]}"
        return f"{sign}0.{'0' * (scale - len(coefficient))}{coefficient}"
    mantissa = coefficient[0] + ("." + coefficient[1:] if len(coefficient) > 1 else "")
    return f"{sign}{mantissa}E{'+' if adjusted > 0 else ''}{adjusted}"

"""Java semantics the SMTs' configs and results depend on, rebuilt for Python.

Kafka's configs are written for Java: regexes for ``java.util.regex.Pattern``, replacements
with ``$1`` group references (``Matcher.replaceFirst``), timestamp formats for
``java.text.SimpleDateFormat``, and Cast's results follow Java's numeric conversions
(``(byte) 300 == 44``, ``(int) 1e20 == Integer.MAX_VALUE``). This module translates the first
three and reproduces the last, so a connector config moved from Kafka Connect behaves the same.
Private to :mod:`kopycat.transforms`.
"""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Callable
from decimal import Decimal
from typing import Any, Final

from kopycat.api.config import Validator
from kopycat.api.errors import ConfigError

__all__ = [
    "JavaRegex", "SimpleDateFormat", "compile_java_regex", "date_format_for", "java_int",
    "java_replacement", "parse_java_double", "parse_java_int", "saturate", "wrap",
]

# --- regular expressions -------------------------------------------------------------------

_NAMED_GROUP: Final = re.compile(r"\(\?<(?![=!])")
_QUOTED: Final = re.compile(r"\\Q(.*?)(?:\\E|$)", re.DOTALL)


def translate_java_regex(pattern: str) -> str:
    """A Java regex as Python's ``re`` reads it.

    Java and Python agree on the common syntax (classes, quantifiers, anchors, possessive
    quantifiers and atomic groups since Python 3.11); this rewrites the two differences users
    meet in topic patterns: named groups ``(?<name>...)`` and ``\\Q...\\E`` quoting.
    """
    pattern = _QUOTED.sub(lambda m: re.escape(m.group(1)), pattern)
    return _NAMED_GROUP.sub("(?P<", pattern)


def compile_java_regex(pattern: str) -> re.Pattern[str]:
    """Compile a Java regex (see :func:`translate_java_regex`); raises ``re.error``."""
    return re.compile(translate_java_regex(pattern))


class JavaRegex(Validator):
    """The value must compile as a regex (Kafka's ``util.RegexValidator``), read as Java's."""

    def ensure_valid(self, name: str, value: Any) -> None:
        if value is None:
            return
        try:
            compile_java_regex(value)
        except (re.error, TypeError) as exc:
            raise ConfigError.for_key(name, value, f"Invalid regex: {exc}") from None

    def __str__(self) -> str:
        return "valid regex"


def java_replacement(replacement: str, pattern: re.Pattern[str]) -> Callable[[re.Match[str]], str]:
    """``Matcher.replaceFirst(replacement)``'s expansion of ``$1``, ``${name}`` and ``\\x``.

    As in Java, ``$12`` means group 12 only if the pattern has that many groups (else group 1
    then a literal ``2``), a group that did not participate adds nothing, and a reference to a
    group that does not exist is an error (raised here, at configure time).
    """
    parts: list[str | int] = []
    literal: list[str] = []
    i, n = 0, len(replacement)
    while i < n:
        char = replacement[i]
        if char == "\\":
            i += 1
            if i == n:
                raise ValueError("character to be escaped is missing")
            literal.append(replacement[i])
            i += 1
        elif char == "$":
            i += 1
            if i == n:
                raise ValueError("Illegal group reference: group index is missing")
            if literal:
                parts.append("".join(literal))
                literal = []
            if replacement[i] == "{":
                end = replacement.find("}", i)
                if end < 0:
                    raise ValueError("named capturing group is missing trailing '}'")
                name = replacement[i + 1:end]
                if name not in pattern.groupindex:
                    raise ValueError(f"No group with name {{{name}}}")
                parts.append(pattern.groupindex[name])
                i = end + 1
            else:
                if not replacement[i].isdigit():
                    raise ValueError("Illegal group reference")
                group = int(replacement[i])
                if group > pattern.groups:
                    raise ValueError(f"No group {group}")
                i += 1
                while i < n and replacement[i].isdigit() and group * 10 + int(replacement[i]) <= pattern.groups:
                    group = group * 10 + int(replacement[i])
                    i += 1
                parts.append(group)
        else:
            literal.append(char)
            i += 1
    if literal:
        parts.append("".join(literal))
    frozen = tuple(parts)

    def expand(match: re.Match[str]) -> str:
        return "".join(p if isinstance(p, str) else (match.group(p) or "") for p in frozen)
    return expand


# --- SimpleDateFormat --------------------------------------------------------------------

_MONTHS: Final = ("January", "February", "March", "April", "May", "June", "July", "August",
                  "September", "October", "November", "December")
_DAYS: Final = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_MS_PER_DAY: Final = 86_400_000
_EPOCH: Final = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)


def _number(get: Callable[[_dt.datetime], int], width: int) -> Callable[[_dt.datetime], str]:
    return lambda d: str(get(d)).zfill(width)


def _text(get: Callable[[_dt.datetime], str]) -> Callable[[_dt.datetime], str]:
    return get


def _letter(letter: str, count: int) -> tuple[Callable[[_dt.datetime], str], int]:
    """The formatter of a run of ``count`` pattern letters, and its resolution in ms."""
    day, hour, minute, second = _MS_PER_DAY, 3_600_000, 60_000, 1000
    if letter == "y":
        if count == 2:
            return (lambda d: str(d.year % 100).zfill(2)), day
        return _number(lambda d: d.year, count), day
    if letter in "ML":
        if count >= 4:
            return _text(lambda d: _MONTHS[d.month - 1]), day
        if count == 3:
            return _text(lambda d: _MONTHS[d.month - 1][:3]), day
        return _number(lambda d: d.month, count), day
    numbers: dict[str, tuple[Callable[[_dt.datetime], int], int]] = {
        "d": (lambda d: d.day, day),
        "D": (lambda d: d.timetuple().tm_yday, day),
        "u": (lambda d: d.isoweekday(), day),
        "H": (lambda d: d.hour, hour),
        "k": (lambda d: d.hour or 24, hour),
        "K": (lambda d: d.hour % 12, hour),
        "h": (lambda d: d.hour % 12 or 12, hour),
        "m": (lambda d: d.minute, minute),
        "s": (lambda d: d.second, second),
        "S": (lambda d: d.microsecond // 1000, 1),
    }
    if letter in numbers:
        get, resolution = numbers[letter]
        return _number(get, count), resolution
    if letter == "E":
        return _text(lambda d: _DAYS[d.weekday()] if count >= 4 else _DAYS[d.weekday()][:3]), day
    if letter == "a":
        return _text(lambda d: "AM" if d.hour < 12 else "PM"), hour
    if letter == "G":
        return _text(lambda d: "AD"), day
    if letter == "z":
        name = "Coordinated Universal Time" if count >= 4 else "UTC"
        return _text(lambda d: name), day
    if letter == "Z":
        return _text(lambda d: "+0000"), day
    if letter == "X":
        return _text(lambda d: "Z"), day
    raise ValueError(f"Illegal or unsupported pattern character '{letter}'")


SUPPORTED_LETTERS: Final = "G y M L d D u E a H k K h m s S z Z X"


class SimpleDateFormat:
    """Formats epoch milliseconds as ``java.text.SimpleDateFormat(pattern)`` does in UTC.

    Supports the letters in :data:`SUPPORTED_LETTERS` (English names), quoted text (``'T'``)
    and ``''`` for a quote. Week-based letters (``Y w W F``) depend on Java's locale week rules
    and raise ``ValueError``, as an unknown letter does, when the pattern is compiled.
    ``resolution_ms`` is the finest unit the pattern shows: times in the same unit format alike.
    """

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        parts: list[Callable[[_dt.datetime], str] | str] = []
        tokens: list[tuple[str, int] | str] = []
        resolution = _MS_PER_DAY
        i, n = 0, len(pattern)
        while i < n:
            char = pattern[i]
            if char == "'":
                end = i + 1
                text: list[str] = []
                while True:
                    if end >= n:
                        raise ValueError(f"Unterminated quote in pattern {pattern!r}")
                    if pattern[end] == "'":
                        if end + 1 < n and pattern[end + 1] == "'":
                            text.append("'")
                            end += 2
                            continue
                        break
                    text.append(pattern[end])
                    end += 1
                parts.append("".join(text) if end > i + 1 else "'")
                tokens.append(parts[-1])  # type: ignore[arg-type]  # a literal
                i = end + 1
            elif ("a" <= char <= "z") or ("A" <= char <= "Z"):
                end = i
                while end < n and pattern[end] == char:
                    end += 1
                formatter, unit = _letter(char, end - i)
                parts.append(formatter)
                tokens.append((char, end - i))
                resolution = min(resolution, unit)
                i = end
            else:
                parts.append(char)
                tokens.append(char)
                i += 1
        self._parts = tuple(parts)
        self.tokens: tuple[tuple[str, int] | str, ...] = tuple(tokens)
        """The pattern as (letter, count) runs and literal texts, in order (what a parser reads)."""
        self.resolution_ms = resolution

    def format(self, epoch_ms: int) -> str:
        """The text for ``epoch_ms`` (a Java ``Date``) in UTC."""
        moment = _EPOCH + _dt.timedelta(milliseconds=epoch_ms)
        return "".join(p if isinstance(p, str) else p(moment) for p in self._parts)


_TIME_FORMAT: Final = SimpleDateFormat("HH:mm:ss.SSS'Z'")
_DATE_FORMAT: Final = SimpleDateFormat("yyyy-MM-dd")
_TIMESTAMP_FORMAT: Final = SimpleDateFormat("yyyy-MM-dd'T'HH:mm:ss.SSS'Z'")


def date_format_for(epoch_ms: int) -> str:
    """A ``java.util.Date`` as Kafka's ``Values.dateFormatFor(d).format(d)`` writes it, in UTC.

    Under a day: ``HH:mm:ss.SSS'Z'``; whole days: ``yyyy-MM-dd``; else ISO 8601 with ms.
    (Kafka formats in the worker's default time zone; workers in UTC, as is usual, agree.)
    """
    if epoch_ms < _MS_PER_DAY:
        return _TIME_FORMAT.format(epoch_ms)
    if epoch_ms % _MS_PER_DAY == 0:
        return _DATE_FORMAT.format(epoch_ms)
    return _TIMESTAMP_FORMAT.format(epoch_ms)


# --- numbers ------------------------------------------------------------------------------

def wrap(number: int, bits: int) -> int:
    """Java's narrowing of an integer to ``bits`` bits: keep the low bits, two's complement."""
    number &= (1 << bits) - 1
    return number - (1 << bits) if number >> (bits - 1) else number


def saturate(number: float, bits: int) -> int:
    """Java's ``(int)``/``(long)`` of a double: NaN is 0, out of range clamps, else truncates."""
    if number != number:
        return 0
    high = (1 << (bits - 1)) - 1
    if number >= high:
        return high
    if number <= -high - 1:
        return -high - 1
    return int(number)


def java_int(value: Any, bits: int) -> int:
    """``((Number) value).byteValue()`` ... ``longValue()`` for an int, float or Decimal.

    Floats go through ``int`` (or ``long`` for 64 bits) first, as Java's ``(byte) double`` does;
    Decimals truncate then keep the low bits (``BigDecimal.intValue``).
    """
    if isinstance(value, float):
        return wrap(saturate(value, 64 if bits == 64 else 32), bits)
    if isinstance(value, Decimal):
        if not value.is_finite():
            raise ValueError(f"{value} is not finite")
        return wrap(int(value), bits)
    return wrap(int(value), bits)


_INT_TEXT: Final = re.compile(r"[+-]?[0-9]+")
_DOUBLE_TEXT: Final = re.compile(
    r"[+-]?(?:NaN|Infinity|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?[fFdD]?)")


def parse_java_int(text: str, bits: int) -> int:
    """``Byte.parseByte`` ... ``Long.parseLong``: optional sign and ASCII digits, in range."""
    if not _INT_TEXT.fullmatch(text):
        raise ValueError(f'For input string: "{text}"')
    number = int(text)
    if not -(1 << (bits - 1)) <= number < (1 << (bits - 1)):
        raise ValueError(f'Value out of range. Value:"{text}"')
    return number


def parse_java_double(text: str) -> float:
    """``Double.parseDouble``: surrounding blanks, ``NaN``, ``Infinity`` and ``f``/``d`` allowed."""
    stripped = text.strip(" \t\n\r\f\v\x00")
    if not _DOUBLE_TEXT.fullmatch(stripped):
        raise ValueError(f'For input string: "{text}"')
    if stripped[-1] in "fFdD":
        stripped = stripped[:-1]
    return float(stripped)

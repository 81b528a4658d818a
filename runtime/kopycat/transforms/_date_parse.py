"""Parse text with a ``java.text.SimpleDateFormat`` pattern, in UTC, as TimestampConverter does.

How the Java pattern becomes Python: each run of a pattern letter becomes one regex group
(numbers as ``\\d+``, or exactly ``count`` digits when the next run is numeric too, as Java's
"abutting fields" rule reads ``yyyyMMdd``; month and day names in English, any case), quoted and
other characters match themselves. The groups then fill a calendar leniently, as Java's default
lenient ``SimpleDateFormat`` does (month 13 is January of the next year). Like Java's
``parse(String)``, the text must match from its start but may go on after the pattern ends.
Letters: G y M L d D u E a H k K h m s S z Z X (``yy`` reads a two-digit year within 80 years
before and 20 after now, as Java does). Private to :mod:`kopycat.transforms`.
"""

from __future__ import annotations

import datetime as _dt
import re
from typing import Final

from kopycat.transforms._java import SimpleDateFormat

__all__ = ["DateParser"]

_MONTHS: Final = ("january", "february", "march", "april", "may", "june", "july", "august", "september",
                  "october", "november", "december")
_DAYS: Final = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_NUMERIC: Final = frozenset("yMLdDuHkKhmsS")
_EPOCH: Final = _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)
_ZONE: Final = r"(?:Z|[+-]\d{2}(?::?\d{2})?|(?:GMT|UTC)(?:[+-]\d{1,2}(?::?\d{2})?)?)"


def _alternatives(names: tuple[str, ...]) -> str:
    choices = sorted({*names, *(name[:3] for name in names)}, key=len, reverse=True)
    return "(?i:" + "|".join(choices) + ")"


def _group(letter: str, count: int, abutting: bool) -> str:
    """The regex one run of ``letter`` reads."""
    if letter in _NUMERIC and not (letter in "ML" and count >= 3):
        return rf"(\d{{{count}}})" if abutting else r"(\d+)"
    if letter in "ML":
        return f"({_alternatives(_MONTHS)})"
    if letter == "E":
        return f"({_alternatives(_DAYS)})"
    if letter == "a":
        return "((?i:AM|PM))"
    if letter == "G":
        return "((?i:AD|BC))"
    return f"({_ZONE})"  # z Z X


def _zone_ms(text: str) -> int:
    """The offset a zone text names, in ms east of UTC."""
    match = re.search(r"([+-])(\d{1,2}):?(\d{2})?$", text)
    if match is None:
        return 0  # Z, UTC, GMT
    minutes = int(match.group(2)) * 60 + int(match.group(3) or 0)
    return (-1 if match.group(1) == "-" else 1) * minutes * 60_000


class DateParser:
    """Epoch milliseconds from text, for one SimpleDateFormat pattern (see the module doc)."""

    def __init__(self, pattern: SimpleDateFormat) -> None:
        self.pattern = pattern.pattern
        self._letters: list[tuple[str, int]] = []
        regex: list[str] = []
        tokens = pattern.tokens
        for index, token in enumerate(tokens):
            if isinstance(token, str):
                regex.append(re.escape(token))
                continue
            following = tokens[index + 1] if index + 1 < len(tokens) else None
            abutting = isinstance(following, tuple) and following[0] in _NUMERIC
            regex.append(_group(*token, abutting))
            self._letters.append(token)
        self._regex = re.compile("".join(regex))
        self._century_start = _dt.datetime.now(_dt.UTC).year - 80

    def parse(self, text: str) -> int:
        """The instant ``text`` names, in ms since the epoch; ValueError when it does not match."""
        match = self._regex.match(text)
        if match is None:
            raise ValueError(f"value ({text}) does not match pattern ({self.pattern})")
        fields = {"y": 1970, "M": 1, "d": 1, "H": 0, "h": 0, "m": 0, "s": 0, "S": 0, "D": 0, "zone": 0, "pm": -1}
        for (letter, count), value in zip(self._letters, match.groups(), strict=True):
            self._read(fields, letter, count, value)
        return self._epoch_ms(fields)

    def _read(self, fields: dict[str, int], letter: str, count: int, value: str) -> None:
        if letter == "y":
            year = int(value)
            if count == 2 and len(value) == 2:
                year += self._century_start // 100 * 100
                if year < self._century_start:
                    year += 100
            fields["y"] = year
        elif letter in "ML":
            fields["M"] = int(value) if value.isdigit() else [m[:3] for m in _MONTHS].index(value[:3].lower()) + 1
        elif letter in "dDmsS":
            fields[letter] = int(value)
        elif letter in "Hk":
            fields["H"] = int(value) % 24 if letter == "k" else int(value)
        elif letter in "Kh":
            fields["h"] = int(value) % 12
            fields["H"] = -1
        elif letter == "a":
            fields["pm"] = int(value.upper() == "PM")
        elif letter in "zZX":
            fields["zone"] = _zone_ms(value)

    @staticmethod
    def _epoch_ms(fields: dict[str, int]) -> int:
        hour = fields["H"]
        if hour < 0:  # a 12-hour clock field was read
            hour = fields["h"] + 12 * max(fields["pm"], 0)
        elif fields["pm"] == 1 and hour < 12:
            hour += 12
        year, month = fields["y"] + (fields["M"] - 1) // 12, (fields["M"] - 1) % 12 + 1
        start = _dt.datetime(year, month, 1, tzinfo=_dt.UTC)
        days = fields["D"] - 1 if fields["D"] else fields["d"] - 1
        if fields["D"]:
            start = start.replace(month=1)
        moment = start + _dt.timedelta(days=days, hours=hour, minutes=fields["m"], seconds=fields["s"],
                                       milliseconds=fields["S"])
        return (moment - _EPOCH) // _dt.timedelta(milliseconds=1) - fields["zone"]

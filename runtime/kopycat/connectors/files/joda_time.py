"""Joda-Time, as Confluent's TimeBasedPartitioner uses it: zone arithmetic and pattern printing.

``ZoneClock`` gives a zone's offset at an instant (cached per UTC hour without a transition) and
Joda's ``convertLocalToUTC(local, strict=false)``; ``time_bucket`` is ``getPartition``'s bucket
start; ``pattern_tokens`` and ``token_printer`` print a ``DateTimeFormat`` pattern the way Joda
does (English names only). Split from :mod:`.partitioners`, which builds the partitioners on it.
"""

from __future__ import annotations

import datetime as dt
import re
import zoneinfo
from collections.abc import Callable
from typing import Final

from kopycat.api.errors import DataError

__all__ = ["HOUR_MS", "UnsupportedPattern", "ZoneClock", "pattern_tokens", "time_bucket", "token_printer",
           "truncate_toward_zero", "zone_id"]

HOUR_MS: Final = 3_600_000
_CACHE_LIMIT: Final = 65_536
_UNSEEN: Final = -1  # no zone is 1 ms behind UTC: marks an hour not looked up yet


class UnsupportedPattern(ValueError):
    """A pattern Joda would print but Kopycat does not; ``key`` is ``pattern`` or ``locale``."""

    def __init__(self, key: str, reason: str) -> None:
        super().__init__(reason)
        self.key = key


def _offset_ms(zone: dt.tzinfo, utc_ms: int) -> int:
    try:
        offset = dt.datetime.fromtimestamp(utc_ms / 1000, zone).utcoffset()
    except (OverflowError, ValueError, OSError):
        raise DataError(f"timestamp {utc_ms} ms is outside years 1-9999") from None
    return (offset or dt.timedelta()) // dt.timedelta(milliseconds=1)


class ZoneClock:
    """A zone's offsets at UTC instants, cached per UTC hour that has no transition.

    Joda's ``convertUTCToLocal`` and ``convertLocalToUTC(local, strict=false)``.
    """

    def __init__(self, zone: dt.tzinfo) -> None:
        self.zone = zone
        self._fixed = None if isinstance(zone, zoneinfo.ZoneInfo) else _offset_ms(zone, 0)
        self._by_hour: dict[int, int | None] = {}

    def offset_ms(self, utc_ms: int) -> int:
        if self._fixed is not None:
            return self._fixed
        hour = utc_ms // HOUR_MS
        offset = self._by_hour.get(hour, _UNSEEN)
        if offset == _UNSEEN:
            first, last = (_offset_ms(self.zone, hour * HOUR_MS + at) for at in (0, HOUR_MS - 1))
            if len(self._by_hour) >= _CACHE_LIMIT:
                self._by_hour.clear()
            offset = self._by_hour[hour] = first if first == last else None
        return _offset_ms(self.zone, utc_ms) if offset is None else offset

    def local_to_utc(self, local_ms: int) -> int:
        """Joda's way; in a western zone's DST gap it keeps the first estimate, as Joda does.

        Joda compares ``nextTransition`` at both estimates: with transitions further apart than
        an offset change, the same as comparing the offsets there.
        """
        offset_local = self.offset_ms(local_ms)
        offset = self.offset_ms(local_ms - offset_local)
        in_gap = offset != offset_local and self.offset_ms(local_ms - offset) != offset
        if in_gap and offset_local < 0:
            offset = offset_local
        return local_ms - offset


def truncate_toward_zero(local_ms: int, duration_ms: int) -> int:
    """``local / d * d`` with Java's ``/``, which truncates toward zero."""
    quotient = local_ms // duration_ms if local_ms >= 0 else -(-local_ms // duration_ms)
    return quotient * duration_ms


def time_bucket(duration_ms: int, utc_ms: int, zone: dt.tzinfo) -> int:
    """Start (epoch ms) of the bucket holding ``utc_ms``: Confluent's ``getPartition``."""
    clock = ZoneClock(zone)
    return clock.local_to_utc(truncate_toward_zero(utc_ms + clock.offset_ms(utc_ms), duration_ms))


_MONTHS: Final = ("January", "February", "March", "April", "May", "June", "July", "August",
                  "September", "October", "November", "December")
_DAYS: Final = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_NUMBERS: Final[dict[str, Callable[[dt.datetime], int]]] = {
    "C": lambda t: t.year // 100, "d": lambda t: t.day, "H": lambda t: t.hour,
    "m": lambda t: t.minute, "s": lambda t: t.second, "D": lambda t: t.timetuple().tm_yday,
    "w": lambda t: t.isocalendar()[1], "e": lambda t: t.isoweekday(), "M": lambda t: t.month,
    "k": lambda t: t.hour or 24, "K": lambda t: t.hour % 12, "h": lambda t: t.hour % 12 or 12,
}
_YEARS: Final[dict[str, Callable[[dt.datetime], int]]] = {
    "y": lambda t: t.year, "Y": lambda t: t.year, "x": lambda t: t.isocalendar()[0]}
_TEXTS: Final[dict[str, Callable[[dt.datetime, int], str]]] = {
    "M": lambda t, n: _MONTHS[t.month - 1][:3] if n == 3 else _MONTHS[t.month - 1],
    "E": lambda t, n: _DAYS[t.weekday()][:3] if n <= 3 else _DAYS[t.weekday()],
    "a": lambda t, n: "AM" if t.hour < 12 else "PM", "G": lambda t, n: "AD",
}
_LETTER: Final = re.compile(r"[A-Za-z]")


def pattern_tokens(pattern: str) -> list[str]:
    """Joda's ``DateTimeFormat.parseToken``: runs of one letter, or ``'`` + literal text."""
    tokens, i = [], 0
    while i < len(pattern):
        if _LETTER.match(pattern, i):
            end = i + 1
            while end < len(pattern) and pattern[end] == pattern[i]:
                end += 1
            tokens.append(pattern[i:end])
            i = end
            continue
        text, quoted = ["'"], False
        while i < len(pattern) and (quoted or not _LETTER.match(pattern, i)):
            if pattern.startswith("''", i):
                text.append("'")
                i += 1
            elif pattern[i] == "'":
                quoted = not quoted
            else:
                text.append(pattern[i])
            i += 1
        tokens.append("".join(text))
    return tokens


def token_printer(token: str, pattern: str, locale: str, zone_id: str) -> Callable[[dt.datetime], str]:
    """How Joda prints one token (``DateTimeFormat.parsePatternTo``)."""
    letter, n = token[0], len(token)
    if letter == "'":
        return lambda t: token[1:]
    if letter in _YEARS:
        year = _YEARS[letter]
        return (lambda t: f"{year(t) % 100:02d}") if n == 2 else (lambda t: f"{year(t):0{n}d}")
    if letter in _NUMBERS and (letter != "M" or n <= 2):
        number = _NUMBERS[letter]
        return lambda t: f"{number(t):0{n}d}"
    if letter == "S":
        return lambda t: f"{t.microsecond // 1000:03d}"[:n].ljust(n, "0")
    if letter == "Z":
        return _offset_printer(n == 2) if n <= 2 else (lambda t: zone_id)
    if letter not in _TEXTS:
        raise UnsupportedPattern("pattern", f"pattern letter {letter!r} ({token}) is not supported; use "
                                 "quoted literals and y Y x C M d D w e E H k K h m s S a G Z")
    if re.split(r"[-_]", locale)[0].lower() != "en":
        raise UnsupportedPattern("locale", f"prints {token!r}, names only printed in English; "
                                 "use locale=en-US or numbers such as MM")
    text = _TEXTS[letter]
    return lambda t: text(t, n)


def _offset_printer(colon: bool) -> Callable[[dt.datetime], str]:
    """Joda's ``appendTimeZoneOffset("Z", colon, 2, 2)``: ``+0100``/``+01:00``, ``Z`` for 0."""
    def offset(t: dt.datetime) -> str:
        minutes = int((t.utcoffset() or dt.timedelta()).total_seconds()) // 60
        sign = "-" if minutes < 0 else "+"
        hours, minutes = divmod(abs(minutes), 60)
        return f"{sign}{hours:02d}{':' if colon else ''}{minutes:02d}" if hours or minutes else "Z"
    return offset


def zone_id(zone: dt.tzinfo) -> str:
    """What Joda's ``ZZZ`` prints: the zone's ID, ``UTC``, or a fixed offset as ``+01:00``."""
    if isinstance(zone, zoneinfo.ZoneInfo):
        return zone.key
    return "UTC" if zone is dt.UTC else _offset_printer(True)(dt.datetime.now(zone))

"""Time windows: how a task is told to copy exactly one data interval (Kopycat's, not Kafka's).

Airflow backfills re-copy a past data interval. The engine tells a task about the window by
two keys in its task config; a task that supports windows copies exactly the data whose time
is in ``[start_ms, end_ms)`` and the engine neither reads nor commits live offsets for that run,
so the scheduled runs resume where they were::

    window = TimeWindow.of(props)          # in SourceTask.start(props)
    if window is not None:
        query += " WHERE ts >= :start AND ts < :end"   # window.start_ms, window.end_ms

A task that does not look at these keys copies as usual (from no offsets, as the run is
offset-less): connectors that cannot window say so in their docs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kopycat.api.errors import ConfigError

__all__ = ["WINDOW_END_MS_CONFIG", "WINDOW_START_MS_CONFIG", "TimeWindow"]

WINDOW_START_MS_CONFIG = "kopycat.window.start.ms"
WINDOW_END_MS_CONFIG = "kopycat.window.end.ms"


@dataclass(frozen=True)
class TimeWindow:
    """A half-open interval ``[start_ms, end_ms)`` of epoch milliseconds (UTC)."""

    start_ms: int
    end_ms: int

    def __post_init__(self) -> None:
        if self.end_ms < self.start_ms:
            raise ConfigError.for_key(WINDOW_END_MS_CONFIG, self.end_ms,
                                      f"must not be before {WINDOW_START_MS_CONFIG}={self.start_ms}")

    def contains(self, timestamp_ms: int) -> bool:
        return self.start_ms <= timestamp_ms < self.end_ms

    def to_props(self) -> dict[str, str]:
        """The task config keys that carry this window."""
        return {WINDOW_START_MS_CONFIG: str(self.start_ms), WINDOW_END_MS_CONFIG: str(self.end_ms)}

    @classmethod
    def of(cls, props: Mapping[str, Any]) -> TimeWindow | None:
        """The window in a task config, or None for a normal (offset-resuming) run."""
        start, end = props.get(WINDOW_START_MS_CONFIG), props.get(WINDOW_END_MS_CONFIG)
        if start in (None, "") and end in (None, ""):
            return None
        if start in (None, "") or end in (None, ""):
            missing = WINDOW_START_MS_CONFIG if start in (None, "") else WINDOW_END_MS_CONFIG
            raise ConfigError.for_key(missing, None, "a window needs both its start and its end")
        return cls(_millis(WINDOW_START_MS_CONFIG, start), _millis(WINDOW_END_MS_CONFIG, end))


def _millis(key: str, value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        raise ConfigError.for_key(key, value, "must be epoch milliseconds (an integer)") from None

"""When a bounded run stops, and what it reports (DESIGN.md §4).

An Airflow mapped task is a *bounded* run of one Kopycat task: it resumes from stored offsets,
copies until a stop condition holds, commits and returns a :class:`RunSummary` (pushed to XCom).
The standalone worker runs the same runners unbounded. Kafka Connect has no bounded runs; the
conditions are Kopycat's:

- ``idle_ms``: a source whose ``poll`` returned nothing for this long has caught up;
- ``end_offsets``: a sink stops each partition at the offset planned (snapshotted at plan time),
  so a run copies a known range however much arrives meanwhile;
- ``window_end_ms``: a sink copies records with a timestamp before this (the data interval's end);
  it is turned into end offsets with ``offsets_for_times`` when the run starts;
- ``window_start_ms`` (with ``window_end_ms``): a *windowed* sink run (an Airflow backfill) of the
  records stamped inside ``[start, end)``: see kopycat.runtime.run_range.BackfillWindow;
- ``max_records`` / ``max_seconds``: budgets; the run stops at the next batch boundary past them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from enum import Enum
from typing import Any

from kopycat.api.errors import ConfigError
from kopycat.api.records import TopicPartition

__all__ = ["Bounds", "RunSummary", "StopReason", "StopWatch"]


class StopReason(Enum):
    """Why a run ended."""

    CAUGHT_UP = "caught_up"          # a source found nothing new for idle_ms
    END_OFFSETS = "end_offsets"      # a sink reached the planned end of every partition
    MAX_RECORDS = "max_records"
    MAX_SECONDS = "max_seconds"
    STOPPED = "stopped"              # stop() was called: shutdown, Ctrl-C, SIGTERM
    FAILED = "failed"


@dataclass(frozen=True)
class Bounds:
    """Stop conditions of a bounded run; all None (the default) means run until stopped."""

    max_records: int | None = None
    max_seconds: float | None = None
    idle_ms: int | None = None
    end_offsets: Mapping[TopicPartition, int] | None = None
    window_end_ms: int | None = None
    window_start_ms: int | None = None

    def __post_init__(self) -> None:
        for name in ("max_records", "max_seconds", "idle_ms", "window_end_ms", "window_start_ms"):
            value = getattr(self, name)
            if value is not None and value < 0:
                raise ConfigError.for_key(name, value, "must be zero or more, or None for no limit")
        start, end = self.window_start_ms, self.window_end_ms
        if start is not None and end is None:
            raise ConfigError.for_key("window_start_ms", start, "a window needs its end too: set window_end_ms")
        if start is not None and end is not None and end < start:
            raise ConfigError.for_key("window_end_ms", end, f"must not be before window_start_ms={start}")
        if start is not None and self.end_offsets is not None:
            raise ConfigError.for_key("end_offsets", dict(self.end_offsets),
                                      "a windowed run finds its offsets from the window: give one or the other")

    @property
    def windowed(self) -> bool:
        """A backfill of ``[window_start_ms, window_end_ms)``: no committed offsets read or written."""
        return self.window_start_ms is not None

    @property
    def bounded(self) -> bool:
        return any(v is not None for v in (self.max_records, self.max_seconds, self.idle_ms,
                                           self.end_offsets, self.window_end_ms))

    @classmethod
    def caught_up(cls, idle_ms: int = 1_000, **kwargs: Any) -> Bounds:
        """Run until the source has nothing new for ``idle_ms`` (the usual scheduled run)."""
        return cls(idle_ms=idle_ms, **kwargs)


class StopWatch:
    """Checks the record, time and idleness conditions after every batch. One per run."""

    def __init__(self, bounds: Bounds | None, clock: Callable[[], float] = time.monotonic,
                 on_batch: Callable[[int], None] | None = None) -> None:
        """``on_batch`` is told every batch's record count (the run's metrics record it there)."""
        self.bounds = bounds or Bounds()
        self.clock = clock
        self.on_batch = on_batch
        self.started = clock()
        self.records = 0
        self._last_data = self.started

    def after_batch(self, records: int) -> StopReason | None:
        """Count a batch (``records`` may be 0: nothing was ready) and say whether to stop."""
        if self.on_batch is not None:
            self.on_batch(records)
        now = self.clock()
        bounds = self.bounds
        if records:
            self.records += records
            self._last_data = now
        if bounds.max_records is not None and self.records >= bounds.max_records:
            return StopReason.MAX_RECORDS
        if bounds.max_seconds is not None and now - self.started >= bounds.max_seconds:
            return StopReason.MAX_SECONDS
        if bounds.idle_ms is not None and not records and (now - self._last_data) * 1000 >= bounds.idle_ms:
            return StopReason.CAUGHT_UP
        return None

    def touch(self) -> None:
        """Restart the idle clock: nothing can arrive yet (a sink still waiting for partitions)."""
        self._last_data = self.clock()

    def elapsed(self) -> float:
        return self.clock() - self.started


@dataclass
class RunSummary:
    """What one run of one task did; JSON-able through :meth:`to_dict` (Airflow XCom).

    ``offsets`` holds, per source partition (JSON text of the partition dict) or sink
    topic-partition (``topic-partition``), the committed offset before and after the run. A
    windowed sink run commits nothing: its ``before``/``after`` are the offset range it copied and
    ``committed`` the consumer group's offset, left as it was.
    ``topics`` are the topics a source wrote to (Airflow outlets / assets).
    ``metrics`` holds the run's Kafka Connect metrics at its end, by ``group.metric``
    (``source-task-metrics.source-record-write-total``: see kopycat.runtime.task_metrics).
    """

    connector: str
    task: int
    records: int = 0
    skipped: int = 0
    filtered: int = 0
    bytes: int = 0
    duration_s: float = 0.0
    start_s: float = 0.0
    """Of ``duration_s``, the start: clients made, partitions assigned, starting offsets read, the task
    started. The copy itself (``duration_s - start_s``) is timed from where a plain client loop's clock
    starts, once its client is made and ready (bench/)."""
    stop_reason: StopReason = StopReason.STOPPED
    offsets: dict[str, dict[str, Any]] = field(default_factory=dict)
    error: str | None = None
    topics: set[str] = field(default_factory=set)
    metrics: dict[str, Any] = field(default_factory=dict)

    def topics_used(self) -> set[str]:
        """The topics a source wrote to, or a sink consumed records from: KIP-558's active topics."""
        consumed = {entry["topic"] for entry in self.offsets.values()
                    if "topic" in entry and entry.get("after") is not None
                    and entry.get("after") != entry.get("before")}
        return self.topics | consumed

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["stop_reason"] = self.stop_reason.value
        data["topics"] = sorted(self.topics)
        return data

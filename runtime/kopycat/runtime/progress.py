"""Progress lines for long bounded runs: what an Airflow task log or the CLI shows while copying.

Kafka Connect reports through JMX metrics; a scheduled copy task is watched in its log, so a
line every ``interval_s`` says how far it got (records, records/s) without touching the hot path:
a daemon thread reads the runner's live :class:`RunSummary` counters.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from kopycat.runtime.bounds import RunSummary

__all__ = ["ProgressLogger"]

log = logging.getLogger(__name__)


class ProgressLogger:
    """Logs ``records``, overall and recent rates of a running task every ``interval_s``.

    ``remaining`` (optional) returns how much is left (sink lag), or None when unknown.
    Use as a context manager around the run.
    """

    def __init__(self, summary: RunSummary, interval_s: float = 10.0,
                 remaining: Callable[[], int | None] | None = None,
                 emit: Callable[[str], None] | None = None) -> None:
        self.summary = summary
        self.interval_s = interval_s
        self.remaining = remaining
        self.emit = emit or log.info
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"progress-{summary.connector}-{summary.task}",
                                        daemon=True)

    def __enter__(self) -> ProgressLogger:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _run(self) -> None:
        started = last_time = time.monotonic()
        last_records = 0
        while not self._stop.wait(self.interval_s):
            now, records = time.monotonic(), self.summary.records
            recent = (records - last_records) / max(now - last_time, 1e-9)
            overall = records / max(now - started, 1e-9)
            left = self.remaining() if self.remaining else None
            tail = "" if left is None else f", {left:,} left"
            self.emit(f"Task {self.summary.connector}-{self.summary.task}: {records:,} records "
                      f"({recent:,.0f}/s now, {overall:,.0f}/s overall){tail}")
            last_time, last_records = now, records

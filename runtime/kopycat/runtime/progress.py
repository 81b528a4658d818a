"""Progress of long bounded runs: lines in an Airflow task log, a live bar in ``kopycat run``.

Kafka Connect reports through JMX metrics; a scheduled copy task is watched in its log, so a
line every ``interval_s`` says how far it got (records, records/s) without touching the hot path:
a daemon thread reads the runner's live :class:`RunSummary` counters.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import TextIO

from kopycat.runtime.bounds import RunSummary

__all__ = ["ProgressBar", "ProgressLogger"]

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


class ProgressBar:
    """A live progress line for ``kopycat run``: records copied by every task, rate, and a bar
    when the total is known (a sink copies up to planned end offsets).

    On a terminal the line is redrawn in place every ``interval_s``; elsewhere (a pipe, a CI log)
    a plain line is written every ``plain_interval_s``. Summaries are added as tasks start
    (``add`` is the ``observe`` hook of ``run_planned_task``); a daemon thread reads their counters.
    """

    def __init__(self, stream: TextIO, total: int | None = None, *, interval_s: float = 0.2,
                 plain_interval_s: float = 10.0, width: int = 30, clock: Callable[[], float] = time.monotonic) -> None:
        self.stream, self.total, self.width, self.clock = stream, total, width, clock
        self.live = stream.isatty()
        self.interval_s = interval_s if self.live else plain_interval_s
        self.summaries: list[RunSummary] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._started = clock()
        self._thread = threading.Thread(target=self._run, name="kopycat-progress-bar", daemon=True)

    def add(self, summary: RunSummary) -> None:
        with self._lock:
            self.summaries.append(summary)

    def line(self) -> str:
        """``[#####.....]  50%  5,000/10,000 records  1,234/s`` (no bar or percentage without a total)."""
        with self._lock:
            records = sum(s.records for s in self.summaries)
            tasks = len(self.summaries)
        rate = records / max(self.clock() - self._started, 1e-9)
        tail = f"records  {rate:,.0f}/s  {tasks} task{'s' if tasks != 1 else ''}"
        if not self.total:
            return f"{records:,} {tail}"
        done = min(records / self.total, 1.0)
        filled = round(done * self.width)
        return f"[{'#' * filled}{'.' * (self.width - filled)}] {done:4.0%}  {records:,}/{self.total:,} {tail}"

    def __enter__(self) -> ProgressBar:
        self._started = self.clock()
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self._write(self.line(), final=True)

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            self._write(self.line(), final=False)

    def _write(self, text: str, final: bool) -> None:
        if self.live:
            self.stream.write("\r\x1b[2K" + text + ("\n" if final else ""))
        else:
            self.stream.write(text + "\n")
        self.stream.flush()

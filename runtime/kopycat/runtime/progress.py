"""Progress of long bounded runs: lines in an Airflow task log, a live bar in ``kopycat run``, live
figures for the connectors page.

Kafka Connect reports through JMX metrics; a scheduled copy task is watched in its log, so a
line every ``interval_s`` says how far it got (records, records/s) without touching the hot path:
a daemon thread reads the runner's live :class:`RunSummary` counters. :class:`ProgressPublisher`
reads them the same way, with the run's Kafka Connect metrics, and hands them to a sink (an Airflow
copy task writes them to the status topic: :mod:`kopycat.storage.task_progress`).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TextIO

from kopycat.runtime.bounds import RunSummary

if TYPE_CHECKING:
    from kopycat.runtime.task_metrics import TaskMetrics

__all__ = ["ProgressBar", "ProgressLogger", "ProgressPublisher"]

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


class ProgressPublisher:
    """Hands a running task's summary so far to ``publish`` every ``interval_s``: a ``RunSummary.to_dict()``
    shape with the counters, the elapsed ``duration_s`` and the live Kafka Connect ``metrics``.

    :meth:`watch` is ``run_planned_task``'s ``observe_metrics`` hook and starts the thread; leaving the
    context stops it and publishes once more, so a run that failed (and returns no summary) still leaves
    what it copied and its errors, however soon it failed. A failed publish is logged and the next one
    tried: figures are informational and never fail a copy.
    """

    def __init__(self, publish: Callable[[dict[str, Any]], None], interval_s: float = 5.0) -> None:
        self.publish = publish
        self.interval_s = interval_s
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._metrics: TaskMetrics | None = None
        self._started = time.monotonic()

    def watch(self, metrics: TaskMetrics) -> None:
        summary = metrics.summary
        self._metrics, self._started = metrics, time.monotonic()
        self._thread = threading.Thread(target=self._run, daemon=True,
                                        name=f"progress-publisher-{summary.connector}-{summary.task}")
        self._thread.start()

    def __enter__(self) -> ProgressPublisher:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=self.interval_s + 5)
            self._publish_once()

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            self._publish_once()

    def _publish_once(self) -> None:
        metrics = self._metrics
        if metrics is None:
            return
        summary = metrics.summary
        try:
            self.publish({"connector": summary.connector, "task": summary.task, "records": summary.records,
                          "skipped": summary.skipped, "filtered": summary.filtered,
                          "duration_s": time.monotonic() - self._started, "metrics": metrics.figures()})
        except Exception:  # noqa: BLE001 - live figures are informational
            log.exception("Could not publish the progress of task %s-%s", summary.connector, summary.task)

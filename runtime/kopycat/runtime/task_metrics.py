"""A task's Kafka Connect metrics, recorded once per batch by the runner base.

The groups and names are Kafka Connect's (``ConnectMetricsRegistry``), tagged ``connector`` and
``task``:

- ``source-task-metrics`` (``WorkerSourceTask.SourceTaskMetricsGroup``): ``source-record-poll-rate/total``
  (records ``poll`` returned), ``source-record-write-rate/total`` (records handed to the producer after
  transformations), ``source-record-active-count`` (written, not yet committed), ``poll-batch-avg/max-time-ms``;
- ``sink-task-metrics`` (``WorkerSinkTask.SinkTaskMetricsGroup``): ``sink-record-read-rate/total``
  (records consumed), ``sink-record-send-rate/total`` (records ``put`` after transformations),
  ``sink-record-active-count`` (read, not yet committed), ``put-batch-avg/max-time-ms``,
  ``offset-commit-completion-rate/total``;
- ``connector-task-metrics`` (``WorkerTask.TaskMetricsGroup``): ``status``, ``running-ratio``,
  ``batch-size-avg/max``, ``offset-commit-avg/max-time-ms``, ``offset-commit-success/failure-percentage``;
- ``task-error-metrics`` (``ErrorHandlingMetrics``): read from the task's
  :class:`~kopycat.runtime.errors.RetryWithToleranceOperator` and dead letter queue reporter, which
  count already, when a scraper asks.

Cost: :meth:`TaskMetrics.record_batch` runs once per batch (a handful of additions); the runner
measures its ``poll``/``put`` with ``time.perf_counter()`` and leaves the seconds in
:attr:`TaskMetrics.batch_s`. Nothing is done per record. Windows: see :mod:`kopycat.runtime.metrics`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from kopycat.runtime.bounds import RunSummary
from kopycat.runtime.error_reporters import DeadLetterQueueReporter
from kopycat.runtime.errors import RetryWithToleranceOperator
from kopycat.runtime.metrics import DEFAULT_CONFIG, Avg, GroupValues, Max, MetricConfig, Rate, Total

__all__ = ["SINK", "SOURCE", "TaskMetrics", "error_values"]

SOURCE = "source"
SINK = "sink"

# (group, read metric, sent metric, batch time metric) per task kind, Kafka's names
_NAMES = {
    SOURCE: ("source-task-metrics", "source-record-poll", "source-record-write", "poll-batch"),
    SINK: ("sink-task-metrics", "sink-record-read", "sink-record-send", "put-batch"),
}


def error_values(retry: RetryWithToleranceOperator, dlq: list[DeadLetterQueueReporter]) -> dict[str, float | str]:
    """``task-error-metrics`` from what error handling counts (Kafka's ``ErrorHandlingMetrics``).

    ``total-record-errors``: records that finally failed; ``total-record-failures``: failed attempts
    (each retry follows one, plus the final failure); ``total-records-skipped``: records
    ``errors.tolerance=all`` skipped.
    """
    last = retry.last_error_time
    return {
        "total-record-errors": retry.total_failures,
        "total-record-failures": retry.total_failures + retry.total_retries,
        "total-records-skipped": retry.total_skipped,
        "total-retries": retry.total_retries,
        "deadletterqueue-produce-requests": sum(r.produce_requests for r in dlq),
        "deadletterqueue-produce-failures": sum(r.produce_failures for r in dlq),
        "last-error-timestamp": round(last * 1000) if last else 0,
    }


class TaskMetrics:
    """The metric groups of one task run; :meth:`collect` is its :class:`ConnectMetrics` provider.

    Recorded from the task's thread; read from any.
    """

    def __init__(self, kind: str, summary: RunSummary, retry: RetryWithToleranceOperator | None = None,
                 config: MetricConfig = DEFAULT_CONFIG, clock: Callable[[], float] = time.monotonic) -> None:
        self.kind = kind
        self.summary = summary
        self.retry = retry
        self.dlq = [r for r in (retry.reporters if retry is not None else ()) if isinstance(r, DeadLetterQueueReporter)]
        self.clock = clock
        self.tags = {"connector": summary.connector, "task": str(summary.task)}
        self.status = "unassigned"
        self.batch_s = 0.0
        """Seconds the runner's last ``poll``/``put`` took; read by :meth:`record_batch`."""
        self.active = 0
        self._sent_before = 0
        self._created = clock()
        self._running_since: float | None = None
        self._running_s = 0.0
        self.read_rate, self.read_total = Rate(config), Total()
        self.sent_rate, self.sent_total = Rate(config), Total()
        self.batch_time_avg, self.batch_time_max = Avg(config), Max(config)
        self.batch_size_avg, self.batch_size_max = Avg(config), Max(config)
        self.commit_time_avg, self.commit_time_max = Avg(config), Max(config)
        self.commit_success, self.commit_failure = Avg(config), Avg(config)
        self.commit_rate, self.commit_total = Rate(config), Total()

    # ------------------------------------------------------------------ recording (task thread)

    def record_batch(self, read: int) -> None:
        """One batch: ``read`` records polled (source) or consumed (sink); what was sent is what the
        run summary's ``records`` grew by; the batch's time is :attr:`batch_s`."""
        now = self.clock()
        sent = self.summary.records - self._sent_before
        self._sent_before += sent
        if read:
            self.read_rate.record(read, now)
            self.read_total.value += read
            self.batch_size_avg.record(read, now)
            self.batch_size_max.record(read, now)
        if sent:
            self.sent_rate.record(sent, now)
            self.sent_total.value += sent
        self.active += sent if self.kind == SOURCE else read
        if read or sent:
            ms = self.batch_s * 1000
            self.batch_time_avg.record(ms, now)
            self.batch_time_max.record(ms, now)

    def record_commit(self, seconds: float, succeeded: bool) -> None:
        """One offset commit attempt (Kafka's ``recordCommitSuccess``/``recordCommitFailure``)."""
        now = self.clock()
        ms = seconds * 1000
        self.commit_time_avg.record(ms, now)
        self.commit_time_max.record(ms, now)
        self.commit_success.record(1.0 if succeeded else 0.0, now)
        self.commit_failure.record(0.0 if succeeded else 1.0, now)
        if succeeded:
            self.commit_rate.record(1, now)
            self.commit_total.value += 1
            self.active = 0

    def set_status(self, status: str) -> None:
        """``running``, ``failed``, ``unassigned``...: Kafka's task state names, lower case."""
        now = self.clock()
        if self._running_since is not None:
            self._running_s += now - self._running_since
            self._running_since = None
        if status == "running":
            self._running_since = now
        self.status = status

    # ------------------------------------------------------------------ reading (any thread)

    def collect(self) -> list[GroupValues]:
        now = self.clock()
        group, read, sent, batch = _NAMES[self.kind]
        values: dict[str, float | str] = {
            f"{read}-rate": self.read_rate.measure(now), f"{read}-total": self.read_total.value,
            f"{sent}-rate": self.sent_rate.measure(now), f"{sent}-total": self.sent_total.value,
            f"{batch}-avg-time-ms": self.batch_time_avg.measure(now),
            f"{batch}-max-time-ms": self.batch_time_max.measure(now),
            f"{self.kind}-record-active-count": self.active,
        }
        if self.kind == SINK:
            values["offset-commit-completion-rate"] = self.commit_rate.measure(now)
            values["offset-commit-completion-total"] = self.commit_total.value
        running = self._running_s + (now - self._running_since if self._running_since is not None else 0.0)
        task: dict[str, float | str] = {
            "status": self.status,
            "running-ratio": running / max(now - self._created, 1e-9),
            "batch-size-avg": self.batch_size_avg.measure(now),
            "batch-size-max": self.batch_size_max.measure(now),
            "offset-commit-avg-time-ms": self.commit_time_avg.measure(now),
            "offset-commit-max-time-ms": self.commit_time_max.measure(now),
            "offset-commit-success-percentage": self.commit_success.measure(now),
            "offset-commit-failure-percentage": self.commit_failure.measure(now),
        }
        groups = [GroupValues(group, self.tags, values), GroupValues("connector-task-metrics", self.tags, task)]
        if self.retry is not None:
            groups.append(GroupValues("task-error-metrics", self.tags, error_values(self.retry, self.dlq)))
        return groups

    def figures(self) -> dict[str, Any]:
        """Every group's values by ``group.metric`` name, for a run summary (JSON-able: NaN as None)."""
        return {f"{g.group}.{name}": (None if isinstance(v, float) and v != v else v)
                for g in self.collect() for name, v in g.values.items()}

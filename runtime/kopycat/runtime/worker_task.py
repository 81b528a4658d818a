"""The lifecycle every task runner shares: start, copy, commit, close, report.

Follows Kafka Connect's ``WorkerTask``: the run skeleton is written once here, and a runner
(source, exactly-once source, sink) fills in the declared hooks. The runner keeps its loop to
itself (:meth:`WorkerTask.execute`); what a runner may change is named, as Kafka's
``AbstractWorkerSourceTask`` names ``prepareToSendRecord`` or ``finalOffsetCommit``.

Metrics (Kafka's ``WorkerTask.TaskMetricsGroup`` and the source/sink groups) are recorded here, once per
batch: the :class:`StopWatch` every loop calls after each batch hands the count to :attr:`WorkerTask.metrics`,
and a runner times its offset commits with :meth:`WorkerTask.timed_commit`.

Thread-safety: :meth:`run` executes on one thread; :meth:`stop` may be called from any other.
"""

from __future__ import annotations

import logging
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable

from kopycat.interpreter_settings import young_collections_deferred
from kopycat.runtime.bounds import Bounds, RunSummary, StopReason, StopWatch
from kopycat.runtime.errors import RetryWithToleranceOperator
from kopycat.runtime.task_metrics import TaskMetrics
from kopycat.runtime.task_parts import TaskId

__all__ = ["WorkerTask"]

log = logging.getLogger(__name__)


class WorkerTask(ABC):
    """Runs one task once: :meth:`initialize_and_start`, :meth:`execute` until a stop condition,
    :meth:`final_offset_commit`, :meth:`close`; the :class:`RunSummary` says what was done."""

    def __init__(self, task_id: TaskId, bounds: Bounds | None, *, kind: str,
                 retry: RetryWithToleranceOperator | None = None) -> None:
        """``kind`` is ``"source"`` or ``"sink"`` (which metric group); ``retry`` the task's error handling."""
        self.id = task_id
        self.bounds = bounds or Bounds()
        self.summary = RunSummary(task_id.connector, task_id.task)
        self.stopping = threading.Event()
        self.metrics = TaskMetrics(kind, self.summary, retry)
        self.topics_listener: Callable[[set[str]], None] | None = None
        """Told of the topics the run uses for the first time (KIP-558's active topics), after the batch
        that used them: a long-running host (``kopycat worker``) records them in the status topic on first
        use, as Kafka's ``WorkerSourceTask``/``WorkerSinkTask`` do. Called on the run's thread."""
        self._announced_topics: set[str] = set()

    def run(self) -> RunSummary:
        """Start the task, copy until a stop condition, commit, close; return what was done.

        Raises the task's failure after :meth:`final_offset_commit` with ``failed=True`` had its
        chance to commit what is safe; the summary (stop reason FAILED, the error) stays on
        :attr:`summary`.
        """
        watch = StopWatch(self.bounds, on_batch=self._batch_recorded)
        try:
            self.initialize_and_start()
            self.summary.start_s = watch.elapsed()
            self.metrics.set_status("running")
            watch.touch()  # a slow start (clients, offsets, task.start) must not count as idle time
            with young_collections_deferred():  # records die once committed: see kopycat.interpreter_settings
                self.summary.stop_reason = self.execute(watch)
            self.final_offset_commit(failed=False)
        except BaseException as exc:
            self.metrics.set_status("failed")
            self.summary.stop_reason = StopReason.FAILED
            self.summary.error = f"{type(exc).__name__}: {exc}"
            self._commit_after_failure()
            raise
        finally:
            self.summary.duration_s = watch.elapsed()
            self._announce_topics()  # a sink's consumed topics show once its final commit is in the summary
            self.close()
            if self.metrics.status == "running":
                self.metrics.set_status("unassigned")  # Kafka's state of a task that stopped without failing
            self.summary.metrics = self.metrics.figures()
        log.info("Task %s stopped (%s): %d records, %d skipped, %d filtered in %.1f s", self.id,
                 self.summary.stop_reason.value, self.summary.records, self.summary.skipped,
                 self.summary.filtered, self.summary.duration_s)
        return self.summary

    def _batch_recorded(self, records: int) -> None:
        self.metrics.record_batch(records)
        if self.topics_listener is not None:
            self._announce_topics()

    def _announce_topics(self) -> None:
        if self.topics_listener is None:
            return
        new = self.summary.topics_used() - self._announced_topics
        if new:
            self._announced_topics |= new
            try:
                self.topics_listener(new)
            except Exception:  # noqa: BLE001 - topic tracking is informational; never fail a copy over it
                log.exception("Task %s: could not record its active topics %s", self.id, sorted(new))

    def timed_commit(self, commit: Callable[[], bool | None]) -> bool | None:
        """Run one offset commit, recording its time and outcome: ``commit`` answers whether it
        committed, or None when there was nothing to commit (not recorded); one that raises counts as failed."""
        started = time.perf_counter()
        succeeded: bool | None = False
        try:
            succeeded = commit()
        finally:
            if succeeded is not None:
                self.metrics.record_commit(time.perf_counter() - started, succeeded)
        return succeeded

    def stop(self) -> None:
        """Ask the run to end at the next batch boundary (any thread). Runners that must also wake
        a blocking call extend this and call ``super().stop()`` first."""
        self.stopping.set()

    @abstractmethod
    def initialize_and_start(self) -> None:
        """Hook: create the clients, read the starting offsets, ``initialize`` and ``start`` the task."""

    @abstractmethod
    def execute(self, watch: StopWatch) -> StopReason:
        """Hook: the copy loop. Return why it ended; raise to fail the run.

        Call ``watch.after_batch(count)`` after every batch and stop when it answers a reason,
        and return :attr:`StopReason.STOPPED` once :attr:`stopping` is set.
        """

    def final_offset_commit(self, failed: bool) -> None:  # noqa: B027 - optional hook, empty by default
        """Hook: commit what is safe after the loop ended (Kafka's ``finalOffsetCommit``).

        ``failed`` is True when the run is failing: commit only what is known to be safe, and
        raise nothing the caller should see instead of the original failure (it is logged).
        Default: nothing.
        """

    @abstractmethod
    def close(self) -> None:
        """Hook: stop the task and release the clients; called once, after success or failure."""

    def _commit_after_failure(self) -> None:
        try:
            self.final_offset_commit(failed=True)
        except Exception:  # noqa: BLE001 - the original failure is what the caller must see
            log.exception("Task %s: could not commit offsets after failing", self.id)

"""ProgressPublisher: a running task's counters and metrics handed out as it copies."""

from __future__ import annotations

import threading
import time
from typing import Any

from kopycat.runtime.bounds import RunSummary
from kopycat.runtime.progress import ProgressPublisher
from kopycat.runtime.task_metrics import TaskMetrics


def _wait_for(condition: Any, timeout_s: float = 30) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def test_the_published_figures_are_the_runs_so_far_until_the_context_ends() -> None:
    summary = RunSummary("orders", 2)
    metrics = TaskMetrics("sink", summary)
    published: list[dict[str, Any]] = []
    with ProgressPublisher(published.append, interval_s=0.02) as publisher:
        publisher.watch(metrics)
        summary.records = 40
        metrics.record_batch(40)
        _wait_for(lambda: any(p["records"] == 40 for p in published))
        summary.records = 45  # the run's end, between two intervals
    count = len(published)
    time.sleep(0.1)
    assert len(published) == count  # stopped on exit
    last = published[-1]  # published once more on exit: a failed run leaves its last figures
    assert (last["connector"], last["task"], last["records"]) == ("orders", 2, 45)
    assert last["duration_s"] > 0 and last["metrics"]["sink-task-metrics.sink-record-send-total"] == 40


def test_a_failed_publish_is_tried_again_at_the_next_interval() -> None:
    calls: list[int] = []
    done = threading.Event()

    def publish(figures: dict[str, Any]) -> None:
        calls.append(figures["records"])
        if len(calls) == 1:
            raise ConnectionError("broker away")
        done.set()

    with ProgressPublisher(publish, interval_s=0.02) as publisher:
        publisher.watch(TaskMetrics("source", RunSummary("c", 0)))
        assert done.wait(30)
    assert len(calls) >= 2


def test_a_publisher_whose_run_never_started_publishes_nothing() -> None:
    published: list[dict[str, Any]] = []
    with ProgressPublisher(published.append, interval_s=0.01):
        time.sleep(0.05)
    assert published == []

"""The windowed stats compute what Kafka's Rate, Avg and Max do; a task's groups carry Kafka's names."""

from __future__ import annotations

import math

import pytest

from kopycat.runtime.bounds import RunSummary
from kopycat.runtime.errors import RetryWithToleranceOperator, ToleranceType
from kopycat.runtime.metrics import Avg, ConnectMetrics, Max, MetricConfig, Rate, Total
from kopycat.runtime.task_metrics import SINK, SOURCE, TaskMetrics

CONFIG = MetricConfig(samples=2, window_s=30.0)


def test_rate_counts_at_least_one_full_window_before_the_second_sample():
    rate = Rate(CONFIG)
    rate.record(300, now=100.0)
    # elapsed 10 s, fewer than samples-1 full windows: Kafka adds the missing window (30 s)
    assert rate.measure(now=110.0) == pytest.approx(300 / 40.0)


def test_rate_spans_the_live_samples_once_windows_are_full():
    rate = Rate(CONFIG)
    rate.record(600, now=0.0)
    rate.record(600, now=35.0)   # a second sample starts (the first is 30 s old)
    # oldest sample started at 0: 50 s elapsed, one full window already: no padding
    assert rate.measure(now=50.0) == pytest.approx(1200 / 50.0)


def test_rate_forgets_samples_older_than_samples_times_window():
    rate = Rate(CONFIG)
    rate.record(600, now=0.0)
    rate.record(100, now=35.0)
    # at 61 s the first sample (started at 0) is 61 s old >= 2 * 30 s: purged; the oldest live one
    # started at 35 s: 26 s elapsed, padded with the one missing full window (30 s)
    assert rate.measure(now=61.0) == pytest.approx(100 / 56.0)


def test_avg_and_max_over_the_window_and_nan_when_empty():
    avg, top = Avg(CONFIG), Max(CONFIG)
    assert math.isnan(avg.measure(now=0.0)) and math.isnan(top.measure(now=0.0))
    for now, value in ((0.0, 10.0), (1.0, 30.0), (40.0, 20.0)):
        avg.record(value, now)
        top.record(value, now)
    assert avg.measure(now=41.0) == pytest.approx(20.0)
    assert top.measure(now=41.0) == 30.0
    # at 70 s the sample started at 0 expires: only 20 remains
    assert avg.measure(now=70.0) == pytest.approx(20.0) and top.measure(now=70.0) == 20.0
    assert math.isnan(avg.measure(now=200.0))


def test_total_is_cumulative():
    total = Total()
    for value in (1, 2, 3):
        total.record(value)
    assert total.measure() == 6


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_source_task_metrics_count_polled_and_written_records_per_batch():
    summary, clock = RunSummary("orders", 3), _Clock()
    metrics = TaskMetrics(SOURCE, summary, RetryWithToleranceOperator(tolerance=ToleranceType.ALL), clock=clock)
    metrics.set_status("running")
    for polled, written in ((100, 90), (50, 50), (0, 0)):
        summary.records += written
        metrics.batch_s = 0.002
        clock.now += 1
        metrics.record_batch(polled)
    clock.now += 1
    metrics.record_commit(0.01, True)
    groups = {g.group: g for g in metrics.collect()}
    source = groups["source-task-metrics"]
    assert source.tags == {"connector": "orders", "task": "3"}
    assert source.values["source-record-poll-total"] == 150
    assert source.values["source-record-write-total"] == 140
    assert source.values["source-record-active-count"] == 0
    assert source.values["poll-batch-max-time-ms"] == pytest.approx(2.0)
    task = groups["connector-task-metrics"].values
    assert task["status"] == "running" and task["running-ratio"] == pytest.approx(1.0)
    assert task["batch-size-avg"] == 75 and task["batch-size-max"] == 100
    assert task["offset-commit-success-percentage"] == 1.0 and task["offset-commit-avg-time-ms"] == pytest.approx(10)
    assert groups["task-error-metrics"].values["total-record-errors"] == 0


def test_sink_task_metrics_keep_read_records_active_until_a_commit_succeeds():
    summary, clock = RunSummary("sink", 0), _Clock()
    metrics = TaskMetrics(SINK, summary, clock=clock)
    summary.records += 40
    metrics.record_batch(50)
    metrics.record_commit(0.001, False)
    values = {g.group: g.values for g in metrics.collect()}
    sink, task = values["sink-task-metrics"], values["connector-task-metrics"]
    assert sink["sink-record-read-total"] == 50 and sink["sink-record-send-total"] == 40
    assert sink["sink-record-active-count"] == 50 and sink["offset-commit-completion-total"] == 0
    assert task["offset-commit-failure-percentage"] == 1.0
    metrics.record_commit(0.001, True)
    values = {g.group: g.values for g in metrics.collect()}
    assert values["sink-task-metrics"]["sink-record-active-count"] == 0
    assert values["connector-task-metrics"]["offset-commit-success-percentage"] == 0.5
    assert "task-error-metrics" not in values


def test_registry_collects_every_provider_and_replaces_a_key():
    registry = ConnectMetrics()
    first, second = TaskMetrics(SOURCE, RunSummary("a", 0)), TaskMetrics(SOURCE, RunSummary("a", 0))
    registry.register(("a", 0), first.collect)
    registry.register(("a", 0), second.collect)
    registry.register(("b", 0), TaskMetrics(SINK, RunSummary("b", 0)).collect)
    assert len(registry.collect()) == 4
    registry.unregister_where(lambda key: isinstance(key, tuple) and key[0] == "b")
    assert {g.tags["connector"] for g in registry.collect()} == {"a"}

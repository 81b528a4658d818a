"""A finished run's summary gives back the metric groups its task's registry held, throughput from the run."""

from __future__ import annotations

import math

from kopycat.runtime.run_figures import summary_groups


def test_a_summary_gives_its_groups_tagged_by_task_with_the_runs_own_throughput() -> None:
    summary = {"connector": "orders", "task": 1, "records": 300, "duration_s": 1.5, "metrics": {
        "source-task-metrics.source-record-write-total": 300, "source-task-metrics.source-record-write-rate": 9.8,
        "source-task-metrics.source-record-active-count": 0, "connector-task-metrics.status": "running",
        "task-error-metrics.last-error-timestamp": 1_795_000_000_000, "connector-task-metrics.batch-size-avg": None}}

    groups = {g.group: g for g in summary_groups(summary)}

    assert {g.group: g.tags for g in groups.values()} == {
        group: {"connector": "orders", "task": "1"}
        for group in ("source-task-metrics", "connector-task-metrics", "task-error-metrics")}
    source = groups["source-task-metrics"].values
    assert source["source-record-write-total"] == 300
    assert source["source-record-write-rate"] == 200.0  # 300 records in 1.5 s, not the windowed 9.8
    assert groups["connector-task-metrics"].values["status"] == "running"
    assert math.isnan(groups["connector-task-metrics"].values["batch-size-avg"])  # None in JSON: NaN, as Kafka's
    assert groups["task-error-metrics"].values["last-error-timestamp"] == 1_795_000_000_000


def test_a_summary_without_metrics_or_duration_shows_no_throughput() -> None:
    assert summary_groups({"connector": "c", "task": 0, "records": 5}) == []
    [sink] = summary_groups({"connector": "c", "task": 0, "records": 5, "duration_s": 0.0,
                             "metrics": {"sink-task-metrics.sink-record-send-total": 5}})
    assert math.isnan(sink.values["sink-record-send-rate"])

"""A finished run's metrics as a live task's registry shows them: the figures of tasks run elsewhere.

Under Airflow a copy task runs in a worker process and leaves its Kafka Connect metrics in its
:class:`~kopycat.runtime.bounds.RunSummary` (``metrics``, by ``group.metric``, NaN as None; see
:meth:`~kopycat.runtime.task_metrics.TaskMetrics.figures`). :func:`summary_groups` turns them back
into the :class:`~kopycat.runtime.metrics.GroupValues` a worker's registry holds, so the same
``/metrics`` text (:mod:`kopycat.runtime.prometheus_metrics`) and the same connectors page
(:mod:`kopycat.rest.ui`) show them: throughput, uncommitted records, errors and the last error's time.

One figure is the run's own rather than the value at its end: throughput (``source-record-write-rate``,
``sink-record-send-rate``) is the run's records over its duration. Kafka's windowed rate, read when a run
shorter than its 30 s windows ends, divides by the whole window and so understates a finished run.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Final

from kopycat.runtime.metrics import GroupValues

__all__ = ["summary_groups"]

_RATES: Final = (("source-task-metrics", "source-record-write-rate"), ("sink-task-metrics", "sink-record-send-rate"))


def summary_groups(summary: Mapping[str, Any]) -> list[GroupValues]:
    """The metric groups of one task's finished run (a ``RunSummary.to_dict()``), tagged with its
    ``connector`` and ``task``; none for a summary without metrics."""
    tags = {"connector": str(summary["connector"]), "task": str(summary["task"])}
    groups: dict[str, dict[str, float | str]] = {}
    for key, value in (summary.get("metrics") or {}).items():
        group, _, name = str(key).partition(".")
        groups.setdefault(group, {})[name] = math.nan if value is None else value
    duration_s = float(summary.get("duration_s") or 0.0)
    for group, rate in _RATES:
        if group in groups:
            groups[group][rate] = int(summary.get("records") or 0) / duration_s if duration_s > 0 else math.nan
    return [GroupValues(group, dict(tags), values) for group, values in groups.items()]

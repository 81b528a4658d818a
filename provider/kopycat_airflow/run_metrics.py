"""A copy task's Kafka Connect metrics sent through Airflow's ``Stats`` (StatsD, Datadog, OpenTelemetry).

The run summary carries the task's metrics at its end (``group.metric`` ->
value: see kopycat.runtime.task_metrics); each numeric one goes to Airflow's configured metrics
backend (``[metrics] statsd_on`` and friends) under the Prometheus exporter's name with dots:
``kafka_connect.source_task_metrics.source_record_write_total``, tagged ``connector`` and ``task``.
Counts (``*-total`` and the error counts) are counters incremented by the run's figure; rates,
averages, maxima and ratios are gauges. Plain StatsD drops tags: set ``statsd_influxdb_enabled``
(or use Datadog) to tell connectors apart.
"""

from __future__ import annotations

import logging
from typing import Final

from airflow.sdk.observability import stats

from kopycat.runtime.bounds import RunSummary

__all__ = ["send_run_metrics", "stat_name"]

log = logging.getLogger(__name__)

_COUNTS: Final = frozenset({"total-record-errors", "total-record-failures", "total-records-skipped", "total-retries",
                            "deadletterqueue-produce-requests", "deadletterqueue-produce-failures"})


def stat_name(group: str, metric: str) -> str:
    """``kafka_connect.sink_task_metrics.sink_record_send_total`` for Kafka's group and metric."""
    return f"kafka_connect.{group}.{metric}".replace("-", "_")


def send_run_metrics(summary: RunSummary) -> None:
    """Send the run's metrics through Airflow's Stats; a backend failure is logged, never raised."""
    tags = {"connector": summary.connector, "task": str(summary.task)}
    try:
        for key, value in summary.metrics.items():
            if value is None or isinstance(value, str):
                continue
            group, _, metric = key.partition(".")
            if metric.endswith("-total") or metric in _COUNTS:
                stats.incr(stat_name(group, metric), count=int(value), tags=tags)
            elif metric != "last-error-timestamp":
                stats.gauge(stat_name(group, metric), float(value), tags=tags)
    except Exception:  # noqa: BLE001 - metrics are informational: the copy itself succeeded
        log.warning("Could not send the run's metrics through Airflow's Stats", exc_info=True)

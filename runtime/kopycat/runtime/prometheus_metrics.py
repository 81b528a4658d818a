"""``/metrics`` in Prometheus text format, named as Kafka Connect's JMX exporter rules name them.

The common JMX exporter rules for Kafka Connect turn the MBean
``kafka.connect:type=source-task-metrics,connector=x,task=0`` attribute ``source-record-poll-total``
into ``kafka_connect_source_task_metrics_source_record_poll_total{connector="x",task="0"}``: here
every :class:`~kopycat.runtime.metrics.GroupValues` becomes ``kafka_connect_<group>_<metric>`` (dashes
to underscores) with its tags as labels, so dashboards built for Kafka Connect read Kopycat unchanged.
Metrics whose name ends in ``-total`` are counters; the rest gauges. Text values (``status``) become
a gauge of 1 with the text in a ``status`` label, as exporters show Kafka's string attributes.

:func:`prometheus_text` renders a scrape (the REST apps' ``GET /metrics``);
:func:`start_metrics_server` serves one on its own port (``kopycat standalone`` with ``metrics.port``).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest, start_http_server
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from kopycat.runtime.metrics import ConnectMetrics

__all__ = ["CONTENT_TYPE", "ConnectMetricsCollector", "metric_name", "prometheus_registry", "prometheus_text",
           "start_metrics_server"]

log = logging.getLogger(__name__)

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
_PREFIX = "kafka_connect"


def metric_name(group: str, metric: str) -> str:
    """``kafka_connect_source_task_metrics_source_record_poll_total`` for Kafka's group and attribute."""
    return f"{_PREFIX}_{group}_{metric}".replace("-", "_").replace(".", "_")


class ConnectMetricsCollector(Collector):
    """A prometheus_client collector reading a :class:`ConnectMetrics` on every scrape."""

    def __init__(self, metrics: ConnectMetrics) -> None:
        self.metrics = metrics

    def collect(self) -> Iterator[Metric]:
        families: dict[str, Any] = {}
        for group in self.metrics.collect():
            labels = sorted(group.tags)
            for metric, value in group.values.items():
                name = metric_name(group.group, metric)
                text = isinstance(value, str)
                names = [*labels, "status"] if text else labels
                family = families.get(name)
                if family is None:
                    doc = f"Kafka Connect {group.group} {metric}"
                    if metric.endswith("-total") and not text:
                        family = CounterMetricFamily(name, doc, labels=names)
                    else:
                        family = GaugeMetricFamily(name, doc, labels=names)
                    families[name] = family
                tag_values = [group.tags[k] for k in labels]
                if text:
                    family.add_metric([*tag_values, str(value)], 1.0)
                else:
                    family.add_metric(tag_values, float(value))
        yield from families.values()


def prometheus_registry(metrics: ConnectMetrics) -> CollectorRegistry:
    """A registry holding only Kafka Connect's metrics (no process or Python collectors)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(ConnectMetricsCollector(metrics))
    return registry


def prometheus_text(metrics: ConnectMetrics) -> bytes:
    """One scrape of ``metrics`` in Prometheus text format."""
    return generate_latest(prometheus_registry(metrics))


def start_metrics_server(metrics: ConnectMetrics, port: int, host: str = "127.0.0.1") -> Any:
    """Serve ``/metrics`` on ``host:port`` from a daemon thread; returns the server (``shutdown()`` stops it)."""
    server, _thread = start_http_server(port, addr=host, registry=prometheus_registry(metrics))
    log.info("Kafka Connect metrics on http://%s:%s/metrics", host, port)
    return server

"""Kafka Connect's metrics through the OpenTelemetry SDK, when the standard ``OTEL_*`` settings ask for it.

The registry (:class:`~kopycat.runtime.metrics.ConnectMetrics`) is read, never copied: every metric is an
*observable* instrument whose callback reads the registry when the SDK collects, as the Prometheus
scrape does (:mod:`kopycat.runtime.prometheus_metrics`). One registry read serves every instrument of a
collection.

Names, so one dashboard reads Prometheus and OpenTelemetry alike:

- an instrument is named as the Prometheus metric (``kafka_connect_<group>_<metric>``, dashes to
  underscores), and a metric's tags (``connector``, ``task``) are its attributes;
- ``*-total`` metrics (Kafka's ``CumulativeSum``) are observable *counters* named **without** the
  ``_total`` suffix (``kafka_connect_source_task_metrics_source_record_poll``): OpenTelemetry's
  Prometheus exporters and the Collector add ``_total`` to every monotonic sum, so a suffix kept here
  would reach Prometheus as ``..._total_total``. Through them the names come out as ``/metrics`` shows them;
- every other metric is an observable gauge under its full name; text values (``status``) are a
  gauge of 1 with the text in a ``status`` attribute, as on ``/metrics``; NaN (a window with no
  samples, as Kafka reports it) is left out;
- no unit is set: a unit would make the Prometheus translation append one more suffix.

Instruments are created for the metric names the registry shows when a provider is registered
(:meth:`OtelMetricsBridge.discover`); a name first seen during a collection (a connector added later)
is declared right after it and observed from the next collection on.

When: :func:`otel_configured` is true when ``OTEL_EXPORTER_OTLP_ENDPOINT``,
``OTEL_EXPORTER_OTLP_METRICS_ENDPOINT`` or ``OTEL_METRICS_EXPORTER`` (other than ``none``) is set;
:func:`start_otel_metrics` then exports with the SDK's own exporter entry points
(``OTEL_METRICS_EXPORTER``: ``otlp``, ``console``...; ``otlp`` honours ``OTEL_EXPORTER_OTLP_PROTOCOL``),
every ``OTEL_METRIC_EXPORT_INTERVAL`` ms, with the resource from ``OTEL_SERVICE_NAME`` /
``OTEL_RESOURCE_ATTRIBUTES`` (service name ``kopycat`` by default). The global meter provider is
left alone (an Airflow process may own it).
"""

from __future__ import annotations

import logging
import math
import os
import threading
import time
from collections.abc import Iterable, Mapping
from importlib.metadata import entry_points
from typing import Any

from opentelemetry.metrics import CallbackOptions, MeterProvider, Observation
from opentelemetry.sdk.metrics import MeterProvider as SdkMeterProvider
from opentelemetry.sdk.metrics.export import MetricReader, PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource

from kopycat.runtime.metrics import ConnectMetrics, GroupValues
from kopycat.runtime.prometheus_metrics import metric_name

__all__ = ["OtelMetricsBridge", "otel_configured", "otel_name", "start_otel_metrics"]

log = logging.getLogger(__name__)

_SETTINGS = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "OTEL_METRICS_EXPORTER")
_FRESH_S = 0.5
"""A registry read is reused by the instruments of one collection for this long."""


def otel_name(group: str, metric: str) -> tuple[str, bool]:
    """The instrument name for Kafka's group and attribute, and whether it is a counter."""
    name = metric_name(group, metric)
    if metric.endswith("-total"):
        return name.removesuffix("_total"), True
    return name, False


def otel_configured(environ: Mapping[str, str] | None = None) -> bool:
    """True when the standard ``OTEL_*`` settings ask for a metrics exporter."""
    env = os.environ if environ is None else environ
    if env.get("OTEL_METRICS_EXPORTER", "").strip().lower() == "none":
        return False
    return any(env.get(key, "").strip() for key in _SETTINGS)


class OtelMetricsBridge:
    """Observable OpenTelemetry instruments over one :class:`ConnectMetrics`. Any thread."""

    def __init__(self, metrics: ConnectMetrics, meter_provider: MeterProvider) -> None:
        self.metrics = metrics
        self.meter = meter_provider.get_meter("kopycat")
        self._lock = threading.Lock()
        self._instruments: dict[str, bool] = {}
        self._snapshot: dict[str, list[Observation]] = {}
        self._read_at = -math.inf
        self.discover()

    def discover(self, groups: Iterable[GroupValues] | None = None) -> None:
        """Create instruments for metric names not seen yet (in ``groups``, or a fresh registry read)."""
        for group in self.metrics.collect() if groups is None else groups:
            for metric, value in group.values.items():
                name, counter = otel_name(group.group, metric)
                if name in self._instruments:
                    continue
                counter = counter and not isinstance(value, str)
                with self._lock:
                    if name in self._instruments:
                        continue
                    self._instruments[name] = counter
                description = f"Kafka Connect {group.group} {metric}"
                callback = self._callback(name)
                if counter:
                    self.meter.create_observable_counter(name, [callback], description=description)
                else:
                    self.meter.create_observable_gauge(name, [callback], description=description)

    def _callback(self, name: str) -> Any:
        def observe(options: CallbackOptions) -> list[Observation]:
            return self.observations(name)
        return observe

    def observations(self, name: str) -> list[Observation]:
        """What instrument ``name`` shows now, from a registry read shared by one collection."""
        now = time.monotonic()
        with self._lock:
            stale = now - self._read_at > _FRESH_S
        if stale:
            groups = self.metrics.collect()
            snapshot = _observations(groups)
            with self._lock:
                self._snapshot, self._read_at = snapshot, now
                unseen = [n for n in snapshot if n not in self._instruments]
            if unseen:  # the SDK holds its registration lock while collecting: declare them after it
                threading.Thread(target=self.discover, args=(groups,), name="otel-discover", daemon=True).start()
        with self._lock:
            return list(self._snapshot.get(name, ()))


def _observations(groups: Iterable[GroupValues]) -> dict[str, list[Observation]]:
    snapshot: dict[str, list[Observation]] = {}
    for group in groups:
        for metric, value in group.values.items():
            name, _counter = otel_name(group.group, metric)
            if isinstance(value, str):
                observation = Observation(1, {**group.tags, "status": value})
            elif isinstance(value, float) and math.isnan(value):
                continue
            else:
                observation = Observation(value, dict(group.tags))
            snapshot.setdefault(name, []).append(observation)
    return snapshot


def _exporter(environ: Mapping[str, str]) -> Any:
    """The exporter ``OTEL_METRICS_EXPORTER`` names (default ``otlp``), from the SDK's entry points."""
    name = environ.get("OTEL_METRICS_EXPORTER", "").split(",")[0].strip().lower() or "otlp"
    if name == "otlp":
        protocol = environ.get("OTEL_EXPORTER_OTLP_METRICS_PROTOCOL") or environ.get("OTEL_EXPORTER_OTLP_PROTOCOL")
        name = "otlp_proto_http" if (protocol or "").strip() == "http/protobuf" else "otlp_proto_grpc"
    found = [ep for ep in entry_points(group="opentelemetry_metrics_exporter") if ep.name == name]
    if not found:
        raise ValueError(f"OTEL_METRICS_EXPORTER names '{name}', which no installed OpenTelemetry package "
                         f"provides; install its exporter or set OTEL_METRICS_EXPORTER=otlp|console|none")
    return found[0].load()()


def start_otel_metrics(metrics: ConnectMetrics, environ: Mapping[str, str] | None = None,
                       reader: MetricReader | None = None) -> SdkMeterProvider | None:
    """Export ``metrics`` through the OpenTelemetry SDK when :func:`otel_configured`, or when ``reader`` is
    given (a test's ``InMemoryMetricReader``); returns the meter provider (``shutdown()`` flushes and
    stops it), or None when nothing asks for OpenTelemetry."""
    env = os.environ if environ is None else environ
    if reader is None:
        if not otel_configured(env):
            return None
        reader = PeriodicExportingMetricReader(_exporter(env))
    attributes = {} if env.get("OTEL_SERVICE_NAME") else {"service.name": "kopycat"}
    provider = SdkMeterProvider(metric_readers=[reader], resource=Resource.create(attributes))
    bridge = OtelMetricsBridge(metrics, provider)
    metrics.add_listener(lambda provided: bridge.discover(provided()))
    log.info("Kafka Connect metrics exported through OpenTelemetry (%s)", type(reader).__name__)
    return provider

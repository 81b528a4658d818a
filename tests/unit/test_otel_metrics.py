"""OpenTelemetry names follow /metrics minus the counters' ``_total``; OTEL_* settings switch the export on."""

from __future__ import annotations

from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from kopycat.runtime.metrics import ConnectMetrics, GroupValues
from kopycat.runtime.otel_metrics import otel_configured, otel_name, start_otel_metrics


def test_counters_drop_the_total_suffix_that_prometheus_exporters_add_back() -> None:
    assert otel_name("source-task-metrics", "source-record-poll-total") == (
        "kafka_connect_source_task_metrics_source_record_poll", True)
    assert otel_name("source-task-metrics", "source-record-poll-rate") == (
        "kafka_connect_source_task_metrics_source_record_poll_rate", False)


def test_only_the_standard_otel_settings_switch_the_export_on() -> None:
    assert not otel_configured({})
    assert otel_configured({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"})
    assert otel_configured({"OTEL_METRICS_EXPORTER": "console"})
    assert not otel_configured({"OTEL_METRICS_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://x"})
    assert start_otel_metrics(ConnectMetrics(), environ={}) is None


def test_a_task_registered_later_is_observed_at_the_next_collection_and_nan_is_left_out() -> None:
    metrics = ConnectMetrics()
    reader = InMemoryMetricReader()
    provider = start_otel_metrics(metrics, environ={}, reader=reader)
    assert provider is not None
    values: dict[str, float | str] = {"sink-record-read-total": 7.0, "put-batch-avg-time-ms": float("nan"),
                                      "status": "running"}
    metrics.register("t", lambda: [GroupValues("sink-task-metrics", {"connector": "c", "task": "0"}, values)])
    data = reader.get_metrics_data()
    found = {(m.name, tuple(sorted(p.attributes.items()))): p.value for r in data.resource_metrics
             for s in r.scope_metrics for m in s.metrics for p in m.data.data_points}
    task = (("connector", "c"), ("task", "0"))
    assert found[("kafka_connect_sink_task_metrics_sink_record_read", task)] == 7.0
    assert found[("kafka_connect_sink_task_metrics_status", tuple(sorted((*task, ("status", "running")))))] == 1
    assert not any(name.endswith("avg_time_ms") for name, _ in found)
    provider.shutdown()

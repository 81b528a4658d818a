"""The Prometheus text carries the JMX exporter's names; the worker groups count tasks by state."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from kopycat.runtime.bounds import RunSummary
from kopycat.runtime.metrics import ConnectMetrics
from kopycat.runtime.prometheus_metrics import metric_name, prometheus_text
from kopycat.runtime.task_metrics import SOURCE, TaskMetrics
from kopycat.runtime.worker_metrics import WORKER_GROUP, worker_groups
from kopycat.storage.connector_status import ConnectorStatus, State, TaskStatus
from kopycat.storage.status_backing_store import MemoryStatusBackingStore


def samples(metrics: ConnectMetrics) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(prometheus_text(metrics).decode()) for s in family.samples}


def test_names_follow_the_jmx_exporter_rules_for_kafka_connect():
    assert metric_name("source-task-metrics", "source-record-poll-total") == \
        "kafka_connect_source_task_metrics_source_record_poll_total"
    assert metric_name("connect-worker-metrics", "connector-count") == \
        "kafka_connect_connect_worker_metrics_connector_count"


def test_a_task_group_renders_counters_gauges_and_its_status_as_a_label():
    summary = RunSummary("orders", 2)
    task = TaskMetrics(SOURCE, summary)
    task.set_status("running")
    summary.records = 7
    task.record_batch(9)
    metrics = ConnectMetrics()
    metrics.register(("orders", 2), task.collect)
    found = samples(metrics)
    labels = (("connector", "orders"), ("task", "2"))
    assert found[("kafka_connect_source_task_metrics_source_record_poll_total", labels)] == 9
    assert found[("kafka_connect_source_task_metrics_source_record_write_total", labels)] == 7
    assert found[("kafka_connect_source_task_metrics_source_record_active_count", labels)] == 7
    running = (("connector", "orders"), ("status", "running"), ("task", "2"))
    assert found[("kafka_connect_connector_task_metrics_status", running)] == 1
    text = prometheus_text(metrics).decode()
    assert "# TYPE kafka_connect_source_task_metrics_source_record_poll_total counter" in text
    assert "# TYPE kafka_connect_connector_task_metrics_batch_size_max gauge" in text


def test_worker_groups_count_connectors_and_tasks_by_state():
    store = MemoryStatusBackingStore()
    store.put(ConnectorStatus("a", State.RUNNING, None, "w"))
    for task, state in ((0, State.RUNNING), (1, State.FAILED), (2, State.RUNNING)):
        store.put(TaskStatus("a", task, state, None, "w"))
    store.put(ConnectorStatus("b", State.PAUSED, None, "w"))
    store.put(TaskStatus("b", 0, State.PAUSED, None, "w"))
    metrics = ConnectMetrics()
    metrics.register(WORKER_GROUP, worker_groups(store))
    found = samples(metrics)
    assert found[("kafka_connect_connect_worker_metrics_connector_count", ())] == 2
    assert found[("kafka_connect_connect_worker_metrics_task_count", ())] == 4
    assert found[("kafka_connect_connect_worker_metrics_connector_running_task_count", (("connector", "a"),))] == 2
    assert found[("kafka_connect_connect_worker_metrics_connector_failed_task_count", (("connector", "a"),))] == 1
    assert found[("kafka_connect_connect_worker_metrics_connector_paused_task_count", (("connector", "b"),))] == 1
    assert found[("kafka_connect_connector_metrics_status", (("connector", "b"), ("status", "paused")))] == 1
    only_a = ConnectMetrics()
    only_a.register(WORKER_GROUP, worker_groups(store, lambda: ["a"]))
    assert samples(only_a)[("kafka_connect_connect_worker_metrics_connector_count", ())] == 1

"""A deleted connector's progress records (``kopycat-progress-<connector>-<task>``) on a real broker:
``DELETE /connectors/{name}`` tombstones them beside the statuses, so the compacted status topic
forgets them, and the page's figures no longer show the connector, even when a copy task that was
still running writes once more after the delete."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from kopycat.rest import RestHerder, create_app
from kopycat.runtime.stored_connectors import TaskStatusReporter
from kopycat.storage.config_backing_store import KafkaConfigBackingStore
from kopycat.storage.connector_status import State
from kopycat.storage.status_backing_store import KafkaStatusBackingStore
from kopycat.storage.task_progress import progress_key
from kopycat_airflow.dag_factory import connector_dag_id
from kopycat_plugin import airflow_figures
from kopycat_plugin.airflow_figures import LatestRunFigures
from tests.support.kafka import consume_records

NAME = "orders-sink"
RUN = "manual__1"
SENT = "sink-task-metrics.sink-record-send-total"


@pytest.fixture
def herder(worker: dict[str, Any]) -> Iterator[RestHerder]:
    """What ``kopycat rest`` and the Airflow plugin serve, over this test's topics."""
    with KafkaConfigBackingStore.from_config(worker) as configs, \
            KafkaStatusBackingStore.from_config(worker) as statuses:
        yield RestHerder(configs, statuses, worker)


def _publish(worker: dict[str, Any], task: int, records: int) -> None:
    """A running copy task's status and figures so far, as the Airflow copy task writes them."""
    with TaskStatusReporter(worker, NAME, task) as reporter:
        reporter.report(State.RUNNING)
        reporter.publish_progress(f"{connector_dag_id(NAME)}/{RUN}",
                                  {"connector": NAME, "task": task, "records": records, "duration_s": 1.0,
                                   "metrics": {SENT: records}})


def _page_figures(herder: RestHerder) -> dict[str, float]:
    """Records sent per task as the plugin's ``/metrics`` gives them to the page."""
    groups = LatestRunFigures(lambda: herder.connectors(), herder.status_store.get_all_progress)()
    return {g.tags["task"]: g.values["sink-record-send-total"] for g in groups if g.group == "sink-task-metrics"}


def _latest_values(worker: dict[str, Any]) -> dict[str, bytes | None]:
    """The status topic's latest value per key, as compaction keeps it."""
    records = consume_records(worker["bootstrap.servers"], worker["status.storage.topic"])
    return {record.key().decode(): record.value() for record in records}


def test_deleting_a_connector_tombstones_its_progress_and_the_page_forgets_it(
        herder: RestHerder, worker: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    # The Airflow metadata DB's part (the latest run, no copy task finished yet); the rest is Kafka.
    monkeypatch.setattr(airflow_figures, "latest_copy_summaries",
                        lambda dag_id: (RUN, []) if dag_id == connector_dag_id(NAME) else (None, []))
    client = TestClient(create_app(herder))
    config = {"connector.class": "FileStreamSink", "tasks.max": "2", "file": "/tmp/orders.txt", "topics": "orders"}
    assert client.post("/connectors", json={"name": NAME, "config": config}).status_code == 201
    for task, records in ((0, 40), (1, 7)):
        _publish(worker, task, records)
    assert _page_figures(herder) == {"0": 40, "1": 7}
    assert {p.task for p in herder.status_store.get_all_progress(NAME)} == {0, 1}

    assert client.delete(f"/connectors/{NAME}").status_code == 204

    latest = _latest_values(worker)
    assert {key: latest[key] for key in (progress_key(NAME, 0), progress_key(NAME, 1))} == {
        progress_key(NAME, 0): None, progress_key(NAME, 1): None}
    assert latest[f"status-connector-{NAME}"] is None
    with KafkaStatusBackingStore.from_config(worker) as reread:  # an API server started after the delete
        assert reread.get_all_progress(NAME) == []
    assert _page_figures(herder) == {}
    assert client.get("/connectors").json() == []

    _publish(worker, 1, 9)  # a copy task still running when its connector was deleted
    assert [p.task for p in herder.status_store.get_all_progress(NAME)] == [1]
    assert _page_figures(herder) == {}  # the reader shows connectors of the config topic only

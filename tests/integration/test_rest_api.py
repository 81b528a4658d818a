"""The REST API over Kafka-backed stores on a real broker: configs and target states on the config
topic, source offsets on the offsets topic, sink offsets in the consumer group ``connect-<name>``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient, NewTopic
from fastapi.testclient import TestClient

from kopycat.rest import RestHerder, create_app
from kopycat.rest.server import kafka_cluster_id
from kopycat.storage.config_backing_store import KafkaConfigBackingStore, TargetState
from kopycat.storage.status_backing_store import KafkaStatusBackingStore

ALTERED = {"message": "The offsets for this connector have been altered successfully"}


@pytest.fixture
def client(worker: dict[str, Any]) -> Iterator[TestClient]:
    """What ``kopycat rest`` serves, minus uvicorn."""
    with KafkaConfigBackingStore.from_config(worker) as configs, \
            KafkaStatusBackingStore.from_config(worker) as statuses:
        herder = RestHerder(configs, statuses, worker, kafka_cluster_id=kafka_cluster_id(worker))
        with TestClient(create_app(herder)) as test_client:
            yield test_client


def offsets(*entries: tuple[dict[str, Any], dict[str, Any] | None]) -> dict[str, Any]:
    return {"offsets": [{"partition": p, "offset": o} for p, o in entries]}


def test_source_and_sink_offsets_round_trip_through_kafka(client: TestClient, worker: dict[str, Any],
                                                          topic_name: str) -> None:
    assert client.get("/").json()["kafka_cluster_id"]
    source = {"connector.class": "FileStreamSource", "tasks.max": "1", "file": "/tmp/test.txt",
              "topic": "connect-test"}
    assert client.post("/connectors", json={"name": "local-file-source", "config": source}).status_code == 201
    assert client.put("/connectors/local-file-source/stop").status_code == 204
    patch = offsets(({"filename": "/tmp/test.txt"}, {"position": 30}))
    assert client.patch("/connectors/local-file-source/offsets", json=patch).json() == ALTERED
    assert client.get("/connectors/local-file-source/offsets").json() == patch

    with KafkaConfigBackingStore.from_config(worker) as reread:  # what an Airflow run would see
        state = reread.snapshot()
    assert state.connector_configs["local-file-source"]["file"] == "/tmp/test.txt"
    assert state.target_states["local-file-source"] is TargetState.STOPPED

    admin = AdminClient({"bootstrap.servers": worker["bootstrap.servers"]})
    admin.create_topics([NewTopic(topic_name, 2, 1)])[topic_name].result(30)
    sink = {"connector.class": "FileStreamSink", "file": "/tmp/test.sink.txt", "topics": topic_name}
    assert client.put("/connectors/local-file-sink/config", json=sink).status_code == 201
    refused = client.patch("/connectors/local-file-sink/offsets", json=offsets(
        ({"kafka_topic": topic_name, "kafka_partition": 0}, {"kafka_offset": 5})))
    assert refused.status_code == 400 and "STOPPED" in refused.json()["message"]
    client.put("/connectors/local-file-sink/stop")
    p0, p1 = ({"kafka_topic": topic_name, "kafka_partition": n} for n in (0, 1))
    assert client.patch("/connectors/local-file-sink/offsets",
                        json=offsets((p0, {"kafka_offset": 5}), (p1, {"kafka_offset": "7"}))).json() == ALTERED
    assert client.get("/connectors/local-file-sink/offsets").json() == offsets(
        (p0, {"kafka_offset": 5}), (p1, {"kafka_offset": 7}))
    assert client.patch("/connectors/local-file-sink/offsets", json=offsets((p1, None))).status_code == 200
    assert client.get("/connectors/local-file-sink/offsets").json() == offsets((p0, {"kafka_offset": 5}))
    assert client.delete("/connectors/local-file-sink/offsets").status_code == 200
    assert client.get("/connectors/local-file-sink/offsets").json() == {"offsets": []}

"""KIP-875's offsets endpoints, following its test plan: GET always; PATCH and DELETE only once
the connector is STOPPED (400 with Kafka's message otherwise); 404 for unknown connectors.

Source offsets go to a file offset store here; sink offsets (consumer groups) are covered by
tests/integration/test_rest_api.py against a real broker.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from kopycat.api.errors import ConfigError
from kopycat.api.records import TopicPartition
from kopycat.rest import RestHerder
from kopycat.runtime.offsets_admin import parse_sink_offsets
from kopycat.storage.file_offset_store import FileOffsetStore
from kopycat.storage.offset_storage_reader_writer import OffsetStorageWriter

NOT_STOPPED = ("Connectors must be in the STOPPED state before their offsets can be modified. This can be done "
               "for the specified connector by issuing a 'PUT' request to the '/connectors/local-file-source/stop' "
               "endpoint")
ALTERED = {"message": "The offsets for this connector have been altered successfully"}
RESET = {"message": "The offsets for this connector have been reset successfully"}


def body(*entries: tuple[dict[str, Any] | None, dict[str, Any] | None]) -> dict[str, Any]:
    return {"offsets": [{"partition": partition, "offset": offset} for partition, offset in entries]}


def committed(herder: RestHerder, connector: str, offsets: dict[str, int]) -> None:
    """Offsets as a FileStreamSource task would have committed them."""
    with FileOffsetStore(herder.worker_props["offset.storage.file.filename"]) as store:
        writer = OffsetStorageWriter(store, connector)
        for filename, position in offsets.items():
            writer.offset({"filename": filename}, {"position": position})
        assert writer.flush(5)


def test_get_offsets_works_while_running_and_shows_kip_875_shape(client: TestClient, herder: RestHerder,
                                                                 file_source: str) -> None:
    committed(herder, file_source, {"/tmp/test.txt": 30})
    assert client.get(f"/connectors/{file_source}/offsets").json() == body(
        ({"filename": "/tmp/test.txt"}, {"position": 30}))


def test_alter_and_reset_on_a_running_or_paused_connector_answer_400(client: TestClient, file_source: str) -> None:
    patch = body(({"filename": "/tmp/test.txt"}, {"position": 5}))
    for _ in ("running", "paused"):
        for response in (client.patch(f"/connectors/{file_source}/offsets", json=patch),
                         client.delete(f"/connectors/{file_source}/offsets")):
            assert response.json() == {"error_code": 400, "message": NOT_STOPPED}
        client.put(f"/connectors/{file_source}/pause")


def test_offsets_of_unknown_connectors_answer_404(client: TestClient) -> None:
    patch = body(({"filename": "/a"}, {"position": 1}))
    for response in (client.get("/connectors/nope/offsets"), client.patch("/connectors/nope/offsets", json=patch),
                     client.delete("/connectors/nope/offsets")):
        assert response.json() == {"error_code": 404, "message": "Connector nope not found"}


def test_a_stopped_connectors_offsets_can_be_altered_then_read_back(client: TestClient, herder: RestHerder,
                                                                    file_source: str) -> None:
    committed(herder, file_source, {"/tmp/test.txt": 30, "/tmp/other.txt": 7})
    assert client.put(f"/connectors/{file_source}/stop").status_code == 204
    response = client.patch(f"/connectors/{file_source}/offsets", json=body(
        ({"filename": "/tmp/test.txt"}, {"position": 5}), ({"filename": "/tmp/other.txt"}, None),
        ({"filename": "/tmp/new.txt"}, {"position": 1})))
    assert response.status_code == 200 and response.json() == ALTERED
    offsets = client.get(f"/connectors/{file_source}/offsets").json()["offsets"]
    assert sorted(offsets, key=str) == sorted([
        {"partition": {"filename": "/tmp/test.txt"}, "offset": {"position": 5}},
        {"partition": {"filename": "/tmp/new.txt"}, "offset": {"position": 1}}], key=str)


def test_reset_of_a_stopped_connector_tombstones_every_partition(client: TestClient, herder: RestHerder,
                                                                 file_source: str) -> None:
    committed(herder, file_source, {"/tmp/test.txt": 30, "/tmp/other.txt": 7})
    committed(herder, "another-connector", {"/tmp/test.txt": 99})
    client.put(f"/connectors/{file_source}/stop")
    response = client.delete(f"/connectors/{file_source}/offsets")
    assert response.status_code == 200 and response.json() == RESET
    assert client.get(f"/connectors/{file_source}/offsets").json() == {"offsets": []}
    with FileOffsetStore(herder.worker_props["offset.storage.file.filename"]) as store:
        assert store.connector_partitions("another-connector") == [{"filename": "/tmp/test.txt"}]


def test_deleting_a_connector_leaves_its_offsets_alone(client: TestClient, herder: RestHerder,
                                                       file_source: str, docs_request: dict[str, Any]) -> None:
    committed(herder, file_source, {"/tmp/test.txt": 30})
    client.delete(f"/connectors/{file_source}")
    client.post("/connectors", json=docs_request)
    assert client.get(f"/connectors/{file_source}/offsets").json()["offsets"] != []


@pytest.mark.parametrize("patch", [{}, {"offsets": []}, {"offsets": None}])
def test_an_alter_request_without_offsets_answers_400(client: TestClient, file_source: str,
                                                      patch: dict[str, Any]) -> None:
    client.put(f"/connectors/{file_source}/stop")
    assert client.patch(f"/connectors/{file_source}/offsets", json=patch).json() == {
        "error_code": 400, "message": "Partitions / offsets need to be provided for an alter offsets request"}


def test_offsets_the_connector_refuses_answer_400_with_its_reason(client: TestClient, file_source: str) -> None:
    client.put(f"/connectors/{file_source}/stop")
    response = client.patch(f"/connectors/{file_source}/offsets",
                            json=body(({"filename": "/tmp/test.txt"}, {"position": -1})))
    assert response.status_code == 400 and "position" in response.json()["message"]
    response = client.patch(f"/connectors/{file_source}/offsets",
                            json=body(({"filename": "/tmp/test.txt"}, {"position": [1]})))
    assert response.status_code == 400 and "primitive" in response.json()["message"]


def test_after_resume_offsets_are_read_only_again(client: TestClient, file_source: str) -> None:
    client.put(f"/connectors/{file_source}/stop")
    client.put(f"/connectors/{file_source}/resume")
    response = client.delete(f"/connectors/{file_source}/offsets")
    assert response.json() == {"error_code": 400, "message": NOT_STOPPED}


def test_sink_offsets_are_parsed_as_kafka_does_numbers_or_numeric_strings() -> None:
    parsed = parse_sink_offsets([
        {"partition": {"kafka_topic": "t", "kafka_partition": 0}, "offset": {"kafka_offset": 10}},
        {"partition": {"kafka_topic": "t", "kafka_partition": "1"}, "offset": {"kafka_offset": "20"}},
        {"partition": {"kafka_topic": "t", "kafka_partition": 2}, "offset": None}])
    assert parsed == {TopicPartition("t", 0): 10, TopicPartition("t", 1): 20, TopicPartition("t", 2): None}


@pytest.mark.parametrize("entry,message", [
    ({"partition": None, "offset": None}, "The partition for a sink connector offset cannot be null or missing"),
    ({"partition": {"kafka_topic": "t"}, "offset": None},
     "The partition for a sink connector offset must contain the keys 'kafka_topic' and 'kafka_partition'"),
    ({"partition": {"kafka_topic": None, "kafka_partition": 0}, "offset": None},
     "Kafka topic names must be valid strings and may not be null"),
    ({"partition": {"kafka_topic": "t", "kafka_partition": "x"}, "offset": None},
     ("Failed to parse the following Kafka partition value in the provided offsets: 'x'. Partition values for "
     "sink connectors need to be integers.")),
    ({"partition": {"kafka_topic": "t", "kafka_partition": 0}, "offset": {"offset": 1}},
     "The offset for a sink connector should either be null or contain the key 'kafka_offset'"),
    ({"partition": {"kafka_topic": "t", "kafka_partition": 0}, "offset": {"kafka_offset": 1.5}},
     ("Failed to parse the following Kafka offset value in the provided offsets: '1.5'. Offset values for sink "
     "connectors need to be integers.")),
])
def test_malformed_sink_offsets_are_refused_with_kafkas_messages(entry: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_sink_offsets([entry])
    assert str(caught.value) == message


def test_malformed_sink_offsets_answer_400_before_kafka_is_contacted(client: TestClient, herder: RestHerder,
                                                                    tmp_path: Path) -> None:
    herder.worker_props["bootstrap.servers"] = "127.0.0.1:9"  # nothing listens: a 400 must come first
    sink = {"connector.class": "FileStreamSink", "file": str(tmp_path / "out"), "topics": "t"}
    assert client.put("/connectors/sink/config", json=sink).status_code == 201
    client.put("/connectors/sink/stop")
    response = client.patch("/connectors/sink/offsets", json=body(({"kafka_topic": "t"}, {"kafka_offset": 1})))
    assert response.json()["error_code"] == 400 and "'kafka_partition'" in response.json()["message"]

"""Where Kafka Connect 4.1 and Kopycat's REST API were seen to differ, Kopycat now answers as Kafka:
non-Latin-1 names, STOPPED over every state, secrets of client and converter configs, offsets
and bodies Kafka refuses with a 400, the trailing slash, and the API level ``GET /`` names."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from kopycat.rest import RestHerder
from kopycat.rest.masking import is_secret_name
from kopycat.storage.connector_status import ConnectorStatus, State, TaskStatus

SINK = {"connector.class": "FileStreamSink", "file": "/tmp/parity-sink.txt", "topics": "t"}


def offsets_body(partition: Any, offset: Any) -> dict[str, Any]:
    return {"offsets": [{"partition": partition, "offset": offset}]}


@pytest.fixture
def stopped_sink(client: TestClient, herder: RestHerder) -> str:
    """A stopped FileStreamSink whose worker points at a port nothing listens on: a 400 must come first."""
    herder.worker_props["bootstrap.servers"] = "127.0.0.1:9"
    assert client.put("/connectors/sink/config", json=SINK).status_code == 201
    assert client.put("/connectors/sink/stop").status_code == 204
    return "sink"


# ------------------------------------------------------------------------------------- names

@pytest.mark.parametrize("name", ["名前-hs", "rocket-\U0001F680"])
def test_a_connector_name_outside_latin1_is_created_with_a_percent_encoded_location(
        client: TestClient, docs_request: dict[str, Any], name: str) -> None:
    response = client.post("/connectors", json={**docs_request, "name": name})
    assert response.status_code == 201
    location = response.headers["location"]
    assert location.isascii() and "%" in location
    assert client.get(location).json()["name"] == name
    put = client.put(f"/connectors/{name}-2/config", json=docs_request["config"])
    assert put.status_code == 201 and put.headers["location"].isascii()


def test_a_name_that_is_a_json_array_answers_400_and_creates_nothing(
        client: TestClient, docs_request: dict[str, Any]) -> None:
    response = client.post("/connectors", json={**docs_request, "name": ["a"]})
    assert response.status_code == 400 and "name must be a JSON string" in response.json()["message"]
    assert client.get("/connectors").json() == []


def test_nan_or_infinity_in_a_config_answers_400_instead_of_storing_nan(client: TestClient) -> None:
    raw = (b'{"name": "n", "config": {"connector.class": "FileStreamSource", "file": "/tmp/x", "topic": "t", '
           b'"a": NaN}}')
    response = client.post("/connectors", content=raw, headers={"content-type": "application/json"})
    assert response.status_code == 400
    assert response.json()["message"].startswith("Invalid value NaN for configuration a")
    infinite = client.put("/connectors/n/config", content=b'{"connector.class": "FileStreamSource", "a": Infinity}',
                          headers={"content-type": "application/json"})
    assert infinite.status_code == 400 and "Infinity" in infinite.json()["message"]
    assert client.get("/connectors").json() == []


def test_a_config_larger_than_one_kafka_message_answers_400_naming_the_limit(
        client: TestClient, herder: RestHerder, docs_request: dict[str, Any]) -> None:
    big = {**docs_request["config"], "blob": "x" * 1_100_000}
    response = client.put("/connectors/big/config", json=big)
    assert response.status_code == 400
    assert "1000000-byte limit" in response.json()["message"] and "max.request.size" in response.json()["message"]
    assert herder.config_store.snapshot().connector_configs == {}
    herder.worker_props["max.request.size"] = "2000000"
    assert client.put("/connectors/big/config", json=big).status_code == 201


# ------------------------------------------------------------------------------------ states

def restarted(client: TestClient, herder: RestHerder, name: str) -> None:
    herder.config_store.put_task_configs(name, [{}])
    herder.status_store.put(ConnectorStatus(name, State.RUNNING, None, "w"))
    herder.status_store.put(TaskStatus(name, 0, State.RUNNING, None, "w"))
    assert client.post(f"/connectors/{name}/restart?includeTasks=true").status_code == 202


def connector_state(client: TestClient, name: str) -> str:
    return str(client.get(f"/connectors/{name}/status").json()["connector"]["state"])


def test_a_failed_connector_that_is_stopped_reports_stopped(client: TestClient, herder: RestHerder,
                                                            file_source: str) -> None:
    herder.status_store.put(ConnectorStatus(file_source, State.FAILED, "boom", "w"))
    assert client.put(f"/connectors/{file_source}/stop").status_code == 204
    assert connector_state(client, file_source) == "STOPPED"


def test_restart_then_stop_reports_stopped_and_a_later_pause_reports_paused(
        client: TestClient, herder: RestHerder, file_source: str) -> None:
    restarted(client, herder, file_source)
    client.put(f"/connectors/{file_source}/stop")
    assert connector_state(client, file_source) == "STOPPED"
    client.put(f"/connectors/{file_source}/pause")
    assert connector_state(client, file_source) == "PAUSED"


def test_restart_then_pause_reports_paused_for_the_connector_and_its_tasks(
        client: TestClient, herder: RestHerder, file_source: str) -> None:
    restarted(client, herder, file_source)
    client.put(f"/connectors/{file_source}/pause")
    status = client.get(f"/connectors/{file_source}/status").json()
    assert status["connector"]["state"] == "PAUSED" and [t["state"] for t in status["tasks"]] == ["PAUSED"]
    assert client.get(f"/connectors/{file_source}/tasks/0/status").json()["state"] == "PAUSED"


def test_a_failed_connector_that_is_paused_stays_failed(client: TestClient, herder: RestHerder,
                                                        file_source: str) -> None:
    herder.status_store.put(ConnectorStatus(file_source, State.FAILED, "boom", "w"))
    client.put(f"/connectors/{file_source}/pause")
    assert connector_state(client, file_source) == "FAILED"


# ----------------------------------------------------------------------------------- secrets

CLIENT_SECRETS = {
    "producer.override.sasl.jaas.config": "jaas-1", "consumer.ssl.key.password": "ssl-2",
    "admin.override.ssl.keystore.password": "ks-3", "source.cluster.ssl.truststore.password": "ts-4",
    "target.cluster.sasl.oauthbearer.client.credentials.client.secret": "oauth-5",
    "producer.ssl.keystore.key": "pem-6", "key.converter.basic.auth.user.info": "user:pw-7",
    "value.converter.basic.auth.user.info": "user:pw-8", "aws.secret.access.key": "aws-9",
    "value.converter.bearer.auth.token": "tok-10", "github.credentials": "cred-11",
}


def test_client_converter_and_secret_named_values_are_hidden_in_every_response(
        client: TestClient, herder: RestHerder, docs_request: dict[str, Any]) -> None:
    config = {**docs_request["config"], **CLIENT_SECRETS,
              "consumer.sasl.oauthbearer.token.endpoint.url": "https://idp/token"}
    created = client.post("/connectors", json={"name": "src", "config": config}).json()
    herder.config_store.put_task_configs("src", [config])
    bodies = [created, client.get("/connectors/src").json(), client.get("/connectors/src/config").json(),
              client.get("/connectors?expand=info").json(), client.get("/connectors/src/tasks").json(),
              client.put("/connectors/src/config", json=config).json(),
              client.patch("/connectors/src/config", json={"topic": "t2"}).json()]
    text = repr(bodies)
    assert not [secret for secret in CLIENT_SECRETS.values() if secret in text]
    shown = client.get("/connectors/src/config").json()
    assert shown["consumer.sasl.oauthbearer.token.endpoint.url"] == "https://idp/token"
    assert herder.config_store.snapshot().connector_configs["src"]["aws.secret.access.key"] == "aws-9"


@pytest.mark.parametrize("key", ["sasl.oauthbearer.token.endpoint.url", "aws.credentials.provider.class",
                                 "ssl.keystore.location", "basic.auth.credentials.source", "topic"])
def test_names_about_a_secret_but_not_holding_one_are_shown(key: str) -> None:
    assert not is_secret_name(key)


# ----------------------------------------------------------------------------------- offsets

def test_a_sink_offset_beyond_javas_long_answers_400_as_kafka(client: TestClient, stopped_sink: str) -> None:
    response = client.patch(f"/connectors/{stopped_sink}/offsets",
                            json=offsets_body({"kafka_topic": "t", "kafka_partition": 0}, {"kafka_offset": 2**63}))
    assert response.json() == {"error_code": 400, "message": (
        "Failed to parse the following Kafka offset value in the provided offsets: '9223372036854775808'. "
        "Offset values for sink connectors need to be integers.")}


def test_an_empty_sink_offset_entry_answers_kafkas_missing_partition_message(
        client: TestClient, stopped_sink: str) -> None:
    response = client.patch(f"/connectors/{stopped_sink}/offsets", json={"offsets": [{}]})
    assert response.json() == {"error_code": 400,
                               "message": "The partition for a sink connector offset cannot be null or missing"}


@pytest.mark.parametrize("partition,offset,words", [
    ({"kafka_topic": "t", "kafka_partition": 0}, {"kafka_offset": -1}, ["kafka_offset", "at least 0"]),
    ({"kafka_topic": "t", "kafka_partition": -1}, {"kafka_offset": 1}, ["kafka_partition", "at least 0"]),
    ({"kafka_topic": "", "kafka_partition": 0}, {"kafka_offset": 1}, ["kafka_topic", "can't be empty"]),
    ({"kafka_topic": "a b", "kafka_partition": 0}, {"kafka_offset": 1}, ["kafka_topic", "ASCII alphanumerics"]),
    ({"kafka_topic": "x" * 250, "kafka_partition": 0}, {"kafka_offset": 1}, ["kafka_topic", "249 characters"]),
])
def test_impossible_sink_partitions_and_offsets_answer_400_naming_the_field_and_limit(
        client: TestClient, stopped_sink: str, partition: dict[str, Any], offset: dict[str, Any],
        words: list[str]) -> None:
    response = client.patch(f"/connectors/{stopped_sink}/offsets", json=offsets_body(partition, offset))
    assert response.status_code == 400
    assert all(word in response.json()["message"] for word in words), response.json()


def test_a_two_mib_source_partition_answers_400_and_stores_nothing(client: TestClient, herder: RestHerder,
                                                                   file_source: str) -> None:
    client.put(f"/connectors/{file_source}/stop")
    huge = {"filename": "x" * (2 << 20)}
    response = client.patch(f"/connectors/{file_source}/offsets", json=offsets_body(huge, {"position": 1}))
    assert response.status_code == 400
    assert "source partition" in response.json()["message"] and "1000000-byte" in response.json()["message"]
    assert client.get(f"/connectors/{file_source}/offsets").json() == {"offsets": []}
    assert not Path(herder.worker_props["offset.storage.file.filename"]).exists() or \
        Path(herder.worker_props["offset.storage.file.filename"]).stat().st_size < 1000


# ------------------------------------------------------------------------------- paths, root

def test_the_connector_list_with_a_trailing_slash_answers_200_like_without(client: TestClient,
                                                                           file_source: str) -> None:
    response = client.get("/connectors/", follow_redirects=False)
    assert response.status_code == 200 and response.json() == [file_source]


def test_statuses_carry_the_connector_plugins_version_as_kafka_4_1(client: TestClient, herder: RestHerder,
                                                                   file_source: str) -> None:
    herder.config_store.put_task_configs(file_source, [{}])
    herder.status_store.put(TaskStatus(file_source, 0, State.RUNNING, None, "w", version="9.9"))
    status = client.get(f"/connectors/{file_source}/status").json()
    plugin = {p["class"]: p["version"] for p in client.get("/connector-plugins").json()}
    assert status["connector"]["version"] == plugin["org.apache.kafka.connect.file.FileStreamSourceConnector"]
    assert status["tasks"][0]["version"] == "9.9"  # what the task's worker recorded wins


# -------------------------------------------------------------------------------- validation

def test_validation_messages_quote_values_as_kafka_and_report_a_type_error_once(
        client: TestClient, docs_request: dict[str, Any]) -> None:
    response = client.post("/connectors", json={"name": "c", "config": {**docs_request["config"],
                                                                       "tasks.max": "abc"}})
    lines = response.json()["message"].split("\n")
    assert lines[:2] == ["Connector configuration is invalid and contains the following 1 error(s):",
                         "Invalid value abc for configuration tasks.max: Not a number of type INT"]
    assert len(lines) == 3

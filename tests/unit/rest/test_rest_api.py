"""The REST API answers as Kafka Connect does: paths, status codes, JSON shapes and messages.

Bodies come from Kafka Connect's REST documentation; stores are in memory.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from fastapi.testclient import TestClient

from kopycat import __version__
from kopycat.rest import RestHerder, create_app
from kopycat.storage.config_backing_store import ClusterConfigState, MemoryConfigBackingStore, TargetState
from kopycat.storage.connector_status import ConnectorStatus, State, TaskStatus, TopicStatus
from kopycat.storage.status_backing_store import MemoryStatusBackingStore

FILE_SINK: dict[str, Any] = {
    "name": "local-file-sink",
    "config": {"connector.class": "FileStreamSink", "tasks.max": "1", "file": "/tmp/test.sink.txt",
               "topics": "connect-test"},
}


def is_kafka_error(response: Any, status: int) -> bool:
    body = response.json()
    return response.status_code == status and set(body) == {"error_code", "message"} \
        and body["error_code"] == status and isinstance(body["message"], str)


# ------------------------------------------------------------------------------ root, create

def test_root_shows_the_kafka_connect_api_version_a_stable_commit_and_kopycats_version(
        client: TestClient) -> None:
    assert client.get("/").json() == {"version": "4.1.0", "commit": f"kopycat-{__version__}",
                                      "kafka_cluster_id": "test-cluster", "kopycat_version": __version__}


def test_creating_the_documentation_file_source_answers_201_with_its_info(
        client: TestClient, herder: RestHerder, docs_request: dict[str, Any]) -> None:
    response = client.post("/connectors", json=docs_request)
    assert response.status_code == 201
    assert response.headers["location"] == "/connectors/local-file-source"
    assert response.json() == {"name": "local-file-source",
                               "config": {**docs_request["config"], "name": "local-file-source"},
                               "tasks": [], "type": "source"}
    state = herder.config_store.snapshot()
    assert state.connector_configs["local-file-source"]["file"] == "/tmp/test.txt"
    assert state.target_states["local-file-source"] is TargetState.STARTED


def test_creating_an_existing_connector_answers_409(client: TestClient, file_source: str,
                                                    docs_request: dict[str, Any]) -> None:
    response = client.post("/connectors", json=docs_request)
    assert is_kafka_error(response, 409)
    assert response.json()["message"] == "Connector local-file-source already exists"


def test_an_invalid_config_answers_400_counting_and_listing_every_error(client: TestClient) -> None:
    response = client.post("/connectors", json={"name": "bad-sink", "config": {
        "connector.class": "FileStreamSink", "tasks.max": "0"}})
    assert is_kafka_error(response, 400)
    lines = response.json()["message"].split("\n")
    assert lines[0] == (f"Connector configuration is invalid and contains the following {len(lines) - 2} "
                        f"error(s):")
    assert "Invalid value 0 for configuration tasks.max: Value must be at least 1" in lines
    assert lines[-1] == ("You can also find the above list of errors at the endpoint "
                         "`/connector-plugins/{connectorType}/config/validate`")
    assert client.get("/connectors").json() == []


def test_a_config_without_connector_class_answers_400_naming_the_config(client: TestClient) -> None:
    response = client.put("/connectors/c/config", json={"tasks.max": "1"})
    assert is_kafka_error(response, 400)
    assert response.json()["message"] == "Connector config {name=c, tasks.max=1} contains no connector type"


def test_an_unknown_connector_class_answers_400_listing_the_known_ones(client: TestClient) -> None:
    response = client.put("/connectors/c/config", json={"connector.class": "NoSuchConnector"})
    assert is_kafka_error(response, 400)
    assert "FileStreamSource" in response.json()["message"]


def test_a_name_in_the_config_must_match_the_url(client: TestClient, docs_request: dict[str, Any]) -> None:
    response = client.put("/connectors/other/config", json={**docs_request["config"], "name": "mine"})
    assert is_kafka_error(response, 400)
    assert response.json()["message"] == ("Connector name configuration (mine) doesn't match connector name "
                                          "in the URL (other)")


def test_put_config_creates_with_201_then_reconfigures_with_200(
        client: TestClient, herder: RestHerder, docs_request: dict[str, Any]) -> None:
    config = docs_request["config"]
    assert client.put("/connectors/src/config", json=config).status_code == 201
    response = client.put("/connectors/src/config", json={**config, "topic": "other"})
    assert response.status_code == 200
    assert response.json()["config"]["topic"] == "other"
    assert herder.config_store.snapshot().connector_configs["src"]["topic"] == "other"


def test_numbers_and_booleans_in_a_config_are_read_as_strings_as_jackson_does(client: TestClient) -> None:
    config = {"connector.class": "FileStreamSource", "tasks.max": 2, "file": "/tmp/a", "topic": "t",
              "errors.log.enable": True}
    assert client.put("/connectors/src/config", json=config).status_code == 201
    assert client.get("/connectors/src/config").json() == {
        "connector.class": "FileStreamSource", "tasks.max": "2", "file": "/tmp/a", "topic": "t",
        "errors.log.enable": "true", "name": "src"}


def test_a_nested_object_as_a_config_value_answers_400(client: TestClient) -> None:
    response = client.put("/connectors/src/config", json={"connector.class": "FileStreamSource", "x": {"a": 1}})
    assert is_kafka_error(response, 400)
    assert "configuration x" in response.json()["message"]


def test_patch_merges_keys_and_a_null_removes_one(client: TestClient, file_source: str) -> None:
    response = client.patch(f"/connectors/{file_source}/config",
                            json={"topic": "patched", "errors.log.enable": "true"})
    assert response.status_code == 200
    assert response.json()["config"]["topic"] == "patched"
    response = client.patch(f"/connectors/{file_source}/config", json={"errors.log.enable": None})
    assert "errors.log.enable" not in response.json()["config"]
    assert is_kafka_error(client.patch("/connectors/nope/config", json={"topic": "x"}), 404)


def test_initial_state_stopped_creates_a_stopped_connector(client: TestClient, docs_request: dict[str, Any]) -> None:
    assert client.post("/connectors", json={**docs_request, "initial_state": "STOPPED"}).status_code == 201
    assert client.get("/connectors/local-file-source/status").json()["connector"]["state"] == "STOPPED"


# ------------------------------------------------------------------------------- list, read

def test_list_connectors_and_expand_status_and_info(client: TestClient, file_source: str) -> None:
    assert client.post("/connectors", json=FILE_SINK).status_code == 201
    assert client.get("/connectors").json() == ["local-file-sink", file_source]
    expanded = client.get("/connectors?expand=status&expand=info").json()
    assert set(expanded) == {"local-file-sink", file_source}
    assert expanded[file_source]["info"]["type"] == "source"
    assert expanded["local-file-sink"]["status"]["type"] == "sink"
    assert client.get("/connectors?expand=info").json()[file_source].keys() == {"info"}


def test_get_connector_shows_its_info_and_committed_tasks(client: TestClient, herder: RestHerder,
                                                          file_source: str) -> None:
    herder.config_store.put_task_configs(file_source, [{"file": "/tmp/test.txt", "topic": "connect-test"}])
    body = client.get(f"/connectors/{file_source}").json()
    assert body["tasks"] == [{"connector": file_source, "task": 0}]
    assert client.get(f"/connectors/{file_source}/tasks").json() == [
        {"id": {"connector": file_source, "task": 0}, "config": {"file": "/tmp/test.txt", "topic": "connect-test"}}]


def test_unknown_connectors_answer_404_in_kafkas_shape(client: TestClient) -> None:
    for path in ("/connectors/nope", "/connectors/nope/config", "/connectors/nope/tasks"):
        response = client.get(path)
        assert is_kafka_error(response, 404)
        assert response.json()["message"] == "Connector nope not found"
    assert client.get("/connectors/nope/status").json()["message"] == "No status found for connector nope"


def test_unknown_paths_methods_and_bodies_answer_in_kafkas_shape(client: TestClient) -> None:
    assert is_kafka_error(client.get("/no/such/path"), 404)
    assert is_kafka_error(client.delete("/connectors"), 405)
    assert is_kafka_error(client.post("/connectors", content=b"{not json",
                                      headers={"content-type": "application/json"}), 400)
    assert is_kafka_error(client.get("/connectors/c/tasks/zero/status"), 404)


# ---------------------------------------------------------------------------------- status

def test_a_stored_connector_without_status_is_unassigned(client: TestClient, file_source: str) -> None:
    assert client.get(f"/connectors/{file_source}/status").json() == {
        "name": file_source,
        "connector": {"state": "UNASSIGNED", "worker_id": "127.0.0.1:8083", "version": __version__},
        "tasks": [], "type": "source"}


def test_status_shows_stored_states_and_traces_of_failed_tasks(client: TestClient, herder: RestHerder,
                                                               file_source: str) -> None:
    herder.config_store.put_task_configs(file_source, [{}, {}])
    herder.status_store.put(ConnectorStatus(file_source, State.RUNNING, None, "airflow-1"))
    herder.status_store.put(TaskStatus(file_source, 0, State.FAILED, "Traceback: boom", "airflow-2"))
    assert client.get(f"/connectors/{file_source}/status").json() == {
        "name": file_source, "connector": {"state": "RUNNING", "worker_id": "airflow-1", "version": __version__},
        "tasks": [{"id": 0, "state": "FAILED", "worker_id": "airflow-2", "trace": "Traceback: boom",
                   "version": __version__},
                  {"id": 1, "state": "UNASSIGNED", "worker_id": "127.0.0.1:8083", "version": __version__}],
        "type": "source"}
    assert client.get(f"/connectors/{file_source}/tasks/0/status").json() == {
        "id": 0, "state": "FAILED", "worker_id": "airflow-2", "trace": "Traceback: boom", "version": __version__}
    response = client.get(f"/connectors/{file_source}/tasks/7/status")
    assert is_kafka_error(response, 404)
    assert response.json()["message"] == f"No status found for task {file_source}-7"


def test_pause_and_resume_answer_202_and_write_the_target_state(client: TestClient, herder: RestHerder,
                                                                file_source: str) -> None:
    herder.config_store.put_task_configs(file_source, [{}])
    herder.status_store.put(ConnectorStatus(file_source, State.RUNNING, None, "w"))
    herder.status_store.put(TaskStatus(file_source, 0, State.RUNNING, None, "w"))
    response = client.put(f"/connectors/{file_source}/pause")
    assert response.status_code == 202 and response.content == b""
    assert herder.config_store.snapshot().target_states[file_source] is TargetState.PAUSED
    status = client.get(f"/connectors/{file_source}/status").json()
    assert status["connector"]["state"] == "PAUSED" and status["tasks"][0]["state"] == "PAUSED"
    assert client.put(f"/connectors/{file_source}/resume").status_code == 202
    assert client.get(f"/connectors/{file_source}/status").json()["connector"]["state"] == "RUNNING"
    response = client.put("/connectors/nope/pause")
    assert is_kafka_error(response, 404) and response.json()["message"] == "Unknown connector nope"


def test_stop_answers_204_commits_zero_tasks_and_shows_stopped(client: TestClient, herder: RestHerder,
                                                               file_source: str) -> None:
    herder.config_store.put_task_configs(file_source, [{}])
    herder.status_store.put(ConnectorStatus(file_source, State.RUNNING, None, "w"))
    assert client.put(f"/connectors/{file_source}/stop").status_code == 204
    state = herder.config_store.snapshot()
    assert state.target_states[file_source] is TargetState.STOPPED
    assert state.task_configs[file_source] == []
    status = client.get(f"/connectors/{file_source}/status").json()
    assert status["connector"]["state"] == "STOPPED" and status["tasks"] == []


# --------------------------------------------------------------------------------- restart

def test_a_plain_restart_answers_204_and_records_restarting(client: TestClient, herder: RestHerder,
                                                            file_source: str) -> None:
    assert client.post(f"/connectors/{file_source}/restart").status_code == 204
    assert herder.status_store.get_connector(file_source).state is State.RESTARTING  # type: ignore[union-attr]
    response = client.post("/connectors/nope/restart")
    assert is_kafka_error(response, 404) and response.json()["message"] == "Unknown connector: nope"  # as Kafka 4.1


def test_restart_of_only_failed_tasks_answers_202_with_the_plan(client: TestClient, herder: RestHerder,
                                                                file_source: str) -> None:
    herder.config_store.put_task_configs(file_source, [{}, {}])
    herder.status_store.put(ConnectorStatus(file_source, State.RUNNING, None, "w"))
    herder.status_store.put(TaskStatus(file_source, 0, State.RUNNING, None, "w"))
    herder.status_store.put(TaskStatus(file_source, 1, State.FAILED, "boom", "w"))
    response = client.post(f"/connectors/{file_source}/restart?includeTasks=true&onlyFailed=true")
    assert response.status_code == 202
    version = {"version": __version__}
    assert response.json() == {"name": file_source, "connector": {"state": "RUNNING", "worker_id": "w", **version},
                               "tasks": [{"id": 0, "state": "RUNNING", "worker_id": "w", **version},
                                         {"id": 1, "state": "RESTARTING", "worker_id": "w", "trace": "boom",
                                          **version}],
                               "type": "source"}
    assert herder.status_store.get_task(file_source, 1).state is State.RESTARTING  # type: ignore[union-attr]
    assert herder.status_store.get_connector(file_source).state is State.RUNNING  # type: ignore[union-attr]
    response = client.post("/connectors/nope/restart?includeTasks=true")
    assert response.json() == {"error_code": 404, "message": "Unknown connector: nope"}


def test_task_restart_answers_204_or_404_for_a_task_without_config(client: TestClient, herder: RestHerder,
                                                                   file_source: str) -> None:
    herder.config_store.put_task_configs(file_source, [{}])
    assert client.post(f"/connectors/{file_source}/tasks/0/restart").status_code == 204
    assert herder.status_store.get_task(file_source, 0).state is State.RESTARTING  # type: ignore[union-attr]
    response = client.post(f"/connectors/{file_source}/tasks/3/restart")
    assert response.json() == {"error_code": 404, "message": f"Unknown task: {file_source}-3"}


# ---------------------------------------------------------------------------------- delete

def test_delete_answers_204_removes_config_and_statuses(client: TestClient, herder: RestHerder,
                                                        file_source: str) -> None:
    herder.config_store.put_task_configs(file_source, [{}])
    herder.status_store.put(ConnectorStatus(file_source, State.RUNNING, None, "w"))
    herder.status_store.put(TaskStatus(file_source, 0, State.RUNNING, None, "w"))
    assert client.delete(f"/connectors/{file_source}").status_code == 204
    assert client.get("/connectors").json() == []
    assert herder.status_store.get_connector(file_source) is None
    assert herder.status_store.get_all_tasks(file_source) == []
    assert is_kafka_error(client.delete(f"/connectors/{file_source}"), 404)


def test_active_topics_list_the_recorded_topics_and_a_reset_or_delete_clears_them(
        client: TestClient, herder: RestHerder, file_source: str) -> None:
    assert client.get(f"/connectors/{file_source}/topics").json() == {file_source: {"topics": []}}
    herder.status_store.put_topic(TopicStatus("connect-test", file_source, 0, 1))
    herder.status_store.put_topic(TopicStatus("audit", file_source, 0, 2))
    herder.status_store.put_topic(TopicStatus("other", "another-connector", 0, 3))
    topics = client.get(f"/connectors/{file_source}/topics").json()
    assert topics == {file_source: {"topics": ["audit", "connect-test"]}}

    assert client.put(f"/connectors/{file_source}/topics/reset").status_code == 202
    assert client.get(f"/connectors/{file_source}/topics").json() == {file_source: {"topics": []}}
    assert [s.topic for s in herder.status_store.get_all_topics("another-connector")] == ["other"]

    herder.status_store.put_topic(TopicStatus("connect-test", file_source, 0, 4))
    assert client.delete(f"/connectors/{file_source}").status_code == 204
    assert herder.status_store.get_all_topics(file_source) == []  # a new connector of that name starts clean


def test_topic_tracking_switched_off_in_the_worker_answers_403_as_kafka(herder: RestHerder) -> None:
    herder.worker_props["topic.tracking.allow.reset"] = "false"
    with TestClient(create_app(herder)) as client:
        assert client.get("/connectors/c/topics").json() == {"c": {"topics": []}}
        reset = client.put("/connectors/c/topics/reset")
        assert is_kafka_error(reset, 403) and reset.json()["message"] == "Topic tracking reset is disabled."
        herder.worker_props["topic.tracking.enable"] = "false"
        listed = client.get("/connectors/c/topics")
        assert is_kafka_error(listed, 403) and listed.json()["message"] == "Topic tracking is disabled."


# --------------------------------------------------------------------------------- plugins

def test_connector_plugins_lists_connectors_by_default_and_all_plugins_on_request(client: TestClient) -> None:
    connectors = client.get("/connector-plugins").json()
    assert {"class": "org.apache.kafka.connect.file.FileStreamSourceConnector", "type": "source",
            "version": __version__} in connectors
    assert {p["type"] for p in connectors} <= {"source", "sink"}
    every = client.get("/connector-plugins?connectorsOnly=false").json()
    assert {"transformation", "converter"} <= {p["type"] for p in every}


def test_validate_answers_kafkas_config_infos(client: TestClient, docs_request: dict[str, Any]) -> None:
    url = "/connector-plugins/FileStreamSourceConnector/config/validate"
    response = client.put(url, json={**docs_request["config"], "name": "local-file-source"})
    body = response.json()
    assert response.status_code == 200
    assert body["name"] == "org.apache.kafka.connect.file.FileStreamSourceConnector" and body["error_count"] == 0
    names = {entry["value"]["name"] for entry in body["configs"]}
    assert {"file", "topic", "tasks.max", "connector.class"} <= names
    unnamed = client.put(url, json=docs_request["config"]).json()  # as in Kafka's docs: name is required
    assert unnamed["error_count"] == 1
    [errors] = [e["value"]["errors"] for e in unnamed["configs"] if e["value"]["name"] == "name"]
    assert errors[0].startswith('Missing required configuration "name" which has no default value.')


def test_validate_refuses_a_body_naming_another_connector_class(client: TestClient,
                                                                docs_request: dict[str, Any]) -> None:
    response = client.put("/connector-plugins/FileStreamSink/config/validate", json=docs_request["config"])
    assert response.json() == {"error_code": 400, "message": "Included connector type FileStreamSource does not "
                                                             "match request type FileStreamSink"}


def test_plugin_config_lists_key_definitions_or_answers_404(client: TestClient) -> None:
    keys = client.get("/connector-plugins/FileStreamSource/config").json()
    assert any(key["name"] == "file" and key["type"] == "STRING" for key in keys)
    assert client.get("/connector-plugins/Nope/config").json() == {"error_code": 404,
                                                                   "message": "Unknown plugin Nope."}


def test_plugin_config_answers_transformations_and_header_converters_too(client: TestClient) -> None:
    # KIP-769: every plugin type answers its own keys, as Kafka 4.1's worker does
    keys = client.get("/connector-plugins/org.apache.kafka.connect.transforms.TimestampConverter$Value/config").json()
    assert [(k["name"], k["required"], k["default_value"]) for k in keys] == [
        ("field", False, ""), ("target.type", True, None), ("format", False, ""),
        ("unix.precision", False, "milliseconds"), ("replace.null.with.default", False, "true")]
    assert client.get("/connector-plugins/org.apache.kafka.connect.storage.SimpleHeaderConverter/config").json() == []
    assert [k["name"] for k in client.get("/connector-plugins/InsertHeader/config").json()] == ["header",
                                                                                                "value.literal"]


# ----------------------------------------------------------------------------- auth, openapi

def test_a_token_is_required_when_the_server_has_one(herder: RestHerder) -> None:
    with TestClient(create_app(herder, token="s3cret-token")) as client:
        missing = client.get("/connectors")
        assert is_kafka_error(missing, 401) and missing.headers["www-authenticate"] == 'Bearer realm="kopycat"'
        assert is_kafka_error(client.get("/connectors", headers={"Authorization": "Bearer wrong"}), 401)
        assert is_kafka_error(client.get("/openapi.json"), 401)
        ok = client.get("/connectors", headers={"Authorization": "Bearer s3cret-token"})
        assert ok.status_code == 200 and ok.json() == []
        page = client.get("/ui")  # static, no data: it asks for the token when the API answers 401
        assert page.status_code == 200 and 'id="login"' in page.text and "s3cret" not in page.text
        assert is_kafka_error(client.get("/ui/../connectors"), 401)


def _filled(path: str) -> str:
    return re.sub(r"\{(\w+)\}", lambda m: "0" if m.group(1) == "task" else f"no-such-{m.group(1)}", path)


def test_every_get_route_answers_unknown_names_without_a_server_error(client: TestClient) -> None:
    paths = client.app.openapi()["paths"]  # type: ignore[attr-defined]
    gets = [path for path, operations in paths.items() if "get" in operations]
    assert "/connectors/{name}/offsets" in gets and "/connectors/{name}/lag" in gets and len(gets) == 12
    for path in gets:
        response = client.get(_filled(path))
        assert response.status_code < 500, (path, response.text)
        if response.status_code >= 400:
            assert is_kafka_error(response, response.status_code), path


def test_every_route_has_a_summary_in_the_openapi_spec(client: TestClient) -> None:
    paths = client.app.openapi()["paths"]  # type: ignore[attr-defined]
    missing = [(path, verb) for path, ops in paths.items() for verb, op in ops.items() if not op.get("summary")]
    assert missing == []


@pytest.mark.parametrize("verb,path", [("put", "/connectors/nope/stop"), ("put", "/connectors/nope/resume"),
                                       ("post", "/connectors/nope/tasks/0/restart")])
def test_control_calls_on_unknown_connectors_answer_404(client: TestClient, verb: str, path: str) -> None:
    assert is_kafka_error(client.request(verb.upper(), path), 404)


class BrokenConfigStore(MemoryConfigBackingStore):
    """A config store whose reads fail, as one whose broker went away would."""

    def snapshot(self) -> ClusterConfigState:
        raise RuntimeError("config topic unreachable")


def test_an_unexpected_failure_answers_500_in_kafkas_shape_naming_it() -> None:
    herder = RestHerder(BrokenConfigStore(), MemoryStatusBackingStore())
    with TestClient(create_app(herder), raise_server_exceptions=False) as client:
        response = client.get("/connectors")
    assert response.json() == {"error_code": 500, "message": "config topic unreachable"}


def test_lag_of_a_source_that_reads_no_kafka_topic_is_null_with_the_reason(client: TestClient,
                                                                          file_source: str) -> None:
    answer = client.get(f"/connectors/{file_source}/lag").json()
    assert answer["connector"] == file_source and answer["input"] is None and answer["total_lag"] is None
    assert answer["partitions"] == [] and "does not read Kafka" in answer["reason"]
    assert is_kafka_error(client.get("/connectors/nope/lag"), 404)

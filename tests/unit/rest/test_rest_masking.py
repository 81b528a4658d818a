"""Passwords never leave the REST API: PASSWORD keys and ``*password``/``*secret`` names show
``[hidden]`` in every body, and a ``[hidden]`` sent back keeps the stored secret."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient

from kopycat.rest import RestHerder
from kopycat.rest.masking import (
    mask_config,
    mask_text,
    mask_validation,
    restore_hidden,
    secret_keys,
)

JDBC = {"connector.class": "JdbcSource", "connection.url": "sqlite:///tmp/nope.db",
        "connection.password": "hunter2", "mode": "bulk", "topic.prefix": "db-"}


def with_secrets(config: dict[str, Any]) -> dict[str, Any]:
    return {**config, "sftp.password": "pw-1", "api.Secret": "sec-2"}


def test_secret_keys_are_password_typed_keys_and_secret_looking_names() -> None:
    assert secret_keys(with_secrets(JDBC)) >= {"connection.password", "sftp.password", "api.Secret"}
    assert "connection.password" in secret_keys({"connector.class": "JdbcSource"})  # defined, not set
    assert secret_keys({"connector.class": "NoSuchClass", "db.password": "x"}) == {"db.password"}
    assert mask_config({"a.password": "x", "b": "y", "c.secret": None}) == {
        "a.password": "[hidden]", "b": "y", "c.secret": None}


def test_every_response_carrying_a_config_hides_its_secrets(client: TestClient, herder: RestHerder,
                                                            docs_request: dict[str, Any]) -> None:
    config = with_secrets(docs_request["config"])
    created = client.post("/connectors", json={"name": "src", "config": config}).json()
    herder.config_store.put_task_configs("src", [{**config, "task.password": "pw-3"}])
    bodies = [created, client.get("/connectors/src").json(), client.get("/connectors/src/config").json(),
              client.get("/connectors?expand=info").json(), client.get("/connectors/src/tasks").json(),
              client.put("/connectors/src/config", json=config).json(),
              client.patch("/connectors/src/config", json={"topic": "t2"}).json()]
    text = repr(bodies)
    assert "pw-1" not in text and "sec-2" not in text and "pw-3" not in text
    assert client.get("/connectors/src/config").json()["sftp.password"] == "[hidden]"
    assert herder.config_store.snapshot().connector_configs["src"]["sftp.password"] == "pw-1"


def test_a_hidden_value_sent_back_keeps_the_stored_secret(client: TestClient, herder: RestHerder,
                                                          docs_request: dict[str, Any]) -> None:
    client.post("/connectors", json={"name": "src", "config": with_secrets(docs_request["config"])})
    shown = client.get("/connectors/src/config").json()
    assert client.put("/connectors/src/config", json={**shown, "topic": "changed"}).status_code == 200
    stored = herder.config_store.snapshot().connector_configs["src"]
    assert stored["sftp.password"] == "pw-1" and stored["api.Secret"] == "sec-2" and stored["topic"] == "changed"
    assert restore_hidden({"x.password": "[hidden]"}, None) == {"x.password": "[hidden]"}


def test_the_validate_response_hides_password_values(client: TestClient) -> None:
    response = client.put("/connector-plugins/JdbcSourceConnector/config/validate",
                          json={**with_secrets(JDBC), "name": "jdbc"})
    assert response.status_code == 200
    values = {entry["value"]["name"]: entry["value"]["value"] for entry in response.json()["configs"]}
    assert values["connection.password"] == "[hidden]" and values.get("sftp.password") in (None, "[hidden]")
    assert "hunter2" not in response.text and "pw-1" not in response.text


def test_secrets_quoted_in_messages_are_hidden_too() -> None:
    config = {"db.password": "hunter2"}
    assert mask_text("Invalid value 'hunter2' for db.password", config) == "Invalid value '[hidden]' for db.password"
    response = {"name": "C", "error_count": 1, "groups": [], "configs": [
        {"definition": None, "value": {"name": "db.password", "value": "hunter2", "recommended_values": [],
                                       "errors": ["bad hunter2"], "visible": True}}]}
    masked = mask_validation(response, config)
    assert masked["configs"][0]["value"]["value"] == "[hidden]"
    assert masked["configs"][0]["value"]["errors"] == ["bad [hidden]"]


def test_an_invalid_config_error_message_does_not_echo_a_secret(client: TestClient) -> None:
    response = client.put("/connectors/c/config", json={"tasks.max": "1", "db.password": "hunter2"})
    assert response.status_code == 400 and "hunter2" not in response.text and "[hidden]" in response.text

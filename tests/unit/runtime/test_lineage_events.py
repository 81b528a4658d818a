"""The standalone worker's OpenLineage events: written through the client's file transport and read back."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from kopycat.api.errors import ConfigError
from kopycat.runtime.lineage_events import LineageEmitter, transport_config
from kopycat.runtime.worker_config import WORKER_CONFIG


def _events(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _file_worker(events: Path) -> dict[str, str]:
    return {"bootstrap.servers": "127.0.0.1:9092", "openlineage.transport.type": "file",
            "openlineage.transport.log_file_path": str(events), "openlineage.transport.append": "true",
            "openlineage.namespace": "shop-worker"}


def test_a_failed_connector_run_ends_with_fail_and_the_trace_as_error_message(tmp_path: Path) -> None:
    db = tmp_path / "shop.db"
    engine = sa.create_engine(f"sqlite:///{db}")
    with engine.begin() as connection:
        connection.execute(sa.text("CREATE TABLE orders (id INTEGER PRIMARY KEY, label VARCHAR(40))"))
    engine.dispose()
    events = tmp_path / "events.jsonl"
    emitter = LineageEmitter.from_worker_props(_file_worker(events))
    assert emitter is not None
    props = {"name": "shop", "connector.class": "io.confluent.connect.jdbc.JdbcSourceConnector",
             "connection.url": f"sqlite:///{db}", "mode": "incrementing", "incrementing.column.name": "id",
             "topic.prefix": "shop_"}

    emitter.connector_started("shop", props, [{"tables": '"orders"'}])
    emitter.connector_stopped("shop", "Traceback (most recent call last):\nDataError: column id is null")
    emitter.connector_stopped("shop", None)  # a run ends once: nothing more is sent
    emitter.close()

    start, fail = _events(events)
    assert [start["eventType"], fail["eventType"]] == ["START", "FAIL"]
    assert start["run"]["runId"] == fail["run"]["runId"]
    assert (fail["job"]["namespace"], fail["job"]["name"]) == ("shop-worker", "shop")
    assert fail["run"]["facets"]["errorMessage"]["message"] == "DataError: column id is null"
    assert [(d["namespace"], d["name"]) for d in fail["inputs"]] == [(f"sqlite:{db}", "orders")]
    assert [(d["namespace"], d["name"]) for d in fail["outputs"]] == [("kafka://127.0.0.1:9092", "shop_orders")]


def test_a_connector_without_known_datasets_still_reports_its_run(tmp_path: Path) -> None:
    events = tmp_path / "events.jsonl"
    emitter = LineageEmitter.from_worker_props(_file_worker(events))
    assert emitter is not None

    emitter.connector_started("lines", {"connector.class": "FileStreamSource", "file": "/x", "topic": "t"},
                              [{"file": "/x", "topic": "t"}])
    emitter.connector_stopped("lines", None)

    assert [(e["eventType"], e["job"]["name"], e["inputs"], e["outputs"]) for e in _events(events)] == [
        ("START", "lines", [], []), ("COMPLETE", "lines", [], [])]


def test_transport_keys_nest_on_dots_and_no_type_means_no_events() -> None:
    assert transport_config({}) is None
    assert LineageEmitter.from_worker_props({"bootstrap.servers": "k:9092"}) is None
    assert transport_config({"openlineage.transport.type": "HTTP", "openlineage.transport.url": "http://m:5000",
                             "openlineage.transport.auth.type": "api_key",
                             "openlineage.transport.auth.apiKey": "k"}) == {
        "type": "http", "url": "http://m:5000", "auth": {"type": "api_key", "apiKey": "k"}}


@pytest.mark.parametrize(("props", "named"), [
    ({"openlineage.transport.type": "file"}, "openlineage.transport.log_file_path"),
    ({"openlineage.transport.type": "http"}, "openlineage.transport.url"),
    ({"openlineage.transport.type": "marquez"}, "openlineage.transport.type"),
], ids=["file-without-path", "http-without-url", "unknown-type"])
def test_a_transport_missing_its_target_names_the_key_to_set(props: dict[str, str], named: str) -> None:
    with pytest.raises(ConfigError, match=named.replace(".", r"\.")) as raised:
        transport_config(props)
    assert props["openlineage.transport.type"] in str(raised.value)


def test_the_worker_config_declares_the_openlineage_keys_with_docs() -> None:
    keys = {name: key for name, key in WORKER_CONFIG.keys.items() if name.startswith("openlineage.")}
    assert set(keys) >= {"openlineage.transport.type", "openlineage.transport.url", "openlineage.namespace",
                         "openlineage.transport.log_file_path", "openlineage.transport.append"}
    assert all(key.documentation for key in keys.values())

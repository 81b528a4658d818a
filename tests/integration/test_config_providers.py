"""Secrets through config providers (KIP-297) on a real broker and PostgreSQL.

A JDBC source gets its URL, user and password from ``${file:...}`` and ``${env:...}``, and the
worker its ``bootstrap.servers`` from a file too; ``kopycat run`` copies the rows. The password
is in no log line and no output; the config topic (the connector stored through the REST API,
then its planned task configs) and the REST responses hold the placeholders.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from fastapi.testclient import TestClient

from kopycat.cli import main
from kopycat.rest import RestHerder, create_app
from kopycat.runtime.bounded_plan import plan_bounded_run
from kopycat.runtime.stored_connectors import publish_task_configs
from kopycat.storage.config_backing_store import KafkaConfigBackingStore
from kopycat.storage.status_backing_store import KafkaStatusBackingStore
from tests.integration.test_jdbc_source import CONNECTOR_CLASS, JSON, consume, create_table, execute
from tests.support.kafka import consume_all

pytestmark = pytest.mark.integration

KAFKA = "org.apache.kafka.common.config.provider."
ROWS = 25


@pytest.fixture
def secret() -> str:
    return f"pw-{uuid.uuid4().hex}"


@pytest.fixture
def secrets_dir(tmp_path: Path, postgres_url: str, bootstrap_servers: str) -> Path:
    """A secrets directory: a properties file with the database URL and user, and the broker."""
    role = f"reader_{uuid.uuid4().hex[:8]}"
    create_table(postgres_url, "orders", ROWS)
    execute(postgres_url, f"CREATE ROLE {role} LOGIN", f"GRANT SELECT ON orders TO {role}")
    directory = tmp_path / "secrets"
    directory.mkdir()
    (directory / "db.properties").write_text(f"url={postgres_url}\nuser={role}\nbootstrap={bootstrap_servers}\n")
    return directory


def providers(secrets_dir: Path) -> dict[str, str]:
    return {"config.providers": "file,env",
            "config.providers.file.class": KAFKA + "FileConfigProvider",
            "config.providers.file.param.allowed.paths": str(secrets_dir),
            "config.providers.env.class": KAFKA + "EnvVarConfigProvider",
            "config.providers.env.param.allowlist.pattern": "^KOPYCAT_PG_"}


def connector(name: str, secrets_dir: Path) -> dict[str, str]:
    db = secrets_dir / "db.properties"
    return {"name": name, "connector.class": CONNECTOR_CLASS, "connection.url": f"${{file:{db}:url}}",
            "connection.user": f"${{file:{db}:user}}", "connection.password": "${env:KOPYCAT_PG_PASSWORD}",
            "mode": "incrementing", "incrementing.column.name": "id", "table.whitelist": "orders",
            "topic.prefix": f"{name}-", **JSON}


def properties(path: Path, props: dict[str, str]) -> Path:
    path.write_text("".join(f"{key}={value}\n" for key, value in props.items()))
    return path


def test_kopycat_run_copies_rows_with_secrets_from_files_and_env_and_never_shows_them(
        tmp_path: Path, secrets_dir: Path, secret: str, bootstrap_servers: str,
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("KOPYCAT_PG_PASSWORD", secret)
    name = f"secret-{uuid.uuid4().hex[:8]}"
    worker = properties(tmp_path / "worker.properties", {
        "bootstrap.servers": f"${{file:{secrets_dir / 'db.properties'}:bootstrap}}",
        "offset.storage.file.filename": str(tmp_path / "offsets"), **providers(secrets_dir)})
    source = properties(tmp_path / "source.properties", connector(name, secrets_dir))

    caplog.set_level(logging.DEBUG)
    with pytest.raises(SystemExit) as exited:
        main(["run", str(worker), str(source), "--no-progress"])
    out, err = capsys.readouterr()
    assert exited.value.code == 0, err[-2000:] + caplog.text[-2000:]
    assert "task 0: 25 records" in out

    rows = [orjson.loads(value)["id"] for _, value in consume(bootstrap_servers, f"{name}-orders") if value]
    assert sorted(rows) == list(range(1, ROWS + 1))
    assert secret not in caplog.text and secret not in out and secret not in err


@pytest.fixture
def rest(worker: dict[str, Any], secrets_dir: Path) -> Iterator[TestClient]:
    """What ``kopycat rest`` serves over this test's config and status topics, with providers."""
    props = {**worker, **providers(secrets_dir)}
    with KafkaConfigBackingStore.from_config(props) as configs, KafkaStatusBackingStore.from_config(props) as statuses:
        with TestClient(create_app(RestHerder(configs, statuses, props))) as client:
            yield client


def test_the_config_topic_and_rest_keep_placeholders_through_a_plan(
        rest: TestClient, worker: dict[str, Any], secrets_dir: Path, secret: str, postgres_url: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KOPYCAT_PG_PASSWORD", secret)
    name = f"stored-{uuid.uuid4().hex[:8]}"
    config = connector(name, secrets_dir)
    created = rest.post("/connectors", json={"name": name, "config": config})
    assert created.status_code == 201, created.text

    shown = rest.get(f"/connectors/{name}/config").json()
    assert shown["connection.password"] in ("${env:KOPYCAT_PG_PASSWORD}", "[hidden]")  # PASSWORD keys may be masked
    assert shown["connection.url"] == config["connection.url"]

    props = {**worker, **providers(secrets_dir)}
    planned = plan_bounded_run(config, props)  # starts the connector: it lists the tables with the real URL
    assert len(planned) == 1
    assert all(task.config.get("connection.url", config["connection.url"]) == config["connection.url"]
               for task in planned)
    publish_task_configs(props, name, [task.config for task in planned])

    records = [value for value in consume_all(worker["bootstrap.servers"], worker["config.storage.topic"]) if value]
    assert records and not [r for r in records if secret.encode() in r or postgres_url.encode() in r]
    assert any(b"${env:KOPYCAT_PG_PASSWORD}" in r for r in records)
    tasks = rest.get(f"/connectors/{name}/tasks").json()
    assert tasks and all(postgres_url not in str(task) and secret not in str(task) for task in tasks)

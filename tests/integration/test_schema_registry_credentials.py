"""Registry credentials from a config provider: ``basic.auth.user.info=${file:...}`` in a real run.

A basic-auth gate (:mod:`tests.integration.registry_gate`) stands in front of the session's
Apicurio: it refuses (401) a request without the right ``Authorization`` header and forwards the
others. ``kopycat run`` copies a PostgreSQL table to an Avro topic with the value converter's
password in a secrets file; Confluent's deserializer (straight to Apicurio) reads the rows; the
password is in no log line and no output. A wrong password fails the run with the registry's 401,
the password again in no message.
"""

from __future__ import annotations

import base64
import logging
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient as ConfluentRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer
from confluent_kafka.serialization import MessageField, SerializationContext

from kopycat.cli import main
from tests.integration.registry_gate import RegistryGate, registry_gate
from tests.integration.test_config_providers import KAFKA, properties
from tests.integration.test_jdbc_source import CONNECTOR_CLASS, consume, create_table

pytestmark = pytest.mark.integration

ROWS = 12
USER = "connect"


@pytest.fixture
def secret() -> str:
    return f"pw-{uuid.uuid4().hex}"


@pytest.fixture
def gate(schema_registry: str, secret: str) -> Iterator[RegistryGate]:
    expected = "Basic " + base64.b64encode(f"{USER}:{secret}".encode()).decode()
    with registry_gate(schema_registry, lambda headers: headers.get("Authorization") == expected) as server:
        yield server


def _run(tmp_path: Path, name: str, gate: RegistryGate, password: str, postgres_url: str,
         bootstrap_servers: str) -> int:
    """``kopycat run`` of a JDBC source to Avro, the converter's user info from a secrets file; its exit code."""
    secrets = tmp_path / f"secrets-{name}"
    secrets.mkdir()
    (secrets / "registry.properties").write_text(f"user.info={USER}:{password}\n")
    worker = properties(tmp_path / f"worker-{name}.properties", {
        "bootstrap.servers": bootstrap_servers, "offset.storage.file.filename": str(tmp_path / f"offsets-{name}"),
        "config.providers": "file", "config.providers.file.class": KAFKA + "FileConfigProvider",
        "config.providers.file.param.allowed.paths": str(secrets)})
    source = properties(tmp_path / f"source-{name}.properties", {
        "name": name, "connector.class": CONNECTOR_CLASS, "connection.url": postgres_url, "mode": "incrementing",
        "incrementing.column.name": "id", "table.whitelist": "orders", "topic.prefix": f"{name}-",
        "key.converter": "org.apache.kafka.connect.storage.StringConverter",
        "value.converter": "io.confluent.connect.avro.AvroConverter", "value.converter.schema.registry.url": gate.url,
        "value.converter.basic.auth.credentials.source": "USER_INFO", "value.converter.max.retries": "0",
        "value.converter.basic.auth.user.info": f"${{file:{secrets / 'registry.properties'}:user.info}}"})
    with pytest.raises(SystemExit) as exited:
        main(["run", str(worker), str(source), "--no-progress"])
    return int(exited.value.code or 0)


def test_user_info_from_a_file_provider_reaches_the_registry_and_no_log(
        tmp_path: Path, gate: RegistryGate, secret: str, postgres_url: str, bootstrap_servers: str,
        schema_registry: str,
        caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]) -> None:
    create_table(postgres_url, "orders", ROWS)
    name = f"auth-{uuid.uuid4().hex[:8]}"
    caplog.set_level(logging.DEBUG)
    code = _run(tmp_path, name, gate, secret, postgres_url, bootstrap_servers)
    out, err = capsys.readouterr()
    assert code == 0, err[-2000:] + caplog.text[-2000:]

    deserializer = AvroDeserializer(ConfluentRegistryClient({"url": schema_registry}))
    context = SerializationContext(f"{name}-orders", MessageField.VALUE)
    rows = [deserializer(value, context) for _, value in consume(bootstrap_servers, f"{name}-orders")]
    assert sorted(row["id"] for row in rows) == list(range(1, ROWS + 1))
    assert {row["label"] for row in rows} == {f"orders {n}" for n in range(1, ROWS + 1)}
    assert gate.passed >= 1 and gate.refused == 0
    assert secret not in caplog.text and secret not in out and secret not in err


def test_a_wrong_password_fails_the_run_with_the_registrys_401_and_shows_no_password(
        tmp_path: Path, gate: RegistryGate, postgres_url: str, bootstrap_servers: str,
        caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]) -> None:
    create_table(postgres_url, "orders", ROWS)
    wrong = f"wrong-{uuid.uuid4().hex}"
    caplog.set_level(logging.DEBUG)
    code = _run(tmp_path, f"noauth-{uuid.uuid4().hex[:8]}", gate, wrong, postgres_url, bootstrap_servers)
    out, err = capsys.readouterr()
    assert code != 0
    assert "Schema Registry answered 401" in caplog.text + out + err
    assert gate.passed == 0 and gate.refused >= 1
    assert wrong not in caplog.text and wrong not in out and wrong not in err

"""Registry bearer auth with OAuth client credentials (``bearer.auth.credentials.source=OAUTHBEARER``) in a real run.

A gate (:mod:`tests.integration.registry_gate`) before the session's Apicurio admits only requests whose
``Authorization: Bearer`` JWT is signed by the test's :class:`LocalOidcProvider` (checked against its JWKS)
for the registry's audience, as a registry behind an identity provider does. ``kopycat run`` copies a
PostgreSQL table to an Avro topic with the value converter's OAuth keys written as a Confluent Cloud user
writes them; Confluent's deserializer (straight to Apicurio) and Kopycat's AvroConverter (through the gate,
with its own token) read the rows back. One token serves the whole run; the client secret is in no log line
and no output. A wrong secret fails the run with an error naming ``bearer.auth.client.secret``.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Iterator
from email.message import Message
from pathlib import Path

import jwt
import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient as ConfluentRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer
from confluent_kafka.serialization import MessageField, SerializationContext

from kopycat.cli import main
from kopycat.converters.avro import AvroConverter
from kopycat.dev.oidc_provider import LocalOidcProvider
from tests.integration.registry_gate import RegistryGate, registry_gate
from tests.integration.test_config_providers import properties
from tests.integration.test_jdbc_source import CONNECTOR_CLASS, consume, create_table

pytestmark = pytest.mark.integration

ROWS = 12
CLIENT = "connect-registry"
AUDIENCE = "schema-registry"
LOGICAL_CLUSTER = "lsrc-kopycat"


@pytest.fixture
def secret() -> str:
    return f"oauth-{uuid.uuid4().hex}"


@pytest.fixture
def provider(secret: str) -> Iterator[LocalOidcProvider]:
    oidc = LocalOidcProvider({CLIENT: secret}, audience=AUDIENCE)
    oidc.start()
    yield oidc
    oidc.stop()


def _signed_for_the_registry(provider: LocalOidcProvider) -> Callable[[Message], bool]:
    """The gate's check: a bearer JWT whose signature, audience and issuer the provider's JWKS vouch for."""
    key = jwt.PyJWK(provider.jwks()["keys"][0]).key

    def admits(headers: Message) -> bool:
        scheme, _, token = (headers.get("Authorization") or "").partition(" ")
        if scheme != "Bearer":
            return False
        try:
            jwt.decode(token, key, algorithms=["RS256"], audience=AUDIENCE, issuer=provider.issuer)
        except jwt.InvalidTokenError:
            return False
        return True

    return admits


@pytest.fixture
def gate(schema_registry: str, provider: LocalOidcProvider) -> Iterator[RegistryGate]:
    with registry_gate(schema_registry, _signed_for_the_registry(provider)) as server:
        yield server


def _oauth(gate: RegistryGate, provider: LocalOidcProvider, secret: str) -> dict[str, str]:
    """The converter keys of a registry behind an identity provider, unprefixed."""
    return {"schema.registry.url": gate.url, "bearer.auth.credentials.source": "OAUTHBEARER",
            "bearer.auth.issuer.endpoint.url": provider.token_url, "bearer.auth.client.id": CLIENT,
            "bearer.auth.client.secret": secret, "bearer.auth.scope": "registry",
            "bearer.auth.logical.cluster": LOGICAL_CLUSTER, "max.retries": "0"}


def _run(tmp_path: Path, name: str, converter: dict[str, str], postgres_url: str, bootstrap_servers: str) -> int:
    """``kopycat run`` of a JDBC source to Avro with ``converter`` as the value converter's keys; its exit code."""
    worker = properties(tmp_path / f"worker-{name}.properties", {
        "bootstrap.servers": bootstrap_servers, "offset.storage.file.filename": str(tmp_path / f"offsets-{name}")})
    source = properties(tmp_path / f"source-{name}.properties", {
        "name": name, "connector.class": CONNECTOR_CLASS, "connection.url": postgres_url, "mode": "incrementing",
        "incrementing.column.name": "id", "table.whitelist": "orders", "topic.prefix": f"{name}-",
        "key.converter": "org.apache.kafka.connect.storage.StringConverter",
        "value.converter": "io.confluent.connect.avro.AvroConverter",
        **{f"value.converter.{key}": value for key, value in converter.items()}})
    with pytest.raises(SystemExit) as exited:
        main(["run", str(worker), str(source), "--no-progress"])
    return int(exited.value.code or 0)


def test_an_oauth_token_reaches_the_registry_and_the_avro_rows_round_trip(
        tmp_path: Path, gate: RegistryGate, provider: LocalOidcProvider, secret: str, postgres_url: str,
        bootstrap_servers: str, schema_registry: str, caplog: pytest.LogCaptureFixture,
        capsys: pytest.CaptureFixture[str]) -> None:
    create_table(postgres_url, "orders", ROWS)
    name = f"oauth-{uuid.uuid4().hex[:8]}"
    caplog.set_level(logging.DEBUG)
    code = _run(tmp_path, name, _oauth(gate, provider, secret), postgres_url, bootstrap_servers)
    out, err = capsys.readouterr()
    assert code == 0, err[-2000:] + caplog.text[-2000:]
    assert gate.passed >= 1 and gate.refused == 0 and provider.issued == 1 and provider.refused == 0
    assert {headers["target-sr-cluster"] for headers in gate.admitted} == {LOGICAL_CLUSTER}

    records = consume(bootstrap_servers, f"{name}-orders")
    deserializer = AvroDeserializer(ConfluentRegistryClient({"url": schema_registry}))
    context = SerializationContext(f"{name}-orders", MessageField.VALUE)
    rows = [deserializer(value, context) for _, value in records]
    assert sorted(row["id"] for row in rows) == list(range(1, ROWS + 1))
    assert {row["label"] for row in rows} == {f"orders {n}" for n in range(1, ROWS + 1)}

    reader = AvroConverter()
    reader.configure(_oauth(gate, provider, secret), False)
    read = [reader.to_connect_data(f"{name}-orders", value).value for _, value in records]
    assert sorted((row.get("id"), row.get("label")) for row in read) == sorted(
        (row["id"], row["label"]) for row in rows)
    assert provider.issued == 2 and gate.refused == 0
    assert secret not in caplog.text and secret not in out and secret not in err


def test_a_wrong_client_secret_fails_the_run_naming_the_key_and_shows_no_secret(
        tmp_path: Path, gate: RegistryGate, provider: LocalOidcProvider, postgres_url: str,
        bootstrap_servers: str, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]) -> None:
    create_table(postgres_url, "orders", ROWS)
    wrong = f"wrong-{uuid.uuid4().hex}"
    caplog.set_level(logging.DEBUG)
    code = _run(tmp_path, f"badoauth-{uuid.uuid4().hex[:8]}", _oauth(gate, provider, wrong), postgres_url,
                bootstrap_servers)
    out, err = capsys.readouterr()
    assert code != 0
    assert "bearer.auth.client.secret" in caplog.text + out + err
    assert gate.passed == 0 and provider.refused >= 1 and provider.issued == 0
    assert wrong not in caplog.text and wrong not in out and wrong not in err

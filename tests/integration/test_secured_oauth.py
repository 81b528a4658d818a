"""OAUTHBEARER end to end on the secured broker, configured exactly as a Kafka Connect user configures it.

The broker validates tokens with Kafka's ``OAuthBearerValidatorCallbackHandler`` against the JWKS of the
fixture's identity provider (:class:`~kopycat.dev.oidc_provider.LocalOidcProvider`, loopback only); the
worker.properties name ``OAuthBearerLoginCallbackHandler``, the token endpoint and a JAAS line with
clientId/clientSecret/scope. ``kopycat run`` and ``kopycat rest`` run as a user runs them (child
processes); the client secret must be in none of their output lines, argv or REST responses.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from kopycat.dev.secured_kafka import SecuredKafkaBroker
from tests.support.secured import (
    FILE_CONFIG_PROVIDER,
    assert_absent,
    assert_no_secret_in_run,
    consume_secured,
    kopycat,
    rest_worker,
    stored_connector_records,
    worker_properties,
    write_lines,
    write_properties,
)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]

LINES = [f"oauth-{i}" for i in range(300)]


def _connectors(tmp_path: Path, topic: str) -> tuple[Path, Path, Path]:
    """A FileStreamSource of :data:`LINES` into ``topic`` and a FileStreamSink of it; the sink's file."""
    source = write_properties(tmp_path / "source.properties", {
        "name": f"{topic}-source", "connector.class": "FileStreamSource",
        "file": str(write_lines(tmp_path / "in.txt", LINES)), "topic": topic})
    out = tmp_path / "out.txt"
    sink = write_properties(tmp_path / "sink.properties", {
        "name": f"{topic}-sink", "connector.class": "FileStreamSink", "file": str(out), "topics": topic})
    return source, sink, out


def test_file_source_and_sink_copy_every_line_over_oauthbearer_with_kafkas_login_callback_handler(
        tmp_path: Path, secured_kafka: SecuredKafkaBroker, topic_name: str) -> None:
    client = secured_kafka.java_oauth_settings()
    assert client["sasl.login.callback.handler.class"].endswith(".OAuthBearerLoginCallbackHandler")
    worker = write_properties(tmp_path / "worker.properties", worker_properties(client, topic_name))
    source, sink, out = _connectors(tmp_path, topic_name)
    issued_before = secured_kafka.identity_provider.issued

    produced = kopycat("run", str(worker), str(source), "--no-progress")
    assert produced.returncode == 0, produced.stderr[-3000:]
    assert "task 0: 300 records" in produced.stdout, produced.stdout
    consumed = kopycat("run", str(worker), str(sink), "--no-progress")
    assert consumed.returncode == 0, consumed.stderr[-3000:]

    assert out.read_text().splitlines() == LINES
    records = consume_secured(secured_kafka, topic_name)
    assert len(records) == len(LINES) and len({(m.partition(), m.offset()) for m in records}) == len(LINES)
    offsets = consume_secured(secured_kafka, f"{topic_name}-offsets")
    assert offsets and all(f"{topic_name}-source".encode() in (m.key() or b"") for m in offsets)
    assert secured_kafka.identity_provider.issued > issued_before, "no token was fetched: OAUTHBEARER unused"
    for run in (produced, consumed):
        assert_no_secret_in_run(run, secured_kafka.oauth_client_secret, secured_kafka.store_password)


def test_a_wrong_client_secret_fails_within_the_bound_with_one_line_naming_the_token_endpoint_fix(
        tmp_path: Path, secured_kafka: SecuredKafkaBroker, topic_name: str) -> None:
    wrong = "not-the-client-secret"
    client = secured_kafka.java_oauth_settings(client_secret=wrong)
    worker = write_properties(tmp_path / "worker.properties", worker_properties(
        client, topic_name, **{"kopycat.auth.failure.timeout.ms": "5000"}))
    source, _, _ = _connectors(tmp_path, topic_name)
    refused_before = secured_kafka.identity_provider.refused

    started = time.monotonic()
    failed = kopycat("run", str(worker), str(source), "--no-progress")
    assert time.monotonic() - started < 60
    assert failed.returncode != 0
    errors = [line for line in failed.stderr.splitlines() if line.startswith("kopycat run: ")]
    assert len(errors) == 1, failed.stderr[-3000:]
    [line] = errors
    assert secured_kafka.bootstrap_servers in line and "OAUTHBEARER" in line, line
    assert "clientSecret" in line and "sasl.oauthbearer.token.endpoint.url" in line, line
    assert secured_kafka.identity_provider.refused > refused_before, "the wrong secret never reached the provider"
    assert_no_secret_in_run(failed, wrong, secured_kafka.oauth_client_secret, secured_kafka.store_password)


def test_kopycat_rest_over_oauthbearer_stores_a_connector_and_shows_no_client_secret(
        tmp_path: Path, secured_kafka: SecuredKafkaBroker, topic_name: str) -> None:
    """The JAAS line (with the client secret) comes through Kafka's FileConfigProvider, for the worker
    and in the connector's override: ``connect-configs`` keeps the placeholder."""
    java = secured_kafka.java_oauth_settings()
    secrets_file = write_properties(tmp_path / "secrets.properties", {"jaas": java["sasl.jaas.config"]})
    client = {**java, "sasl.jaas.config": f"${{file:{secrets_file}:jaas}}"}
    worker = write_properties(tmp_path / "worker.properties",
                              worker_properties(client, topic_name, **FILE_CONFIG_PROVIDER))
    log, name = tmp_path / "rest.log", f"{topic_name}-rest"
    config = {"connector.class": "FileStreamSource", "file": str(tmp_path / "in.txt"), "topic": topic_name,
              "producer.override.sasl.jaas.config": client["sasl.jaas.config"]}
    secrets = (secured_kafka.oauth_client_secret, secured_kafka.store_password)
    with rest_worker(worker, log) as rest:
        responses = rest.create_and_read(name, config, (
            f"/connectors/{name}", f"/connectors/{name}/config", f"/connectors/{name}/status",
            "/connectors?expand=info&expand=status"))
        assert responses[2].json()["producer.override.sasl.jaas.config"] == "[hidden]"
        rest.assert_hides(secrets, responses)
    assert_absent(secrets, "the REST worker's log", log.read_text().splitlines())
    stored = stored_connector_records(secured_kafka, topic_name, name)
    assert_absent(secrets, "a connect-configs record", (m.value() or b"" for m in stored))

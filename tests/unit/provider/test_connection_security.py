"""A secured cluster's Airflow connection (password field + Java keys in the extra) as worker keys."""

from __future__ import annotations

import json

import pytest

from kopycat.api.errors import ConfigError
from kopycat.jaas import parse_jaas_config
from kopycat.kafka import client_config, worker_client_config
from kopycat_airflow.hooks.connection_security import connection_worker_props, secret_values
from kopycat_airflow.hooks.kopycat import KopycatHook

EXTRA = {"bootstrap.servers": "broker:9093", "security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
         "ssl.endpoint.identification.algorithm": ""}


def test_login_and_password_become_a_scram_jaas_line_at_the_top_level_and_for_every_client() -> None:
    props = connection_worker_props(EXTRA, "alice", 'p"w\\x')

    entry = parse_jaas_config(props["sasl.jaas.config"])
    assert entry.simple_name == "ScramLoginModule" and entry.options == {"username": "alice", "password": 'p"w\\x'}
    for prefix in ("", "producer.", "consumer.", "admin."):
        assert props[f"{prefix}sasl.jaas.config"] == props["sasl.jaas.config"]
        assert props[f"{prefix}security.protocol"] == "SASL_SSL"
        assert props[f"{prefix}sasl.mechanism"] == "SCRAM-SHA-512"
    assert "producer.bootstrap.servers" not in props


def test_the_worker_props_translate_to_librdkafka_for_the_worker_and_the_tasks_clients() -> None:
    props = connection_worker_props({**EXTRA, "sasl.mechanism": "plain"}, "alice", "secret-pw")

    for config in (worker_client_config(props), client_config(props, {}, "producer"),
                   client_config(props, {}, "consumer")):
        assert config["sasl.username"] == "alice" and config["sasl.password"] == "secret-pw"
        assert config["sasl.mechanism"] == "PLAIN" and "sasl.jaas.config" not in config
        assert config["ssl.endpoint.identification.algorithm"] == "none"


def test_a_prefixed_key_in_the_extra_wins_over_the_connections_security() -> None:
    props = connection_worker_props({**EXTRA, "consumer.sasl.mechanism": "SCRAM-SHA-256"}, "alice", "pw")
    assert props["consumer.sasl.mechanism"] == "SCRAM-SHA-256" and props["producer.sasl.mechanism"] == "SCRAM-SHA-512"


def test_without_a_password_the_extra_is_taken_as_it_is_and_spread_to_the_clients() -> None:
    mtls = {"bootstrap.servers": "broker:9094", "security.protocol": "SSL", "ssl.keystore.location": "/k.jks"}
    props = connection_worker_props(mtls, None, None)
    assert props["producer.ssl.keystore.location"] == "/k.jks" and "sasl.jaas.config" not in props


def test_oauthbearer_login_and_password_are_the_client_credentials_of_kafkas_login_module() -> None:
    oauth = {**EXTRA, "sasl.mechanism": "OAUTHBEARER", "sasl.oauthbearer.scope": "kafka",
             "sasl.oauthbearer.token.endpoint.url": "https://idp.example/token"}
    props = connection_worker_props(oauth, "connect-client", "client-s3cret")

    entry = parse_jaas_config(props["producer.sasl.jaas.config"])
    assert entry.simple_name == "OAuthBearerLoginModule"
    assert entry.options == {"clientId": "connect-client", "clientSecret": "client-s3cret", "scope": "kafka"}
    assert "sasl.oauthbearer.scope" not in props  # carried by the JAAS line, as Kafka reads it
    config = client_config(props, {}, "producer")
    assert (config["sasl.oauthbearer.method"], config["sasl.oauthbearer.client.id"],
            config["sasl.oauthbearer.client.secret"], config["sasl.oauthbearer.scope"]) == (
        "oidc", "connect-client", "client-s3cret", "kafka")
    assert config["sasl.oauthbearer.token.endpoint.url"] == "https://idp.example/token"


@pytest.mark.parametrize(("extra", "login", "key"), [
    ({"security.protocol": "SSL"}, "alice", "security.protocol"),
    ({**EXTRA, "sasl.jaas.config": "x required;"}, "alice", "sasl.jaas.config"),
    ({**EXTRA, "sasl.mechanism": "GSSAPI"}, "alice", "sasl.mechanism"),
    (EXTRA, None, "login"),
    ({**EXTRA, "sasl.mechanism": "OAUTHBEARER"}, None, "login"),
], ids=["no-sasl-protocol", "jaas-beside-password", "kerberos", "no-login", "oauth-no-client-id"])
def test_a_password_the_settings_cannot_use_is_a_config_error_naming_the_field(
        extra: dict[str, str], login: str | None, key: str) -> None:
    with pytest.raises(ConfigError, match=key) as caught:
        connection_worker_props(extra, login, "secret-pw", "Connection c")
    assert "secret-pw" not in str(caught.value)


def test_secret_values_are_the_password_the_jaas_line_and_store_passwords() -> None:
    props = connection_worker_props({**EXTRA, "ssl.truststore.password": "store-pw"}, "alice", "secret-pw")
    secrets = secret_values(props)
    assert "store-pw" in secrets and props["sasl.jaas.config"] in secrets
    assert "alice" not in secrets and "SASL_SSL" not in secrets


@pytest.mark.parametrize("conn_type", ["kopycat", "kafka"])
def test_the_hook_reads_a_connection_of_either_type_from_the_environment(
        conn_type: str, monkeypatch: pytest.MonkeyPatch) -> None:
    extra = {"config": EXTRA} if conn_type == "kafka" else EXTRA
    monkeypatch.setenv("AIRFLOW_CONN_SECURED_TEST", json.dumps({
        "conn_type": conn_type, "login": "alice", "password": "secret-pw", "extra": extra}))
    props = KopycatHook("secured_test").worker_props
    assert props["bootstrap.servers"] == "broker:9093"
    assert parse_jaas_config(props["consumer.sasl.jaas.config"]).options["password"] == "secret-pw"

"""What the operators register with Airflow's secrets masker when they render a connector config."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from kopycat_airflow import config_provider, secret_masking
from kopycat_airflow.secret_masking import mask_config_secrets

JAAS = ('org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required clientId="app" '
        'clientSecret="cl1ent-secret" scope="kafka";')


@pytest.fixture
def masked(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The values registered with the masker; Airflow's connections and variables from dicts."""
    registered: list[str] = []
    connections = {"warehouse": SimpleNamespace(password="db-pa55word", login="app", extra_dejson={})}
    variables = {"store_pw": "st0re-pa55"}

    def connection(conn_id: str) -> Any:
        return connections[conn_id]

    monkeypatch.setattr(config_provider.Connection, "get", staticmethod(connection))
    monkeypatch.setattr(config_provider.Variable, "get",
                        staticmethod(lambda key, default=None: variables.get(key, default)))
    monkeypatch.setattr(config_provider, "mask_secret", registered.append)
    monkeypatch.setattr(secret_masking, "mask_secret", registered.append)
    return registered


def test_secret_named_keys_and_jaas_secret_options_are_registered_and_nothing_else(masked: list[str]) -> None:
    mask_config_secrets({"name": "orders", "topic": "orders", "producer.override.sasl.jaas.config": JAAS,
                         "connection.password": "pg-pa55", "sasl.oauthbearer.token.endpoint.url": "http://idp/t"})
    assert sorted(masked) == sorted([JAAS, "cl1ent-secret", "pg-pa55"])


def test_airflow_placeholders_are_resolved_so_their_values_are_registered(masked: list[str]) -> None:
    mask_config_secrets({"config": {"connection.password": "${airflow:warehouse:password}",
                                    "connection.user": "${airflow:warehouse:login}",
                                    "ssl.truststore.password": "${airflow:variable:store_pw}",
                                    "other": "${env:HOME}"}}, ["plain"])
    assert sorted(masked) == ["db-pa55word", "st0re-pa55"]  # not the login, not the placeholders


def test_an_unresolvable_placeholder_leaves_the_error_to_execute(masked: list[str]) -> None:
    mask_config_secrets({"connection.password": "${airflow:missing:password}"})
    assert masked == []

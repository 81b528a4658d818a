"""The ``airflow`` config provider without services: fields, extras, variables, and clear errors."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from kopycat.api.errors import ConfigError
from kopycat_airflow import config_provider
from kopycat_airflow.config_provider import AirflowConfigProvider

CONNECTIONS = {"warehouse": SimpleNamespace(login="app", password="s3cret", host="db.example", port=5432,
                                            schema="sales", extra_dejson={"sslmode": "require"},
                                            get_uri=lambda: "postgres://app:s3cret@db.example:5432/sales")}
VARIABLES = {"api_token": "tok-1"}


@pytest.fixture
def provider(monkeypatch: pytest.MonkeyPatch) -> AirflowConfigProvider:
    def connection(conn_id: str) -> Any:
        if conn_id not in CONNECTIONS:
            raise LookupError(f"The conn_id `{conn_id}` isn't defined")
        return CONNECTIONS[conn_id]

    def variable(key: str, default: Any = None) -> Any:
        return VARIABLES.get(key, default)

    monkeypatch.setattr(config_provider.Connection, "get", staticmethod(connection))
    monkeypatch.setattr(config_provider.Variable, "get", staticmethod(variable))
    monkeypatch.setattr(config_provider, "mask_secret", lambda value: None)
    airflow = AirflowConfigProvider()
    airflow.configure({"provider.name": "airflow"})
    return airflow


def test_connection_fields_and_extras_resolve(provider: AirflowConfigProvider) -> None:
    keys = {"login", "password", "host", "port", "schema", "extra.sslmode", "extra.absent", "uri"}
    assert provider.get("warehouse", keys).data == {
        "login": "app", "password": "s3cret", "host": "db.example", "port": "5432", "schema": "sales",
        "extra.sslmode": "require", "uri": "postgres://app:s3cret@db.example:5432/sales"}


def test_variables_resolve_under_the_variable_path(provider: AirflowConfigProvider) -> None:
    assert provider.get("variable", {"api_token"}).data == {"api_token": "tok-1"}
    with pytest.raises(ConfigError, match=r"Airflow Variable 'nope' does not exist.*airflow variables set"):
        provider.get("variable", {"nope"})


def test_unknown_connections_fields_and_missing_paths_name_the_fix(provider: AirflowConfigProvider) -> None:
    with pytest.raises(ConfigError, match=r"Airflow connection 'nope' could not be read.*airflow connections add"):
        provider.get("nope", {"password"})
    with pytest.raises(ConfigError, match=r"\$\{airflow:warehouse:pasword\} names no field.*password"):
        provider.get("warehouse", {"pasword"})
    with pytest.raises(ConfigError, match="needs a path"):
        provider.get("", {"password"})

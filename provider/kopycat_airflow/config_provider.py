"""``${airflow:<conn_id>:<field>}`` and ``${airflow:variable:<name>}``: secrets from Airflow.

A config provider (KIP-297, :class:`kopycat.api.config_provider.ConfigProvider`) beyond Kafka
Connect's: DAG authors keep database passwords in Airflow connections (or the secrets backend
behind them: Vault, AWS Secrets Manager, ...) and write placeholders in connector configs::

    config.providers=airflow
    config.providers.airflow.class=kopycat_airflow.config_provider.AirflowConfigProvider

    connection.url=jdbc:postgresql://${airflow:warehouse:host}:${airflow:warehouse:port}/${airflow:warehouse:schema}
    connection.user=${airflow:warehouse:login}
    connection.password=${airflow:warehouse:password}
    api.token=${airflow:variable:billing_api_token}

Fields of a connection: ``login``, ``password``, ``host``, ``port``, ``schema``, ``uri`` and
``extra.<key>`` (a key of its JSON extra). The path ``variable`` names Airflow Variables instead
(so a connection named ``variable`` cannot be read). Values are looked up when a task starts,
inside the Airflow task, through the Task SDK, so the secrets backend and its caching apply, and
passwords, URIs, extras and variables found are registered with Airflow's secrets masker, so
task logs show ``***``.
"""

from __future__ import annotations

from collections.abc import Mapping, Set
from typing import Any

from airflow.sdk import Connection, Variable
from airflow.sdk.log import mask_secret

from kopycat.api.config_provider import ConfigData, ConfigProvider
from kopycat.api.errors import ConfigError

__all__ = ["CONNECTION_FIELDS", "VARIABLE_PATH", "AirflowConfigProvider"]

VARIABLE_PATH = "variable"
"""The path that reads Airflow Variables: ``${airflow:variable:<name>}``."""
CONNECTION_FIELDS = ("login", "password", "host", "port", "schema", "uri")
"""The fields of a connection a placeholder may name, besides ``extra.<key>``."""
_EXTRA_PREFIX = "extra."
_MISSING = object()
_PLAIN_FIELDS = frozenset({"login", "host", "port", "schema"})
"""Fields not registered with the secrets masker: masking a port would blank it in every log line."""


class AirflowConfigProvider(ConfigProvider):
    """Reads Airflow connections' fields and Airflow Variables for config placeholders.

    A connection or variable that does not exist is a ConfigError naming it and the placeholder
    to fix; a field the connection leaves empty is left out (the placeholder stays, as Kafka's
    providers do for a missing key).
    """

    def __init__(self) -> None:
        self.name = "airflow"

    def configure(self, params: Mapping[str, str]) -> None:
        self.name = params.get("provider.name", self.name)

    def get(self, path: str, keys: Set[str]) -> ConfigData:
        if not path:
            raise ConfigError(f"Config provider '{self.name}' needs a path: write ${{{self.name}:<conn_id>:password}} "
                              f"or ${{{self.name}:{VARIABLE_PATH}:<name>}}")
        if path == VARIABLE_PATH:
            data = {key: value for key in keys if (value := self._variable(key)) is not None}
            for value in data.values():
                mask_secret(value)
            return ConfigData(data)
        connection = self._connection(path)
        data = {}
        for key in keys:
            value = _field(connection, key, self.name, path)
            if value not in (None, ""):
                data[key] = str(value)
        for key, value in data.items():
            if key not in _PLAIN_FIELDS:
                mask_secret(value)
        return ConfigData(data)

    def _variable(self, name: str) -> str | None:
        value = Variable.get(name, default=_MISSING)
        if value is _MISSING:
            raise ConfigError(f"Airflow Variable {name!r} does not exist (named by ${{{self.name}:{VARIABLE_PATH}:"
                              f"{name}}}): create it (airflow variables set {name} ...) or fix the name")
        return None if value is None else str(value)

    def _connection(self, conn_id: str) -> Any:
        try:
            return Connection.get(conn_id)
        except Exception as exc:  # noqa: BLE001 - AirflowNotFoundException and the Task SDK's errors alike
            raise ConfigError(f"Airflow connection {conn_id!r} could not be read for ${{{self.name}:{conn_id}:...}} "
                              f"({type(exc).__name__}): create it (airflow connections add {conn_id} ...) or fix "
                              f"the connection id") from None


def _field(connection: Any, key: str, provider: str, conn_id: str) -> Any:
    """One field of a connection; ConfigError for a field name no connection has."""
    if key.startswith(_EXTRA_PREFIX):
        return (connection.extra_dejson or {}).get(key[len(_EXTRA_PREFIX):])
    if key == "uri":
        return connection.get_uri()
    if key in CONNECTION_FIELDS:
        return getattr(connection, key)
    raise ConfigError(f"${{{provider}:{conn_id}:{key}}} names no field of an Airflow connection: use one of "
                      f"{', '.join(CONNECTION_FIELDS)} or extra.<key>")

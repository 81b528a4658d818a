"""Connector configs in DAGs: a dict, the path of a .properties/.json file in include/, or a stored connector.

The same files ``kopycat standalone`` and Kafka Connect's REST API take. A relative path is
looked up from the working directory, then from the DAGs folder's ``../include`` and the DAGs
folder itself, so a DAG can say ``connector_config="include/jdbc-source.properties"``.
A :class:`StoredConnector` is a connector created through the REST API: its config stays in the
config topic (never in the DAG, so no password reaches the serialized DAG) and is read when a task runs.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kopycat.properties import load_config_file

__all__ = ["StoredConnector", "connector_name", "resolve_connector_config"]


@dataclass(frozen=True)
class StoredConnector:
    """A connector kept in the config topic (``connect-configs``), by name; read at run time."""

    name: str

    def __str__(self) -> str:
        return f"connect-configs:{self.name}"


ConnectorConfigArg = Mapping[str, Any] | str | os.PathLike[str] | StoredConnector
"""What operators take as ``connector_config``."""


def connector_name(config: ConnectorConfigArg) -> str | None:
    """The connector's name when known at parse time (not for Jinja-templated configs)."""
    if isinstance(config, StoredConnector):
        return config.name
    text = str(config) if not isinstance(config, Mapping) else " ".join(map(str, config.values()))
    if "{{" in text:
        return None
    return resolve_connector_config(config).get("name")


def resolve_connector_config(config: Mapping[str, Any] | str | os.PathLike[str]) -> dict[str, str]:
    """The connector properties: ``config`` itself, or the file it names, values as strings.

    A :class:`StoredConnector` is read by the operators from the config topic instead.
    """
    if isinstance(config, StoredConnector):
        raise TypeError(f"{config} is read from the config topic by the operators, not resolved from a file")
    if isinstance(config, Mapping):
        return {str(k): _text(v) for k, v in config.items() if v is not None}
    path = _find(Path(config))
    return load_config_file(path)


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, list | tuple):
        return ",".join(map(str, value))
    return str(value)


def _find(path: Path) -> Path:
    if path.is_absolute() or path.exists():
        return path
    dags = Path(os.environ.get("AIRFLOW__CORE__DAGS_FOLDER", "dags"))
    for base in (dags.parent, dags, dags.parent / "include"):
        if (base / path).exists():
            return base / path
    raise FileNotFoundError(f"Connector config {path} not found in {Path.cwd()}, {dags.parent} or {dags}: "
                            f"give an absolute path, or a path relative to the DAGs folder's parent")

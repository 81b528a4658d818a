"""Connector configs in DAGs: a dict, or the path of a .properties/.json file in include/.

The same files ``kopycat standalone`` and Kafka Connect's REST API take. A relative path is
looked up from the working directory, then from the DAGs folder's ``../include`` and the DAGs
folder itself, so a DAG can say ``connector_config="include/jdbc-source.properties"``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kopycat.properties import load_config_file

__all__ = ["resolve_connector_config"]


def resolve_connector_config(config: Mapping[str, Any] | str | os.PathLike[str]) -> dict[str, str]:
    """The connector properties: ``config`` itself, or the file it names, values as strings."""
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

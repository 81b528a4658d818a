"""What ``GET /connectors/{name}/status`` shows: stored states seen through the target state.

Kopycat's REST server runs no connectors, so it shows what a worker honouring the target state
would report (Kafka's ``Worker``/``WorkerConnector`` transitions):

- STOPPED wins over every state, FAILED and RESTARTING included: KIP-875 says a stopped connector
  reports STOPPED "even if the connector was in the FAILED state", and its tasks are shut down;
- PAUSED wins over RUNNING, UNASSIGNED and RESTARTING (a restart starts the connector paused),
  but not over FAILED: pausing does not restart a failed connector or task.

Bodies are Kafka 4.1's ``ConnectorStateInfo``, whose states carry the plugin's ``version``.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any, Final

from kopycat.api.errors import ConfigError
from kopycat.plugins import connector_class
from kopycat.runtime.connector_config import CONNECTOR_CLASS_CONFIG
from kopycat.storage.config_backing_store import TargetState
from kopycat.storage.connector_status import State

__all__ = ["effective_state", "plugin_version", "state_json"]

_PAUSABLE: Final = frozenset({State.RUNNING, State.UNASSIGNED, State.RESTARTING})
_STOPPABLE: Final = frozenset(State) - {State.DESTROYED}


def effective_state(state: State, target: TargetState) -> State:
    """What a run that honours ``target`` reports instead of ``state`` (module doc)."""
    if target is TargetState.STOPPED and state in _STOPPABLE:
        return State.STOPPED
    if target is TargetState.PAUSED and state in _PAUSABLE:
        return State.PAUSED
    return state


@functools.lru_cache(maxsize=256)
def _class_version(class_name: str) -> str | None:
    try:
        return str(connector_class(class_name)().version())
    except (ConfigError, ImportError, TypeError):
        return None


def plugin_version(config: Mapping[str, Any]) -> str | None:
    """The version of ``config``'s connector plugin (``Connector.version()``), None if it cannot load."""
    class_name = config.get(CONNECTOR_CLASS_CONFIG)
    return _class_version(str(class_name)) if class_name else None


def state_json(state: State, worker_id: str, trace: str | None, version: str | None, **task: int) -> dict[str, Any]:
    """Kafka's ``ConnectorStateInfo.ConnectorState``/``TaskState``: ``trace`` and ``version`` only when set."""
    body: dict[str, Any] = {**task, "state": state.value, "worker_id": worker_id}
    if trace:
        body["trace"] = trace
    if version:
        body["version"] = version
    return body

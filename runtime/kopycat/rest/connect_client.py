"""A client of a Kafka Connect cluster's REST API: the calls moving connectors in and out need.

Speaks the API of Kafka's ``ConnectorsResource`` and ``ConnectorPluginsResource`` (KIP-875's
``PUT /connectors/{name}/stop`` included) with the standard library only. A 409 means a rebalance
is under way (Kafka's ``RebalanceNeededException``): the request is valid and is retried for a
while, as Kafka's own tools do. Other error statuses raise :class:`ConnectClusterError` carrying
only the status and Kafka's ``message`` (never the request body, which may hold secrets).
Not thread-safe beyond what ``urllib`` is; one client per command.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from typing import Any

from kopycat.api.errors import ConnectError

__all__ = ["ConnectClusterError", "KafkaConnectClient"]

_CONFLICT_RETRY_S = 60.0


class ConnectClusterError(ConnectError):
    """The Kafka Connect cluster answered with an error status (``status``), or could not be reached (0)."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


class KafkaConnectClient:
    """Calls on the Kafka Connect REST API at ``url`` (``http://connect:8083``).

    :param url: the cluster's REST base URL, any worker's.
    :param timeout_s: per request.
    :param headers: sent with every request (an ``Authorization`` header, for a secured API).
    """

    def __init__(self, url: str, *, timeout_s: float = 60.0, headers: Mapping[str, str] | None = None) -> None:
        self.url = url.rstrip("/")
        self.timeout_s = timeout_s
        self.headers = {"Content-Type": "application/json", "Accept": "application/json", **(headers or {})}

    def request(self, method: str, path: str, body: Any = None, *,
                retry_conflicts_s: float = _CONFLICT_RETRY_S) -> Any:
        """One call; the decoded JSON answer (None when empty). Raises ConnectClusterError."""
        data = None if body is None else json.dumps(body).encode()
        deadline = time.monotonic() + retry_conflicts_s
        while True:
            req = urllib.request.Request(self.url + path, data=data, method=method, headers=self.headers)
            try:
                with urllib.request.urlopen(req, timeout=self.timeout_s) as response:
                    text = response.read()
                return json.loads(text) if text else None
            except urllib.error.HTTPError as exc:
                if exc.code == 409 and time.monotonic() < deadline:
                    time.sleep(0.5)
                    continue
                raise ConnectClusterError(f"{method} {self.url}{path} answered {exc.code}: "
                                          f"{_message(exc.read())}", exc.code) from None
            except (urllib.error.URLError, OSError) as exc:
                reason = getattr(exc, "reason", exc)
                raise ConnectClusterError(f"Cannot reach Kafka Connect at {self.url}: {reason}", 0) from None

    def connectors(self) -> dict[str, dict[str, Any]]:
        """``GET /connectors?expand=info&expand=status``: name -> ``{"info": ..., "status": ...}``.

        ``info.config`` holds the stored values, secrets included unless the cluster keeps them
        behind config providers (then the ``${provider:path:key}`` placeholders).
        """
        answer: dict[str, dict[str, Any]] = self.request("GET", "/connectors?expand=info&expand=status")
        return answer

    def connector_state(self, name: str) -> str:
        """The connector's state in ``GET /connectors/{name}/status`` (RUNNING, PAUSED, STOPPED, ...)."""
        return str(self.request("GET", f"/connectors/{_quoted(name)}/status")["connector"]["state"])

    def put_config(self, name: str, config: Mapping[str, str]) -> dict[str, Any]:
        """``PUT /connectors/{name}/config``: create or reconfigure; Kafka's ``ConnectorInfo``."""
        answer: dict[str, Any] = self.request("PUT", f"/connectors/{_quoted(name)}/config", dict(config))
        return answer

    def validate(self, plugin: str, config: Mapping[str, str]) -> dict[str, Any]:
        """``PUT /connector-plugins/{plugin}/config/validate``: Kafka's ``ConfigInfos``."""
        answer: dict[str, Any] = self.request(
            "PUT", f"/connector-plugins/{_quoted(plugin)}/config/validate", dict(config))
        return answer

    def set_state(self, name: str, state: str) -> None:
        """``PUT /connectors/{name}/stop``, ``/pause`` or ``/resume`` for STOPPED, PAUSED or RUNNING."""
        action = {"STOPPED": "stop", "PAUSED": "pause", "RUNNING": "resume"}[state]
        self.request("PUT", f"/connectors/{_quoted(name)}/{action}")

    def stop(self, name: str, timeout_s: float = 120.0) -> None:
        """Stop the connector (KIP-875) and wait until it reports STOPPED: its tasks have stopped
        and committed their offsets, so another runtime can resume from them."""
        self.set_state(name, "STOPPED")
        deadline = time.monotonic() + timeout_s
        state = "unknown"
        while time.monotonic() < deadline:
            state = self.connector_state(name)
            if state == "STOPPED":
                return
            time.sleep(0.5)
        raise ConnectClusterError(f"Connector {name} at {self.url} did not reach STOPPED within {timeout_s:.0f} s "
                                  f"(last state {state})", 0)


def _quoted(segment: str) -> str:
    return urllib.parse.quote(segment, safe="")


def _message(body: bytes) -> str:
    """Kafka's ``ErrorMessage.message``, or the start of a body that is not one."""
    text = body.decode(errors="replace")
    try:
        decoded = json.loads(text)
    except ValueError:
        return text[:300]
    return str(decoded.get("message", text[:300])) if isinstance(decoded, dict) else text[:300]

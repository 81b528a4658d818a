"""The Kafka cluster Kopycat copies to and from, as an Airflow connection.

Holds what a Kafka Connect worker.properties holds (``bootstrap.servers``, converters,
``offset.storage.topic``, ``producer.*``/``consumer.*`` client keys, SASL/SSL settings), so the
operators plan and run tasks exactly as ``kopycat standalone`` would with that file:

- connection type ``kopycat``: host/port give ``bootstrap.servers`` (a list may go in the extra);
  the extra is a JSON object of worker.properties keys;
- connection type ``kafka`` (apache-airflow-providers-apache-kafka): its extra is the client
  config (``bootstrap.servers``, ``security.protocol``...), taken as worker keys as they are.

Either type carries a secured cluster's settings as Airflow keeps secrets: the SASL password in the
password field, the user in the login, the rest in the extra as Java keys (``security.protocol``,
``sasl.mechanism``, ``ssl.truststore.location``...); see :mod:`kopycat_airflow.hooks.connection_security`.
Every secret value is registered with Airflow's secrets masker, so task logs and rendered template
fields show it masked.

Without a connection of that id, ``KOPYCAT_BOOTSTRAP_SERVERS`` (or 127.0.0.1:9092) is used, so a
laptop's single broker needs no set-up (internal topics with one replica). Follows the layout of
Airflow's ``KafkaBaseHook``.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping
from functools import cached_property
from typing import Any

from airflow.sdk import BaseHook
from airflow.sdk.exceptions import AirflowFailException
from airflow.sdk.log import mask_secret

from kopycat.api.errors import ConnectError, NotFoundError
from kopycat.api.window import TimeWindow
from kopycat.client_security import without_tracebacks
from kopycat.kafka import auth_failure_timeout_s, worker_client_config
from kopycat.runtime.bounded_plan import PlannedTask, plan_bounded_run
from kopycat.runtime.bounded_run import run_planned_task
from kopycat.runtime.bounds import RunSummary
from kopycat.runtime.config_transformer import resolve_worker_config
from kopycat.runtime.stored_connectors import StoredConnectorState, load_stored_connector
from kopycat_airflow.hooks.connection_security import connection_worker_props, secret_values

__all__ = ["KopycatHook", "default_cluster"]

DEFAULT_BOOTSTRAP_ENV = "KOPYCAT_BOOTSTRAP_SERVERS"
TEST_CONNECTION_TIMEOUT_S = 15.0
"""How long ``test_connection`` waits for the cluster (a refused login fails sooner, see below)."""
LOCAL_DEFAULTS = {"offset.storage.replication.factor": 1, "config.storage.replication.factor": 1,
                  "status.storage.replication.factor": 1}
"""Without a connection the cluster is a laptop's single broker: internal topics get one replica."""


class KopycatHook(BaseHook):
    """Worker properties from an Airflow connection; plans connectors and runs their tasks.

    :param kopycat_conn_id: the connection holding the Kafka cluster and worker keys.
    :param worker_overrides: worker.properties keys that win over the connection's.
    """

    conn_name_attr = "kopycat_conn_id"
    default_conn_name = "kopycat_default"
    conn_type = "kopycat"
    hook_name = "Kopycat (Kafka Connect worker)"

    def __init__(self, kopycat_conn_id: str = default_conn_name,
                 worker_overrides: Mapping[str, Any] | None = None) -> None:
        super().__init__()
        self.kopycat_conn_id = kopycat_conn_id
        self.worker_overrides = dict(worker_overrides or {})

    @classmethod
    def get_ui_field_behaviour(cls) -> dict[str, Any]:
        return {
            "hidden_fields": ["schema"],
            "relabeling": {"host": "Bootstrap host", "login": "SASL user or OAuth client id",
                           "password": "SASL password or OAuth client secret",
                           "extra": "Worker properties (JSON)"},
            "placeholders": {"host": "127.0.0.1", "port": "9092",
                             "extra": json.dumps({"group.id": "kopycat", "offset.storage.topic": "connect-offsets"})},
        }

    @cached_property
    def worker_props(self) -> dict[str, Any]:
        """worker.properties keys: the connection's, then the overrides, with their own
        ``${provider:...}`` placeholders resolved (the worker's clients use them)."""
        props = resolve_worker_config({**self._connection_props(), **self.worker_overrides})
        for secret in secret_values(props):
            mask_secret(secret)
        return props

    @property
    def bootstrap_servers(self) -> str:
        return str(self.worker_props["bootstrap.servers"])

    @property
    def cluster(self) -> str:
        """The cluster's name in asset URIs: the first bootstrap server (``kafka://host:port/topic``)."""
        return self.bootstrap_servers.split(",")[0].strip()

    def plan(self, connector_props: Mapping[str, Any]) -> list[PlannedTask]:
        """Validate and plan the connector; ConfigError lists every bad key."""
        return plan_bounded_run(connector_props, self.worker_props)

    def run_task(self, connector_props: Mapping[str, Any], planned: PlannedTask | Mapping[str, Any], *,
                 window: TimeWindow | None = None, **bounds: Any) -> RunSummary:
        """A bounded run of one planned task (offsets from the connection's offsets topic)."""
        return run_planned_task(connector_props, planned, self.worker_props, window=window, **bounds)

    def stored_connector(self, name: str) -> StoredConnectorState:
        """A connector from the config topic (made through the REST API); a deleted one fails for good."""
        try:
            return load_stored_connector(self.worker_props, name)
        except NotFoundError as exc:
            raise AirflowFailException(str(exc)) from exc

    def test_connection(self) -> tuple[bool, str]:
        """Log in to the cluster as the worker's own clients do and list its topics; ``(False, one line)``
        naming the cluster and the fix when it cannot, within :data:`TEST_CONNECTION_TIMEOUT_S` (a refused
        login ends sooner when ``kopycat.auth.failure.timeout.ms`` is shorter)."""
        from confluent_kafka.admin import AdminClient

        try:
            props = self.worker_props
            timeout_s = min(auth_failure_timeout_s(props), TEST_CONNECTION_TIMEOUT_S)
            admin = AdminClient(worker_client_config({**props, "kopycat.auth.failure.timeout.ms": timeout_s * 1000}))
            deadline = time.monotonic() + TEST_CONNECTION_TIMEOUT_S
            while True:
                try:
                    topics = admin.list_topics(timeout=1).topics
                    break
                except ConnectError:
                    raise
                except Exception as exc:  # noqa: BLE001 - KafkaException: not there yet, or refused
                    admin.poll(0.5)  # serves the error_cb, which raises once logins are refused long enough
                    if time.monotonic() > deadline:
                        raise ConnectError(f"Cannot reach {self.bootstrap_servers} within "
                                           f"{TEST_CONNECTION_TIMEOUT_S:.0f} s: {exc}") from exc
        except Exception as exc:  # noqa: BLE001 - the UI shows the message
            return False, _one_line(without_tracebacks(exc))  # so the refused client is destroyed now
        return True, f"Connected to {self.bootstrap_servers}: {len(topics)} topics"

    def _connection_props(self) -> dict[str, Any]:
        try:
            conn = self.get_connection(self.kopycat_conn_id)
        except Exception:  # noqa: BLE001 - AirflowNotFoundException; no connection means local defaults
            if self.kopycat_conn_id != self.default_conn_name:
                raise
            return {"bootstrap.servers": _default_bootstrap(), **LOCAL_DEFAULTS}
        extra = conn.extra_dejson or {}
        props = dict(extra.get("config", {})) if conn.conn_type == "kafka" and "config" in extra else dict(extra)
        if not props.get("bootstrap.servers"):
            if not conn.host:
                raise ValueError(f"Connection {self.kopycat_conn_id} has no host and no bootstrap.servers in its "
                                 f"extra: set the host (and port) to a Kafka broker, e.g. 127.0.0.1 / 9092")
            props["bootstrap.servers"] = f"{conn.host}:{conn.port or 9092}"
        if conn.password:
            mask_secret(conn.password)
        return connection_worker_props(props, conn.login, conn.password, f"Connection {self.kopycat_conn_id}")


def _default_bootstrap() -> str:
    return os.environ.get(DEFAULT_BOOTSTRAP_ENV, "127.0.0.1:9092")


def default_cluster() -> str:
    """The cluster name of the default connection-less set-up, for asset URIs in DAG files.

    DAG files are parsed without connections; a DAG on another cluster names it explicitly.
    """
    return _default_bootstrap().split(",")[0].strip()


def _one_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__

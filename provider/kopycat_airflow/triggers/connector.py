"""Wait in the triggerer until a connector's lag meets a condition (the deferred half of ConnectorSensor).

Shaped like Airflow's ``AwaitMessageTrigger`` (apache-airflow-providers-apache-kafka): ``serialize``
gives the class path and the keyword arguments, ``run`` measures, sleeps ``poke_interval`` between
measurements without blocking the event loop (the blocking Kafka calls run through
``sync_to_async``) and yields one TriggerEvent. The lag itself is
:func:`kopycat.runtime.lag.connector_lag`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Mapping
from typing import Any, Final, Literal

from airflow.sdk.exceptions import AirflowFailException
from airflow.triggers.base import BaseTrigger, TriggerEvent
from asgiref.sync import sync_to_async

from kopycat.api.errors import ConfigError
from kopycat.runtime.lag import ConnectorLag, connector_lag, lag_input_kind
from kopycat_airflow.connector_config import StoredConnector
from kopycat_airflow.hooks.kopycat import KopycatHook

__all__ = ["LAG_MODES", "ConnectorLagTrigger", "LagMode", "check_lag_mode", "lag_condition_met", "log_lag",
           "measure_lag"]

LagMode = Literal["caught_up", "new_data"]
LAG_MODES: Final = ("caught_up", "new_data")
_LOGGED_TOPICS: Final = 50


def check_lag_mode(mode: object, owner: str = "ConnectorSensor") -> None:
    """ValueError naming the field, the value and the fix unless ``mode`` is a lag condition."""
    if mode not in LAG_MODES:
        raise ValueError(f"{owner} mode={mode!r} is not a lag condition: use mode='caught_up' to wait until the "
                         f"connector's total lag is 0, or mode='new_data' to wait until it is above 0 "
                         f"(Airflow's poke/reschedule choice is sensor_mode=)")


def lag_condition_met(mode: LagMode, total_lag: int) -> bool:
    """``caught_up``: nothing left to copy; ``new_data``: something to copy."""
    return total_lag == 0 if mode == "caught_up" else total_lag > 0


def measure_lag(hook: KopycatHook, connector: Mapping[str, str] | StoredConnector) -> ConnectorLag:
    """The connector's lag on the hook's cluster; AirflowFailException (no retry) for a config it cannot measure.

    A plain config is checked before any connection is read, so an unsupported connector fails
    at once; a stored one is read from the config topic first.
    """
    try:
        if isinstance(connector, StoredConnector):
            props = hook.stored_connector(connector.name).config
        else:
            props = dict(connector)
            lag_input_kind(props)
        return connector_lag(props, hook.worker_props)
    except ConfigError as exc:
        raise AirflowFailException(str(exc)) from exc


def log_lag(log: logging.Logger | Any, lag: ConnectorLag, mode: LagMode) -> None:
    """One line per poke: the total and each topic's lag (the first topics of a long list)."""
    topics = lag.topics
    shown = ", ".join(f"{t}={n}" for t, n in list(topics.items())[:_LOGGED_TOPICS])
    more = f" (+{len(topics) - _LOGGED_TOPICS} more topics)" if len(topics) > _LOGGED_TOPICS else ""
    log.info("Connector %s lag %d (%s met: %s) per topic: %s%s", lag.connector, lag.total, mode,
             lag_condition_met(mode, lag.total), shown or "no input partitions", more)


class ConnectorLagTrigger(BaseTrigger):
    """Measures a connector's lag every ``poke_interval`` seconds until ``mode`` holds.

    Yields ``{"status": "success", "mode", "total_lag", "topics": {topic: lag}}`` (plus
    ``topics_left_off`` past 500 topics), or ``{"status": "error", "message"}`` for a config
    that cannot be measured. Other errors (an unreachable cluster) fail the trigger, and so the
    task, which Airflow's retries then cover.

    :param connector_config: the connector properties (a plain config), or None with ``stored_connector``.
    :param stored_connector: the name of a connector kept in the config topic (no secrets in the kwargs).
    :param kopycat_conn_id: the Kafka cluster and worker keys (:class:`KopycatHook`).
    :param worker_overrides: worker.properties keys that win over the connection's.
    :param mode: ``caught_up`` (lag 0) or ``new_data`` (lag > 0).
    :param poke_interval: seconds between measurements.
    """

    def __init__(self, *, connector_config: Mapping[str, str] | None = None, stored_connector: str | None = None,
                 kopycat_conn_id: str = KopycatHook.default_conn_name,
                 worker_overrides: Mapping[str, Any] | None = None, mode: LagMode = "caught_up",
                 poke_interval: float = 60.0) -> None:
        super().__init__()
        if (connector_config is None) == (stored_connector is None):
            raise ValueError("ConnectorLagTrigger takes either connector_config or stored_connector, not both "
                             "or neither")
        check_lag_mode(mode, "ConnectorLagTrigger")
        self.connector_config = None if connector_config is None else dict(connector_config)
        self.stored_connector = stored_connector
        self.kopycat_conn_id = kopycat_conn_id
        self.worker_overrides = dict(worker_overrides or {})
        self.mode: LagMode = mode
        self.poke_interval = float(poke_interval)

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (f"{type(self).__module__}.{type(self).__qualname__}", {
            "connector_config": self.connector_config,
            "stored_connector": self.stored_connector,
            "kopycat_conn_id": self.kopycat_conn_id,
            "worker_overrides": self.worker_overrides,
            "mode": self.mode,
            "poke_interval": self.poke_interval,
        })

    async def run(self) -> AsyncIterator[TriggerEvent]:
        measure = sync_to_async(self._measure)
        while True:
            try:
                lag = await measure()
            except AirflowFailException as exc:
                yield TriggerEvent({"status": "error", "message": str(exc)})
                return
            if lag_condition_met(self.mode, lag.total):
                yield TriggerEvent({"status": "success", "mode": self.mode, **lag.summary()})
                return
            await asyncio.sleep(self.poke_interval)

    def _measure(self) -> ConnectorLag:
        hook = KopycatHook(self.kopycat_conn_id, self.worker_overrides)
        connector = StoredConnector(self.stored_connector) if self.stored_connector else self.connector_config
        assert connector is not None
        lag = measure_lag(hook, connector)
        log_lag(self.log, lag, self.mode)
        return lag

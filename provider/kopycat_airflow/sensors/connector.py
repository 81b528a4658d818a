"""Gate a DAG on a connector's lag: "the export has caught up" or "there is new data to copy"."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import timedelta
from functools import cached_property
from typing import Any, Literal

from airflow.sdk import BaseSensorOperator, Context, PokeReturnValue
from airflow.sdk.exceptions import AirflowFailException

from kopycat_airflow.connector_config import (
    ConnectorConfigArg,
    StoredConnector,
    resolve_connector_config,
)
from kopycat_airflow.hooks.kopycat import KopycatHook
from kopycat_airflow.secret_masking import MasksConfigSecrets
from kopycat_airflow.triggers.connector import (
    ConnectorLagTrigger,
    LagMode,
    check_lag_mode,
    lag_condition_met,
    log_lag,
    measure_lag,
)

__all__ = ["ConnectorSensor"]


class ConnectorSensor(MasksConfigSecrets, BaseSensorOperator):
    """Wait until a connector's lag on its Kafka input is 0 (``caught_up``) or above 0 (``new_data``).

    Lag is measured for connectors whose input is Kafka (:mod:`kopycat.runtime.lag`):

    - sink connectors: committed offsets of the consumer group ``connect-<name>`` against the end
      offsets of ``topics`` and of every topic ``topics.regex`` matches;
    - ``MirrorSourceConnector``: the offsets it stored in the worker's offsets topic
      (``connect-offsets``) against the end offsets of the source-cluster topics it replicates.

    A partition with nothing committed counts its whole retained range (earliest..end) as lag.
    Any other source connector (JDBC, files) reads no Kafka topic: the sensor fails at once
    (no retries) naming its class. Each poke logs the total and each topic's lag.

    ``caught_up`` suits "the export wrote everything before the job reading its Parquet files
    runs"; ``new_data`` suits "run the copy only when something arrived". The XCom return value
    is ``{"total_lag": int, "topics": {topic: lag}}`` as measured by the poke that succeeded
    (past 500 topics only the most lagging, with ``topics_left_off`` counting the others).

    With ``deferrable=True`` one poke runs in the worker and, if the condition does not hold yet,
    the task defers to :class:`ConnectorLagTrigger` (as Airflow's ``AwaitMessageSensor`` defers to
    ``AwaitMessageTrigger``), which measures every ``poke_interval`` in the triggerer.

    :param connector_config: connector properties (dict, Jinja-templated), the path of a
        ``.properties``/``.json`` file, or a :class:`StoredConnector` read from the config topic.
    :param kopycat_conn_id: the Kafka cluster and worker keys (:class:`KopycatHook`).
    :param worker_overrides: worker.properties keys that win over the connection's.
    :param mode: ``caught_up`` (succeed when the total lag is 0) or ``new_data`` (when it is > 0).
    :param sensor_mode: Airflow's ``poke`` or ``reschedule`` (BaseSensorOperator's ``mode``,
        renamed because ``mode`` names the lag condition here).
    :param poke_interval: seconds (or a timedelta) between measurements.
    :param timeout: seconds (or a timedelta) before the sensor fails (Airflow's default: 7 days).
    :param deferrable: wait in the triggerer instead of holding a worker slot.
    """

    template_fields: Sequence[str] = ("connector_config",)
    ui_color = "#eaf7ee"

    def __init__(self, *, connector_config: ConnectorConfigArg,
                 kopycat_conn_id: str = KopycatHook.default_conn_name,
                 worker_overrides: Mapping[str, Any] | None = None, mode: LagMode = "caught_up",
                 sensor_mode: Literal["poke", "reschedule"] = "poke", poke_interval: timedelta | float = 60,
                 timeout: timedelta | float | None = None, deferrable: bool = False, **kwargs: Any) -> None:
        check_lag_mode(mode)
        super().__init__(poke_interval=poke_interval, timeout=timeout, mode=sensor_mode, **kwargs)
        self.connector_config = connector_config
        self.kopycat_conn_id = kopycat_conn_id
        self.worker_overrides = dict(worker_overrides or {})
        self.lag_mode: LagMode = mode
        self.deferrable = deferrable

    @cached_property
    def hook(self) -> KopycatHook:
        return KopycatHook(self.kopycat_conn_id, self.worker_overrides)

    def poke(self, context: Context) -> PokeReturnValue:
        lag = measure_lag(self.hook, self._connector())
        log_lag(self.log, lag, self.lag_mode)
        return PokeReturnValue(lag_condition_met(self.lag_mode, lag.total), lag.summary())

    def execute(self, context: Context) -> Any:
        if not self.deferrable:
            return super().execute(context)
        first = self.poke(context)
        if first.is_done:
            return first.xcom_value
        self.defer(trigger=self.trigger(), method_name="execute_complete", timeout=timedelta(seconds=self.timeout))

    def trigger(self) -> ConnectorLagTrigger:
        """The trigger this sensor defers to (a stored connector travels by name only)."""
        connector = self._connector()
        common: dict[str, Any] = {"kopycat_conn_id": self.kopycat_conn_id, "worker_overrides": self.worker_overrides,
                                  "mode": self.lag_mode, "poke_interval": self.poke_interval}
        if isinstance(connector, StoredConnector):
            return ConnectorLagTrigger(stored_connector=connector.name, **common)
        return ConnectorLagTrigger(connector_config=connector, **common)

    def execute_complete(self, context: Context, event: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Back from the trigger: the lag that met the condition, or the trigger's error."""
        if not event or event.get("status") != "success":
            message = (event or {}).get("message", "the trigger ended without an event")
            raise AirflowFailException(f"ConnectorSensor could not measure the connector's lag: {message}")
        self.log.info("Connector lag %s: %s met", event["total_lag"], self.lag_mode)
        return {key: event[key] for key in ("total_lag", "topics", "topics_left_off") if key in event}

    def _connector(self) -> dict[str, str] | StoredConnector:
        if isinstance(self.connector_config, StoredConnector):
            return self.connector_config
        return resolve_connector_config(self.connector_config)

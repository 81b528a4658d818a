"""Plan a connector for one DAG run: validate, split into task configs, push them to XCom."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cached_property
from typing import Any

from airflow.sdk import BaseOperator, Context
from airflow.sdk.exceptions import AirflowFailException, AirflowSkipException

from kopycat.api.errors import ConfigError
from kopycat.runtime.connector_config import validate_connector_config
from kopycat.runtime.stored_connectors import publish_task_configs, report_connector
from kopycat.storage.connector_status import State
from kopycat_airflow.connector_config import ConnectorConfigArg, StoredConnector, resolve_connector_config
from kopycat_airflow.hooks.kopycat import KopycatHook
from kopycat_airflow.secret_masking import MasksConfigSecrets

__all__ = ["PlanConnectorOperator"]


class PlanConnectorOperator(MasksConfigSecrets, BaseOperator):
    """Start the connector, take ``task_configs(tasks.max)``, stop it; return one item per task.

    The list (XCom ``return_value``) feeds ``CopyTaskOperator.partial(...).expand(task_config=...)``,
    so Airflow maps one copy task per task config, as Kafka Connect's worker starts one task per
    config. Items are small JSON: ``{"index", "label", "config", "end_offsets"}`` with no
    passwords. A bad config fails this task (no retries) with every error, and no copy task
    starts.

    A :class:`StoredConnector` (made through the REST API) is read from the config topic; while
    its target state is PAUSED or STOPPED the run is skipped, and a plan records its task configs
    and the connector's status there, as Kafka Connect's herder does.

    :param connector_config: connector properties (dict, Jinja-templated), the path of a
        ``.properties``/``.json`` file, as ``kopycat standalone`` takes, or a stored connector.
    :param kopycat_conn_id: the Kafka cluster and worker keys (:class:`KopycatHook`).
    :param worker_overrides: worker.properties keys that win over the connection's.
    """

    template_fields: Sequence[str] = ("connector_config",)
    ui_color = "#e8f4fd"

    def __init__(self, *, connector_config: ConnectorConfigArg,
                 kopycat_conn_id: str = KopycatHook.default_conn_name,
                 worker_overrides: Mapping[str, Any] | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.connector_config = connector_config
        self.kopycat_conn_id = kopycat_conn_id
        self.worker_overrides = dict(worker_overrides or {})

    @cached_property
    def hook(self) -> KopycatHook:
        return KopycatHook(self.kopycat_conn_id, self.worker_overrides)

    def execute(self, context: Context) -> list[dict[str, Any]]:
        if not isinstance(self.connector_config, StoredConnector):
            return self._plan(resolve_connector_config(self.connector_config))
        stored = self.hook.stored_connector(self.connector_config.name)
        if not stored.runnable:
            raise AirflowSkipException(
                f"Connector {stored.name} is {stored.target_state.name}: nothing runs until "
                f"PUT /connectors/{stored.name}/resume")
        try:
            planned = self._plan(stored.config)
        except Exception as exc:
            report_connector(self.hook.worker_props, stored.name, State.FAILED, f"{type(exc).__name__}: {exc}")
            raise
        publish_task_configs(self.hook.worker_props, stored.name, [task["config"] for task in planned])
        return planned

    def _plan(self, props: dict[str, str]) -> list[dict[str, Any]]:
        errors = config_errors(props, self.hook.worker_props)
        if errors:
            raise AirflowFailException(f"Connector config of {props.get('name', '?')} is invalid "
                                       f"({len(errors)} error(s)):\n" + "\n".join(f"  - {e}" for e in errors))
        try:
            planned = self.hook.plan(props)
        except ConfigError as exc:
            raise AirflowFailException(f"Connector config of {props.get('name', '?')} is invalid: {exc}") from exc
        for task in planned:
            self.log.info("Task %d: %s%s", task.index, task.label,
                          f" up to {task.end_offsets}" if task.end_offsets else "")
        self.log.info("Connector %s planned %d task(s)", props.get("name"), len(planned))
        return [task.to_dict() for task in planned]


    def get_openlineage_facets_on_start(self) -> Any:
        """Lineage known before planning (OpenLineage provider hook): a sink's topics and directories."""
        from kopycat_airflow.lineage import connector_lineage

        return connector_lineage(self._lineage_props(), self.hook.worker_props, [])

    def get_openlineage_facets_on_complete(self, task_instance: Any) -> Any:
        """The planned tasks' datasets: a JDBC source's tables and topics, with schemas and column lineage."""
        from kopycat_airflow.lineage import connector_lineage

        planned = task_instance.xcom_pull(task_ids=self.task_id) or []
        return connector_lineage(self._lineage_props(), self.hook.worker_props, [t["config"] for t in planned])

    def _lineage_props(self) -> dict[str, str]:
        if isinstance(self.connector_config, StoredConnector):
            return self.hook.stored_connector(self.connector_config.name).config
        return resolve_connector_config(self.connector_config)


def config_errors(props: Mapping[str, str], worker_props: Mapping[str, Any] | None = None) -> list[str]:
    """Every validation error of the config, each naming the key, the value and the fix
    (placeholders resolved with ``worker_props``' config providers, shown as written)."""
    try:
        result = validate_connector_config(props, worker_props)
    except ConfigError as exc:
        return [str(exc)]
    errors = []
    for item in result.get("configs", []):
        value = item.get("value", {})
        for message in value.get("errors", []):
            errors.append(f"{value.get('name')}: {message}")
    return errors

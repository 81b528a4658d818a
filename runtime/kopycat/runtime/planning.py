"""Planning: start a connector, split its job into task configs, enforce ``tasks.max``.

What Kafka's ``Worker.startConnector`` + ``Worker.connectorTaskConfigs`` do, shared by the
standalone worker, the embedded API and the Airflow plan task, so a connector is split the same
way wherever it runs. Each task config gets Kafka's ``task.class`` key, so a task can be run
from its config alone (an Airflow mapped task receives nothing else).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kopycat.api.config import resolve_class
from kopycat.api.connector import (
    Connector,
    SinkConnectorContext,
    SourceConnector,
    SourceConnectorContext,
)
from kopycat.api.errors import ConfigError, ConnectError
from kopycat.api.task import OffsetStorageReader, Task
from kopycat.plugins import connector_class
from kopycat.runtime.config_transformer import placeholder_text, resolve_connector_config, reverse_transform
from kopycat.runtime.connector_config import (
    CONNECTOR_CLASS_CONFIG,
    NAME_CONFIG,
    TASKS_MAX_CONFIG,
    TASKS_MAX_ENFORCE_CONFIG,
    parse_connector_config,
)

__all__ = ["TASK_CLASS_CONFIG", "ConnectorPlan", "PlanningContext", "plan_connector", "start_connector",
           "task_class_of"]

log = logging.getLogger(__name__)

TASK_CLASS_CONFIG = "task.class"
"""Kafka's ``TaskConfig.TASK_CLASS_CONFIG``: the task class, added to every task config."""


class PlanningContext(SourceConnectorContext, SinkConnectorContext):
    """The context a connector gets while it runs (Kafka's ``HerderConnectorContext``).

    ``on_reconfigure`` / ``on_error`` let the standalone worker restart tasks or fail the
    connector; a one-shot plan (Airflow) ignores reconfiguration: the next plan picks it up.
    """

    def __init__(self, reader: OffsetStorageReader | None = None,
                 on_reconfigure: Callable[[], None] | None = None,
                 on_error: Callable[[Exception], None] | None = None) -> None:
        self._reader = reader
        self._on_reconfigure = on_reconfigure
        self._on_error = on_error

    def request_task_reconfiguration(self) -> None:
        if self._on_reconfigure is not None:
            self._on_reconfigure()

    def raise_error(self, error: Exception) -> None:
        if self._on_error is None:
            raise error
        self._on_error(error)

    @property
    def offset_storage_reader(self) -> OffsetStorageReader:
        if self._reader is None:
            raise ConnectError("This connector runs without an offset store: no offsets to read")
        return self._reader


@dataclass
class ConnectorPlan:
    """A started connector and the task configs it produced."""

    name: str
    connector: Connector
    props: dict[str, str]
    values: dict[str, Any]
    task_configs: list[dict[str, str]]

    @property
    def is_source(self) -> bool:
        return isinstance(self.connector, SourceConnector)


def start_connector(props: Mapping[str, Any], context: PlanningContext | None = None,
                    worker_props: Mapping[str, Any] | None = None) -> tuple[Connector, dict[str, Any]]:
    """Instantiate, validate, initialize and start the connector ``props`` describe.

    Placeholders (``${file:...}``) are resolved here with ``worker_props``' config providers, as
    Kafka's ``Worker.startConnector`` does: the connector sees the values, nothing else does.
    """
    raw = {k: str(v) for k, v in props.items() if v is not None}
    [text] = resolve_connector_config(worker_props or {}, raw)
    if not text.get(CONNECTOR_CLASS_CONFIG):
        raise ConfigError(f"{CONNECTOR_CLASS_CONFIG} is missing: name the connector's class, e.g. "
                          f"{CONNECTOR_CLASS_CONFIG}=FileStreamSource", key=CONNECTOR_CLASS_CONFIG)
    connector = connector_class(text[CONNECTOR_CLASS_CONFIG])()
    try:
        values = parse_connector_config(text, connector)
    except ConfigError as exc:
        if text == raw:
            raise
        raise ConfigError(placeholder_text(str(exc), raw, text), key=exc.key) from None
    connector.initialize(context or PlanningContext())
    connector.start(text)
    return connector, values


def plan_connector(props: Mapping[str, Any], context: PlanningContext | None = None,
                   worker_props: Mapping[str, Any] | None = None) -> ConnectorPlan:
    """Start the connector and ask it for at most ``tasks.max`` task configs.

    The connector starts with its placeholders resolved (``worker_props``' config providers); its
    task configs get them back (:func:`reverse_transform`), and ``props`` stays as given.

    A connector returning more fails, as in Kafka 3.9+, unless ``tasks.max.enforce=false``
    (then the extra configs run, with a warning). The connector is left started: the caller
    stops it (the worker keeps it running to watch for reconfiguration).
    """
    connector, values = start_connector(props, context, worker_props)
    text = {k: str(v) for k, v in props.items() if v is not None}
    try:
        configs = reverse_transform(text, task_configs(connector, values))
    except BaseException:
        connector.stop()
        raise
    return ConnectorPlan(values[NAME_CONFIG], connector, text, values, configs)


def task_configs(connector: Connector, values: Mapping[str, Any]) -> list[dict[str, str]]:
    """The connector's task configs, checked against tasks.max, each with ``task.class``."""
    name, max_tasks = values[NAME_CONFIG], values[TASKS_MAX_CONFIG]
    configs = [dict(c) for c in connector.task_configs(max_tasks)]
    if len(configs) > max_tasks:
        if values[TASKS_MAX_ENFORCE_CONFIG]:
            raise ConnectError(
                f"The connector {name} has generated {len(configs)} tasks, which is greater than {max_tasks}, "
                f"the maximum number of tasks it is configured to create. This behaviour should be considered "
                f"a bug and is disallowed. If necessary, it can be permitted by reconfiguring the connector "
                f"with '{TASKS_MAX_ENFORCE_CONFIG}' set to false; however, this option will be removed in a "
                f"future release of Kafka Connect.")
        log.warning("The connector %s has generated %d tasks, more than %s=%d; running them all because "
                    "%s=false", name, len(configs), TASKS_MAX_CONFIG, max_tasks, TASKS_MAX_ENFORCE_CONFIG)
    task_class = connector.task_class()
    for config in configs:
        config[TASK_CLASS_CONFIG] = f"{task_class.__module__}.{task_class.__qualname__}"
    return configs


def task_class_of(task_props: Mapping[str, Any], connector_props: Mapping[str, Any]) -> type[Task]:
    """The task class of a task config: its ``task.class``, else the connector's ``task_class()``."""
    name = task_props.get(TASK_CLASS_CONFIG)
    if name:
        cls = resolve_class(TASK_CLASS_CONFIG, str(name))
    else:
        cls = connector_class(connector_props[CONNECTOR_CLASS_CONFIG])().task_class()
    if not issubclass(cls, Task):
        raise ConfigError.for_key(TASK_CLASS_CONFIG, name, "is not a kopycat.api.task.Task subclass")
    return cls


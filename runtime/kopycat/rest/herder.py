"""The control plane behind the REST API: connector configs, target states, statuses, offsets.

Follows Kafka Connect's ``AbstractHerder`` and ``StandaloneHerder`` (checks, messages, response
shapes), with one difference: this herder runs no connectors. Connectors are run by Airflow (a
DAG per stored connector), by the standalone worker, or, in ``kopycat worker``, by
:class:`kopycat.runtime.worker_herder.WorkerHerder` beside it; this herder only reads and writes
the stores they share:

- the config store (``connect-configs``): ``connector-<name>``, ``target-state-<name>`` and, on
  stop, an empty ``commit-<name>``; task configs (``task-<name>-<n>``) are written by plan runs;
- the status store (``connect-status``): read, plus RESTARTING/DESTROYED written on restart and
  delete, as Kafka's herder does (``onRestart``, ``onDeletion``);
- the offsets (:mod:`kopycat.runtime.offsets_admin`): the offset store for source connectors,
  the consumer group ``connect-<name>`` for sinks.

What a status shows: the stored state, UNASSIGNED for a connector or committed task that has
none yet, seen through the target state as Kafka's workers report once they honour it
(:mod:`kopycat.rest.status_view`). Every method raises
:class:`~kopycat.rest.errors.ConnectRestError` with Kafka's status and message, or an engine
error that :func:`~kopycat.rest.errors.status_for` maps. Thread-safe: one lock serializes
calls, as the stores expect a single writer.
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, ParamSpec, TypeVar

from kopycat import __version__
from kopycat.api.connector import SinkConnector
from kopycat.api.errors import ConfigError
from kopycat.kafka import consumer_group_id
from kopycat.plugins import connector_class
from kopycat.rest.bodies import check_config_size, config_strings, connector_name
from kopycat.rest.errors import CONFLICT, ConnectRestError
from kopycat.rest.masking import is_secret_name, mask_config, mask_text, restore_hidden, secret_keys
from kopycat.rest.plugin_info import (
    connector_plugins,
    connector_type,
    missing_connector_type,
    plugin_config,
    validate_plugin_config,
)
from kopycat.rest.run_control import NoRunControl, RunControl
from kopycat.rest.status_view import effective_state, plugin_version, state_json
from kopycat.runtime.connector_config import CONNECTOR_CLASS_CONFIG, NAME_CONFIG
from kopycat.runtime.connector_config import validate_connector_config as validate_config
from kopycat.runtime.lag import connector_lag, lag_input_kind
from kopycat.runtime.offsets_admin import alter_offsets, get_offsets, max_record_bytes
from kopycat.runtime.worker_config import (
    TOPIC_TRACKING_ALLOW_RESET_CONFIG,
    TOPIC_TRACKING_ENABLE_CONFIG,
    WORKER_CONFIG,
)
from kopycat.storage.config_backing_store import ClusterConfigState, ConfigBackingStore, TargetState
from kopycat.storage.connector_status import ConnectorStatus, State, TaskStatus
from kopycat.storage.status_backing_store import StatusBackingStore

__all__ = ["CONNECT_API_COMMIT", "CONNECT_API_VERSION", "RestHerder"]

log = logging.getLogger(__name__)

_P = ParamSpec("_P")
_R = TypeVar("_R")
CONNECT_API_VERSION: Final = "4.1.0"
"""The Kafka Connect release whose REST API this one implements (``GET /`` ``version``)."""
CONNECT_API_COMMIT: Final = f"kopycat-{__version__}"
"""``GET /`` ``commit``: stable for a Kopycat release (Kafka shows its build's git commit)."""
_INITIAL_STATES: Final = {"RUNNING": TargetState.STARTED, "PAUSED": TargetState.PAUSED,
                          "STOPPED": TargetState.STOPPED}
_NOT_STOPPED: Final = ("Connectors must be in the STOPPED state before their offsets can be modified. This can be "
                       "done for the specified connector by issuing a 'PUT' request to the '/connectors/{name}/stop' "
                       "endpoint")
_INVALID: Final = "Connector configuration is invalid and contains the following {count} error(s):"
_SEE_VALIDATE: Final = ("You can also find the above list of errors at the endpoint "
                        "`/connector-plugins/{connectorType}/config/validate`")


def _serialized(method: Callable[_P, _R]) -> Callable[_P, _R]:
    @functools.wraps(method)
    def locked(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        with args[0]._lock:  # type: ignore[attr-defined]
            return method(*args, **kwargs)
    return locked


class RestHerder:
    """Answers every REST call over a config store, a status store and the worker's properties.

    :param config_store: connector configs and target states (started by the caller).
    :param status_store: connector and task statuses (started by the caller).
    :param worker_props: the worker.properties of the runs: offsets store and Kafka clients.
    :param worker_id: written as ``worker_id`` with the statuses this herder records.
    :param kafka_cluster_id: shown by ``GET /``.
    :param run_control: told of pauses, stops and restarts once the stores hold them (the Airflow
        plugin pauses DAGs and clears failed task instances); its failures are logged, not answered:
        the stores already carry the change, and the next run honours it.
    :param runner_reports_states: the runner writes the statuses a target state leads to itself, once its
        tasks have stopped or paused (``kopycat worker``, as Kafka's workers do): statuses are shown as
        stored, so STOPPED means the tasks are down and their offsets committed. Otherwise (Airflow,
        ``kopycat rest`` alone) nothing would write them, and the stored states are shown through the
        target state (:mod:`kopycat.rest.status_view`).
    """

    def __init__(self, config_store: ConfigBackingStore, status_store: StatusBackingStore,
                 worker_props: Mapping[str, Any] | None = None, *, worker_id: str = "kopycat-rest",
                 kafka_cluster_id: str | None = None, run_control: RunControl | None = None,
                 runner_reports_states: bool = False) -> None:
        self.config_store = config_store
        self.status_store = status_store
        self.worker_props = dict(worker_props or {})
        self.worker_id = worker_id
        self.kafka_cluster_id = kafka_cluster_id
        self.run_control: RunControl = run_control or NoRunControl()
        self.runner_reports_states = runner_reports_states
        self._lock = threading.RLock()

    # ------------------------------------------------------------------------- helpers

    def _config(self, name: str, state: ClusterConfigState, message: str = "Connector {name} not found"
                ) -> dict[str, str]:
        config = state.connector_configs.get(name)
        if config is None:
            raise ConnectRestError.not_found(message.format(name=name))
        return config

    def _info(self, name: str, state: ClusterConfigState) -> dict[str, Any]:
        """Kafka's ``ConnectorInfo``."""
        config = state.connector_configs[name]
        tasks = state.task_configs.get(name, [])
        return {"name": name, "config": mask_config(config), "tasks": [{"connector": name, "task": n}
                                                                       for n in range(len(tasks))],
                "type": connector_type(config)}

    def _task_statuses(self, name: str, state: ClusterConfigState) -> dict[int, TaskStatus]:
        """Stored task statuses, plus UNASSIGNED for committed tasks that have none yet."""
        found = {status.task: status for status in self.status_store.get_all_tasks(name)}
        for task in range(len(state.task_configs.get(name, []))):
            found.setdefault(task, TaskStatus(name, task, State.UNASSIGNED, None, self.worker_id))
        return dict(sorted(found.items()))

    def _shown(self, state: State, target: TargetState) -> State:
        """The state a status shows (see ``runner_reports_states``)."""
        return state if self.runner_reports_states else effective_state(state, target)

    def _status(self, name: str, state: ClusterConfigState) -> dict[str, Any]:
        """Kafka's ``ConnectorStateInfo``, with the target state applied (module doc)."""
        target = state.target_states.get(name, TargetState.STARTED)
        config = state.connector_configs[name]
        version = plugin_version(config)
        stored = self.status_store.get_connector(name) or ConnectorStatus(
            name, State.UNASSIGNED, None, self.worker_id)
        tasks = [] if target is TargetState.STOPPED else [
            state_json(self._shown(s.state, target), s.worker_id, s.trace, s.version or version, id=n)
            for n, s in self._task_statuses(name, state).items()]
        return {"name": name,
                "connector": state_json(self._shown(stored.state, target), stored.worker_id, stored.trace,
                                        stored.version or version),
                "tasks": tasks, "type": connector_type(config)}

    def _validate(self, props: Mapping[str, Any]) -> None:
        """Raise 400 with Kafka's message when ``props`` is invalid (``maybeAddConfigErrors``)."""
        if props.get(CONNECTOR_CLASS_CONFIG) is None:
            raise missing_connector_type(props)
        try:
            response = validate_config(props, self.worker_props)
        except ConfigError as exc:
            raise ConnectRestError.bad_request(mask_text(str(exc), props)) from exc
        if response["error_count"]:
            errors = [e for entry in response["configs"] for e in entry["value"]["errors"]]
            text = "\n".join([_INVALID.format(count=response["error_count"]), *errors, _SEE_VALIDATE])
            raise ConnectRestError.bad_request(mask_text(text, props))

    def _put_config(self, name: str, props: dict[str, str | None], *, allow_replace: bool,
                    target_state: TargetState | None = None) -> tuple[bool, dict[str, Any]]:
        """Kafka's ``putConnectorConfig``: name check, validation, 409, write; returns (created, info)."""
        included = props.get(NAME_CONFIG)
        if included is not None and included != name:
            raise ConnectRestError.bad_request(f"Connector name configuration ({included}) doesn't match connector "
                                               f"name in the URL ({name})")
        props[NAME_CONFIG] = name
        old = self.config_store.snapshot().connector_configs.get(name)
        props = restore_hidden(props, old)
        self._validate(props)
        check_config_size(name, props, max_record_bytes(self.worker_props))
        if old is not None and not allow_replace:
            raise ConnectRestError(CONFLICT, f"Connector {name} already exists")
        self.config_store.put_connector_config(name, props, target_state)  # type: ignore[arg-type]
        log.info("%s connector %s", "Created" if old is None else "Reconfigured", name)
        return old is None, self._info(name, self.config_store.snapshot())

    def _put_target_state(self, name: str, state: TargetState) -> None:
        self.config_store.put_target_state(name, state)
        try:
            self.run_control.target_state_changed(name, state)
        except Exception:  # noqa: BLE001 - the stores hold the state; the runner catches up at its next run
            log.warning("Connector %s is %s in the config topic, but its runner was not told", name, state.name,
                        exc_info=True)

    def _restart_runs(self, name: str, statuses: Sequence[ConnectorStatus | TaskStatus]) -> None:
        connector = any(isinstance(s, ConnectorStatus) for s in statuses)
        tasks = [s.task for s in statuses if isinstance(s, TaskStatus)]
        try:
            self.run_control.restart(name, connector=connector, tasks=tasks)
        except Exception:  # noqa: BLE001 - RESTARTING is recorded; a later run picks the connector up
            log.warning("Connector %s: restart recorded, but its runner could not rerun it", name, exc_info=True)

    def _record(self, *statuses: ConnectorStatus | TaskStatus) -> None:
        for status in statuses:
            self.status_store.put(status)
        self.status_store.flush()

    # ---------------------------------------------------------------------- root, list

    def server_info(self) -> dict[str, Any]:
        """``GET /``: Kafka's ``ServerInfo``, for the Kafka Connect API level served, plus Kopycat's version.

        Clients gate features on ``version`` (e.g. KIP-875 needs 3.5+), so it names the Kafka Connect
        release whose REST API this one implements, not Kopycat's own release.
        """
        return {"version": CONNECT_API_VERSION, "commit": CONNECT_API_COMMIT,
                "kafka_cluster_id": self.kafka_cluster_id, "kopycat_version": __version__}

    @_serialized
    def connectors(self, expand: Sequence[str] | None = None) -> list[str] | dict[str, dict[str, Any]]:
        """``GET /connectors``: names, or with ``expand`` (``status``, ``info``) a map of both."""
        state = self.config_store.snapshot()
        names = sorted(state.connector_configs)
        if expand is None:
            return names
        out: dict[str, dict[str, Any]] = {}
        for name in names:
            out[name] = {}
            for expansion in expand:
                if expansion == "status":
                    out[name]["status"] = self._status(name, state)
                elif expansion == "info":
                    out[name]["info"] = self._info(name, state)
                else:
                    log.info("Ignoring unknown expansion type %s", expansion)
        return out

    # ------------------------------------------------------------------------- configs

    @_serialized
    def create_connector(self, request: Any) -> dict[str, Any]:
        """``POST /connectors``: Kafka's ``CreateConnectorRequest`` (``name``, ``config``, ``initial_state``)."""
        if not isinstance(request, Mapping):
            raise ConnectRestError.bad_request("The request must be a JSON object with 'name' and 'config'")
        name = connector_name(request.get("name"))
        initial = request.get("initial_state")
        target = _INITIAL_STATES.get(str(initial).upper()) if initial is not None else None
        if initial is not None and target is None:
            raise ConnectRestError.bad_request(f"Invalid initial_state {initial!r}: use one of "
                                               f"{', '.join(_INITIAL_STATES)}")
        return self._put_config(name, config_strings(request.get("config"), "connector configuration"),
                                allow_replace=False, target_state=target)[1]

    @_serialized
    def put_connector_config(self, name: str, config: Any) -> tuple[bool, dict[str, Any]]:
        """``PUT /connectors/{name}/config``: (created, ConnectorInfo)."""
        return self._put_config(name, config_strings(config, "connector configuration"), allow_replace=True)

    @_serialized
    def patch_connector_config(self, name: str, patch: Any) -> dict[str, Any]:
        """``PATCH /connectors/{name}/config``: null values remove keys (Kafka's ``ConnectUtils.patchConfig``)."""
        patched: dict[str, str | None] = dict(self._config(name, self.config_store.snapshot()))
        for key, value in config_strings(patch, "connector configuration patch").items():
            if value is None:
                patched.pop(key, None)
            else:
                patched[key] = value
        return self._put_config(name, patched, allow_replace=True)[1]

    @_serialized
    def connector_info(self, name: str) -> dict[str, Any]:
        """``GET /connectors/{name}``."""
        state = self.config_store.snapshot()
        self._config(name, state)
        return self._info(name, state)

    @_serialized
    def connector_config(self, name: str) -> dict[str, Any]:
        """``GET /connectors/{name}/config``, secrets hidden."""
        return mask_config(self._config(name, self.config_store.snapshot()))

    @_serialized
    def task_configs(self, name: str) -> list[dict[str, Any]]:
        """``GET /connectors/{name}/tasks``: Kafka's ``TaskInfo`` list, as committed by plan runs."""
        state = self.config_store.snapshot()
        hidden = secret_keys(self._config(name, state))
        return [{"id": {"connector": name, "task": n},
                 "config": mask_config(task, hidden | {k for k in task if is_secret_name(k)})}
                for n, task in enumerate(state.task_configs.get(name, []))]

    @_serialized
    def delete_connector(self, name: str) -> None:
        """``DELETE /connectors/{name}``: tombstones; statuses DESTROYED, recorded topics reset and the
        tasks' progress records (:mod:`kopycat.storage.task_progress`) deleted; offsets are kept, as Kafka."""
        self._config(name, self.config_store.snapshot())
        self.config_store.remove_connector_config(name)
        self._delete_progress(name)  # first: reading back the connector's tombstone forgets which tasks had some
        tasks = self.status_store.get_all_tasks(name)
        self._record(*(TaskStatus(name, t.task, State.DESTROYED, None, self.worker_id) for t in tasks),
                     ConnectorStatus(name, State.DESTROYED, None, self.worker_id))
        self._reset_topics(name)  # a connector created again under this name starts with no topics
        log.info("Deleted connector %s", name)

    # ---------------------------------------------------------------- status, control

    @_serialized
    def connector_status(self, name: str) -> dict[str, Any]:
        """``GET /connectors/{name}/status``."""
        state = self.config_store.snapshot()
        self._config(name, state, "No status found for connector {name}")
        return self._status(name, state)

    @_serialized
    def task_status(self, name: str, task: int) -> dict[str, Any]:
        """``GET /connectors/{name}/tasks/{task}/status``."""
        state = self.config_store.snapshot()
        status = self._task_statuses(name, state).get(task) if state.contains(name) else None
        if status is None:
            raise ConnectRestError.not_found(f"No status found for task {name}-{task}")
        target = state.target_states.get(name, TargetState.STARTED)
        return state_json(self._shown(status.state, target), status.worker_id, status.trace,
                          status.version or plugin_version(state.connector_configs[name]), id=task)

    @_serialized
    def restart_connector(self, name: str, *, include_tasks: bool = False, only_failed: bool = False
                          ) -> dict[str, Any] | None:
        """``POST /connectors/{name}/restart``: records RESTARTING where Kafka's ``RestartPlan`` would.

        Returns None for a plain restart (Kafka answers 204), else the planned status (202).
        """
        state = self.config_store.snapshot()
        if not include_tasks and not only_failed:
            self._config(name, state, "Unknown connector: {name}")
            restarting = ConnectorStatus(name, State.RESTARTING, None, self.worker_id)
            self._record(restarting)
            self._restart_runs(name, [restarting])
            return None
        self._config(name, state, "Unknown connector: {name}")
        plan = self._status(name, state)
        restarting: list[ConnectorStatus | TaskStatus] = []
        if not only_failed or plan["connector"]["state"] == State.FAILED.value:
            plan["connector"]["state"] = State.RESTARTING.value
            restarting.append(ConnectorStatus(name, State.RESTARTING, None, self.worker_id))
        for task in plan["tasks"]:
            if include_tasks and (not only_failed or task["state"] == State.FAILED.value):
                task["state"] = State.RESTARTING.value
                restarting.append(TaskStatus(name, task["id"], State.RESTARTING, None, self.worker_id))
        self._record(*restarting)
        if restarting:
            self._restart_runs(name, restarting)
        return plan

    @_serialized
    def restart_task(self, name: str, task: int) -> None:
        """``POST /connectors/{name}/tasks/{task}/restart``."""
        state = self.config_store.snapshot()
        self._config(name, state, "Unknown connector: {name}")
        if not 0 <= task < len(state.task_configs.get(name, [])):
            raise ConnectRestError.not_found(f"Unknown task: {name}-{task}")
        restarting = TaskStatus(name, task, State.RESTARTING, None, self.worker_id)
        self._record(restarting)
        self._restart_runs(name, [restarting])

    @_serialized
    def pause_connector(self, name: str) -> None:
        """``PUT /connectors/{name}/pause``."""
        self._config(name, self.config_store.snapshot(), "Unknown connector {name}")
        self._put_target_state(name, TargetState.PAUSED)

    @_serialized
    def resume_connector(self, name: str) -> None:
        """``PUT /connectors/{name}/resume``."""
        self._config(name, self.config_store.snapshot(), "Unknown connector {name}")
        self._put_target_state(name, TargetState.STARTED)

    @_serialized
    def stop_connector(self, name: str) -> None:
        """``PUT /connectors/{name}/stop``: zero task configs, then STOPPED (Kafka's ``DistributedHerder``)."""
        self._config(name, self.config_store.snapshot(), "Unknown connector {name}")
        self.config_store.put_task_configs(name, [])
        self._put_target_state(name, TargetState.STOPPED)

    def connector_active_topics(self, name: str) -> dict[str, Any]:
        """``GET /connectors/{name}/topics`` (KIP-558): the topics the connector's copy tasks used since
        it was created or last reset, from the status topic. An unknown connector has none (as Kafka)."""
        self._check_topic_tracking(reset=False)
        return {name: {"topics": [s.topic for s in self.status_store.get_all_topics(name)]}}

    def reset_connector_active_topics(self, name: str) -> None:
        """``PUT /connectors/{name}/topics/reset``: a tombstone for each recorded topic."""
        self._check_topic_tracking(reset=True)
        self._reset_topics(name)

    def _reset_topics(self, name: str) -> None:
        for status in self.status_store.get_all_topics(name):
            self.status_store.delete_topic(name, status.topic)
        self.status_store.flush()

    def _delete_progress(self, name: str) -> None:
        """Tombstone each task's progress key, so the compacted status topic forgets them."""
        for progress in self.status_store.get_all_progress(name):
            self.status_store.delete_progress(name, progress.task)
        self.status_store.flush()

    def _check_topic_tracking(self, reset: bool) -> None:
        settings = WORKER_CONFIG.parse(self.worker_props)
        if not settings[TOPIC_TRACKING_ENABLE_CONFIG]:
            raise ConnectRestError.forbidden("Topic tracking is disabled.")
        if reset and not settings[TOPIC_TRACKING_ALLOW_RESET_CONFIG]:
            raise ConnectRestError.forbidden("Topic tracking reset is disabled.")

    # ------------------------------------------------------------------------- plugins

    def connector_plugins(self, connectors_only: bool = True) -> list[dict[str, str]]:
        """``GET /connector-plugins``: Kafka's ``PluginInfo`` list."""
        return connector_plugins(connectors_only)

    def plugin_config(self, plugin: str) -> list[dict[str, Any]]:
        """``GET /connector-plugins/{plugin}/config``: the connector's keys as ``ConfigKeyInfo``."""
        return plugin_config(plugin)

    def validate_plugin_config(self, plugin: str, config: Any) -> dict[str, Any]:
        """``PUT /connector-plugins/{plugin}/config/validate``: Kafka's ``ConfigInfos``, secrets hidden."""
        return validate_plugin_config(plugin, config, self.worker_props)

    # ------------------------------------------------------------------------- offsets

    @_serialized
    def connector_offsets(self, name: str) -> dict[str, Any]:
        """``GET /connectors/{name}/offsets`` (KIP-875): by the connector's type, as Kafka."""
        config = self._config(name, self.config_store.snapshot())
        return get_offsets(name, self.worker_props, sink=connector_type(config) == "sink",
                           group=consumer_group_id(name, config), connector_props=config)

    def connector_lag(self, name: str) -> dict[str, Any]:
        """``GET /connectors/{name}/lag`` (Kopycat's): the ConnectorSensor's measure, per partition.

        A source connector that reads no Kafka topic has no lag: ``input`` is null and ``reason``
        says why. Not serialized: measuring may wait on a source cluster, and only reads.
        """
        with self._lock:
            config = {**self._config(name, self.config_store.snapshot()), NAME_CONFIG: name}
        try:
            lag_input_kind(config)
        except ConfigError as exc:
            return {"connector": name, "input": None, "total_lag": None, "partitions": [], "reason": str(exc)}
        lag = connector_lag(config, self.worker_props)
        return {"connector": name, "input": lag.kind, "total_lag": lag.total, "partitions": lag.rows()}

    @_serialized
    def alter_connector_offsets(self, name: str, body: Any) -> dict[str, str]:
        """``PATCH /connectors/{name}/offsets``: only for a STOPPED connector."""
        offsets = body.get("offsets") if isinstance(body, Mapping) else None
        if not offsets:
            raise ConnectRestError.bad_request("Partitions / offsets need to be provided for an alter offsets request")
        if not isinstance(offsets, list):
            raise ConnectRestError.bad_request("'offsets' must be a JSON array of {\"partition\", \"offset\"} objects")
        return self._modify_offsets(name, offsets)

    @_serialized
    def reset_connector_offsets(self, name: str) -> dict[str, str]:
        """``DELETE /connectors/{name}/offsets``: only for a STOPPED connector."""
        return self._modify_offsets(name, None)

    def _modify_offsets(self, name: str, offsets: list[Any] | None) -> dict[str, str]:
        """Kafka's ``modifyConnectorOffsetsChecks`` then ``Worker.modifyConnectorOffsets``."""
        state = self.config_store.snapshot()
        config = self._config(name, state)
        if state.target_states.get(name) is not TargetState.STOPPED or state.task_configs.get(name):
            raise ConnectRestError.bad_request(_NOT_STOPPED.format(name=name))
        connector = connector_class(config[CONNECTOR_CLASS_CONFIG])()
        return alter_offsets(name, offsets, self.worker_props, sink=isinstance(connector, SinkConnector),
                             group=consumer_group_id(name, config), connector_props=config,
                             check=lambda parsed: bool(connector.alter_offsets(config, parsed)))


"""Runs connectors and their tasks in threads: the engine of standalone and embedded mode.

Follows Kafka Connect's ``Worker`` and ``StandaloneHerder``, trimmed to one process without
group membership: each connector is planned (:mod:`kopycat.runtime.planning`), each task config
runs on its own thread through the same runners the Airflow tasks use, and every state change
goes to a status store in Kafka's shapes (``RUNNING``, ``FAILED`` with its trace, ...).
A connector asking for reconfiguration gets its tasks stopped (offsets committed) and
restarted with the new configs.

Thread-safety: public methods may be called from any thread; one lock guards the registry.
"""

from __future__ import annotations

import logging
import socket
import threading
import traceback
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kopycat.api.errors import AlreadyExistsError, ConnectError, NotFoundError
from kopycat.api.task import SinkTask, SourceTask
from kopycat.runtime.bounds import Bounds, RunSummary
from kopycat.runtime.config_transformer import reverse_transform
from kopycat.runtime.planning import ConnectorPlan, PlanningContext, plan_connector, task_class_of, task_configs
from kopycat.runtime.sink_runner import SinkTaskRunner
from kopycat.runtime.source_runner import SourceTaskRunner
from kopycat.runtime.task_factory import build_sink_runner, build_source_runner
from kopycat.runtime.task_parts import TaskId
from kopycat.runtime.worker_config import TASK_SHUTDOWN_GRACEFUL_TIMEOUT_MS_CONFIG, WORKER_CONFIG
from kopycat.storage.connector_status import ConnectorStatus, State, TaskStatus
from kopycat.storage.offset_backing_store import OffsetBackingStore
from kopycat.storage.offset_storage_reader_writer import OffsetStorageReaderImpl
from kopycat.storage.status_backing_store import MemoryStatusBackingStore, StatusBackingStore

__all__ = ["Worker"]

log = logging.getLogger(__name__)

Runner = SourceTaskRunner | SinkTaskRunner


@dataclass
class _TaskThread:
    runner: Runner
    thread: threading.Thread = field(default_factory=threading.Thread)
    summary: RunSummary | None = None


@dataclass
class _Connector:
    plan: ConnectorPlan
    bounds: Bounds | None
    tasks: list[_TaskThread] = field(default_factory=list)


class Worker:
    """Connectors and their task threads in this process (Kafka's ``Worker`` + ``StandaloneHerder``)."""

    def __init__(self, worker_props: Mapping[str, Any], offset_store: OffsetBackingStore, *,
                 status_store: StatusBackingStore | None = None, worker_id: str | None = None) -> None:
        self.worker_props = {k: str(v) for k, v in worker_props.items()}
        self.values = WORKER_CONFIG.parse(self.worker_props)
        self.offset_store = offset_store
        self.status_store = status_store or MemoryStatusBackingStore()
        self.worker_id = worker_id or f"{socket.gethostname()}:kopycat"
        self._connectors: dict[str, _Connector] = {}
        self._lock = threading.RLock()
        self._started = False

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        self.offset_store.start()
        self.status_store.start()
        self._started = True

    def stop(self) -> None:
        """Stop every connector (tasks commit their offsets), then the stores."""
        for name in list(self._connectors):
            self.remove_connector(name)
        if self._started:
            self._started = False
            self.status_store.stop()
            self.offset_store.stop()

    def __enter__(self) -> Worker:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # ------------------------------------------------------------------ connectors

    def add_connector(self, props: Mapping[str, Any], bounds: Bounds | None = None) -> str:
        """Plan the connector and start one thread per task config; returns its name.

        ``bounds`` makes every task a bounded run (the embedded API's ``run_once``).
        Raises ConfigError for a bad config and AlreadyExistsError for a name in use.
        """
        name = str(props.get("name", ""))
        with self._lock:
            if name in self._connectors:
                raise AlreadyExistsError(f"Connector {name} already exists")
        reader = OffsetStorageReaderImpl(self.offset_store, name)
        context = PlanningContext(reader, on_reconfigure=lambda: self._reconfigure_later(name),
                                  on_error=lambda error: self._connector_failed(name, error))
        plan = plan_connector(props, context, self.worker_props)
        with self._lock:
            self._connectors[plan.name] = _Connector(plan, bounds)
            self._put_status(ConnectorStatus(plan.name, State.RUNNING, None, self.worker_id))
            self._start_tasks(self._connectors[plan.name])
        log.info("Connector %s started with %d tasks", plan.name, len(plan.task_configs))
        return plan.name

    def remove_connector(self, name: str) -> None:
        """Stop the tasks (each commits its offsets), then the connector."""
        with self._lock:
            running = self._connectors.pop(name, None)
        if running is None:
            raise NotFoundError(f"Connector {name} not found")
        self._stop_tasks(running)
        try:
            running.plan.connector.stop()
        finally:
            self._put_status(ConnectorStatus(name, State.UNASSIGNED, None, self.worker_id))

    def connectors(self) -> list[str]:
        with self._lock:
            return sorted(self._connectors)

    def task_configs(self, name: str) -> list[dict[str, str]]:
        return list(self._get(name).plan.task_configs)

    def wait(self, name: str, timeout_s: float | None = None) -> list[RunSummary | None]:
        """Wait for the connector's task threads to end (bounded runs); their summaries."""
        running = self._get(name)
        for task in running.tasks:
            task.thread.join(timeout_s)
        return [task.summary for task in running.tasks]

    def status(self, name: str) -> dict[str, Any]:
        """Kafka Connect's ``GET /connectors/{name}/status`` body."""
        running = self._get(name)
        connector = self.status_store.get_connector(name)
        tasks = self.status_store.get_all_tasks(name)
        return {
            "name": name,
            "connector": _state(connector, self.worker_id),
            "tasks": [{"id": t.task, **_state(t, self.worker_id)} for t in tasks
                      if t.task < len(running.plan.task_configs)],
            "type": "source" if running.plan.is_source else "sink",
        }

    # ------------------------------------------------------------------ tasks

    def _start_tasks(self, running: _Connector) -> None:
        plan = running.plan
        for index, task_props in enumerate(plan.task_configs):
            task_id = TaskId(plan.name, index)
            runner = self._build_runner(task_id, task_props, plan, running.bounds)
            task = _TaskThread(runner)
            task.thread = threading.Thread(target=self._run_task, args=(task_id, task), name=f"task-{task_id}",
                                           daemon=True)
            running.tasks.append(task)
            task.thread.start()

    def _build_runner(self, task_id: TaskId, task_props: dict[str, str], plan: ConnectorPlan,
                      bounds: Bounds | None) -> Runner:
        task_class = task_class_of(task_props, plan.props)
        if issubclass(task_class, SourceTask):
            return build_source_runner(task_id, task_class, task_props, plan.props, self.worker_props,
                                       self.offset_store, bounds)
        if issubclass(task_class, SinkTask):
            return build_sink_runner(task_id, task_class, task_props, plan.props, self.worker_props, bounds)
        raise ConnectError(f"Task class {task_class.__qualname__} of connector {plan.name} is neither a "
                           f"SourceTask nor a SinkTask")

    def _run_task(self, task_id: TaskId, task: _TaskThread) -> None:
        self._put_status(TaskStatus(task_id.connector, task_id.task, State.RUNNING, None, self.worker_id))
        try:
            task.summary = task.runner.run()
        except BaseException as exc:  # noqa: BLE001 - a task thread reports, it does not propagate
            task.summary = task.runner.summary
            log.error("Task %s failed: %s", task_id, exc, exc_info=exc)
            self._put_status(TaskStatus(task_id.connector, task_id.task, State.FAILED,
                                        "".join(traceback.format_exception(exc)), self.worker_id))
            return
        self._put_status(TaskStatus(task_id.connector, task_id.task, State.UNASSIGNED, None, self.worker_id))

    def _stop_tasks(self, running: _Connector) -> None:
        timeout_s = self.values[TASK_SHUTDOWN_GRACEFUL_TIMEOUT_MS_CONFIG] / 1000
        for task in running.tasks:
            task.runner.stop()
        for task in running.tasks:
            task.thread.join(max(timeout_s, 30.0))
            if task.thread.is_alive():
                log.error("Task thread %s did not stop within %.0f s; leaving it (its offsets since the "
                          "last commit will be re-sent on restart)", task.thread.name, max(timeout_s, 30.0))
        running.tasks.clear()

    def _reconfigure_later(self, name: str) -> None:
        """Called from a connector's own thread: reconfigure on another, so it never waits on itself."""
        threading.Thread(target=self._reconfigure, args=(name,), name=f"reconfigure-{name}", daemon=True).start()

    def _reconfigure(self, name: str) -> None:
        with self._lock:
            running = self._connectors.get(name)
            if running is None:
                return
            try:
                configs = reverse_transform(running.plan.props,
                                            task_configs(running.plan.connector, running.plan.values))
            except Exception as exc:  # noqa: BLE001 - fail the connector, keep the worker
                self._connector_failed(name, exc)
                return
            if configs == running.plan.task_configs:
                return
            log.info("Connector %s asked for reconfiguration: %d -> %d tasks", name,
                     len(running.plan.task_configs), len(configs))
            self._stop_tasks(running)
            running.plan.task_configs = configs
            self._start_tasks(running)

    def _connector_failed(self, name: str, error: BaseException) -> None:
        log.error("Connector %s failed: %s", name, error, exc_info=error)
        self._put_status(ConnectorStatus(name, State.FAILED, "".join(traceback.format_exception(error)),
                                         self.worker_id))

    def _put_status(self, status: ConnectorStatus | TaskStatus) -> None:
        try:
            self.status_store.put(status)
        except Exception:  # noqa: BLE001 - status is informational; never fail a task over it
            log.exception("Could not record status %s", status)

    def _get(self, name: str) -> _Connector:
        with self._lock:
            running = self._connectors.get(name)
        if running is None:
            raise NotFoundError(f"Connector {name} not found")
        return running


def _state(status: ConnectorStatus | TaskStatus | None, worker_id: str) -> dict[str, Any]:
    if status is None:
        return {"state": State.UNASSIGNED.name, "worker_id": worker_id}
    body: dict[str, Any] = {"state": status.state.name, "worker_id": status.worker_id}
    if status.trace:
        body["trace"] = status.trace
    return body

"""Runs connectors and their tasks in processes or threads: the engine of standalone and embedded mode.

Follows Kafka Connect's ``Worker`` and ``StandaloneHerder``, trimmed to one node without
group membership: each connector is planned (:mod:`kopycat.runtime.planning`), each task config
runs through the same runners the Airflow tasks use, in a child process of its own
(``task.isolation=process``, :mod:`kopycat.runtime.task_process`: tasks use more than one core) or on a
thread of this process (``task.isolation=thread``), watched by a task thread either way, and every state change
goes to a status store in Kafka's shapes (``RUNNING``, ``FAILED`` with its trace, ...).
Each connector sees the worker's offset store through its own ``ConnectorOffsetBackingStore``
(its ``offsets.storage.topic`` first, when it names one), opened and closed with the connector.
A connector asking for reconfiguration gets its tasks stopped (offsets committed) and
restarted with the new configs. Target states and restarts are applied as ``Worker.setTargetState``
and ``Worker.restart*`` are: pausing stops the tasks (each commits its offsets) and reports PAUSED,
resuming starts them again from the stored offsets; a failed task stays FAILED until restarted.

A sink's tasks subscribe to its topics, the consumer group sharing the partitions, as in Kafka; a
*bounded* run's (``Kopycat.run_once``) are each assigned their own share instead, snapshotted when the
tasks start, as the Airflow plan's mapped tasks are (:mod:`kopycat.runtime.sink_assignment`): a run that
copies what is there needs no group join and no rebalance between its tasks, and tasks beyond the
partition count are not started.

Kafka Connect's metrics of this worker and its tasks are in :attr:`Worker.metrics` (each running
task's groups, and the worker's own), for a host to export. A :class:`ConnectorRunListener` hears
each connector start and stop (the standalone worker's OpenLineage run events), as Kafka's
``ConnectorStatus.Listener`` hears status changes.

A task process reports its metrics once a second and its summary at its end; it reads and writes
offsets through this worker's store, and its failure trace (or exit code) becomes the task's FAILED status.

Thread-safety: public methods may be called from any thread; one lock guards the registry.
"""

from __future__ import annotations

import functools
import logging
import socket
import threading
import time
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from kopycat.api.errors import AlreadyExistsError, NotFoundError
from kopycat.runtime.bounds import Bounds, RunSummary
from kopycat.runtime.config_transformer import reverse_transform
from kopycat.runtime.metrics import ConnectMetrics
from kopycat.runtime.offsets_admin import connector_offset_store
from kopycat.runtime.planning import ConnectorPlan, PlanningContext, plan_connector, task_configs
from kopycat.runtime.sink_assignment import SinkShare, split_bounded_run
from kopycat.runtime.sink_runner import SinkTaskRunner
from kopycat.runtime.source_runner import SourceTaskRunner
from kopycat.runtime.task_factory import build_task_runner, exactly_once_enabled
from kopycat.runtime.task_parts import TaskId
from kopycat.runtime.task_process import TaskProcess, start_fork_server
from kopycat.runtime.worker_config import (
    TASK_ISOLATION_CONFIG,
    TASK_ISOLATION_PROCESS,
    TASK_SHUTDOWN_GRACEFUL_TIMEOUT_MS_CONFIG,
    TOPIC_TRACKING_ENABLE_CONFIG,
    WORKER_CONFIG,
)
from kopycat.runtime.worker_metrics import WORKER_GROUP, worker_groups
from kopycat.storage.connector_status import ConnectorStatus, State, TaskStatus, TopicStatus
from kopycat.storage.offset_backing_store import OffsetBackingStore
from kopycat.storage.offset_storage_reader_writer import OffsetStorageReaderImpl
from kopycat.storage.status_backing_store import MemoryStatusBackingStore, StatusBackingStore

__all__ = ["ConnectorRunListener", "Worker"]

log = logging.getLogger(__name__)

Runner = SourceTaskRunner | SinkTaskRunner | TaskProcess


class ConnectorRunListener(Protocol):
    """Hears each connector's run in this worker: from planned (or reconfigured) to reconfigured (or
    removed). A reconfiguration with new task configs ends one run and starts the next, after the old
    tasks stopped and before the new ones start. Called on the worker's API threads and its
    reconfiguration threads; must not raise (the worker does not catch) and should return promptly."""

    def connector_started(self, name: str, props: Mapping[str, Any], task_configs: list[dict[str, str]]) -> None:
        """The connector was planned into ``task_configs`` (its tasks start next, unless it is paused)."""

    def connector_stopped(self, name: str, failure: str | None) -> None:
        """The connector and its tasks stopped; ``failure`` is the trace of the connector's or a task's
        failure while it ran, None when none failed."""


@dataclass
class _TaskThread:
    runner: Runner
    thread: threading.Thread = field(default_factory=threading.Thread)
    summary: RunSummary | None = None
    final_state: State | None = State.UNASSIGNED  # reported when the run ends without failing; None: nothing


@dataclass
class _Connector:
    plan: ConnectorPlan
    bounds: Bounds | None
    offset_store: OffsetBackingStore
    tasks: list[_TaskThread] = field(default_factory=list)
    paused: bool = False
    shares: list[SinkShare] | None = None
    """A bounded sink run's partitions per task, split when its tasks start; None: tasks subscribe."""


class Worker:
    """Connectors and their tasks, each watched by a task thread of this process and run in a child process
    or on that thread (``task.isolation``; Kafka's ``Worker`` + ``StandaloneHerder``)."""

    def __init__(self, worker_props: Mapping[str, Any], offset_store: OffsetBackingStore, *,
                 status_store: StatusBackingStore | None = None, worker_id: str | None = None,
                 task_configs_listener: Callable[[str, list[dict[str, str]]], None] | None = None,
                 metrics: ConnectMetrics | None = None, run_listener: ConnectorRunListener | None = None) -> None:
        """``task_configs_listener`` gets every plan's task configs before its tasks start (the
        REST worker writes them to the config topic, as Kafka's leader does). ``metrics`` is the
        registry the host exports (a new one by default); ``run_listener`` hears connectors start and stop."""
        self.worker_props = {k: str(v) for k, v in worker_props.items()}
        self.values = WORKER_CONFIG.parse(self.worker_props)
        self.offset_store = offset_store
        self.status_store = status_store or MemoryStatusBackingStore()
        self.worker_id = worker_id or f"{socket.gethostname()}:kopycat"
        self.task_configs_listener = task_configs_listener
        self.run_listener = run_listener
        self._connectors: dict[str, _Connector] = {}
        self._lock = threading.RLock()
        self._started = False
        self.metrics = metrics if metrics is not None else ConnectMetrics()
        self.metrics.register(WORKER_GROUP, worker_groups(self.status_store, self.connectors))

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        if str(self.values[TASK_ISOLATION_CONFIG]).lower() == TASK_ISOLATION_PROCESS:
            start_fork_server()
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

    def add_connector(self, props: Mapping[str, Any], bounds: Bounds | None = None, *, paused: bool = False) -> str:
        """Plan the connector and start one task per task config (see ``task.isolation``); returns its name.

        ``bounds`` makes every task a bounded run (the embedded API's ``run_once``; a sink's tasks then
        split its partitions, see the module doc); ``paused`` plans the connector but starts no task until
        :meth:`resume_connector`. Raises ConfigError for a bad config, AlreadyExistsError for a name in use,
        and ConnectError when a bounded sink's partitions cannot be listed (the connector is removed again).
        """
        name = str(props.get("name", ""))
        with self._lock:
            if name in self._connectors:
                raise AlreadyExistsError(f"Connector {name} already exists")
        offset_store = connector_offset_store(self.offset_store, props, self.worker_props)
        offset_store.start()
        reader = OffsetStorageReaderImpl(offset_store, name)
        context = PlanningContext(reader, on_reconfigure=lambda: self._reconfigure_later(name),
                                  on_error=lambda error: self._connector_failed(name, error))
        try:
            plan = plan_connector(props, context, self.worker_props)
        except BaseException:
            offset_store.stop()
            raise
        self._publish_task_configs(plan)
        if self.run_listener is not None:
            self.run_listener.connector_started(plan.name, plan.props, list(plan.task_configs))
        with self._lock:
            running = self._connectors[plan.name] = _Connector(plan, bounds, offset_store, paused=paused)
            if paused:
                self._put_paused(running)
            else:
                self._put_status(ConnectorStatus(plan.name, State.RUNNING, None, self.worker_id))
                try:
                    self._start_tasks(running)
                except BaseException:
                    self.remove_connector(plan.name)
                    raise
        log.info("Connector %s started with %d tasks%s", plan.name, len(plan.task_configs),
                 " (paused)" if paused else "")
        return plan.name

    def remove_connector(self, name: str, final_state: State | None = State.UNASSIGNED) -> None:
        """Stop the tasks (each commits its offsets), then the connector.

        ``final_state`` is the connector's status afterwards (STOPPED for a stopped connector,
        KIP-875); None writes no status at all, for a connector whose statuses were deleted.
        """
        with self._lock:
            running = self._connectors.pop(name, None)
        if running is None:
            raise NotFoundError(f"Connector {name} not found")
        self._stop_tasks(running, State.UNASSIGNED if final_state is not None else None)
        self.metrics.unregister_where(lambda key: isinstance(key, TaskId) and key.connector == name)
        failure = self._failure(name)
        try:
            running.plan.connector.stop()
        finally:
            running.offset_store.stop()
            if final_state is not None:
                self._put_status(ConnectorStatus(name, final_state, None, self.worker_id))
            if self.run_listener is not None:
                self.run_listener.connector_stopped(name, failure)

    def pause_connector(self, name: str) -> None:
        """Stop copying: the tasks stop (each commits its offsets) and every status says PAUSED."""
        with self._lock:
            running = self._get(name)
            if running.paused:
                return
            running.paused = True
            self._stop_tasks(running, State.PAUSED)
            self._put_paused(running)

    def resume_connector(self, name: str) -> None:
        """Start the tasks of a paused connector again; they resume from the stored offsets."""
        with self._lock:
            running = self._get(name)
            if not running.paused:
                return
            running.paused = False
            self._put_status(ConnectorStatus(name, State.RUNNING, None, self.worker_id))
            self._start_tasks(running)

    def restart_task(self, name: str, task: int) -> None:
        """Stop the task if it still runs, then run its config again (Kafka's ``restartTask``).

        A paused connector's task is only reported PAUSED again; it starts on resume.
        """
        with self._lock:
            running = self._get(name)
            if not 0 <= task < len(running.plan.task_configs):
                raise NotFoundError(f"Task {name}-{task} not found")
            if running.paused:
                self._put_status(TaskStatus(name, task, State.PAUSED, None, self.worker_id))
                return
            if task < len(running.tasks):
                self._stop_threads([running.tasks[task]], State.UNASSIGNED)
                running.tasks[task] = self._start_task(running, task)

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
        running.shares = self._sink_shares(running)
        count = len(running.plan.task_configs) if running.shares is None else len(running.shares)
        for index in range(count):
            running.tasks.append(self._start_task(running, index))

    def _sink_shares(self, running: _Connector) -> list[SinkShare] | None:
        """A bounded sink run's partitions split over its tasks now; None for a source or an unbounded run."""
        plan, bounds = running.plan, running.bounds
        if plan.is_source or bounds is None or not bounds.bounded:
            return None
        return split_bounded_run(plan.props, self.worker_props, bounds, len(plan.task_configs))

    def _start_task(self, running: _Connector, index: int) -> _TaskThread:
        plan = running.plan
        task_id = TaskId(plan.name, index)
        task = _TaskThread(self._build_runner(task_id, plan.task_configs[index], running))
        provider = task.runner.metrics.collect
        self.metrics.register(task_id, provider)
        if isinstance(task.runner, TaskProcess):
            task.runner.metrics_listener = lambda: self.metrics.register(task_id, provider)
        if self.values[TOPIC_TRACKING_ENABLE_CONFIG]:
            task.runner.topics_listener = functools.partial(self._record_topics, task_id)
        task.thread = threading.Thread(target=self._run_task, args=(task_id, task), name=f"task-{task_id}",
                                       daemon=True)
        task.thread.start()
        return task

    def _build_runner(self, task_id: TaskId, task_props: dict[str, str], running: _Connector) -> Runner:
        plan, bounds, assignment = running.plan, running.bounds, None
        if running.shares is not None:
            share = running.shares[task_id.task]
            bounds, assignment = share.bounds, share.partitions
        if self._in_process(plan):
            return TaskProcess(task_id, task_props, plan.props, self.worker_props, running.offset_store, bounds,
                               stop_timeout_s=self._stop_timeout_s(), assignment=assignment)
        return build_task_runner(task_id, task_props, plan.props, self.worker_props, running.offset_store, bounds,
                                 assignment)

    def _in_process(self, plan: ConnectorPlan) -> bool:
        """``task.isolation=process``, except for exactly-once sources: their transactions write the
        offsets topic with the task's own producer, next to the worker's store."""
        if str(self.values[TASK_ISOLATION_CONFIG]).lower() != TASK_ISOLATION_PROCESS:
            return False
        return not (plan.is_source and exactly_once_enabled(self.worker_props, plan.props))

    def _stop_timeout_s(self) -> float:
        """How long a stopping task may take (at least 30 s: a loaded machine commits slowly)."""
        return max(self.values[TASK_SHUTDOWN_GRACEFUL_TIMEOUT_MS_CONFIG] / 1000, 30.0)

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
        if task.final_state is not None:
            self._put_status(TaskStatus(task_id.connector, task_id.task, task.final_state, None, self.worker_id))

    def _stop_tasks(self, running: _Connector, final_state: State | None = State.UNASSIGNED) -> None:
        self._stop_threads(running.tasks, final_state)
        running.tasks.clear()

    def _stop_threads(self, tasks: list[_TaskThread], final_state: State | None) -> None:
        """Stop the runs and wait for their threads; each then reports ``final_state`` (None: nothing)."""
        timeout_s = self._stop_timeout_s() + 10.0  # a task process is killed after _stop_timeout_s
        for task in tasks:
            task.final_state = final_state
            task.runner.stop()
        for task in tasks:
            task.thread.join(timeout_s)
            if task.thread.is_alive():
                log.error("Task thread %s did not stop within %.0f s; leaving it (its offsets since the "
                          "last commit will be re-sent on restart)", task.thread.name, timeout_s)

    def _put_paused(self, running: _Connector) -> None:
        name = running.plan.name
        self._put_status(ConnectorStatus(name, State.PAUSED, None, self.worker_id))
        for task in range(len(running.plan.task_configs)):
            self._put_status(TaskStatus(name, task, State.PAUSED, None, self.worker_id))

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
            if self.run_listener is not None:  # the old configs' run ends, the new configs' run starts
                self.run_listener.connector_stopped(name, self._failure(name))
            running.plan.task_configs = configs
            self._publish_task_configs(running.plan)
            if self.run_listener is not None:
                self.run_listener.connector_started(name, running.plan.props, list(configs))
            if not running.paused:
                try:
                    self._start_tasks(running)
                except Exception as exc:  # noqa: BLE001 - fail the connector, keep the worker
                    self._connector_failed(name, exc)

    def _publish_task_configs(self, plan: ConnectorPlan) -> None:
        if self.task_configs_listener is not None:
            self.task_configs_listener(plan.name, list(plan.task_configs))

    def _connector_failed(self, name: str, error: BaseException) -> None:
        log.error("Connector %s failed: %s", name, error, exc_info=error)
        self._put_status(ConnectorStatus(name, State.FAILED, "".join(traceback.format_exception(error)),
                                         self.worker_id))

    def _failure(self, name: str) -> str | None:
        """The trace of the connector's or a task's failure, as the status store holds it; None if none."""
        try:
            statuses = [self.status_store.get_connector(name), *self.status_store.get_all_tasks(name)]
        except Exception:  # noqa: BLE001 - status is informational
            log.exception("Could not read the status of connector %s", name)
            return None
        return next((s.trace or "FAILED" for s in statuses if s is not None and s.state is State.FAILED), None)

    def _record_topics(self, task_id: TaskId, topics: set[str]) -> None:
        """KIP-558: the topics a task used that the status topic does not list for its connector yet
        (Kafka's ``WorkerSourceTask.recordActiveTopic``); on the task's thread."""
        known = {status.topic for status in self.status_store.get_all_topics(task_id.connector)}
        now_ms = int(time.time() * 1000)
        for topic in sorted(topics - known):
            self.status_store.put_topic(TopicStatus(topic, task_id.connector, task_id.task, now_ms))

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

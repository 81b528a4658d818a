"""Runs the connectors stored in the config topic, in this process: the herder of ``kopycat worker``.

Follows Kafka Connect's ``DistributedHerder`` on a cluster of one node, without group membership
or leader election: a loop (:meth:`WorkerHerder.tick`, Kafka's ``tick``) reads the config topic
to its end and makes the :class:`~kopycat.runtime.worker.Worker` run what it says:

- a new connector is planned, its task configs written back (``task-<name>-<n>``, ``commit-<name>``,
  as Kafka's leader does) and its tasks started in threads;
- a changed config stops the connector's tasks (each commits its offsets) and starts it again;
- a deleted connector's tasks are stopped without a status: the REST herder already wrote its
  tombstones (DESTROYED);
- the target state is honoured: PAUSED stops the tasks and reports PAUSED, STARTED runs them again
  from the stored offsets, STOPPED shuts the connector down with zero task configs (KIP-875).

A connector that fails to start, or a task that fails, is reported FAILED with its trace and left
so, as Kafka leaves it, until ``POST .../restart``. The REST handlers of the same process tell the
herder of target states and restarts through the ``RunControl`` protocol
(:meth:`target_state_changed`, :meth:`restart`), which wakes the loop; configs written by a POST
or PUT are found by the next read of the topic, every ``poll_interval_s``. The loop thread alone
changes what the worker runs, so no two changes interleave.

Scale-out is not this herder's job: it runs everything stored on the one node. Many nodes are
Airflow's (one DAG per stored connector, ``dags/kopycat_connectors.py``); never run both on the
same config topic, or both copy.
"""

from __future__ import annotations

import logging
import threading
import traceback
from collections.abc import Sequence
from dataclasses import dataclass

from kopycat.runtime.worker import Worker
from kopycat.storage.config_backing_store import ClusterConfigState, ConfigBackingStore, TargetState
from kopycat.storage.connector_status import ConnectorStatus, State

__all__ = ["WorkerHerder"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class _Applied:
    """The config and target state the worker was last made to follow for one connector."""

    config: dict[str, str]
    target: TargetState


@dataclass(frozen=True)
class _Restart:
    name: str
    connector: bool
    tasks: tuple[int, ...]


class WorkerHerder:
    """Keeps a :class:`Worker` running what the config store holds (see the module doc).

    :param worker: started by the caller, with the status store the REST herder reads.
    :param config_store: started by the caller; shared with the REST herder of this process.
    :param poll_interval_s: how often the config topic is read for changes nobody announced.

    Thread-safety: :meth:`target_state_changed`, :meth:`restart` and :meth:`wake` may be called
    from any thread; :meth:`tick` runs on the herder's own thread once :meth:`start` was called.
    """

    def __init__(self, worker: Worker, config_store: ConfigBackingStore, *, poll_interval_s: float = 1.0) -> None:
        self.worker = worker
        self.config_store = config_store
        self.poll_interval_s = poll_interval_s
        self._applied: dict[str, _Applied] = {}
        self._restarts: list[_Restart] = []
        self._restarts_lock = threading.Lock()
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        """Follow the config topic on a thread of its own, starting with one tick now."""
        self._stopping.clear()
        self._thread = threading.Thread(target=self._loop, name="kopycat-worker-herder", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """End the loop; the connectors keep running until the worker stops."""
        self._stopping.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def wake(self) -> None:
        """Read the config topic now instead of at the next interval."""
        self._wake.set()

    def _loop(self) -> None:
        while not self._stopping.is_set():
            self._wake.clear()
            try:
                self.tick()
            except Exception:  # noqa: BLE001 - the broker may be away for a while; the loop tries again
                log.exception("Could not apply the config topic; trying again in %.1f s", self.poll_interval_s)
            self._wake.wait(self.poll_interval_s)

    # ------------------------------------------------------------------ RunControl

    def target_state_changed(self, name: str, state: TargetState) -> None:
        """The REST herder wrote a target state: apply it now."""
        self.wake()

    def restart(self, name: str, *, connector: bool, tasks: Sequence[int]) -> None:
        """The REST herder recorded RESTARTING for the connector and/or these tasks: rerun them."""
        with self._restarts_lock:
            self._restarts.append(_Restart(name, connector, tuple(tasks)))
        self.wake()

    # ------------------------------------------------------------------ one pass

    def tick(self) -> None:
        """Read the config topic to its end, make the worker follow it, then run the restarts asked for."""
        state = self.config_store.snapshot()
        for name in [name for name in self._applied if name not in state.connector_configs]:
            self._forget(name)
        for name, config in state.connector_configs.items():
            try:
                self._apply(name, config, state.target_states.get(name, TargetState.STARTED), state)
            except Exception:  # noqa: BLE001 - one connector's trouble must not stall the others
                log.exception("Could not apply the stored config of connector %s", name)
        with self._restarts_lock:
            restarts, self._restarts = self._restarts, []
        for request in restarts:
            if request.name not in state.connector_configs:
                continue
            try:
                self._restart(request, state.target_states.get(request.name, TargetState.STARTED))
            except Exception:  # noqa: BLE001 - as above
                log.exception("Could not restart connector %s", request.name)

    def _apply(self, name: str, config: dict[str, str], target: TargetState, state: ClusterConfigState) -> None:
        applied = self._applied.get(name)
        if applied == _Applied(config, target):
            return
        running = name in self.worker.connectors()
        if running and (target is TargetState.STOPPED or (applied is not None and applied.config != config)):
            log.info("Connector %s: %s", name, "stopping" if target is TargetState.STOPPED else "config changed")
            self.worker.remove_connector(name, State.STOPPED if target is TargetState.STOPPED else State.UNASSIGNED)
            running = False
        self._applied[name] = _Applied(config, target)
        if target is TargetState.STOPPED:
            if state.task_configs.get(name):
                self.config_store.put_task_configs(name, [])
            self._put(ConnectorStatus(name, State.STOPPED, None, self.worker.worker_id))
        elif not running:
            self._start(name, config, paused=target is TargetState.PAUSED)
        elif target is TargetState.PAUSED:
            self.worker.pause_connector(name)
        else:
            self.worker.resume_connector(name)

    def _start(self, name: str, config: dict[str, str], *, paused: bool) -> None:
        """Plan and start the connector; a failure is its FAILED status, not retried until a restart."""
        try:
            self.worker.add_connector({**config, "name": name}, paused=paused)
        except Exception as exc:  # noqa: BLE001 - reported on the connector, as Kafka's WorkerConnector does
            log.error("Connector %s failed to start: %s", name, exc, exc_info=exc)
            self._put(ConnectorStatus(name, State.FAILED, "".join(traceback.format_exception(exc)),
                                      self.worker.worker_id))

    def _forget(self, name: str) -> None:
        """The connector was deleted: stop its tasks, writing no status over the tombstones."""
        del self._applied[name]
        if name in self.worker.connectors():
            log.info("Connector %s was deleted: stopping it", name)
            self.worker.remove_connector(name, final_state=None)

    def _restart(self, request: _Restart, target: TargetState) -> None:
        """Kafka's ``restartConnectorAndTasks`` on one node. Restarting the connector plans it again,
        which restarts its tasks too (each commits its offsets first)."""
        name = request.name
        if target is TargetState.STOPPED:
            self._put(ConnectorStatus(name, State.STOPPED, None, self.worker.worker_id))
            return
        if request.connector:
            if name in self.worker.connectors():
                self.worker.remove_connector(name, final_state=None)
            applied = self._applied.get(name)
            if applied is not None:
                self._start(name, applied.config, paused=target is TargetState.PAUSED)
            return
        for task in request.tasks:
            if name in self.worker.connectors():
                self.worker.restart_task(name, task)

    def _put(self, status: ConnectorStatus) -> None:
        try:
            self.worker.status_store.put(status)
        except Exception:  # noqa: BLE001 - status is informational; the next change writes it again
            log.exception("Could not record status %s", status)

"""Connectors stored in the config topic, as scheduled runs see them: read, gate, report.

Kafka Connect's distributed herder keeps connectors in ``connect-configs`` and its workers report
to ``connect-status``. Under Airflow there is no herder process: ``dags/kopycat_connectors.py``
builds one DAG per stored connector, and each run does the herder's share itself:

- it reads the connector's config and target state when it starts, so a ``PUT .../config``
  applies from the next run without re-parsing DAG files;
- it does nothing while the target state is PAUSED or STOPPED (Kafka's ``Worker.setTargetState``);
- the plan writes its task configs (``task-<name>-<n>`` then ``commit-<name>``), as the leader
  does in ``DistributedHerder.reconfigureConnector``, so ``GET /connectors/{name}/tasks`` shows them;
- the connector and each task report RUNNING, or FAILED with the error, in Kafka Connect's status
  records (``AbstractStatus``), so ``GET /connectors/{name}/status`` and Kafka tools read them;
- each task records the topics it used that were not recorded yet (KIP-558's ``TopicStatus``, as
  ``WorkerSourceTask``/``WorkerSinkTask`` do on first use), for ``GET /connectors/{name}/topics``.

Each call opens the stores, reads them to their end and closes them: a bounded run has no
thread to keep them warm, and a second or so per task is small beside a scheduled run. A copy
task reports twice (RUNNING before, its topics or FAILED after) and its figures while it copies
(:mod:`kopycat.storage.task_progress`), so it opens the status store once for all through
:class:`TaskStatusReporter`.
"""

from __future__ import annotations

import logging
import socket
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kopycat.api.errors import NotFoundError
from kopycat.runtime.worker_config import TOPIC_TRACKING_ENABLE_CONFIG, WORKER_CONFIG
from kopycat.storage.config_backing_store import KafkaConfigBackingStore, TargetState
from kopycat.storage.connector_status import ConnectorStatus, State, TaskStatus, TopicStatus
from kopycat.storage.status_backing_store import KafkaStatusBackingStore
from kopycat.storage.task_progress import TaskProgress

__all__ = ["StoredConnectorState", "TaskStatusReporter", "airflow_worker_id", "load_stored_connector",
           "publish_task_configs", "report_connector"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class StoredConnectorState:
    """A stored connector's config and the state its runs must honour."""

    name: str
    config: dict[str, str]
    target_state: TargetState

    @property
    def runnable(self) -> bool:
        """Whether a run copies anything: only a STARTED connector runs (PAUSED and STOPPED wait)."""
        return self.target_state is TargetState.STARTED


def airflow_worker_id() -> str:
    """The ``worker_id`` of statuses written by Airflow tasks: the host the task ran on."""
    return f"{socket.gethostname()} (airflow)"


def load_stored_connector(worker_props: Mapping[str, Any], name: str) -> StoredConnectorState:
    """The connector's config and target state from the config topic.

    Raises NotFoundError when the connector was deleted (its DAG lingers until the next parse).
    """
    with KafkaConfigBackingStore.from_config(worker_props, timeout_s=30.0) as store:
        state = store.snapshot()
    if name not in state.connector_configs:
        raise NotFoundError(f"Connector {name} is not in the config topic (deleted?): its DAG goes away at the "
                            f"next parse of dags/kopycat_connectors.py; re-create it with POST /connectors")
    return StoredConnectorState(name, dict(state.connector_configs[name]),
                                state.target_states.get(name, TargetState.STARTED))


def publish_task_configs(worker_props: Mapping[str, Any], name: str,
                         task_configs: Sequence[Mapping[str, str]]) -> None:
    """Record the plan's task configs and the connector as RUNNING."""
    with KafkaConfigBackingStore.from_config(worker_props, timeout_s=30.0) as store:
        store.put_task_configs(name, [dict(config) for config in task_configs])
    report_connector(worker_props, name, State.RUNNING)


def report_connector(worker_props: Mapping[str, Any], name: str, state: State, trace: str | None = None) -> None:
    """Write the connector's status record (``status-connector-<name>``)."""
    _put(worker_props, ConnectorStatus(name, state, trace, airflow_worker_id()))


class TaskStatusReporter:
    """One copy task's status reports (Kafka's ``WorkerTask`` status listener), through one store.

    Use as a context manager around the copy: the status store is opened (read to its end) on
    entry and closed on exit.
    """

    def __init__(self, worker_props: Mapping[str, Any], name: str, task: int) -> None:
        self.name, self.task = name, task
        self._tracking = WORKER_CONFIG.parse(worker_props)[TOPIC_TRACKING_ENABLE_CONFIG]
        self._store = KafkaStatusBackingStore.from_config(worker_props, timeout_s=30.0)

    def __enter__(self) -> TaskStatusReporter:
        self._store.__enter__()
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self._store.__exit__(*exc_info)

    def report(self, state: State, trace: str | None = None) -> None:
        """Write the task's status record (``status-task-<name>-<task>``)."""
        self._store.put(TaskStatus(self.name, self.task, state, trace, airflow_worker_id())).result(30.0)

    def publish_progress(self, run: str, summary: Mapping[str, Any]) -> None:
        """Write the task's figures so far in ``run`` (``kopycat-progress-<name>-<task>``): a running copy
        task's records and metrics for the connectors page. Returns without waiting for the write."""
        self._store.put_progress(TaskProgress(self.name, self.task, run, dict(summary)))

    def record_topics(self, topics: Iterable[str]) -> list[str]:
        """Record the topics the task used that the status topic does not list for the connector
        yet; returns them. Nothing when ``topic.tracking.enable`` is false."""
        wanted = set(topics)
        if not wanted or not self._tracking:
            return []
        new = sorted(wanted - {status.topic for status in self._store.get_all_topics(self.name)})
        now_ms = int(time.time() * 1000)
        for topic in new:
            self._store.put_topic(TopicStatus(topic, self.name, self.task, now_ms))
        self._store.flush()
        return new


def _put(worker_props: Mapping[str, Any], status: ConnectorStatus) -> None:
    with KafkaStatusBackingStore.from_config(worker_props, timeout_s=30.0) as store:
        store.put(status).result(30.0)

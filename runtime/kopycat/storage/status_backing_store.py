"""Where connector and task statuses live: in memory, or on the status topic shared with Kafka Connect.

Follows Kafka Connect's ``StatusBackingStore``, ``MemoryStatusBackingStore`` and
``KafkaStatusBackingStore``. The records are :mod:`kopycat.storage.connector_status`'s; the Kafka
store keeps them on a :class:`~kopycat.storage.kafka_based_log.KafkaBasedLog`, whose records are
placed by the Java partitioner (murmur2 of the key bytes), so a Kafka Connect worker reading the
same topic sees them in the order written.
"""

from __future__ import annotations

import logging
import threading
from abc import abstractmethod
from collections.abc import Mapping
from concurrent.futures import Future, wait
from typing import Any

from kopycat.api.errors import ConnectError, DataError
from kopycat.kafka import worker_client_config
from kopycat.lifecycle import Lifecycle
from kopycat.storage.connector_status import (
    CONNECTOR_STATUS_PREFIX,
    TASK_STATUS_PREFIX,
    TOPIC_STATUS_PREFIX,
    ConnectorStatus,
    State,
    TaskStatus,
    TopicStatus,
    decode_status,
    decode_topic_status,
    encode_status,
    encode_topic_status,
    parse_topic_status_key,
    status_key,
    topic_status_key,
)
from kopycat.storage.internal_topic_codec import parse_task_id
from kopycat.storage.kafka_based_log import KafkaBasedLog, worker_bootstrap_servers
from kopycat.storage.kafka_topic_store import KafkaTopicStore
from kopycat.storage.task_progress import (
    TaskProgress,
    decode_progress,
    encode_progress,
    parse_progress_key,
    progress_key,
)
from kopycat.storage.worker_storage_config import (
    KAFKA_STATUS_STORE_CONFIG,
    STATUS_STORAGE_PARTITIONS_CONFIG,
    STATUS_STORAGE_REPLICATION_FACTOR_CONFIG,
    STATUS_STORAGE_TOPIC_CONFIG,
    STATUS_STORAGE_TOPIC_DEFAULT,
)
from kopycat.storage.write_completion import completed_future

__all__ = ["KafkaStatusBackingStore", "MemoryStatusBackingStore", "StatusBackingStore", "StatusTable"]

log = logging.getLogger(__name__)


class StatusTable:
    """The latest status per connector and task. Thread-safe: one lock guards both maps."""

    def __init__(self, topic: str = "") -> None:
        self.topic = topic
        self._lock = threading.Lock()
        self._connectors: dict[str, ConnectorStatus] = {}
        self._tasks: dict[str, dict[int, TaskStatus]] = {}
        self._topics: dict[str, dict[str, TopicStatus]] = {}
        self._progress: dict[str, dict[int, TaskProgress]] = {}

    def put(self, status: ConnectorStatus | TaskStatus) -> None:
        with self._lock:
            if isinstance(status, TaskStatus):
                self._tasks.setdefault(status.connector, {})[status.task] = status
            else:
                self._connectors[status.connector] = status

    def remove_connector(self, connector: str, with_tasks: bool) -> None:
        """Forget the connector's status, and with ``with_tasks`` its tasks' statuses and progress."""
        with self._lock:
            self._connectors.pop(connector, None)
            if with_tasks:
                self._tasks.pop(connector, None)
                self._progress.pop(connector, None)

    def remove_task(self, connector: str, task: int) -> None:
        self._remove(self._tasks, connector, task)

    def _remove(self, table: dict[str, dict[Any, Any]], connector: str, key: object) -> None:
        """Drop one task's or topic's entry, and the connector's map once it is empty."""
        with self._lock:
            entries = table.get(connector, {})
            entries.pop(key, None)
            if not entries:
                table.pop(connector, None)

    def apply(self, key: bytes | None, value: bytes | None) -> None:
        """Replay one status-topic record (Kafka's ``read``); unusable records are logged and skipped."""
        name = "" if key is None else key.decode("utf-8", "replace")
        if name.startswith(CONNECTOR_STATUS_PREFIX) and len(name) > len(CONNECTOR_STATUS_PREFIX):
            connector = name[len(CONNECTOR_STATUS_PREFIX):]
            if value is None:
                self.remove_connector(connector, with_tasks=True)
            elif (fields := self._decode(name, value)) is not None:
                self.put(ConnectorStatus(connector, *fields))
        elif name.startswith(TASK_STATUS_PREFIX) and (task_id := parse_task_id(name, 2)) is not None:
            if value is None:
                self.remove_task(*task_id)
            elif (fields := self._decode(name, value)) is not None:
                connector, task = task_id
                self._put_read_task(TaskStatus(connector, task, *fields))
        elif name.startswith(TOPIC_STATUS_PREFIX) and (topic_id := parse_topic_status_key(name)) is not None:
            if value is None:
                self.remove_topic(*topic_id)
            elif (topic_status := self._decode_topic(name, value)) is not None:
                self.put_topic(topic_status)
        elif (progress_id := parse_progress_key(name)) is not None:
            self._apply_progress(name, progress_id, value)
        else:
            log.warning("Discarding record with invalid key %r on status topic '%s'", name, self.topic)

    def _apply_progress(self, name: str, progress_id: tuple[str, int], value: bytes | None) -> None:
        if value is None:
            self.remove_progress(*progress_id)
            return
        try:
            self.put_progress(decode_progress(*progress_id, value, self.topic))
        except DataError as exc:
            log.error("Failed to deserialize progress '%s' on topic '%s': %s", name, self.topic, exc)

    def _decode(self, name: str, value: bytes) -> tuple[State, str | None, str, int, str | None] | None:
        try:
            return decode_status(value, self.topic)
        except DataError as exc:
            log.error("Failed to deserialize status '%s' on topic '%s': %s", name, self.topic, exc)
            return None

    def _decode_topic(self, name: str, value: bytes) -> TopicStatus | None:
        try:
            return decode_topic_status(value, self.topic)
        except DataError as exc:
            log.error("Failed to deserialize topic status '%s' on topic '%s': %s", name, self.topic, exc)
            return None

    def _put_read_task(self, status: TaskStatus) -> None:
        """Skip an UNASSIGNED status older than the RUNNING one held (a worker that missed the
        RUNNING write during a rebalance may send it late), as Kafka's ``readTaskStatus``."""
        with self._lock:
            held = self._tasks.get(status.connector, {}).get(status.task)
            if (status.state is State.UNASSIGNED and held is not None and held.state is State.RUNNING
                    and held.generation >= status.generation):
                log.debug("Ignoring stale status %s in favour of %s", status, held)
                return
        self.put(status)

    def put_topic(self, status: TopicStatus) -> None:
        with self._lock:
            self._topics.setdefault(status.connector, {})[status.topic] = status

    def remove_topic(self, connector: str, topic: str) -> None:
        self._remove(self._topics, connector, topic)

    def put_progress(self, progress: TaskProgress) -> None:
        with self._lock:
            self._progress.setdefault(progress.connector, {})[progress.task] = progress

    def remove_progress(self, connector: str, task: int) -> None:
        self._remove(self._progress, connector, task)

    def get_all_progress(self, connector: str) -> list[TaskProgress]:
        with self._lock:
            return [progress for _, progress in sorted(self._progress.get(connector, {}).items())]

    def get_connector(self, connector: str) -> ConnectorStatus | None:
        with self._lock:
            return self._connectors.get(connector)

    def get_task(self, connector: str, task: int) -> TaskStatus | None:
        with self._lock:
            return self._tasks.get(connector, {}).get(task)

    def get_all_tasks(self, connector: str) -> list[TaskStatus]:
        with self._lock:
            return [status for _, status in sorted(self._tasks.get(connector, {}).items())]

    def get_all_topics(self, connector: str) -> list[TopicStatus]:
        with self._lock:
            return [status for _, status in sorted(self._topics.get(connector, {}).items())]

    def connectors(self) -> set[str]:
        with self._lock:
            return set(self._connectors)


class StatusBackingStore(Lifecycle):
    """Where connector and task statuses live (Kafka Connect's ``StatusBackingStore``, trimmed).

    ``put`` may return before the status is stored; ``flush`` waits for every ``put`` made
    before it. Methods may be called from any thread.
    ``start`` loads the stored statuses; ``stop`` stores pending statuses as far as possible.
    """

    @abstractmethod
    def put(self, status: ConnectorStatus | TaskStatus) -> Future[None]:
        """Record a status; DESTROYED deletes it. The future resolves once it is stored."""

    @abstractmethod
    def get_connector(self, connector: str) -> ConnectorStatus | None:
        """The connector's latest status, or None."""

    @abstractmethod
    def get_task(self, connector: str, task: int) -> TaskStatus | None:
        """The task's latest status, or None."""

    @abstractmethod
    def get_all_tasks(self, connector: str) -> list[TaskStatus]:
        """The latest status of each of the connector's tasks that has one, by task number."""

    @abstractmethod
    def connectors(self) -> set[str]:
        """The connectors that have a status."""

    @abstractmethod
    def put_topic(self, status: TopicStatus) -> Future[None]:
        """Record a topic the connector used (KIP-558)."""

    @abstractmethod
    def delete_topic(self, connector: str, topic: str) -> Future[None]:
        """Forget a topic the connector used (a tombstone)."""

    @abstractmethod
    def get_all_topics(self, connector: str) -> list[TopicStatus]:
        """The topics the connector used since it was created or last reset, by name."""

    @abstractmethod
    def put_progress(self, progress: TaskProgress) -> Future[None]:
        """Record a running task's figures so far (:mod:`kopycat.storage.task_progress`)."""

    @abstractmethod
    def delete_progress(self, connector: str, task: int) -> Future[None]:
        """Forget a task's figures (a tombstone), as a deleted connector's must be."""

    @abstractmethod
    def get_all_progress(self, connector: str) -> list[TaskProgress]:
        """The latest figures each of the connector's tasks recorded, by task number."""

    @abstractmethod
    def flush(self) -> None:
        """Wait until every status put so far is stored."""


class MemoryStatusBackingStore(StatusBackingStore):
    """Statuses in memory only (Kafka Connect's ``MemoryStatusBackingStore``): a DESTROYED status
    removes that connector's or task's status only. Thread-safe."""

    def __init__(self) -> None:
        self.table = StatusTable()

    def start(self) -> None:
        """Nothing to load."""

    def stop(self) -> None:
        """Nothing to release."""

    def put(self, status: ConnectorStatus | TaskStatus) -> Future[None]:
        if status.state is not State.DESTROYED:
            self.table.put(status)
        elif isinstance(status, TaskStatus):
            self.table.remove_task(status.connector, status.task)
        else:
            self.table.remove_connector(status.connector, with_tasks=False)
        return completed_future()

    def get_connector(self, connector: str) -> ConnectorStatus | None:
        return self.table.get_connector(connector)

    def get_task(self, connector: str, task: int) -> TaskStatus | None:
        return self.table.get_task(connector, task)

    def get_all_tasks(self, connector: str) -> list[TaskStatus]:
        return self.table.get_all_tasks(connector)

    def connectors(self) -> set[str]:
        return self.table.connectors()

    def put_topic(self, status: TopicStatus) -> Future[None]:
        self.table.put_topic(status)
        return completed_future()

    def delete_topic(self, connector: str, topic: str) -> Future[None]:
        self.table.remove_topic(connector, topic)
        return completed_future()

    def get_all_topics(self, connector: str) -> list[TopicStatus]:
        return self.table.get_all_topics(connector)

    def put_progress(self, progress: TaskProgress) -> Future[None]:
        self.table.put_progress(progress)
        return completed_future()

    def delete_progress(self, connector: str, task: int) -> Future[None]:
        self.table.remove_progress(connector, task)
        return completed_future()

    def get_all_progress(self, connector: str) -> list[TaskProgress]:
        return self.table.get_all_progress(connector)

    def flush(self) -> None:
        """Statuses are stored as they are put."""


class KafkaStatusBackingStore(KafkaTopicStore, StatusBackingStore):
    """Statuses on the ``status.storage.topic`` topic (Kafka Connect's ``KafkaStatusBackingStore``).

    The topic is created compacted if missing (refused when not compact-only) and read to its
    end on ``start``; with ``read_to_end_on_get`` (the default) every ``get_*``/``connectors``
    reads to the end first, since no background thread follows the topic as Kafka's does. A
    status is seen when read back, not when acknowledged: ``flush`` before reading your writes.
    Write failures are logged (as Kafka) and fail the future ``put`` returned; the producer is
    idempotent and retries by itself (Kafka disables idempotence and retries in the store).
    """

    def __init__(self, bootstrap_servers: str, *, topic: str = STATUS_STORAGE_TOPIC_DEFAULT,
                 partitions: int = 5, replication_factor: int = 3,
                 client_config: Mapping[str, Any] | None = None,
                 producer_config: Mapping[str, Any] | None = None,
                 consumer_config: Mapping[str, Any] | None = None,
                 read_to_end_on_get: bool = True, timeout_s: float = 60.0) -> None:
        self.topic = topic
        self.read_to_end_on_get = read_to_end_on_get
        self.timeout_s = timeout_s
        self.table = StatusTable(topic)
        self.topic_log = KafkaBasedLog(
            bootstrap_servers, topic=topic, partitions=partitions, replication_factor=replication_factor,
            topic_config=STATUS_STORAGE_TOPIC_CONFIG, purpose="connector and task statuses",
            consumed_callback=self.table.apply, client_id="kopycat-statuses", client_config=client_config,
            producer_config=producer_config, consumer_config=consumer_config, timeout_s=timeout_s)
        self._pending: set[Future[None]] = set()
        self._pending_lock = threading.Lock()

    @classmethod
    def from_config(cls, props: Mapping[str, Any], **kwargs: Any) -> KafkaStatusBackingStore:
        """A store from worker properties: ``bootstrap.servers`` and the ``status.storage.*`` keys."""
        values = KAFKA_STATUS_STORE_CONFIG.parse(props)
        kwargs.setdefault("client_config", worker_client_config(props))
        return cls(worker_bootstrap_servers(props, "the Kafka status store"),
                   topic=values[STATUS_STORAGE_TOPIC_CONFIG],
                   partitions=values[STATUS_STORAGE_PARTITIONS_CONFIG],
                   replication_factor=values[STATUS_STORAGE_REPLICATION_FACTOR_CONFIG], **kwargs)

    def put(self, status: ConnectorStatus | TaskStatus) -> Future[None]:
        return self._send(status_key(status), encode_status(status, self.topic), status)

    def put_topic(self, status: TopicStatus) -> Future[None]:
        return self._send(topic_status_key(status.connector, status.topic), encode_topic_status(status, self.topic),
                          status)

    def delete_topic(self, connector: str, topic: str) -> Future[None]:
        return self._send(topic_status_key(connector, topic), None, f"reset of topic {topic} of {connector}")

    def put_progress(self, progress: TaskProgress) -> Future[None]:
        return self._send(progress_key(progress.connector, progress.task), encode_progress(progress),
                          f"progress of task {progress.connector}-{progress.task}")

    def delete_progress(self, connector: str, task: int) -> Future[None]:
        return self._send(progress_key(connector, task), None, f"deletion of progress of task {connector}-{task}")

    def _send(self, key: str, value: bytes | None, what: object) -> Future[None]:
        def report(error: BaseException | None) -> None:
            if error is not None:
                log.error("Failed to write status update %s to topic '%s': %s", what, self.topic, error)

        future = self.topic_log.send({key.encode(): value}, report)
        with self._pending_lock:
            self._pending.add(future)
        future.add_done_callback(self._done)
        return future

    def _done(self, future: Future[None]) -> None:
        with self._pending_lock:
            self._pending.discard(future)

    def flush(self) -> None:
        """Wait for every status put so far; raises ConnectError if some are still unwritten after
        ``timeout_s`` (failed writes were logged and failed their futures)."""
        with self._pending_lock:
            pending = set(self._pending)
        _, not_done = wait(pending, timeout=self.timeout_s)
        if not_done:
            raise ConnectError(f"{len(not_done)} status writes to topic '{self.topic}' were not acknowledged "
                               f"within {self.timeout_s:.0f} s; is the broker reachable?")

    def _catch_up(self) -> None:
        if self.read_to_end_on_get:
            self.topic_log.read_to_end()

    def get_connector(self, connector: str) -> ConnectorStatus | None:
        self._catch_up()
        return self.table.get_connector(connector)

    def get_task(self, connector: str, task: int) -> TaskStatus | None:
        self._catch_up()
        return self.table.get_task(connector, task)

    def get_all_tasks(self, connector: str) -> list[TaskStatus]:
        self._catch_up()
        return self.table.get_all_tasks(connector)

    def connectors(self) -> set[str]:
        self._catch_up()
        return self.table.connectors()

    def get_all_topics(self, connector: str) -> list[TopicStatus]:
        self._catch_up()
        return self.table.get_all_topics(connector)

    def get_all_progress(self, connector: str) -> list[TaskProgress]:
        self._catch_up()
        return self.table.get_all_progress(connector)

"""Connector and task statuses, shared with Kafka Connect; and the internal-topic machinery.

Follows Kafka Connect's ``KafkaStatusBackingStore`` and ``MemoryStatusBackingStore`` (and
``AbstractStatus``, ``ConnectorStatus``, ``TaskStatus``). The status topic
(``status.storage.topic``, 5 partitions, compacted; DESIGN.md §2 "Status topic") holds, as Kafka
Connect 4.1 writes them:

- ``status-connector-<name>`` and ``status-task-<name>-<n>`` (UTF-8 keys) ->
  ``{"state":"RUNNING","trace":null,"worker_id":"10.0.0.7:8083","generation":0,"version":null}``,
  a Struct written by the worker's internal ``JsonConverter`` (``schemas.enable=false``), fields
  in schema order; ``version`` (the plugin's, KIP-891) is new in 4.1: older workers leave it out
  and ignore it;
- a tombstone when a status is DESTROYED; a connector's tombstone drops its tasks' statuses too;
- ``status-topic-<topic>:connector-<name>`` (KIP-558 topic tracking) ->
  ``{"topic":{"name":"orders","connector":"jdbc","task":0,"discoverTimestamp":1795000000000}}``:
  a topic the connector's task produced to or consumed from; a tombstone when it is reset.

Records are placed by the Java partitioner (murmur2 of the key bytes), so a Kafka Connect worker
reading the same topic sees them in the order written.

This module also holds what the config store shares with it until the offsets store's Kafka log
is made reusable on its own: :class:`InternalTopicLog`, :func:`parse_task_id` and the Struct codec.
"""

from __future__ import annotations

import logging
import re
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from concurrent.futures import Future, wait
from dataclasses import dataclass
from enum import Enum
from types import TracebackType
from typing import Any, Final, Self

from confluent_kafka import Message
from confluent_kafka.admin import AdminClient

from kopycat.api.data import Schema, SchemaBuilder, Struct
from kopycat.api.errors import ConnectError, DataError
from kopycat.storage.kafka_offset_store import KafkaOffsetStore
from kopycat.storage.offset_codec import _converter
from kopycat.storage.offset_store import OffsetTable, completed_future
from kopycat.storage.store_config import (
    KAFKA_STATUS_STORE_CONFIG, STATUS_STORAGE_PARTITIONS_CONFIG, STATUS_STORAGE_REPLICATION_FACTOR_CONFIG,
    STATUS_STORAGE_TOPIC_CONFIG, STATUS_STORAGE_TOPIC_DEFAULT,
)
from kopycat.storage.topic_admin import create_topic_if_missing, verify_topic_cleanup_policy_only_compact

__all__ = [
    "STATUS_SCHEMA_V0", "TOPIC_STATUS_SCHEMA_V0", "ConnectorStatus", "InternalTopicLog", "KafkaStatusBackingStore",
    "MemoryStatusBackingStore", "State", "StatusBackingStore", "StatusTable", "TaskStatus", "TopicStatus",
    "decode_status", "decode_topic_status", "encode_status", "encode_topic_status", "parse_task_id", "read_value",
    "serialize_struct", "status_key", "topic_status_key",
]

log = logging.getLogger(__name__)

CONNECTOR_STATUS_PREFIX: Final = "status-connector-"
TASK_STATUS_PREFIX: Final = "status-task-"
TOPIC_STATUS_PREFIX: Final = "status-topic-"
TOPIC_STATUS_SEPARATOR: Final = ":connector-"
_JAVA_INT: Final = re.compile(r"\+?\d+")  # what Integer.parseInt accepts, '-' aside
_INT_MAX: Final = 2**31 - 1


class State(Enum):
    """A connector's or task's state (Kafka's ``AbstractStatus.State``, in its order)."""

    UNASSIGNED = "UNASSIGNED"
    RUNNING = "RUNNING"
    PAUSED = "PAUSED"
    FAILED = "FAILED"
    DESTROYED = "DESTROYED"
    RESTARTING = "RESTARTING"
    STOPPED = "STOPPED"


@dataclass(frozen=True)
class ConnectorStatus:
    """A connector's state as a worker reported it (Kafka's ``ConnectorStatus``).

    ``trace`` is the failure's stack trace (FAILED only); ``generation`` the worker group's
    generation when it was written (0 without group membership); ``version`` the connector
    plugin's version, which Kafka Connect writes since 4.1.
    """

    connector: str
    state: State
    trace: str | None
    worker_id: str
    generation: int = 0
    version: str | None = None


@dataclass(frozen=True)
class TaskStatus:
    """A task's state as a worker reported it (Kafka's ``TaskStatus``); fields as ConnectorStatus."""

    connector: str
    task: int
    state: State
    trace: str | None
    worker_id: str
    generation: int = 0
    version: str | None = None


@dataclass(frozen=True)
class TopicStatus:
    """A topic one of the connector's tasks used, and when it was first seen (Kafka's ``TopicStatus``).

    KIP-558: ``GET /connectors/{name}/topics`` lists these; ``PUT .../topics/reset`` deletes them.
    """

    topic: str
    connector: str
    task: int
    discover_timestamp: int  # epoch milliseconds


# ------------------------------------------------------------------------------- wire format

STATUS_SCHEMA_V0: Final = (
    SchemaBuilder.struct()
    .field("state", Schema.STRING_SCHEMA)
    .field("trace", SchemaBuilder.string().optional().build())
    .field("worker_id", Schema.STRING_SCHEMA)
    .field("generation", Schema.INT32_SCHEMA)
    .field("version", Schema.OPTIONAL_STRING_SCHEMA)
    .build())


TOPIC_STATUS_VALUE_SCHEMA_V0: Final = (
    SchemaBuilder.struct()
    .field("name", Schema.STRING_SCHEMA)
    .field("connector", Schema.STRING_SCHEMA)
    .field("task", Schema.INT32_SCHEMA)
    .field("discoverTimestamp", Schema.INT64_SCHEMA)
    .build())
TOPIC_STATUS_SCHEMA_V0: Final = SchemaBuilder.map(Schema.STRING_SCHEMA, TOPIC_STATUS_VALUE_SCHEMA_V0).build()


def serialize_struct(topic: str, schema: Schema, struct: Struct) -> bytes:
    """A Struct's bytes as the worker's internal JsonConverter (``schemas.enable=false``) writes them."""
    data = _converter().from_connect_data(topic, schema, struct)
    assert data is not None  # a Struct is never a tombstone
    return data


def read_value(topic: str, data: bytes) -> Any:
    """What the internal JsonConverter reads from ``data`` (dicts, lists, str, int, ...).

    Raises DataError when the bytes are not JSON.
    """
    return _converter().to_connect_data(topic, data).value


def parse_task_id(key: str, prefix_parts: int) -> tuple[str, int] | None:
    """``(connector, task)`` from ``<prefix>-<connector>-<n>``, or None (Kafka's ``parseTaskId``).

    Splits on '-' as Java's ``String.split`` does (trailing empty parts dropped) and keeps the
    parts between the ``prefix_parts`` prefix words and the number: "task-my-conn-3" with 1
    prefix part is ("my-conn", 3).
    """
    parts = key.split("-")
    while parts and not parts[-1]:
        parts.pop()
    if len(parts) < prefix_parts + 2 or not _JAVA_INT.fullmatch(parts[-1]) or int(parts[-1]) > _INT_MAX:
        return None
    return "-".join(parts[prefix_parts:-1]), int(parts[-1])


def status_key(status: ConnectorStatus | TaskStatus) -> str:
    """``status-connector-<name>`` or ``status-task-<name>-<n>``."""
    if isinstance(status, TaskStatus):
        return f"{TASK_STATUS_PREFIX}{status.connector}-{status.task}"
    return CONNECTOR_STATUS_PREFIX + status.connector


def encode_status(status: ConnectorStatus | TaskStatus, topic: str = "") -> bytes | None:
    """The record value; None (a tombstone) for DESTROYED (Kafka's ``serialize``)."""
    if status.state is State.DESTROYED:
        return None
    struct = Struct(STATUS_SCHEMA_V0).put("state", status.state.value)
    if status.trace is not None:
        struct.put("trace", status.trace)
    struct.put("worker_id", status.worker_id).put("generation", status.generation)
    struct.put("version", status.version)
    return serialize_struct(topic, STATUS_SCHEMA_V0, struct)


def topic_status_key(connector: str, topic: str) -> str:
    """``status-topic-<topic>:connector-<connector>`` (a topic name never holds ':')."""
    return f"{TOPIC_STATUS_PREFIX}{topic}{TOPIC_STATUS_SEPARATOR}{connector}"


def encode_topic_status(status: TopicStatus, topic: str = "") -> bytes:
    """The record value (Kafka's ``serializeTopicStatus``): ``{"topic": {name, connector, task,
    discoverTimestamp}}``."""
    struct = (Struct(TOPIC_STATUS_VALUE_SCHEMA_V0).put("name", status.topic).put("connector", status.connector)
              .put("task", status.task).put("discoverTimestamp", status.discover_timestamp))
    data = _converter().from_connect_data(topic, TOPIC_STATUS_SCHEMA_V0, {"topic": struct})
    assert data is not None
    return data


def decode_topic_status(data: bytes, topic: str = "") -> TopicStatus:
    """Kafka's ``parseTopicStatus``; DataError naming what is wrong."""
    value = read_value(topic, data)
    inner = value.get("topic") if isinstance(value, dict) else None
    if not isinstance(inner, dict):
        raise DataError(f"A topic status must be {{\"topic\": {{...}}}}, got {bytes(data)[:200]!r}")
    name, connector, task, seen = (inner.get(k) for k in ("name", "connector", "task", "discoverTimestamp"))
    if not (isinstance(name, str) and isinstance(connector, str) and isinstance(task, int)
            and isinstance(seen, int)) or isinstance(task, bool) or isinstance(seen, bool):
        raise DataError(f"A topic status needs strings 'name' and 'connector' and integers 'task' and "
                        f"'discoverTimestamp', got {bytes(data)[:200]!r}")
    return TopicStatus(name, connector, task, seen)


def _parse_topic_status_key(key: str) -> tuple[str, str] | None:
    """``(connector, topic)`` from a topic status key, or None (Kafka's ``readTopicStatus``)."""
    delimiter = key.find(":")
    if delimiter <= len(TOPIC_STATUS_PREFIX) or not key.startswith(TOPIC_STATUS_SEPARATOR, delimiter):
        return None
    connector = key[delimiter + len(TOPIC_STATUS_SEPARATOR):]
    return (connector, key[len(TOPIC_STATUS_PREFIX):delimiter]) if connector else None


def decode_status(data: bytes, topic: str = "") -> tuple[State, str | None, str, int, str | None]:
    """``(state, trace, worker_id, generation, version)`` from a record value (Kafka's ``parse*Status``).

    Raises DataError naming what is wrong; Kafka Connect logs such records and skips them.
    """
    value = read_value(topic, data)
    if not isinstance(value, dict):
        raise DataError(f"A status must be a JSON object, got {bytes(data)[:200]!r}")
    state, trace, worker_id = value.get("state"), value.get("trace"), value.get("worker_id")
    generation, version = value.get("generation"), value.get("version")
    if not isinstance(state, str) or state not in State.__members__:
        raise DataError(f"A status's 'state' must be one of {', '.join(State.__members__)}, got {state!r}")
    if not isinstance(worker_id, str) or not isinstance(generation, int) or isinstance(generation, bool):
        raise DataError(f"A status needs a string 'worker_id' and an integer 'generation', got "
                        f"{bytes(data)[:200]!r}")
    if not (trace is None or isinstance(trace, str)) or not (version is None or isinstance(version, str)):
        raise DataError(f"A status's 'trace' and 'version' must be strings or null, got "
                        f"{bytes(data)[:200]!r}")
    return State(state), trace, worker_id, generation, version


# ------------------------------------------------------------------------------- the stores

class StatusTable:
    """The latest status per connector and task. Thread-safe: one lock guards both maps."""

    def __init__(self, topic: str = "") -> None:
        self.topic = topic
        self._lock = threading.Lock()
        self._connectors: dict[str, ConnectorStatus] = {}
        self._tasks: dict[str, dict[int, TaskStatus]] = {}
        self._topics: dict[str, dict[str, TopicStatus]] = {}

    def put(self, status: ConnectorStatus | TaskStatus) -> None:
        with self._lock:
            if isinstance(status, TaskStatus):
                self._tasks.setdefault(status.connector, {})[status.task] = status
            else:
                self._connectors[status.connector] = status

    def remove_connector(self, connector: str, with_tasks: bool) -> None:
        with self._lock:
            self._connectors.pop(connector, None)
            if with_tasks:
                self._tasks.pop(connector, None)

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
        elif name.startswith(TOPIC_STATUS_PREFIX) and (topic_id := _parse_topic_status_key(name)) is not None:
            if value is None:
                self.remove_topic(*topic_id)
            elif (topic_status := self._decode_topic(name, value)) is not None:
                self.put_topic(topic_status)
        else:
            log.warning("Discarding record with invalid key %r on status topic '%s'", name, self.topic)

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


class StatusBackingStore(ABC):
    """Where connector and task statuses live (Kafka Connect's ``StatusBackingStore``, trimmed).

    ``put`` may return before the status is stored; ``flush`` waits for every ``put`` made
    before it. Methods may be called from any thread.
    """

    @abstractmethod
    def start(self) -> None:
        """Connect and load the stored statuses."""

    @abstractmethod
    def stop(self) -> None:
        """Store pending statuses (as far as possible) and release resources."""

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
    def flush(self) -> None:
        """Wait until every status put so far is stored."""

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()


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

    def flush(self) -> None:
        """Statuses are stored as they are put."""


class KafkaStatusBackingStore(StatusBackingStore):
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
        self.topic_log = InternalTopicLog(
            bootstrap_servers, topic=topic, partitions=partitions, replication_factor=replication_factor,
            topic_config=STATUS_STORAGE_TOPIC_CONFIG, purpose="connector and task statuses",
            on_record=self.table.apply, client_id="kopycat-statuses", client_config=client_config,
            producer_config=producer_config, consumer_config=consumer_config, timeout_s=timeout_s)
        self._pending: set[Future[None]] = set()
        self._pending_lock = threading.Lock()

    @classmethod
    def from_config(cls, props: Mapping[str, Any], **kwargs: Any) -> KafkaStatusBackingStore:
        """A store from worker properties: ``bootstrap.servers`` and the ``status.storage.*`` keys."""
        values = KAFKA_STATUS_STORE_CONFIG.parse(props)
        if not props.get("bootstrap.servers"):
            raise ConnectError("bootstrap.servers must be set to use the Kafka status store")
        return cls(str(props["bootstrap.servers"]), topic=values[STATUS_STORAGE_TOPIC_CONFIG],
                   partitions=values[STATUS_STORAGE_PARTITIONS_CONFIG],
                   replication_factor=values[STATUS_STORAGE_REPLICATION_FACTOR_CONFIG], **kwargs)

    @property
    def num_partitions(self) -> int:
        """The topic's actual partition count (known after ``start``)."""
        return self.topic_log.num_partitions

    def start(self) -> None:
        self.topic_log.start()

    def stop(self) -> None:
        self.topic_log.stop()

    def put(self, status: ConnectorStatus | TaskStatus) -> Future[None]:
        return self._send(status_key(status), encode_status(status, self.topic), status)

    def put_topic(self, status: TopicStatus) -> Future[None]:
        return self._send(topic_status_key(status.connector, status.topic), encode_topic_status(status, self.topic),
                          status)

    def delete_topic(self, connector: str, topic: str) -> Future[None]:
        return self._send(topic_status_key(connector, topic), None, f"reset of topic {topic} of {connector}")

    def _send(self, key: str, value: bytes | None, what: object) -> Future[None]:
        def report(error: BaseException | None) -> None:
            if error is not None:
                log.error("Failed to write status update %s to topic '%s': %s", what, self.topic, error)

        future = self.topic_log.set({key.encode(): value}, report)
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


# ----------------------------------------------------------------------- internal topic log

class _NoTable(OffsetTable):
    """Drops what KafkaOffsetStore applies when a write is acknowledged: state comes from the log."""

    def apply(self, key: bytes | None, value: bytes | None) -> None:
        """Ignored."""


class InternalTopicLog(KafkaOffsetStore):
    """One of Kopycat's compacted internal topics, read record by record (Kafka's ``KafkaBasedLog``).

    Reuses :class:`KafkaOffsetStore` for the topic's creation and checks, the forced client
    settings, the Java partitioner, writes (``set``) and ``read_to_end``, with two changes: every
    record read is handed to ``on_record`` in log order, and acknowledged writes are not applied
    anywhere. Applying them too would replay a record twice, and a replayed commit record, for
    one, would make its connector's task configs look inconsistent. ``on_record`` must not raise
    for bad records.
    """

    def __init__(self, bootstrap_servers: str, *, topic: str, partitions: int, replication_factor: int,
                 topic_config: str, purpose: str, on_record: Callable[[bytes | None, bytes | None], None],
                 client_id: str, client_config: Mapping[str, Any] | None = None,
                 producer_config: Mapping[str, Any] | None = None,
                 consumer_config: Mapping[str, Any] | None = None, timeout_s: float = 60.0) -> None:
        super().__init__(bootstrap_servers, topic=topic, partitions=partitions,
                         replication_factor=replication_factor,
                         client_config={"client.id": client_id, **(client_config or {})},
                         producer_config=producer_config, consumer_config=consumer_config,
                         read_to_end_on_get=False, timeout_s=timeout_s)
        self.topic_config = topic_config
        self.purpose = purpose
        self.on_record = on_record
        self.table = _NoTable()

    def start(self) -> None:
        log.info("Starting the log of %s on topic '%s'", self.purpose, self.topic)
        try:
            self._check_topic()
            self._start()
        except BaseException:
            self.stop()
            raise
        log.info("Read topic '%s' to its end: %s loaded", self.topic, self.purpose)

    def _check_topic(self) -> None:
        """Create the topic, or refuse it unless compact-only, naming this topic's worker key.

        ``KafkaOffsetStore._start`` repeats both checks (which then pass), but would name
        ``offset.storage.topic`` in its error.
        """
        admin = AdminClient(self._admin_config)
        created = create_topic_if_missing(
            admin, self.topic, partitions=self.partitions, replication_factor=self.replication_factor,
            config={"cleanup.policy": "compact"}, timeout_s=self.timeout_s)
        if not created:
            verify_topic_cleanup_policy_only_compact(admin, self.topic, self.topic_config, self.purpose,
                                                     self.timeout_s)

    def _handle(self, message: Message) -> None:
        super()._handle(message)  # positions, end-of-partition events and errors
        if message.error() is None:
            self.on_record(message.key(), message.value())

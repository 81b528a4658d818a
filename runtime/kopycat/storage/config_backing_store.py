"""Connector configurations, task configurations and target states, shared with Kafka Connect.

Follows Kafka Connect's ``KafkaConfigBackingStore`` and ``MemoryConfigBackingStore``, trimmed to
what a worker without group membership needs. The config topic (``config.storage.topic``, one
partition, compacted; DESIGN.md §2 "Config topic") holds, as Kafka Connect 4.1 writes them:

- ``connector-<name>`` -> ``{"properties":{...}}``; a tombstone deletes the connector;
- ``task-<name>-<n>`` -> ``{"properties":{...}}``, invisible until
- ``commit-<name>`` -> ``{"tasks":n}`` says how many task configs belong to the connector;
- ``target-state-<name>`` -> ``{"state":"PAUSED","state.v2":"STOPPED"}`` (``state`` is what
  workers older than 3.5, which know no STOPPED, read; older workers wrote ``state`` only).

Keys are UTF-8 strings; values are Structs of the schemas below written by the worker's internal
``JsonConverter`` with ``schemas.enable=false``, so fields come in schema order. The log is
replayed record by record (Kafka's ``ConsumeCallback``): bad records are logged and skipped.
Records this worker does not use (restart requests, session keys, fencing task counts, logger
levels) are skipped too, so they are left as Kafka Connect wrote them.
"""

from __future__ import annotations

import logging
import threading
from abc import abstractmethod
from collections.abc import Mapping, Sequence
from concurrent.futures import TimeoutError as FutureTimeoutError
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Final

from confluent_kafka import KafkaException

from kopycat.api.data import Schema, SchemaBuilder, Struct
from kopycat.api.errors import ConfigError, ConnectError, DataError, NotFoundError
from kopycat.kafka import worker_client_config
from kopycat.lifecycle import Lifecycle
from kopycat.storage.internal_topic_codec import parse_task_id, read_value, serialize_struct
from kopycat.storage.kafka_based_log import KafkaBasedLog, worker_bootstrap_servers
from kopycat.storage.kafka_topic_store import KafkaTopicStore
from kopycat.storage.worker_storage_config import (
    CONFIG_STORAGE_REPLICATION_FACTOR_CONFIG,
    CONFIG_STORAGE_TOPIC_CONFIG,
    CONFIG_STORAGE_TOPIC_DEFAULT,
    KAFKA_CONFIG_STORE_CONFIG,
)

__all__ = [
    "CONNECTOR_CONFIGURATION_V0", "CONNECTOR_TASKS_COMMIT_V0", "TARGET_STATE_V1", "ClusterConfigState",
    "ConfigBackingStore", "ConfigTable", "KafkaConfigBackingStore", "MemoryConfigBackingStore",
    "TargetState", "commit_key", "connector_key", "encode_connector_config", "encode_target_state",
    "encode_tasks_commit", "target_state_key", "task_key",
]

log = logging.getLogger(__name__)

TARGET_STATE_PREFIX: Final = "target-state-"
CONNECTOR_PREFIX: Final = "connector-"
TASK_PREFIX: Final = "task-"
COMMIT_TASKS_PREFIX: Final = "commit-"
# Records of features Kopycat does not use (restarts, exactly-once fencing, session keys, loggers).
_UNUSED_PREFIXES: Final = ("restart-connector-", "tasks-fencing-", "session-key", "logger-cluster-")


class TargetState(Enum):
    """What a connector should be doing (Kafka's ``TargetState``)."""

    STARTED = "STARTED"
    PAUSED = "PAUSED"
    STOPPED = "STOPPED"


@dataclass(frozen=True)
class ClusterConfigState:
    """A copy of the config topic's state (Kafka's ``ClusterConfigState``, trimmed).

    ``task_configs`` holds a connector's task configs only once a commit record said how many
    there are and all of them were read: ``[]`` when it committed zero tasks (a STOPPED
    connector), no entry before its first commit or when its last commit is ``inconsistent``
    (task configs lost to compaction, see ``KafkaConfigBackingStore``'s Javadoc). Property values
    are strings, or None where a writer stored a null. Copies: changing them changes no store.
    """

    connector_configs: dict[str, dict[str, str]] = field(default_factory=dict)
    task_configs: dict[str, list[dict[str, str]]] = field(default_factory=dict)
    target_states: dict[str, TargetState] = field(default_factory=dict)
    inconsistent: frozenset[str] = frozenset()

    def contains(self, connector: str) -> bool:
        """Whether ``connector`` has a configuration."""
        return connector in self.connector_configs


# ------------------------------------------------------------------------------- wire format

CONNECTOR_CONFIGURATION_V0: Final = SchemaBuilder.struct().field(
    "properties", SchemaBuilder.map(Schema.STRING_SCHEMA, Schema.OPTIONAL_STRING_SCHEMA).build()).build()
CONNECTOR_TASKS_COMMIT_V0: Final = SchemaBuilder.struct().field("tasks", Schema.INT32_SCHEMA).build()
TARGET_STATE_V1: Final = (SchemaBuilder.struct().field("state", Schema.STRING_SCHEMA)
                          .field("state.v2", Schema.OPTIONAL_STRING_SCHEMA).build())


def connector_key(connector: str) -> str:
    return CONNECTOR_PREFIX + connector


def task_key(connector: str, task: int) -> str:
    return f"{TASK_PREFIX}{connector}-{task}"


def commit_key(connector: str) -> str:
    return COMMIT_TASKS_PREFIX + connector


def target_state_key(connector: str) -> str:
    return TARGET_STATE_PREFIX + connector


def encode_connector_config(properties: Mapping[str, str | None], topic: str = "") -> bytes:
    """``{"properties":{...}}`` in the caller's key order, for connector and task configs alike.

    Raises DataError when a key is not a string or a value neither a string nor None.
    """
    struct = Struct(CONNECTOR_CONFIGURATION_V0).put("properties", dict(properties))
    return serialize_struct(topic, CONNECTOR_CONFIGURATION_V0, struct)


def encode_tasks_commit(tasks: int, topic: str = "") -> bytes:
    """``{"tasks":n}``: the commit record that makes ``n`` task configs visible."""
    struct = Struct(CONNECTOR_TASKS_COMMIT_V0).put("tasks", tasks)
    return serialize_struct(topic, CONNECTOR_TASKS_COMMIT_V0, struct)


def encode_target_state(state: TargetState, topic: str = "") -> bytes:
    """``{"state":...,"state.v2":...}``; ``state`` is PAUSED for STOPPED, which older workers lack
    (Kafka's ``serializeTargetState``)."""
    legacy = TargetState.PAUSED if state is TargetState.STOPPED else state
    struct = Struct(TARGET_STATE_V1).put("state", legacy.value).put("state.v2", state.value)
    return serialize_struct(topic, TARGET_STATE_V1, struct)


def _properties(data: Any) -> dict[str, str] | None:
    """The ``properties`` map of a decoded config value, or None when it has another shape."""
    if not isinstance(data, dict):
        return None
    props = data.get("properties")
    if not isinstance(props, dict) or not all(v is None or isinstance(v, str) for v in props.values()):
        return None
    return props


def _kind(value: Any) -> str:
    return "null" if value is None else type(value).__name__


# ---------------------------------------------------------------------------- log replay

class ConfigTable:
    """The config topic's state, built by replaying its records in order.

    Kafka's ``KafkaConfigBackingStore.ConsumeCallback`` and its ``process*Record`` methods: task
    configs are buffered per connector until a commit record, then applied if every task the
    commit counts was read; otherwise the connector is inconsistent (no task configs) until a
    complete commit. Thread-safe: one lock guards the state.
    """

    def __init__(self, topic: str = "") -> None:
        self.topic = topic
        self._lock = threading.Lock()
        self._connector_configs: dict[str, dict[str, str]] = {}
        self._task_counts: dict[str, int] = {}
        self._task_configs: dict[tuple[str, int], dict[str, str]] = {}
        self._deferred: dict[str, dict[int, dict[str, str]]] = {}
        self._target_states: dict[str, TargetState] = {}
        self._inconsistent: set[str] = set()

    def apply(self, key: bytes | None, value: bytes | None) -> None:
        """Replay one record; a record that cannot be used is logged and skipped."""
        if key is None:
            log.error("Discarding a record without a key on config topic '%s'", self.topic)
            return
        name = key.decode("utf-8", "replace")
        try:
            data = None if value is None else read_value(self.topic, value)
        except DataError as exc:
            log.error("Failed to convert config data of record '%s' on topic '%s': %s", name, self.topic, exc)
            return
        with self._lock:
            self._dispatch(name, data)

    def _dispatch(self, name: str, data: Any) -> None:
        if name.startswith(TARGET_STATE_PREFIX):
            self._target_state(name[len(TARGET_STATE_PREFIX):], data)
        elif name.startswith(CONNECTOR_PREFIX):
            self._connector_config(name[len(CONNECTOR_PREFIX):], data)
        elif name.startswith(TASK_PREFIX):
            task_id = parse_task_id(name, 1)
            if task_id is None:
                log.error("Ignoring task configuration because %s couldn't be parsed as a task config key",
                          name)
            else:
                self._task_config(*task_id, data)
        elif name.startswith(COMMIT_TASKS_PREFIX):
            self._commit(name[len(COMMIT_TASKS_PREFIX):], data)
        elif name.startswith(_UNUSED_PREFIXES):
            log.debug("Skipping config record '%s': Kopycat does not use it", name)
        else:
            log.error("Discarding config update record with invalid key: %s", name)

    def _target_state(self, connector: str, data: Any) -> None:
        if data is None:  # written with the connector's tombstone
            self._target_states.pop(connector, None)
            if connector in self._connector_configs:
                self._target_states[connector] = TargetState.STARTED
            return
        if not isinstance(data, dict):
            log.error("Ignoring target state for connector '%s' because it is in the wrong format: %s",
                      connector, _kind(data))
            return
        state = data.get("state.v2")
        if state is not None and not isinstance(state, str):
            log.error("Invalid data for target state for connector '%s': 'state.v2' field should be a "
                      "String but is %s", connector, _kind(state))
            state = None
        if state is None:  # written by a worker older than 3.5
            state = data.get("state")
            if not isinstance(state, str):
                log.error("Invalid data for target state for connector '%s': 'state' field should be a "
                          "String but is %s", connector, _kind(state))
                return
        try:
            self._target_states[connector] = TargetState(state)
        except ValueError:
            log.error("Invalid target state for connector '%s': %s", connector, state)

    def _connector_config(self, connector: str, data: Any) -> None:
        if data is None:
            self._remove(connector)
            log.info("Processed removal of connector '%s'", connector)
            return
        props = _properties(data)
        if props is None:
            log.error("Ignoring configuration for connector '%s' because it is not {\"properties\": "
                      "{string: string}}: %s", connector, _kind(data))
            return
        self._connector_configs[connector] = props
        self._target_states.setdefault(connector, TargetState.STARTED)

    def _task_config(self, connector: str, task: int, data: Any) -> None:
        props = _properties(data)
        if props is None:
            log.error("Ignoring task configuration for task %s-%d because it is not {\"properties\": "
                      "{string: string}}: %s", connector, task, _kind(data))
            return
        self._deferred.setdefault(connector, {})[task] = props

    def _commit(self, connector: str, data: Any) -> None:
        if connector not in self._connector_configs:
            # deleted before these task configs were committed, and compaction removed its records
            self._remove(connector)
            log.debug("Ignoring task configs for connector '%s', which has no configuration", connector)
            return
        count = data.get("tasks") if isinstance(data, dict) else None
        if not isinstance(count, int) or isinstance(count, bool):
            log.error("Ignoring connector tasks configuration commit for connector '%s' because it is in "
                      "the wrong format: %s", connector, _kind(data))
            return
        deferred = self._deferred.get(connector) or {}
        if all(task in deferred for task in range(count)):
            self._task_configs.update(((connector, task), props) for task, props in deferred.items())
            self._inconsistent.discard(connector)
        else:  # some task configs of this commit were compacted away: wait for the next commit
            log.debug("Incomplete set of task configs for connector '%s', probably due to compaction",
                      connector)
            self._inconsistent.add(connector)
        self._deferred.pop(connector, None)
        self._task_counts[connector] = count

    def _remove(self, connector: str) -> None:
        self._connector_configs.pop(connector, None)
        self._task_counts.pop(connector, None)
        self._deferred.pop(connector, None)
        for task_id in [task_id for task_id in self._task_configs if task_id[0] == connector]:
            del self._task_configs[task_id]

    def contains(self, connector: str) -> bool:
        with self._lock:
            return connector in self._connector_configs

    def snapshot(self) -> ClusterConfigState:
        with self._lock:
            tasks: dict[str, list[dict[str, str]]] = {}
            for connector, count in self._task_counts.items():
                configs = [self._task_configs.get((connector, task)) for task in range(count)]
                if connector not in self._inconsistent and all(c is not None for c in configs):
                    tasks[connector] = [dict(c) for c in configs if c is not None]
            return ClusterConfigState(
                connector_configs={name: dict(props) for name, props in self._connector_configs.items()},
                task_configs=tasks, target_states=dict(self._target_states),
                inconsistent=frozenset(self._inconsistent))


# ------------------------------------------------------------------------------- the stores

class ConfigBackingStore(Lifecycle):
    """Where connector and task configurations live (Kafka Connect's ``ConfigBackingStore``).

    Writes block until stored; ``snapshot`` and ``contains`` see every write made before them.
    Like Kafka Connect, a store expects one writer at a time (its herder); readers may be many.
    ``start`` loads the stored configurations.
    """

    @abstractmethod
    def snapshot(self) -> ClusterConfigState:
        """A copy of every connector's configuration, committed task configs and target state."""

    @abstractmethod
    def contains(self, connector: str) -> bool:
        """Whether ``connector`` has a configuration."""

    @abstractmethod
    def put_connector_config(self, connector: str, properties: Mapping[str, str],
                             target_state: TargetState | None = None) -> None:
        """Create or replace a connector's configuration, and its target state when given.

        A new connector without ``target_state`` is STARTED; an existing one keeps its state.
        """

    @abstractmethod
    def remove_connector_config(self, connector: str) -> None:
        """Delete a connector: its configuration, task configs and target state."""

    @abstractmethod
    def put_task_configs(self, connector: str, configs: Sequence[Mapping[str, str]]) -> None:
        """Replace a connector's task configs, all at once. Raises NotFoundError for an unknown connector."""

    @abstractmethod
    def put_target_state(self, connector: str, state: TargetState) -> None:
        """Ask a connector to start, pause or stop. Raises NotFoundError for an unknown connector."""


class _LogConfigStore(ConfigBackingStore):
    """Both stores write the same records and replay them through one :class:`ConfigTable`.

    Subclasses implement two declared hooks: :meth:`write_records` (how records are written) and
    :meth:`catch_up` (how the table catches up with the log).
    """

    def __init__(self, topic: str) -> None:
        self.topic = topic
        self.table = ConfigTable(topic)

    @abstractmethod
    def write_records(self, records: Mapping[str, bytes | None]) -> None:
        """Hook: write ``records`` (UTF-8 keys, None for a tombstone) in order; return once stored."""

    @abstractmethod
    def catch_up(self) -> None:
        """Hook: bring :attr:`table` up to date with every record stored so far."""

    def snapshot(self) -> ClusterConfigState:
        self.catch_up()
        return self.table.snapshot()

    def contains(self, connector: str) -> bool:
        self.catch_up()
        return self.table.contains(connector)

    def put_connector_config(self, connector: str, properties: Mapping[str, str],
                             target_state: TargetState | None = None) -> None:
        config = encode_connector_config(properties, self.topic)  # fails before anything is written
        records: dict[str, bytes | None] = {}
        if target_state is not None:  # first, as Kafka: the connector starts in this state
            records[target_state_key(connector)] = encode_target_state(target_state, self.topic)
        records[connector_key(connector)] = config
        self.write_records(records)
        self.catch_up()

    def remove_connector_config(self, connector: str) -> None:
        self.write_records({connector_key(connector): None, target_state_key(connector): None})
        self.catch_up()

    def put_task_configs(self, connector: str, configs: Sequence[Mapping[str, str]]) -> None:
        encoded = [encode_connector_config(config, self.topic) for config in configs]
        self._require(connector)
        if encoded:
            self.write_records({task_key(connector, task): value for task, value in enumerate(encoded)})
        self.write_records({commit_key(connector): encode_tasks_commit(len(encoded), self.topic)})
        self.catch_up()

    def put_target_state(self, connector: str, state: TargetState) -> None:
        self._require(connector)
        self.write_records({target_state_key(connector): encode_target_state(state, self.topic)})

    def _require(self, connector: str) -> None:
        if not self.contains(connector):
            raise NotFoundError(f"Connector '{connector}' has no configuration in config topic "
                                f"'{self.topic}'; put its configuration first")


class MemoryConfigBackingStore(_LogConfigStore):
    """Configurations in memory only, lost on exit (Kafka Connect's ``MemoryConfigBackingStore``).

    Records are encoded and replayed exactly as the Kafka store's, so both behave the same.
    For tests and standalone runs. Thread-safe.
    """

    def __init__(self) -> None:
        super().__init__(CONFIG_STORAGE_TOPIC_DEFAULT)

    def start(self) -> None:
        """Nothing to load."""

    def stop(self) -> None:
        """Nothing to release; the configurations stay readable until the object is dropped."""

    def write_records(self, records: Mapping[str, bytes | None]) -> None:
        for key, value in records.items():
            self.table.apply(key.encode(), value)

    def catch_up(self) -> None:
        """Writes are applied as they are made."""


class KafkaConfigBackingStore(KafkaTopicStore, _LogConfigStore):
    """Configurations on the ``config.storage.topic`` topic (Kafka Connect's ``KafkaConfigBackingStore``).

    The topic is created with one partition and ``cleanup.policy=compact`` if missing, and refused
    when it has more partitions or another policy. It is read to its end on ``start`` and before
    every ``snapshot``/``contains`` (Kafka reads in a background thread; a bounded Airflow run has
    no thread to spare), and after each write, so a caller reads its own writes. The state comes
    from the log only, never from the write acknowledgements: replaying a record twice would, for
    one, make a replayed commit record's task configs look inconsistent. The log is a
    :class:`~kopycat.storage.kafka_based_log.KafkaBasedLog` (idempotent producer, read_committed
    consumer); ``client_config``/``producer_config``/``consumer_config`` are its.
    """

    def __init__(self, bootstrap_servers: str, *, topic: str = CONFIG_STORAGE_TOPIC_DEFAULT,
                 replication_factor: int = 3, client_config: Mapping[str, Any] | None = None,
                 producer_config: Mapping[str, Any] | None = None,
                 consumer_config: Mapping[str, Any] | None = None, timeout_s: float = 60.0) -> None:
        super().__init__(topic)
        self.timeout_s = timeout_s
        self.topic_log = KafkaBasedLog(
            bootstrap_servers, topic=topic, partitions=1, replication_factor=replication_factor,
            topic_config=CONFIG_STORAGE_TOPIC_CONFIG, purpose="connector configurations",
            consumed_callback=self.table.apply, client_id="kopycat-configs", client_config=client_config,
            producer_config=producer_config, consumer_config=consumer_config, timeout_s=timeout_s)

    @classmethod
    def from_config(cls, props: Mapping[str, Any], **kwargs: Any) -> KafkaConfigBackingStore:
        """A store from worker properties: ``bootstrap.servers`` and the ``config.storage.*`` keys."""
        values = KAFKA_CONFIG_STORE_CONFIG.parse(props)
        kwargs.setdefault("client_config", worker_client_config(props))
        return cls(worker_bootstrap_servers(props, "the Kafka config store"),
                   topic=values[CONFIG_STORAGE_TOPIC_CONFIG],
                   replication_factor=values[CONFIG_STORAGE_REPLICATION_FACTOR_CONFIG], **kwargs)

    def start(self) -> None:
        super().start()
        if self.topic_log.num_partitions > 1:
            self.topic_log.stop()
            raise ConfigError(
                f"Topic '{self.topic}' supplied via the '{CONFIG_STORAGE_TOPIC_CONFIG}' property is required "
                f"to have a single partition in order to guarantee consistency of connector configurations, "
                f"but found {self.topic_log.num_partitions} partitions. Use another topic (Kopycat creates "
                f"it with one partition if missing).", key=CONFIG_STORAGE_TOPIC_CONFIG)

    def write_records(self, records: Mapping[str, bytes | None]) -> None:
        future = self.topic_log.send({key.encode(): value for key, value in records.items()})
        try:
            future.result(self.timeout_s)
        except FutureTimeoutError as exc:
            raise ConnectError(f"Timed out after {self.timeout_s:.0f} s writing {sorted(records)} to config "
                               f"topic '{self.topic}'") from exc
        except KafkaException as exc:
            raise ConnectError(f"Error writing {sorted(records)} to config topic '{self.topic}': "
                               f"{exc}") from exc

    def catch_up(self) -> None:
        self.topic_log.read_to_end()

"""Connector, task and topic statuses, and their records on the status topic, as Kafka Connect's.

Follows Kafka Connect's ``AbstractStatus``, ``ConnectorStatus``, ``TaskStatus`` and ``TopicStatus``,
and the record format of its ``KafkaStatusBackingStore``. The status topic (``status.storage.topic``,
5 partitions, compacted; DESIGN.md §2 "Status topic") holds, as Kafka Connect 4.1 writes them:

- ``status-connector-<name>`` and ``status-task-<name>-<n>`` (UTF-8 keys) ->
  ``{"state":"RUNNING","trace":null,"worker_id":"10.0.0.7:8083","generation":0,"version":null}``,
  a Struct written by the worker's internal ``JsonConverter`` (``schemas.enable=false``), fields
  in schema order; ``version`` (the plugin's, KIP-891) is new in 4.1: older workers leave it out
  and ignore it;
- a tombstone when a status is DESTROYED; a connector's tombstone drops its tasks' statuses too;
- ``status-topic-<topic>:connector-<name>`` (KIP-558 topic tracking) ->
  ``{"topic":{"name":"orders","connector":"jdbc","task":0,"discoverTimestamp":1795000000000}}``:
  a topic the connector's task produced to or consumed from; a tombstone when it is reset.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Final

from kopycat.api.data import Schema, SchemaBuilder, Struct
from kopycat.api.errors import DataError
from kopycat.storage.internal_topic_codec import internal_converter, read_value, serialize_struct

__all__ = [
    "CONNECTOR_STATUS_PREFIX", "STATUS_SCHEMA_V0", "TASK_STATUS_PREFIX", "TOPIC_STATUS_PREFIX",
    "TOPIC_STATUS_SCHEMA_V0", "TOPIC_STATUS_SEPARATOR", "ConnectorStatus", "State", "TaskStatus", "TopicStatus",
    "decode_status", "decode_topic_status", "encode_status", "encode_topic_status", "parse_topic_status_key",
    "status_key", "topic_status_key",
]

CONNECTOR_STATUS_PREFIX: Final = "status-connector-"
TASK_STATUS_PREFIX: Final = "status-task-"
TOPIC_STATUS_PREFIX: Final = "status-topic-"
TOPIC_STATUS_SEPARATOR: Final = ":connector-"


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
    data = internal_converter().from_connect_data(topic, TOPIC_STATUS_SCHEMA_V0, {"topic": struct})
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


def parse_topic_status_key(key: str) -> tuple[str, str] | None:
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

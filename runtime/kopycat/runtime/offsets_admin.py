"""Reading and changing a connector's offsets from outside it (KIP-875, ``kopycat offsets``, REST).

Source offsets live in the offset store (a file in standalone mode, else ``connect-offsets``), or
first in the connector's own ``offsets.storage.topic`` with the worker's store as fallback
(:func:`connector_offset_store`, Kafka's ``Worker.offsetStoreForRegularSourceConnector``);
sink offsets in the consumer group ``connect-<connector>``. Shapes are KIP-875's REST bodies:
``{"offsets": [{"partition": {...}, "offset": {...}}]}``, sink partitions as
``{"kafka_topic": t, "kafka_partition": p}`` with ``{"kafka_offset": n}``. Like Kafka, change
offsets only while the connector is stopped: a running task would overwrite them.

:func:`alter_offsets` follows Kafka's ``Worker.modifyConnectorOffsets`` (and ``SinkUtils``) for
``PATCH`` and ``DELETE /connectors/{name}/offsets``: the same checks, messages and outcomes.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, Final

import orjson
from confluent_kafka import ConsumerGroupTopicPartitions, KafkaError, KafkaException
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import AdminClient

from kopycat.api.errors import ConfigError, ConnectError
from kopycat.api.records import TopicPartition
from kopycat.group_offsets import list_group_offsets
from kopycat.kafka import client_config, consumer_group_id
from kopycat.runtime.connector_config import OFFSETS_STORAGE_TOPIC_CONFIG
from kopycat.storage.connector_offset_backing_store import ConnectorOffsetBackingStore
from kopycat.storage.file_offset_store import FileOffsetStore
from kopycat.storage.kafka_offset_store import KafkaOffsetStore
from kopycat.storage.offset_backing_store import OffsetBackingStore
from kopycat.storage.offset_codec import encode_key, encode_value
from kopycat.storage.offset_storage_reader_writer import OffsetStorageReaderImpl
from kopycat.storage.worker_storage_config import OFFSET_STORAGE_FILE_FILENAME_CONFIG, OFFSET_STORAGE_TOPIC_CONFIG
from kopycat.topic_names import topic_name_problem

__all__ = [
    "KAFKA_OFFSET_KEY", "KAFKA_PARTITION_KEY", "KAFKA_TOPIC_KEY", "alter_offsets", "connector_offset_store",
    "connector_offsets", "consumer_group_id", "get_offsets", "max_record_bytes", "offset_store_for",
    "parse_sink_offsets", "reset_offsets",
]

log = logging.getLogger(__name__)

KAFKA_TOPIC_KEY: Final = "kafka_topic"
KAFKA_PARTITION_KEY: Final = "kafka_partition"
KAFKA_OFFSET_KEY: Final = "kafka_offset"
_TIMEOUT_S: Final = 30.0
_DEFAULT_MAX_RECORD_BYTES: Final = 1_000_000
"""librdkafka's ``message.max.bytes`` default, below the broker's (1048588) and Java's (1048576)."""
_INT_RANGE: Final = (0, 2**31 - 1)
_LONG_RANGE: Final = (0, 2**63 - 1)
_JAVA_INTEGER: Final = re.compile(r"[+-]?[0-9]+")
_ZOMBIES: Final = ("Failed to {verb} consumer group offsets for connector {name} either because its tasks haven't "
                   "stopped completely yet or the connector was resumed before the request to {verb} its offsets "
                   "could be successfully completed. If the connector is in a stopped state, this operation can be "
                   "safely retried. If it doesn't eventually succeed, the Connect cluster may need to be restarted "
                   "to get rid of the zombie sink tasks.")

OffsetsCheck = Callable[[Mapping[Any, Any]], bool]
"""A connector's ``alter_offsets(props, offsets)`` bound to its props: True if it handled them."""


def offset_store_for(worker_props: Mapping[str, Any]) -> OffsetBackingStore:
    """The worker's source offset store: the file if configured, else the Kafka topic."""
    filename = worker_props.get(OFFSET_STORAGE_FILE_FILENAME_CONFIG)
    if filename:
        return FileOffsetStore(str(filename))
    return KafkaOffsetStore.from_config(worker_props)


def max_record_bytes(worker_props: Mapping[str, Any]) -> int:
    """The largest record the worker's producer sends to its internal topics.

    ``max.request.size`` (Java's name) or ``message.max.bytes`` (librdkafka's) among the
    worker's top-level properties, else librdkafka's default.
    """
    for key in ("max.request.size", "message.max.bytes"):
        if worker_props.get(key) not in (None, ""):
            return int(worker_props[key])
    return _DEFAULT_MAX_RECORD_BYTES


def connector_offset_store(worker_store: OffsetBackingStore, connector_props: Mapping[str, Any] | None,
                           worker_props: Mapping[str, Any]) -> ConnectorOffsetBackingStore:
    """One source connector's offsets: its own ``offsets.storage.topic`` first, ``worker_store`` as fallback.

    Kafka's ``Worker.offsetStoreForRegularSourceConnector``: without a topic of its own (or with
    the worker's), the connector uses only the worker's store. The connector's topic is on the
    worker's cluster, created with the worker's ``offset.storage.partitions`` and
    ``.replication.factor``. Start the result after ``worker_store``; it never stops the latter.
    """
    topic = str((connector_props or {}).get(OFFSETS_STORAGE_TOPIC_CONFIG) or "").strip()
    if not topic or isinstance(worker_store, KafkaOffsetStore) and topic == worker_store.topic:
        return ConnectorOffsetBackingStore.with_only_worker_store(worker_store)
    own = KafkaOffsetStore.from_config({**worker_props, OFFSET_STORAGE_TOPIC_CONFIG: topic})
    return ConnectorOffsetBackingStore.with_connector_and_worker_stores(worker_store, own)


@contextmanager
def connector_offsets(connector_props: Mapping[str, Any] | None,
                      worker_props: Mapping[str, Any]) -> Iterator[ConnectorOffsetBackingStore]:
    """The worker's store and the connector's view of it (:func:`connector_offset_store`), started."""
    with offset_store_for(worker_props) as worker_store:
        store = connector_offset_store(worker_store, connector_props, worker_props)
        store.start()
        try:
            yield store
        finally:
            store.stop()


def _admin(worker_props: Mapping[str, Any]) -> AdminClient:
    return AdminClient(client_config(worker_props, {}, "admin"))


def _group_offsets(admin: AdminClient, group: str) -> list[dict[str, Any]]:
    result = list_group_offsets(admin, group, _TIMEOUT_S)
    return [{"partition": {KAFKA_TOPIC_KEY: tp.topic, KAFKA_PARTITION_KEY: tp.partition},
             "offset": {KAFKA_OFFSET_KEY: tp.offset}}
            for tp in sorted(result.topic_partitions, key=lambda t: (t.topic, t.partition)) if tp.offset >= 0]


def _source_offsets(connector: str, worker_props: Mapping[str, Any],
                    connector_props: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    with connector_offsets(connector_props, worker_props) as store:
        partitions = [p for p in store.connector_partitions(connector) if p is not None]
        found = OffsetStorageReaderImpl(store, connector).offsets(partitions)
    return [{"partition": p, "offset": o} for p, o in found if o is not None]


def get_offsets(connector: str, worker_props: Mapping[str, Any], *, sink: bool | None = None,
                group: str | None = None, connector_props: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """KIP-875's ``GET /connectors/{name}/offsets`` body.

    ``sink`` says where to look, as Kafka decides by the connector's type: True reads the
    consumer group, False the offset store; None (the CLI, which knows no type) reads the
    offset store and falls back to the consumer group when it holds nothing. ``group`` is the
    sink's group (:func:`consumer_group_id` of its config; ``connect-<name>`` by default).
    ``connector_props`` name the connector's own offsets topic, if any (``offsets.storage.topic``).
    """
    offsets = [] if sink else _source_offsets(connector, worker_props, connector_props)
    if sink or (sink is None and not offsets and worker_props.get("bootstrap.servers")):
        offsets = _group_offsets(_admin(worker_props), group or consumer_group_id(connector))
    return {"offsets": offsets}


def reset_offsets(connector: str, worker_props: Mapping[str, Any], *, group: str | None = None,
                  connector_props: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Forget every offset of ``connector`` (tombstones; the sink group is deleted). KIP-875's DELETE.

    With its own offsets topic in ``connector_props``, both that topic and the worker's are cleared.
    """
    group = group or consumer_group_id(connector)
    with connector_offsets(connector_props, worker_props) as store:
        partitions = [p for p in store.connector_partitions(connector) if p is not None]
        store.set({encode_key(connector, p): None for p in partitions}).result(60)
    groups = 0
    if worker_props.get("bootstrap.servers"):
        admin = _admin(worker_props)
        try:
            admin.delete_consumer_groups([group])[group].result(30)
            groups = 1
        except Exception:  # noqa: BLE001 - no such group: nothing to reset
            groups = 0
    return {"message": f"The offsets for connector {connector} have been reset successfully "
                       f"({len(partitions)} source partitions, {groups} consumer group)"}


# ------------------------------------------------------------------------ alter (KIP-875)

def _entries(offsets: Sequence[Mapping[str, Any]]) -> list[tuple[Any, Any]]:
    """``(partition, offset)`` pairs of a PATCH body's ``offsets`` list, refused when malformed."""
    pairs = []
    for entry in offsets:
        if not isinstance(entry, Mapping):
            raise ConfigError(f"Each entry of 'offsets' must be an object with a 'partition' and an 'offset', "
                              f"got {entry!r}")
        pairs.append((entry.get("partition"), entry.get("offset")))  # missing reads as null, as Jackson
    return pairs


def _as_int(value: Any, what: str, key: str, bounds: tuple[int, int]) -> int:
    """A JSON integer or numeric string, as Java's ``Integer``/``Long.parseLong(String.valueOf(value))``.

    A number outside Java's range fails to parse there too, with the same message; a negative
    one parses in Java but names no partition or offset, so it is refused naming ``key``.
    """
    text = value if isinstance(value, str) else str(value) if type(value) is int else ""
    low, high = bounds
    if not _JAVA_INTEGER.fullmatch(text) or int(text) > high or int(text) < -high - 1:
        raise ConfigError(f"Failed to parse the following Kafka {what} value in the provided offsets: "
                          f"'{value}'. {what.capitalize()} values for sink connectors need to be integers.")
    if int(text) < low:
        raise ConfigError(f"Invalid value {value} for {key} in the provided offsets: Kafka {what}s must be at "
                          f"least {low} and at most {high}")
    return int(text)


def _checked_topic(topic: str) -> str:
    """``topic`` if Kafka accepts it as a topic name (Kafka's ``Topic.validate``, with its messages)."""
    problem = topic_name_problem(topic)
    if problem:
        raise ConfigError(f"Invalid value '{topic}' for {KAFKA_TOPIC_KEY} in the provided offsets: {problem}")
    return topic


def parse_sink_offsets(offsets: Sequence[Mapping[str, Any]]) -> dict[TopicPartition, int | None]:
    """Sink offsets of a PATCH body as topic-partitions -> next offset (None: reset it).

    Kafka's ``SinkUtils.parseSinkConnectorOffsets``, with its messages; "10" and 10 are both
    accepted. Raises ConfigError (answered with 400) naming what is wrong.
    """
    parsed: dict[TopicPartition, int | None] = {}
    for partition, offset in _entries(offsets):
        if partition is None:
            raise ConfigError("The partition for a sink connector offset cannot be null or missing")
        if not isinstance(partition, Mapping) or KAFKA_TOPIC_KEY not in partition \
                or KAFKA_PARTITION_KEY not in partition:
            raise ConfigError(f"The partition for a sink connector offset must contain the keys "
                              f"'{KAFKA_TOPIC_KEY}' and '{KAFKA_PARTITION_KEY}'")
        if partition[KAFKA_TOPIC_KEY] is None:
            raise ConfigError("Kafka topic names must be valid strings and may not be null")
        if partition[KAFKA_PARTITION_KEY] is None:
            raise ConfigError("Kafka partitions must be valid numbers and may not be null")
        tp = TopicPartition(_checked_topic(str(partition[KAFKA_TOPIC_KEY])),
                            _as_int(partition[KAFKA_PARTITION_KEY], "partition", KAFKA_PARTITION_KEY, _INT_RANGE))
        if offset is None:
            parsed[tp] = None
        elif not isinstance(offset, Mapping) or KAFKA_OFFSET_KEY not in offset:
            raise ConfigError(f"The offset for a sink connector should either be null or contain the key "
                              f"'{KAFKA_OFFSET_KEY}'")
        else:
            parsed[tp] = _as_int(offset[KAFKA_OFFSET_KEY], "offset", KAFKA_OFFSET_KEY, _LONG_RANGE)
    return parsed


def _modified(reset: bool, handled_by_connector: bool) -> dict[str, str]:
    """Kafka's ``Worker.completeModifyOffsetsCallback`` message."""
    verb = "reset" if reset else "altered"
    if handled_by_connector:
        return {"message": f"The offsets for this connector have been {verb} successfully"}
    return {"message": f"The Connect framework-managed offsets for this connector have been {verb} "
                       f"successfully. However, if this connector manages offsets externally, they will need to "
                       f"be manually {verb} in the system that the connector uses."}


def alter_offsets(connector: str, offsets: Sequence[Mapping[str, Any]] | None, worker_props: Mapping[str, Any],
                  *, sink: bool = False, check: OffsetsCheck | None = None, group: str | None = None,
                  connector_props: Mapping[str, Any] | None = None) -> dict[str, str]:
    """Write KIP-875 offsets (a PATCH body's ``offsets`` list), or reset them all when None.

    Source connectors: each entry becomes an offsets-store record (a null offset a tombstone);
    a reset tombstones every partition the store holds for ``connector``. Sink connectors:
    the consumer group (``group``, else ``connect-<connector>``) is altered; a reset deletes it. ``check``
    is the connector's ``alter_offsets`` hook, called first with the parsed offsets (source
    partitions as compact JSON text, sink ones as TopicPartition); a ConfigError it raises
    refuses the request. Returns Kafka's ``{"message": ...}``; raises ConfigError for malformed
    offsets and ConnectError when the write fails. The caller makes sure the connector is stopped.
    Source offsets go through the connector's view (``connector_props``' ``offsets.storage.topic``).
    """
    if offsets is not None and not offsets:
        raise ConfigError("Partitions / offsets need to be provided for an alter offsets request")
    if sink:
        return _alter_sink_offsets(connector, offsets, worker_props, check, group or consumer_group_id(connector))
    return _alter_source_offsets(connector, offsets, worker_props, check, connector_props)


def _alter_source_offsets(connector: str, offsets: Sequence[Mapping[str, Any]] | None,
                          worker_props: Mapping[str, Any], check: OffsetsCheck | None,
                          connector_props: Mapping[str, Any] | None) -> dict[str, str]:
    with connector_offsets(connector_props, worker_props) as store:
        if offsets is None:
            pairs: list[tuple[Any, Any]] = [(p, None) for p in store.connector_partitions(connector)]
        else:
            pairs = _entries(offsets)
        for partition, offset in pairs:
            if partition is None and offsets is not None:
                raise ConfigError("Source partitions may not be null")
            if partition is not None and not isinstance(partition, Mapping) \
                    or offset is not None and not isinstance(offset, Mapping):
                raise ConfigError(f"Source partitions and offsets must be JSON objects (or null), got "
                                  f"partition {partition!r} with offset {offset!r}")
        records = {encode_key(connector, p): encode_value(o) for p, o in pairs}  # DataError: bad values
        _check_record_sizes(records, max_record_bytes(worker_props))
        handled = check({_json_text(p): o for p, o in pairs}) if check else False
        if records:
            store.set(records).result(60)
    log.info("%s %d source partition offsets of connector %s", "Reset" if offsets is None else "Altered",
             len(records), connector)
    return _modified(offsets is None, handled)


def _check_record_sizes(records: Mapping[bytes, bytes | None], limit: int) -> None:
    """Refuse, before anything is written, an offset record too large for one Kafka message."""
    for key, value in records.items():
        size = len(key) + len(value or b"")
        if size > limit:
            field = "partition" if len(key) >= len(value or b"") else "offset"
            raise ConfigError(f"A source {field} in the provided offsets makes an offsets record of {size} bytes, "
                              f"over the {limit}-byte limit on one Kafka message (the worker's "
                              f"max.request.size / message.max.bytes): source partitions and offsets must be small "
                              f"JSON objects")


def _json_text(partition: Mapping[str, Any] | None) -> str:
    return orjson.dumps(partition).decode()


def _alter_sink_offsets(connector: str, offsets: Sequence[Mapping[str, Any]] | None,
                        worker_props: Mapping[str, Any], check: OffsetsCheck | None, group: str) -> dict[str, str]:
    requested = None if offsets is None else parse_sink_offsets(offsets)  # 400s before any I/O
    admin = _admin(worker_props)
    if requested is None:  # a reset: the hook sees every committed partition, as in Kafka
        handled = check(dict.fromkeys(_current_group_offsets(admin, group))) if check else False
        _delete_group(admin, group, connector, "reset")
    elif any(offset is None for offset in requested.values()):
        handled = check(requested) if check else False
        # confluent-kafka has no DeleteConsumerGroupOffsets: delete the group, then commit back
        # what stays (the connector is stopped, so the group has no members to lose).
        kept = {tp: o for tp, o in _current_group_offsets(admin, group).items() if tp not in requested}
        kept.update((tp, o) for tp, o in requested.items() if o is not None)
        _delete_group(admin, group, connector, "alter")
        _commit_group(admin, group, connector, kept)
    else:
        handled = check(requested) if check else False
        _commit_group(admin, group, connector, {tp: o for tp, o in requested.items() if o is not None})
    log.info("%s consumer group %s offsets of connector %s", "Reset" if offsets is None else "Altered",
             group, connector)
    return _modified(offsets is None, handled)


def _current_group_offsets(admin: AdminClient, group: str) -> dict[TopicPartition, int]:
    try:
        found = list_group_offsets(admin, group, _TIMEOUT_S)
    except KafkaException as exc:
        raise ConnectError(f"Failed to list the offsets of consumer group {group}: {exc}") from exc
    return {TopicPartition(tp.topic, tp.partition): tp.offset for tp in found.topic_partitions if tp.offset >= 0}


def _kafka_error(exc: BaseException) -> KafkaError | None:
    error = exc.args[0] if isinstance(exc, KafkaException) and exc.args else None
    return error if isinstance(error, KafkaError) else None


def _delete_group(admin: AdminClient, group: str, connector: str, verb: str) -> None:
    """Delete ``group``; a missing group is fine (a reset is idempotent, as in Kafka)."""
    try:
        admin.delete_consumer_groups([group], request_timeout=_TIMEOUT_S)[group].result(_TIMEOUT_S)
    except KafkaException as exc:
        error = _kafka_error(exc)
        code = error.code() if error else None
        if code == KafkaError.GROUP_ID_NOT_FOUND:
            return
        if code == KafkaError.NON_EMPTY_GROUP:
            raise ConnectError(_ZOMBIES.format(verb=verb, name=connector)) from exc
        raise ConnectError(f"Failed to {verb} consumer group offsets for sink connector {connector}: "
                           f"{exc}") from exc


def _commit_group(admin: AdminClient, group: str, connector: str, offsets: Mapping[TopicPartition, int]) -> None:
    """Commit ``offsets`` for ``group`` through the admin client (Kafka's ``alterConsumerGroupOffsets``)."""
    if not offsets:
        return
    request = ConsumerGroupTopicPartitions(
        group, [KafkaTopicPartition(tp.topic, tp.partition, offset) for tp, offset in sorted(offsets.items())])
    try:
        result = admin.alter_consumer_group_offsets([request], request_timeout=_TIMEOUT_S)[group].result(_TIMEOUT_S)
        errors = [(tp, tp.error) for tp in result.topic_partitions if tp.error is not None]
    except KafkaException as exc:
        errors = [(None, _kafka_error(exc) or exc)]
    if not errors:
        return
    codes = {error.code() for _, error in errors if isinstance(error, KafkaError)}
    if codes & {KafkaError.UNKNOWN_MEMBER_ID, KafkaError.GROUP_SUBSCRIBED_TO_TOPIC}:
        raise ConnectError(_ZOMBIES.format(verb="alter", name=connector))
    raise ConnectError(f"Failed to alter consumer group offsets for connector {connector}: "
                       f"{'; '.join(f'{tp.topic}-{tp.partition}: {e}' if tp else str(e) for tp, e in errors)}")

"""librdkafka client configs for a task, built from worker and connector properties.

Kafka Connect gives a worker's ``producer.*``, ``consumer.*`` and ``admin.*`` properties to
the clients of every task, and a connector's ``producer.override.*`` (etc.) to its own tasks'
clients (KIP-458, with the default ``All`` override policy). Kopycat does the same; property
names are librdkafka's, which equal the Java client's for the common ones (``acks``,
``linger.ms``, ``compression.type``, ``security.protocol``, ``sasl.mechanism``...). Java-only
names that librdkafka would reject are translated or dropped here, so a Kafka Connect
worker.properties works unchanged.

Settings the engine's guarantees depend on are *forced* (a user's different value is replaced
with a warning), as Kafka's ``ConnectUtils.ensureProperty`` does.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, Final

__all__ = [
    "GROUP_ID_OVERRIDE_CONFIG", "SINK_CONSUMER_DEFAULTS", "SOURCE_PRODUCER_DEFAULTS", "SOURCE_PRODUCER_FORCED",
    "client_config", "consumer_group_id", "ensure_properties", "resets_to_latest",
]

log = logging.getLogger(__name__)

_JAVA_ONLY: Final = frozenset({
    "key.serializer", "value.serializer", "key.deserializer", "value.deserializer",
    "buffer.memory", "interceptor.classes", "metric.reporters", "partitioner.class",
})
_RENAMED: Final = {"max.request.size": "message.max.bytes"}

SOURCE_PRODUCER_DEFAULTS: Final[Mapping[str, Any]] = {
    "linger.ms": 5,
    "batch.num.messages": 10_000,
    "queue.buffering.max.messages": 500_000,
    "delivery.report.only.error": True,  # acks are tracked with a flush barrier, see source_runner
}
SOURCE_PRODUCER_FORCED: Final[Mapping[str, Any]] = {
    # Kafka Connect's producer: acks=all and no reordering, or a committed offset could cover a
    # record that was never written. Idempotence keeps order with 5 requests in flight.
    "acks": "all",
    "enable.idempotence": True,
    # The Java default partitioner, so keyed records land where Kafka Connect would put them.
    "partitioner": "murmur2_random",
}
SINK_CONSUMER_DEFAULTS: Final[Mapping[str, Any]] = {
    "auto.offset.reset": "earliest",  # Kafka Connect's sink default
    "fetch.queue.backoff.ms": 10,  # librdkafka's default stalls ~1 s whenever the queue fills
}


GROUP_ID_OVERRIDE_CONFIG = "consumer.override.group.id"
_LATEST_RESETS: Final = frozenset({"latest", "largest", "end"})
"""librdkafka's names of ``auto.offset.reset=latest``."""


def resets_to_latest(consumer_config: Mapping[str, Any]) -> bool:
    """Whether a consumer without a committed offset starts at the log end (``auto.offset.reset`` latest),
    so a live run never copies what was there before it (the end of a backfill window depends on it)."""
    return str(consumer_config.get("auto.offset.reset", "earliest")).lower() in _LATEST_RESETS


def consumer_group_id(connector: str, connector_props: Mapping[str, Any] | None = None) -> str:
    """A sink connector's consumer group: ``connect-<name>`` (``SinkUtils.consumerGroupId``) unless
    the connector sets ``consumer.override.group.id``, which Kafka's ``Worker`` honours for the
    task's consumer and for the offsets endpoints alike (KIP-458, KIP-875)."""
    override = str((connector_props or {}).get(GROUP_ID_OVERRIDE_CONFIG) or "").strip()
    return override or f"connect-{connector}"


def _translated(props: Mapping[str, Any], prefix: str) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for key, value in props.items():
        if not key.startswith(prefix):
            continue
        name = key[len(prefix):]
        if name in _JAVA_ONLY:
            log.info("Ignoring %s: a Java client setting with no librdkafka equivalent", key)
            continue
        found[_RENAMED.get(name, name)] = value
    return found


def client_config(worker_props: Mapping[str, Any], connector_props: Mapping[str, Any], client: str,
                  *, defaults: Mapping[str, Any] | None = None,
                  forced: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The config of one client (``producer``, ``consumer`` or ``admin``) of a task.

    Precedence, lowest first: ``defaults``, ``bootstrap.servers`` and the worker's ``<client>.*``
    keys, the connector's ``<client>.override.*`` keys, then ``forced``.
    """
    config: dict[str, Any] = dict(defaults or {})
    servers = worker_props.get("bootstrap.servers")
    if servers:
        config["bootstrap.servers"] = ",".join(servers) if isinstance(servers, list | tuple) else servers
    config.update(_translated(worker_props, f"{client}."))
    config.update(_translated(connector_props, f"{client}.override."))
    return ensure_properties(config, forced or {}, client)


def ensure_properties(config: dict[str, Any], forced: Mapping[str, Any], client: str) -> dict[str, Any]:
    """``config`` with ``forced`` applied, warning where a user's value is replaced
    (Kafka's ``ConnectUtils.ensureProperty``)."""
    for key, value in forced.items():
        if key in config and str(config[key]).lower() != str(value).lower():
            log.warning("Ignoring %s=%s for the %s: Kopycat requires %s=%s", key, config[key], client,
                        key, value)
        config[key] = value
    return config

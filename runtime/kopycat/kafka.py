"""librdkafka client configs for a task, built from worker and connector properties.

Kafka Connect gives a worker's ``producer.*``, ``consumer.*`` and ``admin.*`` properties to
the clients of every task, and a connector's ``producer.override.*`` (etc.) to its own tasks'
clients (KIP-458, with the default ``All`` override policy). Kopycat does the same; property
names are librdkafka's, which equal the Java client's for the common ones (``acks``,
``linger.ms``, ``compression.type``, ``security.protocol``, ``sasl.mechanism``...). Java-only
names that librdkafka would reject are translated or dropped here, so a Kafka Connect
worker.properties works unchanged: every client config goes through :func:`librdkafka_config`,
which also translates the Java security settings (JAAS line, key stores; see
:mod:`kopycat.client_security`). Scoped as Kafka's ``Worker`` scopes them: the top-level security
keys secure the worker's own clients (:func:`worker_client_config`) and every admin client, a task's
producer and consumer see only ``producer.*``/``consumer.*`` and their ``*.override.*``.

Settings the engine's guarantees depend on are *forced* (a user's different value is replaced
with a warning), as Kafka's ``ConnectUtils.ensureProperty`` does.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, Final

from kopycat.client_security import (
    AUTH_FAILURE_TIMEOUT_MS_CONFIG,
    AUTH_FAILURE_TIMEOUT_MS_DEFAULT,
    AuthenticationWatch,
    is_security_key,
    translate_security,
)

__all__ = [
    "GROUP_ID_OVERRIDE_CONFIG", "SINK_CONSUMER_DEFAULTS", "SOURCE_PRODUCER_DEFAULTS", "SOURCE_PRODUCER_FORCED",
    "auth_failure_timeout_s", "client_config", "client_security_settings", "consumer_group_id", "ensure_properties",
    "librdkafka_config", "resets_to_latest", "worker_client_config",
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
    # Fewer, larger fetches than Kafka's 1 MiB: serving a storage sink 1 KB records cost the broker
    # ~0.5 µs CPU per record, ~0.33 at 4 MiB, and a sink shares its cores with the broker on small
    # machines; fetch.max.bytes (50 MiB) and queued.max.messages.kbytes still bound the memory.
    "max.partition.fetch.bytes": 4 << 20,
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


def _client_properties(props: Mapping[str, Any], prefix: str, origin: dict[str, str]) -> dict[str, Any]:
    """The ``prefix``-ed keys of ``props`` without the prefix; ``origin`` records the key each came from."""
    found: dict[str, Any] = {}
    for key, value in props.items():
        if not key.startswith(prefix):
            continue
        name = key[len(prefix):]
        if prefix == "" and not is_security_key(name):
            continue
        if name in _JAVA_ONLY:
            log.info("Ignoring %s: a Java client setting with no librdkafka equivalent", key)
            continue
        name = _RENAMED.get(name, name)
        found[name] = value
        origin[name] = key
    return found


def auth_failure_timeout_s(worker_props: Mapping[str, Any]) -> float:
    """``kopycat.auth.failure.timeout.ms`` of the worker, in seconds."""
    return float(worker_props.get(AUTH_FAILURE_TIMEOUT_MS_CONFIG) or AUTH_FAILURE_TIMEOUT_MS_DEFAULT) / 1000


def librdkafka_config(config: Mapping[str, Any], origin: Mapping[str, str] | None = None, *,
                      auth_timeout_s: float = AUTH_FAILURE_TIMEOUT_MS_DEFAULT / 1000) -> dict[str, Any]:
    """One client's settings as librdkafka takes them: Java security settings translated
    (:func:`~kopycat.client_security.translate_security`) and, on a secured connection, an
    ``error_cb`` that fails the client's caller once logins are refused for ``auth_timeout_s``.

    Every builder of a client config calls this last; a config translated twice is unchanged.
    """
    found = translate_security(config, origin)
    protocol = str(found.get("security.protocol", "PLAINTEXT")).upper()
    if protocol != "PLAINTEXT" and "error_cb" not in found:
        found["error_cb"] = AuthenticationWatch(found, auth_timeout_s)
    return found


def worker_client_config(worker_props: Mapping[str, Any]) -> dict[str, Any]:
    """The settings of the worker's own clients (the offset, config and status stores): its
    ``bootstrap.servers`` and top-level security keys, as Kafka's ``KafkaBasedLog`` gets them."""
    origin: dict[str, str] = {}
    config = _client_properties(worker_props, "", origin)
    servers = worker_props.get("bootstrap.servers")
    if servers:
        config["bootstrap.servers"] = ",".join(servers) if isinstance(servers, list | tuple) else servers
    return librdkafka_config(config, origin, auth_timeout_s=auth_failure_timeout_s(worker_props))


def client_config(worker_props: Mapping[str, Any], connector_props: Mapping[str, Any], client: str,
                  *, defaults: Mapping[str, Any] | None = None,
                  forced: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The config of one client (``producer``, ``consumer`` or ``admin``) of a task.

    Precedence, lowest first: ``defaults``, ``bootstrap.servers`` (and, for the admin client, the
    worker's top-level security keys, as Kafka's ``Worker.adminConfigs``), the worker's ``<client>.*``
    keys, the connector's ``<client>.override.*`` keys, then ``forced``.
    """
    config: dict[str, Any] = dict(defaults or {})
    origin: dict[str, str] = {}
    servers = worker_props.get("bootstrap.servers")
    if servers:
        config["bootstrap.servers"] = ",".join(servers) if isinstance(servers, list | tuple) else servers
    if client == "admin":
        config.update(_client_properties(worker_props, "", origin))
    config.update(_client_properties(worker_props, f"{client}.", origin))
    config.update(_client_properties(connector_props, f"{client}.override.", origin))
    translated = librdkafka_config(config, origin, auth_timeout_s=auth_failure_timeout_s(worker_props))
    return ensure_properties(translated, forced or {}, client)


def client_security_settings(worker_props: Mapping[str, Any], connector_props: Mapping[str, Any],
                             client: str) -> dict[str, Any]:
    """The security settings (``security.protocol``, ``sasl.*``, ``ssl.*``) of one client of a task, with the
    precedence of :func:`client_config` but untranslated: the Java keys, for a Java client (Spark's Kafka
    source) or for a client made in another process, which translates them itself."""
    origin: dict[str, str] = {}
    config = _client_properties(worker_props, "", origin) if client == "admin" else {}
    config.update(_client_properties(worker_props, f"{client}.", origin))
    config.update(_client_properties(connector_props, f"{client}.override.", origin))
    return {key: value for key, value in config.items() if is_security_key(key)}


def ensure_properties(config: dict[str, Any], forced: Mapping[str, Any], client: str) -> dict[str, Any]:
    """``config`` with ``forced`` applied, warning where a user's value is replaced
    (Kafka's ``ConnectUtils.ensureProperty``)."""
    for key, value in forced.items():
        if key in config and str(config[key]).lower() != str(value).lower():
            log.warning("Ignoring %s=%s for the %s: Kopycat requires %s=%s", key, config[key], client,
                        key, value)
        config[key] = value
    return config

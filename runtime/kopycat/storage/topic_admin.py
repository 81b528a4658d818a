"""Creating and checking Kopycat's internal topics (Kafka Connect's ``TopicAdmin``).

The offsets, config and status topics must be compacted: with ``cleanup.policy=delete`` the
broker would eventually delete the only record holding a connector's offset. As Kafka Connect
does, a topic is created with the settings it needs if it is missing, and an existing topic is
checked and refused when it is not compact-only.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from typing import Any, Final, TypeVar

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

from kopycat.api.errors import ConfigError, ConnectError
from kopycat.client_security import AuthorizationFailedError

__all__ = ["admin_result", "check_topic_visible", "create_topic_if_missing", "partition_count", "retrying",
           "topic_cleanup_policy", "verify_topic_cleanup_policy_only_compact"]

log = logging.getLogger(__name__)

_T = TypeVar("_T")

# Errors a broker answers while leadership of a new (or moving) partition settles; and librdkafka's _NOENT
# ("Failed to query partition leaders: No leaders found"), what list_offsets says while the only broker
# is down or restarting (Kafka's admin client retries LEADER_NOT_AVAILABLE there).
_TRANSIENT: Final = frozenset({
    KafkaError.NOT_LEADER_FOR_PARTITION, KafkaError.LEADER_NOT_AVAILABLE, KafkaError.UNKNOWN_LEADER_EPOCH,
    KafkaError.FENCED_LEADER_EPOCH, KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError.REQUEST_TIMED_OUT,
    KafkaError.NOT_CONTROLLER, KafkaError._TIMED_OUT, KafkaError._TRANSPORT, KafkaError._NOENT,
})


def admin_result(admin: AdminClient, future: Future[_T], timeout_s: float) -> _T:
    """``future.result(timeout_s)``, serving ``admin``'s callbacks while it waits.

    An admin client's ``error_cb`` runs only inside ``poll()``; on a secured cluster it is where a
    refused login ends the wait (:class:`~kopycat.client_security.AuthenticationWatch`) rather than the
    request timing out with no reason given.
    """
    deadline = time.monotonic() + timeout_s
    while not future.done() and time.monotonic() < deadline:
        admin.poll(0.1)
    return future.result(timeout=max(0.0, deadline - time.monotonic()))


def retrying(call: Callable[[], _T], what: str, timeout_s: float) -> _T:
    """``call()``, again after transient broker errors until ``timeout_s`` has passed.

    As Kafka Connect's ``RetryUtil.retryUntilTimeout`` around admin calls; other errors, and
    the last transient one at the deadline, raise ConnectError naming ``what``.
    """
    deadline = time.monotonic() + timeout_s
    backoff = 0.05
    while True:
        try:
            return call()
        except KafkaException as exc:
            error: KafkaError = exc.args[0]
            transient = error.retriable() or error.code() in _TRANSIENT
            if not transient or time.monotonic() + backoff > deadline:
                raise ConnectError(f"Failed to {what}: {error.str()} ({error.name()})") from exc
            log.debug("Retrying to %s after %s", what, error.str())
            time.sleep(backoff)
            backoff = min(backoff * 2, 1.0)


_NOT_ALLOWED: Final = frozenset({
    KafkaError.TOPIC_AUTHORIZATION_FAILED, KafkaError.CLUSTER_AUTHORIZATION_FAILED,
    KafkaError.UNSUPPORTED_VERSION, KafkaError._UNSUPPORTED_FEATURE,
})


def create_topic_if_missing(admin: AdminClient, topic: str, *, partitions: int, replication_factor: int,
                            config: Mapping[str, str], timeout_s: float = 30.0) -> bool:
    """Create ``topic`` unless it exists; True when this call created it.

    ``partitions`` and ``replication_factor`` may be -1 for the broker's defaults
    (``num.partitions``, ``default.replication.factor``), as in Kafka Connect (KIP-464).
    """
    new_topic = NewTopic(topic, num_partitions=partitions, replication_factor=replication_factor,
                         config=dict(config))

    def create() -> bool:
        try:
            admin_result(admin, admin.create_topics([new_topic], request_timeout=timeout_s)[topic], timeout_s)
        except KafkaException as exc:
            if exc.args[0].code() == KafkaError.TOPIC_ALREADY_EXISTS:
                return False
            raise
        return True

    try:
        created = retrying(create, f"create topic '{topic}' ({partitions} partitions, replication factor "
                                   f"{replication_factor}, {dict(config)})", timeout_s)
    except ConnectError as exc:
        cause = exc.__cause__
        if isinstance(cause, KafkaException) and cause.args[0].code() in (
                KafkaError.TOPIC_AUTHORIZATION_FAILED, KafkaError.CLUSTER_AUTHORIZATION_FAILED):
            raise AuthorizationFailedError(f"{exc}: the principal lacks the Create operation on topic '{topic}' "
                                           f"(or on the cluster); grant it, or create the topic beforehand"
                                           ) from cause
        if isinstance(cause, KafkaException) and cause.args[0].code() == KafkaError.INVALID_REPLICATION_FACTOR:
            raise ConnectError(f"{exc}. The replication factor is larger than the number of brokers: lower "
                               f"it (1 for a single broker), or use -1 for the broker's "
                               f"default.replication.factor.") from cause
        raise
    if created:
        log.info("Created topic '%s' with %s partitions, replication factor %s and %s",
                 topic, partitions, replication_factor, dict(config))
    return created


def topic_cleanup_policy(admin: AdminClient, topic: str, timeout_s: float = 30.0) -> set[str]:
    """The topic's ``cleanup.policy`` values, lower-cased.

    Empty when the principal may not describe the topic's configuration or the broker cannot
    (Kafka's ``TopicAdmin.topicCleanupPolicy``); transient errors are retried, others raise.
    """
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic)

    def describe() -> dict[str, Any]:
        entries: dict[str, Any] = admin_result(
            admin, admin.describe_configs([resource], request_timeout=timeout_s)[resource], timeout_s)
        return entries

    try:
        entries = retrying(describe, f"describe the configuration of topic '{topic}'", timeout_s)
    except ConnectError as exc:
        cause = exc.__cause__
        if isinstance(cause, KafkaException) and cause.args[0].code() in _NOT_ALLOWED:
            log.info("Unable to read the configuration of topic '%s': %s", topic, cause)
            return set()
        raise
    entry = entries.get("cleanup.policy")
    if entry is None or entry.value is None:
        return set()
    return {policy.strip().lower() for policy in entry.value.split(",") if policy.strip()}


def verify_topic_cleanup_policy_only_compact(admin: AdminClient, topic: str, worker_topic_config: str,
                                             topic_purpose: str, timeout_s: float = 30.0) -> bool:
    """Refuse a topic whose ``cleanup.policy`` is not exactly ``compact``.

    Returns False when the policy could not be read (as Kafka: the principal may lack the
    DescribeConfigs permission); raises ConfigError naming the topic, its policy and the fix.
    """
    policies = topic_cleanup_policy(admin, topic, timeout_s)
    if not policies:
        log.info("Unable to verify that the cleanup policy of topic '%s' is 'compact', either because "
                 "the broker is an older version or because the Kafka principal used for internal "
                 "topics lacks permission to describe topic configurations.", topic)
        return False
    if policies != {"compact"}:
        found = ",".join(sorted(policies))
        raise ConfigError(
            f"Topic '{topic}' supplied via the '{worker_topic_config}' property is required to have "
            f"'cleanup.policy=compact' to guarantee consistency and durability of {topic_purpose}, but "
            f"found the topic currently has 'cleanup.policy={found}'. Continuing would likely result "
            f"in eventually losing {topic_purpose} and problems restarting connectors in the future. "
            f"Change the '{worker_topic_config}' property in the worker configuration to use a topic "
            f"with 'cleanup.policy=compact' (Kopycat creates it if missing), or change this topic's "
            f"policy: kafka-configs.sh --bootstrap-server <broker> --alter --entity-type topics "
            f"--entity-name {topic} --add-config cleanup.policy=compact",
            key=worker_topic_config)
    return True


def partition_count(admin: AdminClient, topic: str, timeout_s: float = 30.0) -> int:
    """How many partitions ``topic`` has, waiting for a topic just created to show up with leaders."""
    deadline = time.monotonic() + timeout_s
    problem = "not found"
    while True:
        try:
            metadata = admin.list_topics(topic, timeout=min(5.0, timeout_s)).topics.get(topic)
        except KafkaException as exc:
            metadata, problem = None, str(exc)
        if metadata is not None and metadata.error is None and metadata.partitions and all(
                p.error is None and p.leader >= 0 for p in metadata.partitions.values()):
            return len(metadata.partitions)
        if metadata is not None and metadata.error is not None:
            problem = metadata.error.str()
        if time.monotonic() >= deadline:
            raise ConnectError(f"Topic '{topic}' has no usable partitions after {timeout_s:.0f} s: {problem}")
        time.sleep(0.1)


def check_topic_visible(admin: AdminClient, topic: str, operation: str, timeout_s: float = 10.0) -> None:
    """Raise AuthorizationFailedError when the cluster hides ``topic`` from this principal.

    A listing of all topics leaves out those a principal may not Describe, so a missing ACL looks like a
    missing topic; asking for the topic by name gets the broker's TOPIC_AUTHORIZATION_FAILED, which a
    Java client raises as ``TopicAuthorizationException`` naming the topic. Call it on secured clusters
    only: on a PLAINTEXT one a request by name may auto-create the topic.
    """
    try:
        metadata = admin.list_topics(topic, timeout=timeout_s).topics.get(topic)
    except KafkaException:
        return
    if metadata is not None and metadata.error is not None and \
            metadata.error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED:
        raise AuthorizationFailedError(
            f"Not authorized to access topic '{topic}' ({metadata.error.str()}): the principal lacks the Describe "
            f"and {operation} operations on topic '{topic}'; grant them with kafka-acls.sh --add "
            f"--allow-principal <principal> --operation Describe --operation {operation} --topic {topic}")

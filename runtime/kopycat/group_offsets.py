"""A consumer group's committed offsets, read around a librdkafka crash.

librdkafka (seen from 2.4 to 2.16) follows a null consumer-group handle when the answer to an
admin ``ListConsumerGroupOffsets`` carries NOT_COORDINATOR or COORDINATOR_LOAD_IN_PROGRESS
(librdkafka#5040): the whole process dies with SIGSEGV, a REST server or an Airflow worker with
it. The broker answers so while the group's coordinator is not ready: the first group of a fresh
cluster (``__consumer_offsets`` just created), or a coordinator moving to another broker.

So the coordinator is asked first with ``DescribeConsumerGroups``, whose coordinator errors come
back as results, until it answers; only then are the offsets listed. What is left is a
coordinator moving between the two calls. Every ``listConsumerGroupOffsets`` of Kopycat (KIP-875
offsets, lag, MM2 checkpoints) goes through :func:`list_group_offsets`.

A consumer's own ``committed()`` does not crash, but answers the same "not ready" errors as
exceptions on a fresh cluster; :func:`consumer_committed` retries them, as Kafka's consumer does.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Final

from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, KafkaError, KafkaException
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import AdminClient

__all__ = ["consumer_committed", "list_group_offsets", "wait_for_group_coordinator"]

log = logging.getLogger(__name__)

_NOT_READY: Final = frozenset({KafkaError.COORDINATOR_LOAD_IN_PROGRESS, KafkaError.COORDINATOR_NOT_AVAILABLE,
                               KafkaError.NOT_COORDINATOR})
_BACKOFF_S: Final = 0.25


def wait_for_group_coordinator(admin: AdminClient, group: str, timeout_s: float) -> None:
    """Return once ``group``'s coordinator answers (any answer but "not ready"), or at the deadline."""
    deadline = time.monotonic() + timeout_s
    while True:
        left = deadline - time.monotonic()
        try:
            admin.describe_consumer_groups([group], request_timeout=max(left, 1.0))[group].result(max(left, 1.0))
            return
        except KafkaException as exc:
            error = exc.args[0] if exc.args and isinstance(exc.args[0], KafkaError) else None
            if error is None or error.code() not in _NOT_READY or time.monotonic() + _BACKOFF_S > deadline:
                return  # the coordinator answered (e.g. no such group), or the listing reports the failure
            log.debug("The coordinator of consumer group %s is not ready (%s); asking again", group, error.str())
        time.sleep(_BACKOFF_S)


def list_group_offsets(admin: AdminClient, group: str, timeout_s: float) -> ConsumerGroupTopicPartitions:
    """``admin.list_consumer_group_offsets`` for one whole group, once its coordinator is ready.

    Raises KafkaException as that call does.
    """
    wait_for_group_coordinator(admin, group, timeout_s)
    request = [ConsumerGroupTopicPartitions(group)]
    return admin.list_consumer_group_offsets(request, request_timeout=timeout_s)[group].result(timeout_s)


def consumer_committed(consumer: Consumer, partitions: list[KafkaTopicPartition], timeout_s: float,
                       stopping: threading.Event | None = None) -> list[KafkaTopicPartition]:
    """``consumer.committed(partitions)``, retried while the group coordinator is not ready (or on any
    retriable error) until ``timeout_s`` or ``stopping``; the last error is raised.

    On a just-started single broker the first lookup answers NOT_COORDINATOR while
    ``__consumer_offsets`` is being created; Kafka's consumer retries those.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return list(consumer.committed(partitions, timeout=max(0.1, deadline - time.monotonic())))
        except KafkaException as exc:
            error = exc.args[0]
            not_ready = error.code() in _NOT_READY or error.retriable()
            if not not_ready or time.monotonic() >= deadline or (stopping is not None and stopping.is_set()):
                raise
            log.info("The consumer group is not ready, retrying: %s", exc)
            time.sleep(0.2)

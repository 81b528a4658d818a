"""Partition counts and earliest/end offsets of many topic-partitions, in one admin round each.

What a sink's plan (its end offsets) and the lag measure both need. ``ListOffsets`` goes to every
partition leader at once (the admin client groups the partitions by leader), where a consumer's
``get_watermark_offsets`` asks one partition per round trip. The end is the one a consumer with
the given isolation level can read to: the last stable offset for ``read_committed`` (librdkafka's
default, so a sink's), the high watermark otherwise, as Kafka's ``ListOffsets`` answers.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from concurrent.futures import Future
from typing import Any, Final

from confluent_kafka import IsolationLevel, KafkaException
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec

from kopycat.api.errors import ConnectError

__all__ = ["TIMEOUT_S", "earliest_and_end_offsets", "end_offsets", "isolation_of", "partition_counts"]

TIMEOUT_S: Final = 30.0

Key = tuple[str, int]


def isolation_of(consumer_config: Mapping[str, Any]) -> IsolationLevel:
    """The isolation level of a consumer with this config (librdkafka's default is read_committed)."""
    level = str(consumer_config.get("isolation.level", "read_committed")).lower()
    return IsolationLevel.READ_UNCOMMITTED if level == "read_uncommitted" else IsolationLevel.READ_COMMITTED


def partition_counts(admin: AdminClient, cluster: str) -> dict[str, int]:
    """Partitions per topic that has any; ConnectError naming ``cluster`` when it does not answer."""
    try:
        metadata = admin.list_topics(timeout=TIMEOUT_S)
    except KafkaException as exc:
        raise ConnectError(f"Could not list the topics of {cluster} within {TIMEOUT_S:.0f} s: {exc}. Check "
                           f"the bootstrap servers and security settings") from None
    return {name: len(topic.partitions) for name, topic in metadata.topics.items()
            if topic.error is None and topic.partitions}


def end_offsets(admin: AdminClient, keys: Iterable[Key], isolation: IsolationLevel) -> dict[Key, int]:
    """The end offset of each ``(topic, partition)``."""
    keys = list(keys)
    return _results(_request(admin, keys, OffsetSpec.latest(), isolation)) if keys else {}


def earliest_and_end_offsets(admin: AdminClient, keys: Iterable[Key], isolation: IsolationLevel
                             ) -> tuple[dict[Key, int], dict[Key, int]]:
    """Both offsets of each ``(topic, partition)``, the two rounds in flight together."""
    keys = list(keys)
    if not keys:
        return {}, {}
    earliest = _request(admin, keys, OffsetSpec.earliest(), isolation)
    ends = _request(admin, keys, OffsetSpec.latest(), isolation)
    return _results(earliest), _results(ends)


def _request(admin: AdminClient, keys: Iterable[Key], spec: OffsetSpec, isolation: IsolationLevel
             ) -> dict[KafkaTopicPartition, Future[Any]]:
    request = {KafkaTopicPartition(topic, partition): spec for topic, partition in keys}
    return admin.list_offsets(request, isolation_level=isolation, request_timeout=TIMEOUT_S)


def _results(futures: Mapping[KafkaTopicPartition, Future[Any]]) -> dict[Key, int]:
    out = {}
    for tp, future in futures.items():
        try:
            out[(tp.topic, tp.partition)] = future.result(TIMEOUT_S).offset
        except (KafkaException, TimeoutError) as exc:
            raise ConnectError(f"Could not read the offsets of {tp.topic}-{tp.partition} within {TIMEOUT_S:.0f} s: "
                               f"{exc or 'no answer'}") from None
    return out

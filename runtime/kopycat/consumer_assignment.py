"""Assign partitions to a consumer that has already talked to the cluster, without a one-second stall.

librdkafka starts fetching an assigned partition once it knows the topic's leader from its
metadata cache. A consumer whose first requests were about something else (the group's committed
offsets, a watermark, ``offsets_for_times``) connected with metadata for no topic, so a topic
assigned afterwards waits for the client's once-a-second scan of unknown topics. Measured on the
local broker: 0.95 s from ``assign`` to the first message, 0.01 s when the topic's metadata is
asked for first. Every bounded run (an Airflow copy task) pays that second otherwise.
"""

from __future__ import annotations

from collections.abc import Sequence

from confluent_kafka import Consumer
from confluent_kafka import TopicPartition as KafkaTopicPartition

__all__ = ["assign_with_metadata"]


def assign_with_metadata(consumer: Consumer, partitions: Sequence[KafkaTopicPartition], timeout_s: float) -> None:
    """Fetch the assigned topics' metadata (one request), then assign ``partitions``."""
    topics = {tp.topic for tp in partitions}
    if len(topics) == 1:
        consumer.list_topics(next(iter(topics)), timeout=timeout_s)
    elif topics:
        consumer.list_topics(timeout=timeout_s)  # one request for all topics, not one per topic
    consumer.assign(list(partitions))

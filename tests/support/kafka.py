"""Plain confluent-kafka helpers for tests: create a topic, produce, read a topic to its end."""

from __future__ import annotations

import uuid
from typing import Any

from confluent_kafka import Consumer, Message, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic


def create_topic(bootstrap: str, topic: str, partitions: int = 1, *, client: dict[str, Any] | None = None) -> str:
    """``topic`` made on the cluster; ``client`` adds librdkafka settings (a secured cluster's)."""
    admin = AdminClient({"bootstrap.servers": bootstrap, **(client or {})})  # must outlive the future it returns
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(30)
    return topic


def produce_waiting(producer: Producer, topic: str, **kwargs: Any) -> None:
    """``producer.produce`` that waits for deliveries when librdkafka's local queue is full.

    A test producing more than ``queue.buffering.max.messages`` (100,000) records faster than a loaded
    broker acknowledges them otherwise fails with ``BufferError`` (seen in CI with 150,000 records).
    """
    while True:
        try:
            producer.produce(topic, **kwargs)
            return
        except BufferError:
            producer.poll(0.1)


def produce(bootstrap: str, topic: str, values: list[bytes], *, partition: int | None = None,
            timestamps: list[int] | None = None, keys: bool = True) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for index, value in enumerate(values):
        kwargs: dict[str, Any] = {"value": value}
        if keys:
            kwargs["key"] = str(index).encode()
        if partition is not None:
            kwargs["partition"] = partition
        if timestamps is not None:
            kwargs["timestamp"] = timestamps[index]
        produce_waiting(producer, topic, **kwargs)
    assert producer.flush(30) == 0


def consume_all(bootstrap: str, topic: str, *, committed_only: bool = False) -> list[bytes | None]:
    """Every value in ``topic`` (all partitions, partition by partition order kept), read to the end."""
    return [message.value() for message in consume_records(bootstrap, topic, committed_only=committed_only)]


def consume_records(bootstrap: str, topic: str, *, committed_only: bool = False,
                    client: dict[str, str] | None = None) -> list[Message]:
    """Every record of ``topic`` (all partitions, partition by partition order kept), read to the end;
    ``client`` adds settings (a secured cluster's).

    The end is each partition's end offset when the read starts (or its end-of-partition event, which
    is all a transactional topic's trailing control record leaves): a topic written every few hundred
    milliseconds (heartbeats) never lets the fetch reach an end-of-partition event.
    """
    consumer = Consumer({"bootstrap.servers": bootstrap, **(client or {}), "group.id": f"check-{uuid.uuid4().hex}",
                         "enable.auto.commit": False, "auto.offset.reset": "earliest",
                         "enable.partition.eof": True,
                         "isolation.level": "read_committed" if committed_only else "read_uncommitted"})
    try:
        metadata = consumer.list_topics(topic, timeout=30)
        partitions = [TopicPartition(topic, p, 0) for p in metadata.topics[topic].partitions]
        last = {p.partition: consumer.get_watermark_offsets(p, timeout=30)[1] - 1 for p in partitions}
        consumer.assign(partitions)
        left, records = {p for p, offset in last.items() if offset >= 0}, []
        while left:
            message = consumer.poll(10)
            assert message is not None, f"timed out reading {topic}"
            if message.error():
                left.discard(message.partition())
                continue
            if message.offset() >= last[message.partition()]:
                left.discard(message.partition())
            if message.offset() <= last[message.partition()]:
                records.append(message)
        return records
    finally:
        consumer.close()


def committed_offsets(bootstrap: str, group: str, topic: str, partitions: int, *,
                      client: dict[str, Any] | None = None) -> dict[int, int]:
    """The consumer group's committed offset per partition of ``topic`` (-1001 when none); ``client`` adds
    librdkafka settings."""
    from confluent_kafka import Consumer
    from confluent_kafka import TopicPartition as KafkaTopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, **(client or {})})
    try:
        found = consumer.committed([KafkaTopicPartition(topic, p) for p in range(partitions)], timeout=30)
        return {tp.partition: tp.offset for tp in found}
    finally:
        consumer.close()

"""Plain confluent-kafka helpers for mirror tests: topics of ``PARTITIONS`` partitions, records with
keys, headers and timestamps, and every partition read back in order to compare two clusters."""

from __future__ import annotations

import time
import uuid
from typing import Any

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.support.kafka import produce_waiting

__all__ = ["PARTITIONS", "Record", "create_topics", "produce", "read_partitions"]

PARTITIONS = 4
Record = tuple[bytes | None, bytes | None, list[tuple[str, bytes | None]] | None, int]


def create_topics(bootstrap: str, topics: list[str], configs: dict[str, str] | None = None, *,
                  client: dict[str, Any] | None = None) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap, **(client or {})})
    futures = admin.create_topics([NewTopic(t, PARTITIONS, 1, config=configs or {}) for t in topics])
    for future in futures.values():
        future.result(30)


def produce(bootstrap: str, topics: list[str], count: int, start: int = 0, *,
            client: dict[str, Any] | None = None) -> None:
    """``count`` records per topic with keys, repeated and null headers, and fixed timestamps; ``client`` adds
    librdkafka settings (a secured cluster's), as in every helper here."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, **(client or {})})
    base = int(time.time() * 1000) - 3_600_000  # within the topics' one-day retention
    for topic in topics:
        for i in range(start, start + count):
            headers = [("trace", f"t{i}".encode()), ("trace", b"\x00\xff"), ("empty", None)] if i % 3 else None
            produce_waiting(producer, topic, key=f"k{i}".encode(), value=f"{topic}:{i}".encode() * 3,
                            partition=i % PARTITIONS, timestamp=base + i, headers=headers)
            if i % 10_000 == 0:
                producer.poll(0)
    assert producer.flush(60) == 0


def read_partitions(bootstrap: str, topic: str, *, committed_only: bool = False,
                    client: dict[str, Any] | None = None) -> dict[int, list[Record]]:
    """Every record of every partition, in order, with its key, value, headers and timestamp.

    ``committed_only`` reads as a read_committed consumer: records of aborted transactions are left out.
    """
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"check-{uuid.uuid4().hex}",
                         "enable.auto.commit": False, "enable.partition.eof": True,
                         "isolation.level": "read_committed" if committed_only else "read_uncommitted",
                         **(client or {})})
    try:
        consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
        left, out = set(range(PARTITIONS)), {p: [] for p in range(PARTITIONS)}  # type: dict[int, list[Record]]
        deadline = time.monotonic() + 60
        while left:
            assert time.monotonic() < deadline, f"timed out reading {topic}: partitions {left} not at their end"
            # consume() waits its whole timeout for a short batch: a short timeout, looped to the ends
            for message in consumer.consume(10_000, timeout=0.2):
                if message.error():
                    left.discard(message.partition())
                    continue
                out[message.partition()].append((message.key(), message.value(), message.headers(),
                                                 message.timestamp()[1]))
        return out
    finally:
        consumer.close()

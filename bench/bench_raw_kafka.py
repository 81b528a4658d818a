"""The physical limit: raw confluent-kafka produce and consume of 1,000,000 x 100-byte records.

Every Kafka-facing benchmark later is a ratio against these two numbers, measured against the
same broker in the same run.
"""

from __future__ import annotations

import time
import uuid

from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from bench.common import BenchResult, shared_broker

RECORDS = 1_000_000
VALUE = b"x" * 100

# Client settings every bench and runner starts from (DESIGN.md §8): big batches, and a short
# fetch queue backoff, without which librdkafka stalls ~1 s whenever its fetch queue fills.
PRODUCER_SETTINGS = {"linger.ms": 20, "batch.size": 1_000_000,
                     "queue.buffering.max.messages": 2_000_000,
                     "queue.buffering.max.kbytes": 2_000_000}
CONSUMER_SETTINGS = {"fetch.queue.backoff.ms": 10, "enable.auto.commit": False,
                     "auto.offset.reset": "earliest"}


def produce(bootstrap: str, topic: str, records: int = RECORDS) -> float:
    """Produce `records` values as fast as the client allows; records/s including the final flush."""
    producer = Producer({"bootstrap.servers": bootstrap, **PRODUCER_SETTINGS})
    send, poll = producer.produce, producer.poll
    started = time.perf_counter()
    for i in range(records):
        send(topic, VALUE)
        if i & 0xFFFF == 0:
            poll(0)
    if producer.flush(120) != 0:
        raise RuntimeError("raw producer left records undelivered")
    return records / (time.perf_counter() - started)


def consume(bootstrap: str, topic: str, records: int = RECORDS) -> float:
    """Consume `records` values in batches; records/s from the first batch asked for."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": uuid.uuid4().hex,
                         **CONSUMER_SETTINGS})
    consumer.subscribe([topic])
    seen = 0
    started = time.perf_counter()
    while seen < records:
        seen += len(consumer.consume(num_messages=10_000, timeout=1.0))
        if time.perf_counter() - started > 300:
            raise RuntimeError(f"raw consumer saw only {seen} of {records} records in 300 s")
    elapsed = time.perf_counter() - started
    consumer.close()
    return records / elapsed


def run() -> list[BenchResult]:
    bootstrap = shared_broker().bootstrap_servers
    topic = f"bench-raw-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})  # keep alive until the result is in
    admin.create_topics([NewTopic(topic, num_partitions=1)])[topic].result(30)
    return [BenchResult("raw_produce_1M_x_100B", produce(bootstrap, topic)),
            BenchResult("raw_consume_1M_x_100B", consume(bootstrap, topic))]

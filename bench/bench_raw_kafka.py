"""The physical limit: the best a plain confluent-kafka loop does with 1,000,000 x 100-byte records.

Every Kafka-facing benchmark later is a ratio against these anchors, measured against the same
broker in the same run, so they must not flatter Kopycat. Each is as fair as a plain loop gets:

- the client settings Kopycat's runners use (``kopycat.kafka``'s ``SOURCE_PRODUCER_DEFAULTS`` and
  ``SOURCE_PRODUCER_FORCED``: acks=all and idempotence, as Kafka Connect's source producer;
  ``SINK_CONSUMER_DEFAULTS`` with its short ``fetch.queue.backoff.ms``);
- the topic's metadata fetched and, for the consumer, every partition assigned from the start
  before the clock starts: no group join in the clock, as in a bounded sink run;
- the consumer reads in batches (``consume(num_messages=...)``), as the sink runner does, under
  the collector setting Kopycat's tasks run under (``young_collections_deferred``, see
  ``WorkerTask.run``): confluent-kafka's messages are tracked by the cyclic collector, and at
  CPython's default threshold a generation-0 collection every 700 messages cost the loop a third
  of its CPU (1.2 against 0.8 us per 1 kB record), a cost Kopycat's runs do not pay;
- the clock starts once the client is made and ready, where a Kopycat run's copy starts
  (``RunSummary.duration_s - start_s``, which the benches read these anchors against).

Produce and consume take turns for ``--rounds`` rounds; each one's median round counts and its
spread is printed (:func:`bench.common.median_rounds`).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from itertools import repeat
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from bench.common import (
    BenchResult,
    Measure,
    Span,
    check_count,
    delete_topic,
    median_rounds,
    rounds_lines,
    shared_broker,
    size_and_switch,
)
from kopycat.idempotent_producer import connect_idempotent
from kopycat.interpreter_settings import young_collections_deferred
from kopycat.kafka import SINK_CONSUMER_DEFAULTS, SOURCE_PRODUCER_DEFAULTS, SOURCE_PRODUCER_FORCED
from kopycat.runtime.source_produce import produce_when_room
from kopycat.runtime.task_parts import TaskId

RECORDS = 1_000_000
VALUE = b"x" * 100
CONSUME_BATCH = 5_000  # records per consume(): SinkTaskRunner's default batch_size
TIMEOUT_S = 300.0
RAW_PRODUCER = TaskId("raw-producer", 0)  # how produce_when_room names the anchor if the queue stays full

# Kopycat's source producer and sink consumer settings, as its runners start from them.
PRODUCER_SETTINGS: dict[str, Any] = {**SOURCE_PRODUCER_DEFAULTS, **SOURCE_PRODUCER_FORCED}
CONSUMER_SETTINGS: dict[str, Any] = {**SINK_CONSUMER_DEFAULTS, "enable.auto.commit": False,
                                     "enable.auto.offset.store": False}


def ready_producer(bootstrap: str, topic: str) -> Producer:
    """A producer with Kopycat's settings, its producer id asked for (as Kopycat's source runner
    does: :func:`~kopycat.idempotent_producer.connect_idempotent`; without it some rounds wait
    librdkafka's 500 ms id retry) and ``topic``'s metadata already fetched."""
    producer = Producer({"bootstrap.servers": bootstrap, **PRODUCER_SETTINGS})
    connect_idempotent(producer, "The raw producer")
    producer.list_topics(topic, timeout=30)
    return producer


def partitions(client: Producer | Consumer, topic: str) -> list[int]:
    """``topic``'s partition ids, from the broker's metadata."""
    return sorted(client.list_topics(topic, timeout=30).topics[topic].partitions)


def assigned_consumer(bootstrap: str, topic: str) -> Consumer:
    """A consumer with Kopycat's settings, every partition of ``topic`` assigned from its start."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": uuid.uuid4().hex, **CONSUMER_SETTINGS})
    consumer.assign([KafkaTopicPartition(topic, p, OFFSET_BEGINNING) for p in partitions(consumer, topic)])
    return consumer


def raw_produce(bootstrap: str, topic: str, records: int = RECORDS, value: bytes = VALUE,
                mover: str = "raw confluent-kafka Producer") -> Measure:
    """``records`` copies of ``value`` as fast as the client allows, the final flush included."""
    return produce_records(bootstrap, topic, repeat((None, value), records), mover)


def produce_records(bootstrap: str, topic: str, records: Iterable[tuple[bytes | None, bytes]],
                    mover: str = "raw confluent-kafka Producer",
                    ready: Callable[[], None] | None = None) -> Measure:
    """Each ``(key, value)`` in turn as fast as the client allows, the final flush included: the loop of
    every produce anchor, whether it sends one value N times or a source's own records' bytes.

    ``ready`` is called once the producer is made and has the topic's metadata, just before the clock
    starts: :mod:`bench.raw_processes` waits there for its parent's go, so N producers start together.
    """
    producer = ready_producer(bootstrap, topic)
    send, poll, count = producer.produce, producer.poll, 0
    numbered = enumerate(records, 1)
    if ready is not None:
        ready()
    with Span() as span:
        while True:
            try:
                for count, (key, value) in numbered:
                    send(topic, value, key)
                    if count & 0xFFFF == 0:
                        poll(0)
                break
            except BufferError:  # a busy broker filled the local queue: wait for room, as Kopycat does
                produce_when_room(producer, (topic, value, key), RAW_PRODUCER)
        if producer.flush(TIMEOUT_S) != 0:
            raise RuntimeError(f"the raw producer left records to {topic} undelivered")
    return Measure.of(mover, count, span)


def fill_numbered(bootstrap: str, admin: AdminClient, prefix: str, count: int, partitions_count: int,
                  timeout_s: float = 300.0) -> str:
    """A new topic ``<prefix>-<id>`` holding ``count`` 100-byte records, record i the zero-padded
    number i, round-robin over ``partitions_count`` partitions (untimed: the input of a sink bench)."""
    topic = new_topic(admin, prefix, partitions_count)
    producer = ready_producer(bootstrap, topic)
    for i in range(count):
        producer.produce(topic, b"%099d" % i, partition=i % partitions_count)
        if i & 0xFFFF == 0:
            producer.poll(0)
    if producer.flush(timeout_s) != 0:
        raise RuntimeError(f"records to {topic} left undelivered")
    return topic


def raw_consume(bootstrap: str, topic: str, records: int = RECORDS,
                mover: str = "raw confluent-kafka Consumer") -> Measure:
    """The first ``records`` messages of ``topic`` in batches, by an assigned consumer."""
    consumer = assigned_consumer(bootstrap, topic)
    consume, seen = consumer.consume, 0
    try:
        with young_collections_deferred(), Span() as span:
            deadline = time.monotonic() + TIMEOUT_S
            while seen < records:
                seen += len(consume(num_messages=CONSUME_BATCH, timeout=1.0))
                if time.monotonic() > deadline:
                    raise RuntimeError(f"the raw consumer saw {seen:,} of {records:,} records of "
                                       f"{topic} in {TIMEOUT_S:.0f} s")
    finally:
        consumer.close()
    check_count(f"records the raw consumer read from {topic}", seen, records)
    return Measure.of(mover, records, span)


def new_topic(admin: AdminClient, prefix: str, partitions_count: int = 1) -> str:
    topic = f"{prefix}-{uuid.uuid4().hex[:8]}"
    admin.create_topics([NewTopic(topic, num_partitions=partitions_count)])[topic].result(30)
    return topic


def warm_up(bootstrap: str, admin: AdminClient) -> None:
    """Have the broker create its internal topics before anything is timed.

    The first idempotent producer waits for the transaction coordinator (``__transaction_state``)
    and the first consumer group for ``__consumer_offsets``: seconds on a fresh broker, which
    would fall on whichever mover came first.
    """
    topic = new_topic(admin, "bench-warm-up")
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    producer.produce(topic, b"warm-up")
    if producer.flush(120) != 0:
        raise RuntimeError(f"the warm-up record to {topic} was not delivered in 120 s")
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"warm-up-{topic}",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + 120
        while not (messages := consumer.consume(1, timeout=1.0)):
            if time.monotonic() > deadline:
                raise RuntimeError(f"the warm-up record in {topic} was not consumed in 120 s")
        consumer.commit(messages[0], asynchronous=False)
    finally:
        consumer.close()


def run(argv: Sequence[str] = ()) -> list[BenchResult]:
    """``python -m bench raw_kafka [--records N] [--rounds N]``."""
    args = size_and_switch(argv, bench="raw_kafka", doc=__doc__,
                           size=("--records", RECORDS, "records produced and consumed per round"),
                           switch=("--keep", "keep the consumed topic"), rounds=True)
    records = args.records
    bootstrap = shared_broker().bootstrap_servers
    admin = AdminClient({"bootstrap.servers": bootstrap})  # keep alive until the result is in
    warm_up(bootstrap, admin)
    filled = new_topic(admin, "bench-raw-consume")
    raw_produce(bootstrap, filled, records)  # untimed: what every consume round reads

    def produce_round() -> Measure:
        topic = new_topic(admin, "bench-raw-produce")
        try:
            return raw_produce(bootstrap, topic, records)
        finally:
            delete_topic(admin, topic)

    produce, consume = median_rounds([produce_round, lambda: raw_consume(bootstrap, filled, records)], args.rounds)
    if not args.keep:
        delete_topic(admin, filled)
    for line in rounds_lines([produce, consume]):
        print(line, flush=True)
    size = f"{records // 1000:,}k" if records < 1_000_000 else f"{records // 1_000_000}M"
    return [BenchResult(f"raw_produce_{size}_x_100B", produce.rate, spread=produce.spread),
            BenchResult(f"raw_consume_{size}_x_100B", consume.rate, spread=consume.spread)]

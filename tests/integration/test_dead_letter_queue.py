"""The dead letter queue on a real Apache Kafka broker: what lands there, byte for byte.

A record is produced to a source topic, consumed back, fails in the real JsonConverter under
errors.tolerance=all, and must appear in the DLQ topic with its original key, value, headers and
timestamp, followed by Kafka Connect's ``__connect.errors.*`` headers. A DLQ write the broker
refuses must surface as a ConnectError from flush/close.
"""

from __future__ import annotations

import time
import uuid
from functools import partial

import pytest
from confluent_kafka import Consumer, KafkaError, Message, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kopycat.api.errors import ConnectError
from kopycat.converters.json import JsonConverter
from kopycat.runtime.error_reporters import DeadLetterQueueReporter, build_reporters
from kopycat.runtime.errors import ProcessingContext, RetryWithToleranceOperator, Stage


def _produce(bootstrap: str, topic: str, key: bytes | None, value: bytes,
             headers: list[tuple[str, bytes | None]], timestamp: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    producer.produce(topic, value, key, headers=headers, timestamp=timestamp)
    assert producer.flush(30) == 0


def _consume(bootstrap: str, topic: str, count: int) -> list[Message]:
    """The first ``count`` records of partition 0, read with a plain consumer."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": uuid.uuid4().hex,
                         "enable.auto.commit": False})
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        records: list[Message] = []
        deadline = time.monotonic() + 60
        while len(records) < count:
            assert time.monotonic() < deadline, f"only {len(records)} of {count} records in '{topic}'"
            for message in consumer.consume(count - len(records), timeout=1.0):
                if message.error() is None:
                    records.append(message)
                elif message.error().code() != KafkaError._PARTITION_EOF:
                    raise AssertionError(message.error())
        return records
    finally:
        consumer.close()


def test_a_record_failing_conversion_lands_in_the_dlq_with_its_bytes_and_context_headers(
        bootstrap_servers: str, topic_name: str) -> None:
    dlq = f"{topic_name}-dlq"
    original_headers: list[tuple[str, bytes | None]] = [("trace-id", b"\x00\xffraw"), ("empty", None)]
    _produce(bootstrap_servers, topic_name, b"order-7", b"{not json", original_headers, 1700000000123)
    [consumed] = _consume(bootstrap_servers, topic_name, 1)
    config = {"errors.tolerance": "all", "errors.deadletterqueue.topic.name": dlq,
              "errors.deadletterqueue.topic.replication.factor": "1",
              "errors.deadletterqueue.context.headers.enable": "true"}
    retry = RetryWithToleranceOperator.from_config(config, build_reporters(
        config, connector_name="orders-sink", task_id=4, bootstrap_servers=bootstrap_servers))
    converter = JsonConverter()
    converter.configure({"schemas.enable": "false"}, False)

    result = retry.execute(partial(converter.to_connect_data, consumed.topic(), consumed.value()),
                           Stage.VALUE_CONVERTER, JsonConverter,
                           partial(ProcessingContext.for_message, consumed))
    retry.flush(30)
    retry.close()

    assert (result, retry.total_skipped) == (None, 1)
    metadata = AdminClient({"bootstrap.servers": bootstrap_servers}).list_topics(dlq, timeout=30)
    assert len(metadata.topics[dlq].partitions) == 1
    [record] = _consume(bootstrap_servers, dlq, 1)
    assert (record.key(), record.value(), record.timestamp()) == (b"order-7", b"{not json", (1, 1700000000123))
    headers = record.headers() or []
    assert headers[:2] == original_headers
    context = dict(headers[2:])
    trace = context.pop("__connect.errors.exception.stacktrace")
    message = context.pop("__connect.errors.exception.message") or b""
    assert context == {
        "__connect.errors.topic": topic_name.encode(),
        "__connect.errors.partition": b"0",
        "__connect.errors.offset": str(consumed.offset()).encode(),
        "__connect.errors.connector.name": b"orders-sink",
        "__connect.errors.task.id": b"4",
        "__connect.errors.stage": b"VALUE_CONVERTER",
        "__connect.errors.class.name": b"kopycat.converters.json.JsonConverter",
        "__connect.errors.exception.class.name": b"kopycat.api.errors.DataError",
    }
    assert message.startswith(b"Converting byte[] to Kafka Connect data failed due to serialization error")
    assert trace is not None and trace.startswith(b"Traceback (most recent call last):")
    assert b"kopycat.api.errors.DataError: Converting byte[]" in trace


def test_without_context_headers_only_the_original_record_is_written(
        bootstrap_servers: str, topic_name: str) -> None:
    dlq = f"{topic_name}-dlq"
    reporter = DeadLetterQueueReporter.create(bootstrap_servers, "c", 0, dlq, 1, False)
    failed = ProcessingContext.for_message(Message(
        topic="src", partition=2, offset=9, key=None, value=b"v", headers=None, timestamp=(0, -1)))
    failed.stage, failed.executing_class, failed.error = Stage.TRANSFORMATION, JsonConverter, ValueError("x")

    future = reporter.report(failed)
    reporter.flush(30)
    reporter.close()

    assert future is not None and future.result(0).topic == dlq
    [record] = _consume(bootstrap_servers, dlq, 1)
    assert (record.key(), record.value(), record.headers()) == (None, b"v", None)


def test_a_dlq_write_the_broker_refuses_raises_from_flush_and_close(
        bootstrap_servers: str, topic_name: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap_servers})
    small = NewTopic(topic_name, num_partitions=1, replication_factor=1,
                     config={"max.message.bytes": "2000"})
    admin.create_topics([small])[topic_name].result(30)
    reporter = DeadLetterQueueReporter(Producer({"bootstrap.servers": bootstrap_servers}), "c", 0,
                                       topic_name, context_headers_enable=False)
    failed = ProcessingContext.for_message(Message(
        topic="src", partition=0, offset=5, key=b"k", value=b"x" * 50_000, timestamp=(0, -1)))
    failed.stage, failed.executing_class, failed.error = Stage.VALUE_CONVERTER, JsonConverter, ValueError()

    reporter.report(failed)

    with pytest.raises(ConnectError, match=f"Could not produce 1 record\\(s\\) to dead letter queue topic "
                                           f"'{topic_name}'; first: record from topic 'src', partition 0, "
                                           f"offset 5: "):
        reporter.flush(30)
    assert reporter.produce_failures == 1
    with pytest.raises(ConnectError, match="Could not produce 1 record"):
        reporter.close()

"""The Spark export driver's Kafka calls: range checks, the schema peek and the consumer group.

``include/spark/kafka_to_files.py`` reads the records with Spark's Kafka source; everything else
it asks of Kafka goes through the driver's confluent-kafka clients here. None of it needs Spark,
so it lives in the package beside :mod:`kopycat.connectors.files.spark_commit`. The group is
``connect-<name>``, as Kafka Connect's sink tasks commit it, and is only ever moved forward.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from confluent_kafka import Consumer, KafkaError
from confluent_kafka import TopicPartition as KafkaTopicPartition

from kopycat.api.data import Schema
from kopycat.api.errors import ConnectError, DataError
from kopycat.api.records import TopicPartition
from kopycat.api.window import TimeWindow
from kopycat.connectors.files.spark_converter import ExportConverter
from kopycat.connectors.files.spark_export import NULL_VALUES_FAIL, OffsetRange
from kopycat.group_offsets import consumer_committed
from kopycat.kafka import librdkafka_config

__all__ = ["ExportKafka"]


class ExportKafka:
    """The Spark export driver's confluent-kafka side: watermarks, the schema peek and the group commit.

    ``options`` are client settings as a worker.properties has them: Java security keys are
    translated (:func:`kopycat.kafka.librdkafka_config`), so the job logs in as the sink's consumer does.
    """

    def __init__(self, bootstrap_servers: str, options: dict[str, str]) -> None:
        self.config = librdkafka_config({"bootstrap.servers": bootstrap_servers, "enable.auto.commit": False,
                                         **options})

    def consumer(self, group: str) -> Consumer:
        return Consumer({**self.config, "group.id": group, "enable.partition.eof": True})

    def check_bounds(self, ranges: Sequence[OffsetRange]) -> None:
        """Fail early, naming the partition, on ranges Kafka no longer (or does not yet) hold."""
        consumer = self.consumer(f"kopycat-export-check-{uuid.uuid4().hex}")
        try:
            for r in ranges:
                low, high = consumer.get_watermark_offsets(KafkaTopicPartition(r.topic, r.partition), 30)
                if r.end > high:
                    raise ConnectError(f"The range {r.topic}[{r.partition}] [{r.start}, {r.end}) ends after "
                                       f"the partition's end offset {high}; plan ranges from end offsets")
                if r.start < low:
                    raise ConnectError(f"The range {r.topic}[{r.partition}] [{r.start}, {r.end}) starts "
                                       f"before the earliest offset {low} (deleted by retention); the "
                                       f"records in between are lost: re-plan from offset {low}")
        finally:
            consumer.close()

    def value_schema(self, topic: str, ranges: Sequence[OffsetRange], null_values: str,
                     window: TimeWindow | None = None, converter: ExportConverter | None = None) -> Schema | None:
        """The value schema of the first non-null record in ``ranges`` (stamped in ``window``), read by
        ``converter`` (JsonConverter when None); None: none."""
        converter = converter or ExportConverter()
        consumer = self.consumer(f"kopycat-export-peek-{uuid.uuid4().hex}")
        try:
            for r in ranges:
                found = _first_value(consumer, r, null_values, window)
                if found is not None:
                    offset, value = found
                    try:
                        return converter.new().to_connect_data(topic, value).schema
                    except DataError as exc:
                        raise DataError(f"Record {topic}[{r.partition}]@{offset} is not {converter.expected}: "
                                        f"{exc}") from exc
            return None
        finally:
            consumer.close()

    def commit_group(self, group: str, ranges: Sequence[OffsetRange]) -> dict[TopicPartition, int]:
        """Commit each range's end unless the group is there or further already; the offsets after."""
        consumer = self.consumer(group)
        try:
            wanted = [KafkaTopicPartition(r.topic, r.partition, r.end) for r in ranges]
            current = {(tp.topic, tp.partition): tp.offset for tp in consumer_committed(consumer, wanted, 30)}
            forward = [tp for tp in wanted if tp.offset > current[(tp.topic, tp.partition)]]
            if forward:
                for tp in consumer.commit(offsets=forward, asynchronous=False) or []:
                    if tp.error:
                        raise ConnectError(f"Committing {group} at {tp.topic}[{tp.partition}]={tp.offset} failed: "
                                           f"{tp.error}; the files are committed, a rerun commits the offsets")
            return {TopicPartition(tp.topic, tp.partition): max(tp.offset, current[(tp.topic, tp.partition)])
                    for tp in wanted}
        finally:
            consumer.close()

    def committed(self, group: str, ranges: Sequence[OffsetRange]) -> dict[TopicPartition, int]:
        """The group's offsets of the ranges' partitions, read only (a windowed run moves none); -1: none."""
        consumer = self.consumer(group)
        try:
            asked = [KafkaTopicPartition(r.topic, r.partition) for r in ranges]
            return {TopicPartition(tp.topic, tp.partition): tp.offset if tp.offset >= 0 else -1
                    for tp in consumer_committed(consumer, asked, 30)}
        finally:
            consumer.close()


def _first_value(consumer: Consumer, r: OffsetRange, null_values: str,
                 window: TimeWindow | None) -> tuple[int, bytes] | None:
    """``(offset, value)`` of the first non-null record of ``r`` (stamped in ``window``); None: it holds none."""
    consumer.assign([KafkaTopicPartition(r.topic, r.partition, r.start)])
    while True:
        message = consumer.poll(30)
        if message is None:
            raise ConnectError(f"No record of {r.topic}[{r.partition}] arrived within 30 s from offset {r.start}")
        if message.error():
            if message.error().code() == KafkaError._PARTITION_EOF:
                return None
            raise ConnectError(f"Reading {r.topic}[{r.partition}] failed: {message.error()}")
        if message.offset() >= r.end:
            return None
        stamp_type, stamp = message.timestamp()
        if window is not None and not (stamp_type and window.contains(stamp)):
            continue  # left out by the window, as the decoder leaves it out
        if message.value() is not None:
            return message.offset(), message.value()
        if null_values == NULL_VALUES_FAIL:
            raise DataError(f"Record {r.topic}[{r.partition}]@{message.offset()} has a null value (a "
                            f"tombstone); run with --behavior-on-null-values ignore to skip tombstones")

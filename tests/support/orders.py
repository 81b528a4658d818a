"""Typed orders in Kafka Connect's JSON wire format, and checks on the Parquet files they end up in.

Shared by the Spark export tests and the Spark export DAG test: JSON-with-schema records over 3
partitions (id n in partition n % 3, so offset k of partition p holds id p + 3k); every committed
file read back must hold exactly the offsets its name says, typed as kopycat.api.arrow says.
"""

from __future__ import annotations

import datetime as dt
import decimal
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as KafkaTopicPartition

from kopycat.api.arrow import to_arrow_schema
from kopycat.api.data import Date, Decimal, Schema, SchemaBuilder, Struct, Timestamp
from kopycat.connectors.files.committed_files import TEMP_DIR, committed_name, parse_committed_name
from kopycat.connectors.files.spark_decoder import TopicDecoder
from kopycat.connectors.files.spark_export import OffsetRange
from kopycat.converters.json import JsonConverter
from tests.support.kafka import create_topic

PARTITIONS = 3
ORDER = (SchemaBuilder.struct().name("order")
         .field("id", Schema.INT64_SCHEMA)
         .field("name", Schema.STRING_SCHEMA)
         .field("amount", Decimal.builder(2).parameter("connect.decimal.precision", "10").build())
         .field("day", Date.SCHEMA)
         .field("ts", Timestamp.SCHEMA)
         .field("note", Schema.OPTIONAL_STRING_SCHEMA)
         .build())
BASE = dt.datetime(2026, 11, 1, tzinfo=dt.UTC)


def order(n: int) -> Struct:
    return (Struct(ORDER).put("id", n).put("name", f"customer {n % 97}")
            .put("amount", decimal.Decimal(n) / 100).put("day", BASE.date() + dt.timedelta(days=n % 400))
            .put("ts", BASE + dt.timedelta(milliseconds=n)).put("note", None if n % 3 else f"note {n}"))


def produce_orders(bootstrap: str, topic: str, count: int, *,
                   client: dict[str, Any] | None = None) -> list[OffsetRange]:
    """Orders 0..count-1, id n to partition n % 3 (so offset k of partition p holds id p + 3k)."""
    create_topic(bootstrap, topic, PARTITIONS, client=client)
    converter = JsonConverter()
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "batch.size": 1 << 20, **(client or {})})
    for start in range(0, count, 10_000):
        ids = range(start, min(count, start + 10_000))
        for n, value in zip(ids, converter.from_connect_data_batch(topic, ORDER, [order(n) for n in ids]),
                            strict=True):
            producer.produce(topic, value=value, key=str(n).encode(), partition=n % PARTITIONS)
        producer.poll(0)
    assert producer.flush(60) == 0
    return [OffsetRange(topic, p, 0, len(range(p, count, PARTITIONS))) for p in range(PARTITIONS)]


def read_committed(list_files: Callable[[], list[str]], open_file: Callable[[str], pa.Table],
                   topic: str) -> dict[str, list[int]]:
    """Committed file name -> its ids, checking its offsets, row order and column types."""
    expected_types = [(f.name, f.type) for f in to_arrow_schema(ORDER)]
    files: dict[str, list[int]] = {}
    for path in list_files():
        committed = parse_committed_name(path.rsplit("/", 1)[-1])
        if committed is None or f"/{TEMP_DIR}/" in path:
            continue
        assert committed.topic == topic and path.endswith(f"/partition={committed.partition}/{committed.name}")
        table = open_file(path)
        assert [(f.name, f.type) for f in table.schema] == expected_types
        ids = table.column("id").to_pylist()
        offsets = range(committed.start_offset, committed.end_offset + 1)
        assert ids == [committed.partition + PARTITIONS * k for k in offsets], f"{path} holds other offsets"
        files[committed.name] = ids
    return files


def local_store(root: Path) -> tuple[Callable[[], list[str]], Callable[[str], pa.Table]]:
    return (lambda: sorted(str(p) for p in root.rglob("*.parquet") if not p.name.startswith(".")),
            lambda path: pq.read_table(path))


def assert_every_id_once(files: dict[str, list[int]], count: int) -> None:
    ids = [n for file_ids in files.values() for n in file_ids]
    assert len(ids) == count
    assert set(ids) == set(range(count))


def write_committed_like_the_python_sink(bootstrap: str, r: OffsetRange, topic_dir: Path) -> None:
    """Offsets ``r`` of one partition as a committed Parquet file, decoded by the shared decoder."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"check-{uuid.uuid4().hex}",
                         "enable.auto.commit": False})
    consumer.assign([KafkaTopicPartition(r.topic, r.partition, r.start)])
    offsets, values = [], []
    while len(offsets) < r.end - r.start:
        message = consumer.poll(30)
        assert message is not None and not message.error()
        offsets.append(message.offset())
        values.append(message.value())
    consumer.close()
    batch = TopicDecoder(r.topic, to_arrow_schema(ORDER)).decode(JsonConverter(), r.partition, offsets, values)
    target = topic_dir / f"partition={r.partition}" / committed_name(r.topic, r.partition, r.start, r.end - 1,
                                                                      "parquet")
    target.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_batches([batch]), target)

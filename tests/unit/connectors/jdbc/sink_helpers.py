"""Helpers for the JDBC sink unit tests: a SinkTaskContext double, records, SQLite tasks."""

from __future__ import annotations

import datetime as dt
import decimal
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from kopycat.api.data import Date, Decimal, Schema, SchemaBuilder, Struct, Time, Timestamp
from kopycat.api.records import SinkRecord, TopicPartition
from kopycat.api.task import SinkTaskContext
from kopycat.connectors.jdbc.sink_task import JdbcSinkTask
from tests.support.sql import query_rows


class RecordingContext(SinkTaskContext):
    """Keeps what the task asked for: seeks and timeouts."""

    def __init__(self, configs: Mapping[str, str]) -> None:
        self._configs = configs
        self.seeks: dict[TopicPartition, int] = {}
        self.timeouts: list[int] = []

    @property
    def configs(self) -> Mapping[str, str]:
        return self._configs

    def offset(self, offsets: Mapping[TopicPartition, int]) -> None:
        self.seeks.update(offsets)

    def assignment(self) -> set[TopicPartition]:
        return set()

    def pause(self, *partitions: TopicPartition) -> None: ...

    def resume(self, *partitions: TopicPartition) -> None: ...

    def timeout(self, timeout_ms: int) -> None:
        self.timeouts.append(timeout_ms)

    def request_commit(self) -> None: ...


def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'sink.db'}"


def start_task(url: str, **props: Any) -> tuple[JdbcSinkTask, RecordingContext]:
    config = {"name": "sink-test", "connection.url": url, "topics": "orders",
              **{key.replace("_", "."): str(value).lower() if isinstance(value, bool) else str(value)
                 for key, value in props.items()}}
    task = JdbcSinkTask()
    context = RecordingContext(config)
    task.initialize(context)
    task.start(config)
    return task, context


rows = query_rows


def execute(url: str, *statements: str) -> None:
    engine = sa.create_engine(url)
    try:
        with engine.begin() as conn:
            for statement in statements:
                conn.execute(sa.text(statement))
    finally:
        engine.dispose()


KEY_SCHEMA = SchemaBuilder.struct().name("order_key").field("id", Schema.INT64_SCHEMA).build()
VALUE_SCHEMA = (SchemaBuilder.struct().name("order")
                .field("id", Schema.INT64_SCHEMA)
                .field("customer", Schema.STRING_SCHEMA)
                .field("amount", Schema.OPTIONAL_FLOAT64_SCHEMA)
                .build())


def key(order_id: int) -> Struct:
    return Struct(KEY_SCHEMA).put("id", order_id)


def order(order_id: int, customer: str, amount: float | None = None, schema: Schema = VALUE_SCHEMA) -> Struct:
    value = Struct(schema).put("id", order_id).put("customer", customer)
    return value.put("amount", amount) if schema.field("amount") else value


def record(offset: int, value: Any, *, key_value: Any = None, partition: int = 0, topic: str = "orders",
           value_schema: Schema | None = None, key_schema: Schema | None = None) -> SinkRecord:
    if value_schema is None and isinstance(value, Struct):
        value_schema = value.schema
    if key_schema is None and isinstance(key_value, Struct):
        key_schema = key_value.schema
    return SinkRecord(topic=topic, kafka_partition=partition, kafka_offset=offset, key=key_value,
                      key_schema=key_schema, value=value, value_schema=value_schema)


ALL_TYPES_SCHEMA = (SchemaBuilder.struct().name("all_types")
                    .field("i8", Schema.INT8_SCHEMA).field("i16", Schema.INT16_SCHEMA)
                    .field("i32", Schema.INT32_SCHEMA).field("i64", Schema.INT64_SCHEMA)
                    .field("f32", Schema.FLOAT32_SCHEMA).field("f64", Schema.FLOAT64_SCHEMA)
                    .field("flag", Schema.BOOLEAN_SCHEMA).field("text", Schema.STRING_SCHEMA)
                    .field("raw", Schema.BYTES_SCHEMA).field("price", Decimal.schema(2))
                    .field("day", Date.SCHEMA).field("at", Time.SCHEMA).field("ts", Timestamp.SCHEMA)
                    .field("maybe", Schema.OPTIONAL_STRING_SCHEMA)
                    .build())


def all_types_value(n: int) -> Struct:
    return (Struct(ALL_TYPES_SCHEMA).put("i8", -n).put("i16", 300 + n).put("i32", 70_000 + n)
            .put("i64", 2**40 + n).put("f32", 1.5).put("f64", 2.25 + n).put("flag", n % 2 == 0)
            .put("text", f"row {n} \u00e9").put("raw", bytes([n, 0, 255])).put("price", decimal.Decimal("12.34"))
            .put("day", dt.date(2024, 2, 29)).put("at", dt.time(13, 45, 30, 123000))
            .put("ts", dt.datetime(2024, 5, 1, 12, 30, 15, 250000, tzinfo=dt.UTC))
            .put("maybe", None if n % 2 else "here"))

"""The Singer sink's test helpers: a topic of orders as JsonConverter writes them, with schemas and keys."""

from __future__ import annotations

import datetime as dt
import decimal

from confluent_kafka import Producer

from kopycat.api.data import Decimal, Schema, SchemaBuilder, Struct, Timestamp
from kopycat.converters.json import JsonConverter

__all__ = ["KEY", "order_schema", "produce_orders"]

BASE = dt.datetime(2026, 11, 1, tzinfo=dt.UTC)
KEY = SchemaBuilder.struct().name("order_key").field("id", Schema.INT64_SCHEMA).build()


def order_schema(*, with_note: bool) -> Schema:
    builder = (SchemaBuilder.struct().name("order").field("id", Schema.INT64_SCHEMA)
               .field("customer", Schema.STRING_SCHEMA).field("amount", Decimal.schema(2))
               .field("ts", Timestamp.SCHEMA))
    if with_note:
        builder.field("note", Schema.OPTIONAL_STRING_SCHEMA)
    return builder.build()


def produce_orders(bootstrap: str, topic: str, ids: range, *, partitions: int = 2, with_note: bool = False) -> None:
    """Orders ``ids``, id n to partition n % ``partitions``, keyed by id, in JsonConverter's format with schemas."""
    schema = order_schema(with_note=with_note)
    values, keys = JsonConverter(), JsonConverter()
    values.configure({"schemas.enable": "true"}, is_key=False)
    keys.configure({"schemas.enable": "true"}, is_key=True)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
    for n in ids:
        value = (Struct(schema).put("id", n).put("customer", f"c{n % 97}").put("amount", decimal.Decimal(n) / 100)
                 .put("ts", BASE + dt.timedelta(seconds=n)))
        if with_note:
            value.put("note", None if n % 2 else f"note {n}")
        producer.produce(topic, key=keys.from_connect_data(topic, KEY, Struct(KEY).put("id", n)),
                         value=values.from_connect_data(topic, schema, value), partition=n % partitions)
        if n % 1000 == 0:
            producer.poll(0)
    assert producer.flush(60) == 0

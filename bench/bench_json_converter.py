"""JsonConverter throughput next to plain ``json.dumps`` / ``json.loads`` of the same records.

100,000 records of a 10-field struct (int32, int64, strings, doubles, booleans, a Timestamp)
go through ``JsonConverter`` with ``schemas.enable=true`` by the batch API, which is what the
runners call, in batches of 1,000 records (a poll's worth: a runner hands each batch on and
drops it). The anchor handles the same values as plain dicts (timestamps as epoch ms) with the
standard library, batched and dropped the same way, measured in the same run. Each figure is the
best of a few repeats of process CPU time, so other processes on a busy machine add less noise.
The aim (issue 4) is at least 0.8x of the anchor.

Note that the converter's records are ~4x the anchor's bytes: every record carries its schema
in the envelope, as Kafka Connect's do.
"""

from __future__ import annotations

import datetime as dt
import json
import time
from collections.abc import Callable, Sequence
from typing import Any

from kopycat.api.data import Schema, SchemaBuilder, Struct, Timestamp
from kopycat.converters.json import JsonConverter

RECORDS = 100_000
BATCH = 1_000
REPEATS = 3
TOPIC = "orders"

SCHEMA = (SchemaBuilder.struct().name("bench.Order")
          .field("id", Schema.INT64_SCHEMA)
          .field("customer_id", Schema.INT32_SCHEMA)
          .field("name", Schema.STRING_SCHEMA)
          .field("email", Schema.OPTIONAL_STRING_SCHEMA)
          .field("city", Schema.STRING_SCHEMA)
          .field("amount", Schema.FLOAT64_SCHEMA)
          .field("discount", Schema.OPTIONAL_FLOAT64_SCHEMA)
          .field("active", Schema.BOOLEAN_SCHEMA)
          .field("quantity", Schema.INT32_SCHEMA)
          .field("created_at", Timestamp.SCHEMA)
          .build())
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def _row(i: int) -> dict[str, Any]:
    return {
        "id": 10_000_000_000 + i, "customer_id": i % 5000, "name": f"customer {i}",
        "email": f"user{i}@example.com", "city": ("Berlin", "Lyon", "Porto", "Oslo")[i % 4],
        "amount": round(i * 1.37 % 10_000, 2), "discount": (i % 7) / 10, "active": i % 3 == 0,
        "quantity": i % 17, "created_at": _EPOCH + dt.timedelta(milliseconds=1_700_000_000_000 + i * 997),
    }


def _structs(rows: list[dict[str, Any]]) -> list[Struct]:
    structs = []
    for row in rows:
        struct = Struct(SCHEMA)
        for name, value in row.items():
            struct.put(name, value)
        structs.append(struct)
    return structs


def _plain(row: dict[str, Any]) -> dict[str, Any]:
    return {**row, "created_at": (row["created_at"] - _EPOCH) // dt.timedelta(milliseconds=1)}


def _batches(items: list[Any]) -> list[list[Any]]:
    return [items[start:start + BATCH] for start in range(0, len(items), BATCH)]


def _rate(convert: Callable[[Sequence[Any]], Any], batches: list[list[Any]]) -> float:
    """Records per second of CPU time, best of REPEATS passes over all batches."""
    best = float("inf")
    for _ in range(REPEATS):
        start = time.process_time()
        for batch in batches:
            convert(batch)
        best = min(best, time.process_time() - start)
    return RECORDS / best


def run() -> list[tuple[str, float, float]]:
    """(name, kopycat records/s, anchor records/s) for serialize and deserialize."""
    rows = [_row(i) for i in range(RECORDS)]
    structs = _batches(_structs(rows))
    plain = _batches([_plain(row) for row in rows])
    converter = JsonConverter()
    converter.configure({"schemas.enable": "true"}, is_key=False)
    encoded = [converter.from_connect_data_batch(TOPIC, SCHEMA, batch) for batch in structs]
    plain_encoded = [[json.dumps(row).encode() for row in batch] for batch in plain]
    assert converter.to_connect_data_batch(TOPIC, encoded[0][:1])[0].value == structs[0][0]

    def dumps(batch: Sequence[dict[str, Any]]) -> list[bytes]:
        return [json.dumps(row).encode() for row in batch]

    def loads(batch: Sequence[bytes]) -> list[Any]:
        return [json.loads(data) for data in batch]

    serialize = _rate(lambda batch: converter.from_connect_data_batch(TOPIC, SCHEMA, batch), structs)
    serialize_anchor = _rate(dumps, plain)
    deserialize = _rate(lambda batch: converter.to_connect_data_batch(TOPIC, batch), encoded)
    deserialize_anchor = _rate(loads, plain_encoded)
    return [
        ("json_converter_serialize", serialize, serialize_anchor),
        ("json_converter_deserialize", deserialize, deserialize_anchor),
    ]

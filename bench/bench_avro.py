"""Confluent Avro against JsonConverter on the same rows, in the same run: storage sink and JDBC source.

N rows (200,000 by default, ``--records`` to change) of a reading STRUCT (id int64, sensor string,
value float64, note optional string, day Date, at Timestamp):

- *storage sink*: the rows written untimed to two fresh topics of two partitions on the shared
  broker, one as JsonConverter envelopes (schemas enabled), one as AvroConverter values (a local
  Apicurio registry, Confluent's API); then FileSinkConnector to Parquet under ``file://`` temp
  dirs, planned and run as an Airflow copy task does, timed around ``run_planned_task``. Both take
  the columnar path (values decoded straight to Arrow columns).
- *JDBC source*: the rows in a SQLite table; JdbcSourceConnector (incrementing, keys by primary key)
  to a fresh topic with each converter for keys and values, ``Kopycat.run_once`` timed, every row
  produced checked.

Each line is Avro's records/s with JsonConverter's as its anchor; goal: ratio >= 1.0 on both.
"""

from __future__ import annotations

import argparse
import datetime as dt
import sqlite3
import tempfile
import time
import uuid
from collections.abc import Sequence
from pathlib import Path

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from bench.common import BenchResult, check_count, positive_count, shared_broker
from kopycat.api.data import Date, Schema, SchemaBuilder, Struct, Timestamp
from kopycat.converters.avro import AvroConverter
from kopycat.converters.json import JsonConverter
from kopycat.dev.schema_registry import LocalSchemaRegistry
from kopycat.embedded import Kopycat
from kopycat.runtime.bounded_plan import plan_bounded_run
from kopycat.runtime.bounded_run import run_planned_task
from kopycat.runtime.bounds import Bounds

READING = (SchemaBuilder.struct().name("bench.Reading").field("id", Schema.INT64_SCHEMA)
           .field("sensor", Schema.STRING_SCHEMA).field("value", Schema.FLOAT64_SCHEMA)
           .field("note", Schema.OPTIONAL_STRING_SCHEMA).field("day", Date.SCHEMA).field("at", Timestamp.SCHEMA)
           .build())
BASE = dt.datetime(2026, 11, 27, tzinfo=dt.UTC)
JSON = {"value.converter": "org.apache.kafka.connect.json.JsonConverter", "value.converter.schemas.enable": "true",
        "key.converter": "org.apache.kafka.connect.json.JsonConverter"}


def avro_props(registry: str) -> dict[str, str]:
    return {f"{side}.converter{suffix}": value for side in ("key", "value")
            for suffix, value in ((".schema.registry.url", registry), ("", "io.confluent.connect.avro.AvroConverter"))}


def reading(n: int) -> Struct:
    return (Struct(READING).put("id", n).put("sensor", f"s{n % 13}").put("value", n / 8)
            .put("note", None if n % 3 else f"note {n}").put("day", (BASE + dt.timedelta(hours=n)).date())
            .put("at", BASE + dt.timedelta(milliseconds=n * 7)))


def fill_topic(bootstrap: str, topic: str, values: list[bytes | None]) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 2, 1)])[topic].result(60)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "queue.buffering.max.messages": 1_000_000})
    for n, value in enumerate(values):
        producer.produce(topic, value=value, partition=n % 2)
        if n % 100_000 == 0:
            producer.poll(0)
    assert producer.flush(120) == 0


def sink_rate(bootstrap: str, topic: str, converters: dict[str, str], rows: int) -> float:
    with tempfile.TemporaryDirectory() as store:
        props = {"name": f"bench-avro-{uuid.uuid4().hex[:8]}", "topics": topic, "tasks.max": "1",
                 "connector.class": "kopycat.connectors.files.FileSinkConnector", "store.url": Path(store).as_uri(),
                 "format.class": "parquet", "flush.size": "100000", **converters}
        worker = {"bootstrap.servers": bootstrap}
        [planned] = plan_bounded_run(props, worker)
        start = time.perf_counter()
        summary = run_planned_task(props, planned, worker)
        elapsed = time.perf_counter() - start
    assert summary.error is None, summary.error
    check_count("storage sink records", summary.records, rows)
    return rows / elapsed


def source_rate(bootstrap: str, database: Path, converters: dict[str, str], rows: int) -> float:
    run = uuid.uuid4().hex[:8]
    worker = {"offset.storage.topic": f"bench-offsets-{run}", "offset.storage.replication.factor": "1",
              "offset.storage.partitions": "1"}
    props = {"name": f"bench-avro-{run}",
             "connector.class": "kopycat.connectors.jdbc.source_connector.JdbcSourceConnector",
             "connection.url": f"sqlite:///{database}", "mode": "incrementing", "incrementing.column.name": "id",
             "table.whitelist": "readings", "record.key.mode": "primary_key", "batch.max.rows": "10000",
             "tasks.max": "1", "topic.prefix": f"bench-{run}-", **converters}
    with Kopycat(bootstrap, worker_props=worker) as kc:
        start = time.perf_counter()
        summaries = kc.run_once(props, Bounds(idle_ms=1000), 600)
        elapsed = time.perf_counter() - start
    check_count("JDBC source records", sum(s.records for s in summaries if s), rows)
    return rows / elapsed


def readings_table(path: Path, structs: list[Struct]) -> None:
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE readings (id INTEGER PRIMARY KEY, sensor TEXT NOT NULL, value REAL NOT NULL, "
                   "note TEXT, day DATE NOT NULL, at TIMESTAMP NOT NULL)")
        db.executemany("INSERT INTO readings VALUES (?, ?, ?, ?, ?, ?)",
                       [(s.get("id") + 1, s.get("sensor"), s.get("value"), s.get("note"), s.get("day").isoformat(),
                         s.get("at").replace(tzinfo=None).isoformat(" ")) for s in structs])


def run(argv: Sequence[str] = ()) -> list[BenchResult]:
    parser = argparse.ArgumentParser(prog="python -m bench avro")
    parser.add_argument("--records", type=positive_count("--records"), default=200_000)
    rows = parser.parse_known_args(list(argv))[0].records
    bootstrap = shared_broker().bootstrap_servers
    structs = [reading(n) for n in range(rows)]
    with LocalSchemaRegistry(name="bench-schema-registry") as registry, tempfile.TemporaryDirectory() as tmp:
        json_writer, avro_writer = JsonConverter(), AvroConverter()
        json_writer.configure({"schemas.enable": "true"}, is_key=False)
        avro_writer.configure({"schema.registry.url": registry.url}, is_key=False)
        run_id = uuid.uuid4().hex[:8]
        topics = {"json": f"bench-avro-json-{run_id}", "avro": f"bench-avro-avro-{run_id}"}
        fill_topic(bootstrap, topics["json"], json_writer.from_connect_data_batch(topics["json"], READING, structs))
        fill_topic(bootstrap, topics["avro"], avro_writer.from_connect_data_batch(topics["avro"], READING, structs))
        avro = avro_props(registry.url)
        sink_json = sink_rate(bootstrap, topics["json"], JSON, rows)
        sink_avro = sink_rate(bootstrap, topics["avro"], avro, rows)
        database = Path(tmp) / "readings.db"
        readings_table(database, structs)
        source_json = source_rate(bootstrap, database, JSON, rows)
        source_avro = source_rate(bootstrap, database, avro, rows)
    return [BenchResult("avro storage sink vs JsonConverter", sink_avro, sink_json, goal=1.0),
            BenchResult("avro JDBC source vs JsonConverter", source_avro, source_json, goal=1.0)]

"""The JDBC sink against a real broker and a real PostgreSQL: upserts, tombstones, exactly-once.

Records are JSON with schemas (Kafka Connect's JsonConverter envelope), as a Kafka Connect
producer writes them. The kill test runs ``kopycat standalone`` in a subprocess and SIGKILLs it
mid-copy: rows and offsets commit in one transaction, so a plain-insert table ends with each
record exactly once.
"""

from __future__ import annotations

import datetime as dt
import signal
import time
import uuid
from pathlib import Path

import pytest
import sqlalchemy as sa
from confluent_kafka import Producer

from kopycat.api.data import Schema, SchemaBuilder, Struct, Timestamp
from kopycat.converters.json import JsonConverter
from kopycat.embedded import Kopycat
from kopycat.runtime.bounds import Bounds
from kopycat.storage.offset_backing_store import MemoryOffsetStore
from tests.support.kafka import committed_offsets, create_topic
from tests.support.kills import kill_when
from tests.support.sql import query_rows
from tests.support.standalone import start_worker, write_props

pytestmark = pytest.mark.timeout(900)

CONNECTOR_CLASS = "kopycat.connectors.jdbc.sink_connector.JdbcSinkConnector"
KEY = SchemaBuilder.struct().name("customer_key").field("id", Schema.INT64_SCHEMA).build()
VALUE = (SchemaBuilder.struct().name("customer").field("id", Schema.INT64_SCHEMA)
         .field("name", Schema.STRING_SCHEMA).field("balance", Schema.OPTIONAL_FLOAT64_SCHEMA)
         .field("updated", Timestamp.SCHEMA).build())
BOUNDS = Bounds(idle_ms=3000)
JSON = {"key.converter": "org.apache.kafka.connect.json.JsonConverter", "key.converter.schemas.enable": "true",
        "value.converter": "org.apache.kafka.connect.json.JsonConverter", "value.converter.schemas.enable": "true"}


def converter(is_key: bool) -> JsonConverter:
    json = JsonConverter()
    json.configure({"schemas.enable": True}, is_key=is_key)
    return json


def produce_records(bootstrap: str, topic: str, pairs: list[tuple[Struct | None, Struct | None]]) -> None:
    """Produce (key, value) structs as JSON with schemas; a None value is a tombstone."""
    keys, values = converter(True), converter(False)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "enable.idempotence": True})
    for key, value in pairs:
        producer.produce(topic, key=keys.from_connect_data(topic, KEY if key is not None else None, key),
                         value=None if value is None else values.from_connect_data(topic, VALUE, value))
        producer.poll(0)
    assert producer.flush(60) == 0


def customer(n: int, version: int) -> tuple[Struct, Struct]:
    key = Struct(KEY).put("id", n)
    value = (Struct(VALUE).put("id", n).put("name", f"customer {n} v{version}").put("balance", n * 1.5 + version)
             .put("updated", dt.datetime(2024, 1, 1, tzinfo=dt.UTC) + dt.timedelta(minutes=version)))
    return key, value


table_rows = query_rows
group_offsets = committed_offsets


def test_upsert_by_key_deletes_tombstones_and_a_rerun_without_data_changes_nothing(
        bootstrap_servers: str, topic_name: str, postgres_url: str) -> None:
    create_topic(bootstrap_servers, topic_name, 3)
    versions = [(n % 40, v) for v in range(5) for n in range(40)]  # 200 records, 5 versions of 40 keys
    produce_records(bootstrap_servers, topic_name, [customer(n, v) for n, v in versions])
    name = f"jdbc-sink-{uuid.uuid4().hex[:8]}"
    props = {"name": name, "connector.class": CONNECTOR_CLASS, "topics": topic_name, "tasks.max": "2",
             "connection.url": postgres_url, "insert.mode": "upsert", "pk.mode": "record_key",
             "auto.create": "true", "delete.enabled": "true", "table.name.format": "customers", **JSON}
    worker = {"offset.flush.interval.ms": "500"}
    with Kopycat(bootstrap_servers, worker_props=worker, offset_store=MemoryOffsetStore()) as kc:
        summaries = kc.run_once(props, BOUNDS, timeout_s=300)
        assert all(s is not None and s.error is None for s in summaries), summaries
        expected = {n: customer(n, 4)[1] for n in range(40)}
        assert table_rows(postgres_url, "SELECT id, name, balance, updated FROM customers ORDER BY id") == [
            (n, v.get("name"), v.get("balance"), v.get("updated").replace(tzinfo=None)) for n, v in expected.items()]

        produce_records(bootstrap_servers, topic_name, [(Struct(KEY).put("id", n), None) for n in range(10)])
        summaries = kc.run_once(props, BOUNDS, timeout_s=300)
        assert all(s is not None and s.error is None for s in summaries), summaries
        after_deletes = table_rows(postgres_url, "SELECT id, name FROM customers ORDER BY id")
        assert after_deletes == [(n, f"customer {n} v4") for n in range(10, 40)]

        stored = dict(table_rows(postgres_url, "SELECT partition, \"offset\" FROM kopycat_offsets "
                                               f"WHERE connector = '{name}'"))
        summaries = kc.run_once(props, BOUNDS, timeout_s=300)
        assert all(s is not None and s.error is None for s in summaries), summaries
        assert sum(s.records for s in summaries if s is not None) == 0
    assert table_rows(postgres_url, "SELECT id, name FROM customers ORDER BY id") == after_deletes
    assert sum(stored.values()) == 210
    assert group_offsets(bootstrap_servers, f"connect-{name}", topic_name, 3) == {p: stored.get(p, -1001)
                                                                                   for p in range(3)}


RECORDS = 50_000
EVENT = (SchemaBuilder.struct().name("event").field("event_id", Schema.INT64_SCHEMA)
         .field("payload", Schema.STRING_SCHEMA).build())


def test_a_sigkilled_insert_sink_resumes_from_the_database_without_duplicates_or_loss(
        bootstrap_servers: str, topic_name: str, postgres_url: str, tmp_path: Path) -> None:
    create_topic(bootstrap_servers, topic_name, 3)
    values = converter(False)
    producer = Producer({"bootstrap.servers": bootstrap_servers, "linger.ms": 50, "enable.idempotence": True})
    for n in range(RECORDS):
        producer.produce(topic_name, key=str(n).encode(), value=values.from_connect_data(
            topic_name, EVENT, Struct(EVENT).put("event_id", n).put("payload", f"event number {n:06d}")))
        if n % 10_000 == 0:
            producer.poll(0)
    assert producer.flush(60) == 0
    worker = write_props(tmp_path / "worker.properties", {
        "bootstrap.servers": bootstrap_servers, "offset.storage.file.filename": str(tmp_path / "connect.offsets"),
        "offset.flush.interval.ms": "60000", **JSON,
        "key.converter": "org.apache.kafka.connect.storage.StringConverter"})
    connector = write_props(tmp_path / "sink.properties", {
        "name": f"killed-sink-{uuid.uuid4().hex[:6]}", "connector.class": CONNECTOR_CLASS, "topics": topic_name,
        "connection.url": postgres_url, "insert.mode": "insert", "pk.mode": "none", "auto.create": "true",
        "table.name.format": "events", "batch.size": "500"})
    log = tmp_path / "worker.log"

    def count() -> int:
        try:
            return table_rows(postgres_url, "SELECT count(*) FROM events")[0][0]
        except sa.exc.ProgrammingError:  # the table is not there yet
            return 0

    kills = []
    for target in (RECORDS // 5, RECORDS // 2):
        process = start_worker(worker, connector, log)
        kill_when(process, lambda t=target: count() >= t, log, timeout_s=240, poll_s=0.02,
                  waiting_for=f"{target} rows in the table")
        kills.append(count())
    assert all(0 < k < RECORDS for k in kills), kills
    process = start_worker(worker, connector, log)
    deadline = time.monotonic() + 300
    while count() < RECORDS:
        assert process.poll() is None, log.read_text()[-3000:]
        assert time.monotonic() < deadline, f"stalled at {count()}: {log.read_text()[-3000:]}"
        time.sleep(0.2)
    time.sleep(1.0)  # anything written twice would show up now
    process.send_signal(signal.SIGTERM)
    process.wait(60)
    total, distinct, low, high = table_rows(
        postgres_url, "SELECT count(*), count(DISTINCT event_id), min(event_id), max(event_id) FROM events")[0]
    assert (total, distinct, low, high) == (RECORDS, RECORDS, 0, RECORDS - 1), kills
    stored = table_rows(postgres_url, "SELECT sum(\"offset\") FROM kopycat_offsets")[0][0]
    assert stored == RECORDS

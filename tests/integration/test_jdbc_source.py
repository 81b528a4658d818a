"""The JDBC source against a real PostgreSQL and a real broker, offsets in a real offsets topic.

Three tables of ~33k rows go through ``run_once`` with two tasks; later runs copy exactly the
inserted and updated rows (timestamp+incrementing), resume from the offsets topic in a new
worker, and pick up a table created between runs. Offsets are read back from the topic as
bytes and compared with what Confluent's connector writes.
"""

from __future__ import annotations

import collections
import uuid
from typing import Any

import orjson
import pytest
import sqlalchemy as sa
from confluent_kafka import Consumer, TopicPartition

from kopycat.embedded import Kopycat
from kopycat.runtime.bounds import Bounds

pytestmark = pytest.mark.timeout(900)

CONNECTOR_CLASS = "kopycat.connectors.jdbc.source_connector.JdbcSourceConnector"
TABLES = {"orders": 33_334, "customers": 33_333, "payments": 33_333}
BOUNDS = Bounds(idle_ms=3000)
JSON = {"key.converter": "org.apache.kafka.connect.json.JsonConverter", "key.converter.schemas.enable": "false",
        "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter.schemas.enable": "false"}


def execute(url: str, *statements: str) -> None:
    engine = sa.create_engine(url)
    try:
        with engine.begin() as connection:
            for statement in statements:
                connection.execute(sa.text(statement))
    finally:
        engine.dispose()


def create_table(url: str, name: str, rows: int) -> None:
    execute(url, f"""CREATE TABLE {name} (id BIGSERIAL PRIMARY KEY, label TEXT NOT NULL,
                     amount NUMERIC(12, 2), updated TIMESTAMP NOT NULL)""",
            f"""INSERT INTO {name} (label, amount, updated)
                SELECT '{name} ' || n, n / 100.0, TIMESTAMP '2024-01-01' + n * INTERVAL '1 second'
                FROM generate_series(1, {rows}) AS n""")


def consume(bootstrap: str, topic: str) -> list[tuple[bytes | None, bytes | None]]:
    """Every (key, value) of ``topic`` read to its end offsets."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"check-{uuid.uuid4().hex}",
                         "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    try:
        metadata = consumer.list_topics(topic, timeout=30).topics[topic]
        ends = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1]
                for p in metadata.partitions}
        consumer.assign([TopicPartition(topic, p, 0) for p, end in ends.items() if end > 0])
        left, found = {p for p, end in ends.items() if end > 0}, []
        while left:
            message = consumer.poll(10)
            assert message is not None, f"timed out reading {topic}"
            if message.error():
                continue
            found.append((message.key(), message.value()))
            if message.offset() + 1 >= ends[message.partition()]:
                left.discard(message.partition())
        return found
    finally:
        consumer.close()


def ids(pairs: list[tuple[bytes | None, bytes | None]]) -> list[int]:
    return [orjson.loads(key)["id"] for key, _ in pairs if key is not None]


def stored_offsets(bootstrap: str, topic: str, connector: str) -> dict[bytes, Any]:
    """The last value of each key of this connector in the offsets topic, keys as raw bytes."""
    latest: dict[bytes, Any] = {}
    for key, value in consume(bootstrap, topic):
        assert key is not None
        if orjson.loads(key)[0] == connector:
            latest[key] = None if value is None else orjson.loads(value)
    return latest


def offset_key(connector: str, table: str) -> bytes:
    return f'["{connector}",{{"protocol":"1","table":"public.{table}"}}]'.encode()


def test_tables_copy_incrementally_resume_from_the_offsets_topic_and_new_tables_are_picked_up(
        bootstrap_servers: str, postgres_url: str) -> None:
    for table, rows in TABLES.items():
        create_table(postgres_url, table, rows)
    run = uuid.uuid4().hex[:8]
    name, prefix, offsets_topic = f"jdbc-{run}", f"pg{run}-", f"offsets-{run}"
    props = {"name": name, "connector.class": CONNECTOR_CLASS, "connection.url": postgres_url,
             "mode": "timestamp+incrementing", "timestamp.column.name": "updated",
             "incrementing.column.name": "id", "topic.prefix": prefix, "tasks.max": "2",
             "record.key.mode": "primary_key", "batch.max.rows": "2000", **JSON}
    worker = {"offset.storage.topic": offsets_topic, "offset.storage.replication.factor": "1",
              "offset.storage.partitions": "5", "offset.flush.interval.ms": "500"}

    with Kopycat(bootstrap_servers, worker_props=worker) as kc:
        summaries = kc.run_once(props, BOUNDS, timeout_s=600)
    assert len(summaries) == 2 and all(s is not None and s.error is None for s in summaries)
    assert sum(s.records for s in summaries if s is not None) == sum(TABLES.values())
    for table, rows in TABLES.items():
        copied = ids(consume(bootstrap_servers, prefix + table))
        assert sorted(copied) == list(range(1, rows + 1)), table  # each row exactly once

    offsets = stored_offsets(bootstrap_servers, offsets_topic, name)
    assert offsets[offset_key(name, "orders")] == {
        "incrementing": 33_334, "timestamp": 1_704_067_200_000 + 33_334_000, "timestamp_nanos": 0}
    assert set(offsets) == {offset_key(name, t) for t in TABLES}

    execute(postgres_url,
            "INSERT INTO orders (label, amount, updated) SELECT 'new ' || n, 1.5, "
            "(now() AT TIME ZONE 'UTC') - INTERVAL '1 minute' FROM generate_series(1, 100) AS n",
            "UPDATE customers SET label = 'changed', updated = (now() AT TIME ZONE 'UTC') - INTERVAL "
            "'1 minute' WHERE id % 1000 = 0")
    with Kopycat(bootstrap_servers, worker_props=worker) as kc:  # a new worker: offsets from the topic
        second = kc.run_once(props, BOUNDS, timeout_s=600)
    assert sum(s.records for s in second if s is not None) == 100 + 33
    orders = ids(consume(bootstrap_servers, prefix + "orders"))
    customers = consume(bootstrap_servers, prefix + "customers")
    assert collections.Counter(orders) - collections.Counter(range(1, 33_335)) == collections.Counter(
        range(33_335, 33_435))
    changed = [orjson.loads(key)["id"] for key, value in customers
               if value is not None and orjson.loads(value)["label"] == "changed"]
    assert sorted(changed) == list(range(1000, 33_334, 1000))
    assert len(ids(consume(bootstrap_servers, prefix + "payments"))) == TABLES["payments"]

    create_table(postgres_url, "refunds", 10)
    with Kopycat(bootstrap_servers, worker_props=worker) as kc:
        third = kc.run_once(props, BOUNDS, timeout_s=600)
    assert [s.error for s in third if s is not None] == [None, None]
    assert sum(s.records for s in third if s is not None) == 10
    assert sorted(ids(consume(bootstrap_servers, prefix + "refunds"))) == list(range(1, 11))
    assert stored_offsets(bootstrap_servers, offsets_topic, name)[offset_key(name, "refunds")][
        "incrementing"] == 10


@pytest.mark.parametrize("mode", ["bulk", "incrementing", "timestamp"])
def test_a_bounded_run_ends_once_every_table_was_read_without_waiting_for_idleness(
        bootstrap_servers: str, postgres_url: str, mode: str) -> None:
    """A copy task copies what its queries found and ends caught up (RunComplete), with no idle bound.

    Without the signal the run would stop only on its time budget (``max_seconds``) instead.
    """
    run = uuid.uuid4().hex[:8]
    tables = {f"a{run}": 2_500, f"b{run}": 700}
    for table, rows in tables.items():
        create_table(postgres_url, table, rows)
    name, prefix = f"jdbc-bounded-{run}", f"pg{run}-"
    props = {"name": name, "connector.class": CONNECTOR_CLASS, "connection.url": postgres_url, "mode": mode,
             "incrementing.column.name": "id", "timestamp.column.name": "updated",
             "table.whitelist": ",".join(tables), "topic.prefix": prefix, "tasks.max": "1",
             "batch.max.rows": "1000", "poll.interval.ms": "1", **JSON}
    worker = {"offset.storage.topic": f"offsets-{run}", "offset.storage.replication.factor": "1",
              "offset.storage.partitions": "1"}
    with Kopycat(bootstrap_servers, worker_props=worker) as kc:
        [summary] = kc.run_once(props, Bounds(max_seconds=120), timeout_s=600)
    assert summary is not None and summary.error is None
    assert summary.stop_reason.value == "caught_up"
    assert summary.records == sum(tables.values())  # each table read once, though due again every millisecond
    for table, rows in tables.items():
        assert sorted(orjson.loads(value)["id"] for _, value in consume(bootstrap_servers, prefix + table)
                      if value is not None) == list(range(1, rows + 1)), table

"""Schema evolution end to end with Avro: a real broker, a real registry, SQLite tables.

A JDBC source table gains a nullable column: the source's next run registers a second version of
the value subject under BACKWARD compatibility. The JDBC sink with ``auto.evolve=true`` adds the
column to its table; the storage sink with ``schema.compatibility=BACKWARD`` starts a file at the
newer version and projects a record of the older version that comes after it (a null in the new
column). Then a change BACKWARD forbids (a required column without a default) is refused by the
registry, and the source task fails with the registry's message naming the subject and version.
"""

from __future__ import annotations

import sqlite3
import urllib.parse
import uuid
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from confluent_kafka import Producer

from kopycat.connectors.files.committed_files import TEMP_DIR
from kopycat.converters.schema_registry import SchemaRegistryClient
from kopycat.embedded import Kopycat
from kopycat.runtime.bounds import Bounds
from tests.integration.test_jdbc_source import consume

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]

BOUNDS = Bounds(idle_ms=2000)


def avro_values(registry: str) -> dict[str, str]:
    return {"key.converter": "org.apache.kafka.connect.storage.StringConverter",
            "value.converter": "io.confluent.connect.avro.AvroConverter",
            "value.converter.schema.registry.url": registry}


def execute(path: Path, *statements: str) -> None:
    with sqlite3.connect(path) as db:
        for statement in statements:
            db.execute(statement)


def test_a_new_column_evolves_the_subject_the_jdbc_sink_and_the_storage_sink_and_a_breaking_one_fails(
        bootstrap_servers: str, schema_registry: str, tmp_path: Path) -> None:
    run = uuid.uuid4().hex[:8]
    topic, source_db, sink_db = f"ev{run}-items", tmp_path / "source.db", tmp_path / "sink.db"
    subject = f"{topic}-value"
    registry = SchemaRegistryClient(schema_registry)
    execute(source_db, "CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT NOT NULL)",
            *[f"INSERT INTO items VALUES ({n}, 'item {n}')" for n in range(1, 6)])
    worker = {"offset.storage.topic": f"offsets-{run}", "offset.storage.replication.factor": "1",
              "offset.storage.partitions": "1", "offset.flush.interval.ms": "500"}
    source = {"name": f"source-{run}",
              "connector.class": "kopycat.connectors.jdbc.source_connector.JdbcSourceConnector",
              "connection.url": f"sqlite:///{source_db}", "mode": "incrementing", "incrementing.column.name": "id",
              "table.whitelist": "items", "topic.prefix": f"ev{run}-", "tasks.max": "1", **avro_values(schema_registry)}
    with Kopycat(bootstrap_servers, worker_props=worker) as kc:
        assert [s.records for s in kc.run_once(source, BOUNDS, 300) if s] == [5]
        registry.request("PUT", f"/config/{urllib.parse.quote(subject, safe='')}", {"compatibility": "BACKWARD"})

        execute(source_db, "ALTER TABLE items ADD COLUMN qty INTEGER",
                *[f"INSERT INTO items VALUES ({n}, 'item {n}', {n * 10})" for n in range(6, 11)])
        assert [s.records for s in kc.run_once(source, BOUNDS, 300) if s] == [5]
        assert registry.request("GET", f"/subjects/{urllib.parse.quote(subject, safe='')}/versions") == [1, 2]

        # an item of the first version again, after the second's: the storage sink projects it
        first_value = consume(bootstrap_servers, topic)[0][1]
        producer = Producer({"bootstrap.servers": bootstrap_servers})
        producer.produce(topic, value=first_value, partition=0)
        assert producer.flush(30) == 0

        sink = {"name": f"sink-{run}", "connector.class": "kopycat.connectors.jdbc.sink_connector.JdbcSinkConnector",
                "connection.url": f"sqlite:///{sink_db}", "topics": topic, "insert.mode": "insert", "pk.mode": "none",
                "auto.create": "true", "auto.evolve": "true", "table.name.format": "items", "tasks.max": "1",
                **avro_values(schema_registry)}
        assert [s.records for s in kc.run_once(sink, BOUNDS, 300) if s] == [11]
        store = tmp_path / "lake"
        files = {"name": f"files-{run}", "connector.class": "kopycat.connectors.files.FileSinkConnector",
                 "topics": topic, "tasks.max": "1", "store.url": store.as_uri(), "format.class": "parquet",
                 "flush.size": "100", "schema.compatibility": "BACKWARD", **avro_values(schema_registry)}
        assert [s.records for s in kc.run_once(files, BOUNDS, 300) if s] == [11]

        execute(source_db, "ALTER TABLE items ADD COLUMN code TEXT NOT NULL DEFAULT 'x'",
                "INSERT INTO items VALUES (11, 'item 11', 110, 'y')")
        [failed] = kc.run_once(source, BOUNDS, 300)

    with sqlite3.connect(sink_db) as db:
        assert [row[1] for row in db.execute("PRAGMA table_info(items)")] == ["id", "name", "qty"]
        assert db.execute("SELECT id, qty FROM items ORDER BY rowid").fetchall() == [
            *[(n, None) for n in range(1, 6)], *[(n, n * 10) for n in range(6, 11)], (1, None)]
    tables = {path.name: pq.read_table(path) for path in sorted(store.rglob("*.parquet")) if TEMP_DIR not in path.parts}
    assert list(tables) == [f"{topic}+0+0000000000+0000000004.parquet", f"{topic}+0+0000000005+0000000010.parquet"]
    first, second = tables.values()
    assert first.column_names == ["id", "name"]
    assert second.column_names == ["id", "name", "qty"]
    assert second.column("qty").to_pylist() == [60, 70, 80, 90, 100, None]

    assert failed is not None and failed.error is not None
    assert subject in str(failed.error) and "version 2" in str(failed.error), failed.error

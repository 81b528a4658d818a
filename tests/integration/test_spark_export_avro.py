"""The Spark export of Confluent Avro values against a real broker, registry and local Spark.

Orders written as Confluent Avro under two schema ids of one subject (two registered texts that
map to the same Connect schema, alternating within each partition's range) are exported by the
Python storage sink and by the Spark job planned from the same sink config: the files must have
the same names and rows. The job fetches the writer schemas at plan time; an id it did not fetch
fails the job naming it.
"""

from __future__ import annotations

import json
import struct
import uuid
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from confluent_kafka import Producer

from kopycat.api.data import SchemaBuilder, Struct
from kopycat.api.errors import ConnectError
from kopycat.api.records import TopicPartition
from kopycat.connectors.files.committed_files import TEMP_DIR
from kopycat.connectors.files.spark_export import run_spark_export
from kopycat.connectors.files.spark_plan import plan_spark_export
from kopycat.converters.avro import AvroConverter
from kopycat.converters.avro_data import to_avro_schema
from kopycat.converters.schema_registry import SchemaRegistryClient
from kopycat.runtime.bounded_plan import plan_bounded_run
from kopycat.runtime.bounded_run import run_planned_task
from tests.support.kafka import create_topic
from tests.support.orders import ORDER, order

pytestmark = [pytest.mark.integration, pytest.mark.timeout(3600)]

SPARK_TIMEOUT_S = 1500
PARTITIONS = 2
COUNT = 3_000
builder = SchemaBuilder.struct().name("order").version(1)
for _field in ORDER.fields:
    builder.field(_field.name, _field.schema)
VERSIONED = builder.build()
"""The orders' schema with a Connect version: both registered texts then read to one Connect schema."""


def versioned(n: int) -> Struct:
    plain = order(n)
    out = Struct(VERSIONED)
    for f in VERSIONED.fields:
        out.put(f.name, plain.get(f.name))
    return out


def produce_avro_orders(bootstrap: str, registry: str, topic: str) -> dict[TopicPartition, int]:
    """Orders 0..COUNT-1, id n to partition n % 2, odd ids framed with a second id of the same subject."""
    create_topic(bootstrap, topic, PARTITIONS)
    writer = AvroConverter()
    writer.configure({"schema.registry.url": registry}, is_key=False)
    values = writer.from_connect_data_batch(topic, VERSIONED, [versioned(n) for n in range(COUNT)])
    other = {**to_avro_schema(VERSIONED), "x-origin": "second writer"}  # same Connect schema, another id
    second = SchemaRegistryClient(registry).register(f"{topic}-value", json.dumps(other))
    first = struct.unpack(">bI", values[0][:5])[1]  # type: ignore[index]
    assert second != first
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
    for n, value in enumerate(values):
        framed = value if n % 4 < 2 else struct.pack(">bI", 0, second) + value[5:]  # type: ignore[index]
        producer.produce(topic, value=framed, key=str(n).encode(), partition=n % PARTITIONS)
    assert producer.flush(60) == 0
    return {TopicPartition(topic, p): len(range(p, COUNT, PARTITIONS)) for p in range(PARTITIONS)}


def sink_config(name: str, topic: str, store: Path, registry: str) -> dict[str, str]:
    return {"name": name, "connector.class": "io.confluent.connect.s3.S3SinkConnector", "topics": topic,
            "tasks.max": "1", "store.url": f"file://{store}", "format.class": "parquet", "flush.size": "100000",
            "key.converter": "org.apache.kafka.connect.storage.StringConverter",
            "value.converter": "io.confluent.connect.avro.AvroConverter",
            "value.converter.schema.registry.url": registry}


def committed(topic_dir: Path) -> dict[str, list[dict[str, Any]]]:
    return {str(path.relative_to(topic_dir)): pq.read_table(path).to_pylist()
            for path in sorted(topic_dir.rglob("*.parquet")) if TEMP_DIR not in path.parts}


def test_avro_values_of_several_schema_ids_export_to_the_python_sinks_files(
        bootstrap_servers: str, schema_registry: str, topic_name: str, tmp_path: Path) -> None:
    ends = produce_avro_orders(bootstrap_servers, schema_registry, topic_name)
    worker = {"bootstrap.servers": bootstrap_servers}
    python_config = sink_config(f"py-{uuid.uuid4().hex[:8]}", topic_name, tmp_path / "python", schema_registry)
    for planned in plan_bounded_run(python_config, worker):
        assert run_planned_task(python_config, planned, worker).error is None
    spark_config = sink_config(f"spark-{uuid.uuid4().hex[:8]}", topic_name, tmp_path / "spark", schema_registry)

    result = run_spark_export(plan_spark_export(spark_config, worker, ends, master="local[2]"),
                              timeout=SPARK_TIMEOUT_S)

    from_spark = committed(tmp_path / "spark" / "topics" / topic_name)
    assert len(from_spark) == PARTITIONS and sum(f.rows for f in result.files) == COUNT
    assert from_spark == committed(tmp_path / "python" / "topics" / topic_name), "the Python sink's names and rows"
    assert sorted(row["id"] for rows in from_spark.values() for row in rows) == list(range(COUNT))


def test_a_schema_id_the_plan_did_not_fetch_fails_the_export_naming_it(
        bootstrap_servers: str, schema_registry: str, topic_name: str, tmp_path: Path) -> None:
    create_topic(bootstrap_servers, topic_name, 1)
    writer = AvroConverter()
    writer.configure({"schema.registry.url": schema_registry}, is_key=False)
    good = writer.from_connect_data(topic_name, VERSIONED, versioned(1))
    stray = struct.pack(">bI", 0, 987_654) + good[5:]  # type: ignore[index]
    producer = Producer({"bootstrap.servers": bootstrap_servers})
    for value in (good, stray):
        producer.produce(topic_name, value=value, partition=0)
    assert producer.flush(30) == 0
    config = sink_config(f"spark-{uuid.uuid4().hex[:8]}", topic_name, tmp_path / "spark", schema_registry)
    job = plan_spark_export(config, {"bootstrap.servers": bootstrap_servers}, {TopicPartition(topic_name, 0): 2},
                            master="local[2]")
    with pytest.raises(ConnectError, match="schema id 987654 is not one the export fetched"):
        run_spark_export(job, timeout=SPARK_TIMEOUT_S)

"""The AvroConverter against a real Schema Registry (Apicurio, Confluent's API) and a real broker.

Oracle: Confluent's own Python serializers (``confluent_kafka.schema_registry.avro``). What they
write, Kopycat reads to the same Connect values; what Kopycat writes, they read to the same values;
for the same schema id, the bytes are equal. Then bad records (no magic byte, an unknown id, the
registry down) fail as DataErrors and land in the dead letter queue under errors.tolerance=all,
and a JDBC source -> Avro -> JDBC sink run through ``kopycat run`` gives back the source's rows.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import socket
import sqlite3
import subprocess
import sys
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.schema_registry import Schema as ConfluentSchema
from confluent_kafka.schema_registry import SchemaRegistryClient as ConfluentRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from kopycat.api.data import Date, Decimal, Schema, SchemaBuilder, Struct, Time, Timestamp
from kopycat.api.errors import DataError
from kopycat.converters.avro import AvroConverter
from kopycat.runtime.error_reporters import build_reporters
from kopycat.runtime.errors import ProcessingContext, RetryWithToleranceOperator, Stage
from tests.support.kafka import consume_records, produce

pytestmark = pytest.mark.integration

UTC = dt.UTC
ADDRESS = (SchemaBuilder.struct().name("com.example.Address")
           .field("street", Schema.STRING_SCHEMA).field("zip", Schema.OPTIONAL_INT32_SCHEMA).build())
ORDER = (SchemaBuilder.struct().name("com.example.Order").doc("an order").version(2)
         .field("id", Schema.INT64_SCHEMA)
         .field("tiny", Schema.INT8_SCHEMA).field("small", Schema.OPTIONAL_INT16_SCHEMA)
         .field("qty", Schema.INT32_SCHEMA).field("ratio", Schema.FLOAT32_SCHEMA)
         .field("price", Schema.FLOAT64_SCHEMA).field("paid", Schema.BOOLEAN_SCHEMA)
         .field("note", Schema.OPTIONAL_STRING_SCHEMA).field("blob", Schema.OPTIONAL_BYTES_SCHEMA)
         .field("amount", Decimal.builder(2).parameter("connect.decimal.precision", "12").build())
         .field("day", Date.SCHEMA).field("at", Time.SCHEMA)
         .field("created", Timestamp.builder().optional().build())
         .field("status", SchemaBuilder.string().default_value("new").build())
         .field("tags", SchemaBuilder.array(Schema.STRING_SCHEMA).build())
         .field("counts", SchemaBuilder.map(Schema.STRING_SCHEMA, Schema.OPTIONAL_INT64_SCHEMA).build())
         .field("by_zip", SchemaBuilder.map(Schema.INT32_SCHEMA, ADDRESS).optional().build())
         .field("ship_to", ADDRESS)
         .build())


def _order(i: int) -> Struct:
    address = Struct(ADDRESS).put("street", f"Main St {i}").put("zip", 10_000 + i)
    values: dict[str, Any] = {
        "id": 2**40 + i, "tiny": -3, "small": None if i % 2 else 7, "qty": i, "ratio": 0.5, "price": 9.75,
        "paid": bool(i % 2), "note": None if i % 3 else f"note {i}", "blob": b"\x00\xff" * (i % 3),
        "amount": decimal.Decimal(f"{i}.{i % 100:02d}"), "day": dt.date(2024, 2, 29),
        "at": dt.time(23, 59, 58, 123000), "created": None if i == 2 else dt.datetime(2024, 5, 6, 7, 8, 9, 10000,
                                                                                         tzinfo=UTC),
        "status": "new" if i % 2 else "shipped", "tags": ["a", f"t{i}"], "counts": {"x": i, "y": None},
        "by_zip": None if i == 1 else {10_000 + i: address}, "ship_to": address}
    order = Struct(ORDER)
    for name, value in values.items():
        order.put(name, value)
    return order


def _oracle_dict(order: Struct) -> dict[str, Any]:
    """What Confluent's AvroDeserializer gives for an order (fastavro's logical values, MapEntry lists)."""
    plain = {f.name: order.get(f) for f in ORDER.fields}
    plain["ship_to"] = {"street": order.get("ship_to").get("street"), "zip": order.get("ship_to").get("zip")}
    if plain["by_zip"] is not None:
        plain["by_zip"] = [{"key": k, "value": {"street": v.get("street"), "zip": v.get("zip")}}
                           for k, v in plain["by_zip"].items()]
    return plain


def _converter(url: str, **extra: str) -> AvroConverter:
    converter = AvroConverter()
    converter.configure({"schema.registry.url": url, **extra}, False)
    return converter


def _schema_text(converter: AvroConverter, topic: str) -> str:
    converter.from_connect_data(topic, ORDER, _order(0))
    return converter.client.request("GET", f"/subjects/{topic}-value/versions/latest")["schema"]  # type: ignore[union-attr]


def test_what_kopycat_writes_confluents_deserializer_reads_to_the_same_values(
        schema_registry: str, topic_name: str) -> None:
    converter = _converter(schema_registry)
    deserializer = AvroDeserializer(ConfluentRegistryClient({"url": schema_registry}))
    context = SerializationContext(topic_name, MessageField.VALUE)
    for i in range(4):
        data = converter.from_connect_data(topic_name, ORDER, _order(i))
        assert data is not None and data[0] == 0
        assert deserializer(data, context) == _oracle_dict(_order(i))


def test_what_confluents_serializer_writes_kopycat_reads_and_the_bytes_are_equal(
        schema_registry: str, topic_name: str) -> None:
    converter = _converter(schema_registry)
    schema_text = _schema_text(converter, topic_name)
    serializer = AvroSerializer(ConfluentRegistryClient({"url": schema_registry}), schema_text)
    context = SerializationContext(topic_name, MessageField.VALUE)
    reader = _converter(schema_registry)
    written = []
    for i in range(4):
        theirs = serializer(_oracle_dict(_order(i)), context)
        ours = converter.from_connect_data(topic_name, ORDER, _order(i))
        assert theirs == ours
        written.append(theirs)
        schema, value = reader.to_connect_data(topic_name, theirs)
        assert schema == ORDER
        assert value == _order(i) and value.get("status") == _order(i).get("status")
    batch = converter.from_connect_data_batch(topic_name, ORDER, [None, *(_order(i) for i in range(4))])
    assert batch == [None, *written]


def test_keys_use_the_key_subject_and_tombstones_stay_null(schema_registry: str, topic_name: str) -> None:
    converter = AvroConverter()
    converter.configure({"schema.registry.url": schema_registry}, True)
    data = converter.from_connect_data(topic_name, Schema.STRING_SCHEMA, "order-7")
    assert converter.client is not None
    assert converter.client.request("GET", "/subjects")  # the registry lists the subject
    assert f"{topic_name}-key" in converter.client.request("GET", "/subjects")
    # no connect.version in a plain "string": the Connect schema takes the registry's version, as Confluent's
    assert converter.to_connect_data(topic_name, data) == (SchemaBuilder.string().version(1).build(), "order-7")
    assert converter.from_connect_data(topic_name, ORDER, None) is None
    assert converter.to_connect_data(topic_name, None) == (None, None)


@pytest.mark.parametrize(("strategy", "subject"), [
    ("io.confluent.kafka.serializers.subject.RecordNameStrategy", "com.example.Order"),
    ("io.confluent.kafka.serializers.subject.TopicRecordNameStrategy", "{topic}-com.example.Order"),
])
def test_record_name_strategies_register_under_the_records_name(
        schema_registry: str, topic_name: str, strategy: str, subject: str) -> None:
    converter = _converter(schema_registry, **{"value.subject.name.strategy": strategy})
    converter.from_connect_data(topic_name, ORDER, _order(1))
    assert converter.client is not None
    assert subject.format(topic=topic_name) in converter.client.request("GET", "/subjects")


def test_without_auto_register_an_unregistered_schema_is_a_data_error_and_use_latest_takes_the_latest(
        schema_registry: str, topic_name: str) -> None:
    lookup_only = _converter(schema_registry, **{"auto.register.schemas": "false"})
    with pytest.raises(DataError, match="404"):
        lookup_only.from_connect_data(topic_name, ORDER, _order(1))
    registered = _converter(schema_registry).from_connect_data(topic_name, ORDER, _order(1))
    assert lookup_only.from_connect_data(topic_name, ORDER, _order(1)) == registered
    latest = _converter(schema_registry, **{"auto.register.schemas": "false", "use.latest.version": "true"})
    assert latest.from_connect_data(topic_name, ORDER, _order(1)) == registered


def _reordered(node: Any) -> Any:
    """The same JSON with every object's keys in reverse order (what another tool may register)."""
    if isinstance(node, dict):
        return {key: _reordered(node[key]) for key in reversed(node)}
    return [_reordered(item) for item in node] if isinstance(node, list) else node


def test_normalize_schemas_finds_a_schema_registered_in_another_json_form(
        schema_registry: str, topic_name: str) -> None:
    point = SchemaBuilder.struct().name("com.example.Point").field("x", Schema.INT32_SCHEMA).build()
    ours = _converter(schema_registry).new_writer(point).text
    subject = f"{topic_name}-value"
    theirs = ConfluentRegistryClient({"url": schema_registry})
    their_id = theirs.register_schema(subject, ConfluentSchema(json.dumps(_reordered(json.loads(ours)), indent=2),
                                                               "AVRO"))
    lookup = {"auto.register.schemas": "false"}
    with pytest.raises(DataError, match="404"):
        _converter(schema_registry, **lookup).from_connect_data(topic_name, point, Struct(point).put("x", 1))
    normalized = _converter(schema_registry, **lookup, **{"normalize.schemas": "true"})
    data = normalized.from_connect_data(topic_name, point, Struct(point).put("x", 1))
    assert int.from_bytes(data[1:5]) == their_id  # type: ignore[index]
    registering = _converter(schema_registry, **{"normalize.schemas": "true"})
    assert registering.from_connect_data(topic_name, point, Struct(point).put("x", 2))[1:5] == data[1:5]  # type: ignore[index]
    assert theirs.get_versions(subject) == [1]  # no second version for the same schema


def test_scrubbed_names_register_and_confluents_deserializer_reads_them(schema_registry: str, topic_name: str) -> None:
    row = (SchemaBuilder.struct().name("my-shop.Order Row").field("order id", Schema.INT64_SCHEMA)
           .field("unit-price", Schema.OPTIONAL_FLOAT64_SCHEMA).build())
    converter = _converter(schema_registry, **{"scrub.invalid.names": "true"})
    data = converter.from_connect_data(topic_name, row, Struct(row).put("order id", 7).put("unit-price", 2.5))
    deserializer = AvroDeserializer(ConfluentRegistryClient({"url": schema_registry}))
    assert deserializer(data, SerializationContext(topic_name, MessageField.VALUE)) == {"order_id": 7,
                                                                                        "unit_price": 2.5}
    registered = json.loads(_converter(schema_registry).client.latest(f"{topic_name}-value").schema)  # type: ignore[union-attr]
    assert (registered["namespace"], registered["name"]) == ("my_shop", "Order_Row")
    schema, value = converter.to_connect_data(topic_name, data)
    assert schema is not None and [f.name for f in schema.fields] == ["order_id", "unit_price"]
    assert schema.name == "my-shop.Order Row" and (value.get("order_id"), value.get("unit_price")) == (7, 2.5)


def test_no_magic_byte_an_unknown_id_and_a_registry_that_is_down_are_data_errors(
        schema_registry: str, topic_name: str) -> None:
    converter = _converter(schema_registry)
    with pytest.raises(DataError, match="unknown magic byte"):
        converter.to_connect_data(topic_name, b'{"id": 1}')
    with pytest.raises(DataError, match="schema id 987654 could not be fetched.*404"):
        converter.to_connect_data(topic_name, b"\x00\x00\x0f\x12\x06\x02")
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    down = _converter(f"http://127.0.0.1:{port}", **{"max.retries": "2", "retries.wait.ms": "10"})
    with pytest.raises(DataError, match=r"failed after 3 attempts.*registry is up"):
        down.to_connect_data(topic_name, b"\x00\x00\x00\x00\x01\x02")


def test_records_that_fail_avro_conversion_go_to_the_dead_letter_queue_with_errors_tolerance_all(
        schema_registry: str, bootstrap_servers: str, topic_name: str) -> None:
    dlq = f"{topic_name}-dlq"
    good = _converter(schema_registry).from_connect_data(topic_name, ORDER, _order(1))
    assert good is not None
    produce(bootstrap_servers, topic_name, [b"plain text", b"\x00\x00\x0f\x12\x06\x02", good])
    config = {"errors.tolerance": "all", "errors.deadletterqueue.topic.name": dlq,
              "errors.deadletterqueue.topic.replication.factor": "1",
              "errors.deadletterqueue.context.headers.enable": "true"}
    retry = RetryWithToleranceOperator.from_config(config, build_reporters(
        config, connector_name="avro-sink", task_id=0, bootstrap_servers=bootstrap_servers))
    converter = _converter(schema_registry)
    converted = [retry.execute(partial(converter.to_connect_data, message.topic(), message.value()),
                               Stage.VALUE_CONVERTER, AvroConverter, partial(ProcessingContext.for_message, message))
                 for message in consume_records(bootstrap_servers, topic_name)]
    retry.flush(30)
    retry.close()

    assert converted[:2] == [None, None] and converted[2] == (ORDER, _order(1))
    dead = consume_records(bootstrap_servers, dlq)
    assert [m.value() for m in dead] == [b"plain text", b"\x00\x00\x0f\x12\x06\x02"]
    messages = [dict(m.headers() or [])["__connect.errors.exception.message"] for m in dead]
    assert b"unknown magic byte" in messages[0] and b"schema id 987654" in messages[1]


def _kopycat(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kopycat.cli", *args], capture_output=True, text=True, timeout=300)


def _props(path: Path, props: dict[str, str]) -> str:
    path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    return str(path)


def test_jdbc_rows_through_avro_and_the_registry_come_back_equal_to_the_source(
        tmp_path: Path, schema_registry: str, bootstrap_servers: str, topic_name: str) -> None:
    source_db, sink_db = tmp_path / "source.db", tmp_path / "sink.db"
    with sqlite3.connect(source_db) as db:
        db.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, name TEXT NOT NULL, amount NUMERIC(12, 2), "
                   "created TIMESTAMP, note TEXT)")
        db.executemany("INSERT INTO orders VALUES (?, ?, ?, ?, ?)", [
            (i, f"order {i}", None if i % 7 == 0 else f"{i * 3}.{i % 100:02d}",
             None if i % 5 == 0 else f"2024-03-{1 + i % 28:02d} 12:{i % 60:02d}:05.250000",
             None if i % 2 else f"note {i}") for i in range(1, 201)])
    avro = {"value.converter": "io.confluent.connect.avro.AvroConverter",
            "value.converter.schema.registry.url": schema_registry}
    worker = _props(tmp_path / "worker.properties", {
        "bootstrap.servers": bootstrap_servers, "offset.storage.file.filename": str(tmp_path / "offsets"),
        "key.converter": "org.apache.kafka.connect.storage.StringConverter", **avro})
    source = _props(tmp_path / "source.properties", {
        "name": f"{topic_name}-src", "connector.class": "kopycat.connectors.jdbc.source_connector.JdbcSourceConnector",
        "connection.url": f"sqlite:///{source_db}", "mode": "incrementing", "incrementing.column.name": "id",
        "table.whitelist": "orders", "topic.prefix": f"{topic_name}-", "tasks.max": "1"})
    sink = _props(tmp_path / "sink.properties", {
        "name": f"{topic_name}-sink", "connector.class": "kopycat.connectors.jdbc.sink_connector.JdbcSinkConnector",
        "connection.url": f"sqlite:///{sink_db}", "topics": f"{topic_name}-orders", "insert.mode": "insert",
        "pk.mode": "none", "auto.create": "true", "table.name.format": "orders", "tasks.max": "1"})

    for config in (source, sink):
        done = _kopycat("run", worker, config, "--no-progress")
        assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    subjects = _converter(schema_registry).client.request("GET", "/subjects")  # type: ignore[union-attr]
    assert f"{topic_name}-orders-value" in subjects

    query = "SELECT id, name, CAST(amount AS TEXT), created, note FROM orders ORDER BY id"
    with sqlite3.connect(source_db) as db:
        expected = [_normalized(row) for row in db.execute(query)]
    with sqlite3.connect(sink_db) as db:
        copied = [_normalized(row) for row in db.execute(query)]
    assert len(copied) == 200 and copied == expected


def _normalized(row: tuple[Any, ...]) -> tuple[Any, ...]:
    """One row as comparable values: the amount as a Decimal at scale 2, the timestamp as a naive UTC datetime."""
    row_id, name, amount, created, note = row
    amount = None if amount is None else decimal.Decimal(amount).quantize(decimal.Decimal("0.01"))
    if created is not None:
        created = dt.datetime.fromisoformat(created).replace(tzinfo=None)
    return row_id, name, amount, created, note

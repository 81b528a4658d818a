"""``use.latest.version`` with ``latest.compatibility.strict`` against a real registry (Apicurio).

Oracle for the compatibility check: the registry's own FORWARD check (data written with the new
schema readable with the latest, Avro's Java ``SchemaCompatibility``) on the cases of
tests/unit/converters/test_avro_compatibility.py gives the same verdicts as Kopycat's. Then the
converter writes with the subject's latest schema, which Confluent's deserializer reads, and a
latest schema that cannot read the data is refused naming the key that turns the check off.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from confluent_kafka.schema_registry import Schema as ConfluentSchema
from confluent_kafka.schema_registry import SchemaRegistryClient as ConfluentRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer
from confluent_kafka.serialization import MessageField, SerializationContext

from kopycat.api.data import Schema, SchemaBuilder, Struct
from kopycat.api.errors import DataError
from kopycat.converters.avro import AvroConverter
from kopycat.converters.avro_compatibility import reader_incompatibilities
from kopycat.converters.schema_registry import SchemaRegistryClient
from tests.unit.converters.test_avro_compatibility import CASES

pytestmark = pytest.mark.integration

POINT = SchemaBuilder.struct().name("com.example.Point").field("x", Schema.INT64_SCHEMA).build()


def _converter(url: str, **extra: str) -> AvroConverter:
    converter = AvroConverter()
    converter.configure({"schema.registry.url": url, "auto.register.schemas": "false", "use.latest.version": "true",
                         **extra}, False)
    return converter


@pytest.mark.parametrize(("reader", "writer"), [case[1:3] for case in CASES], ids=[c[0] for c in CASES])
def test_the_compatibility_verdicts_are_the_registrys_forward_check(
        schema_registry: str, topic_name: str, reader: Any, writer: Any) -> None:
    client = SchemaRegistryClient(schema_registry, max_retries=0)
    subject = f"{topic_name}-value"
    client.request("PUT", f"/config/{subject}", {"compatibility": "FORWARD"})
    client.register(subject, json.dumps(reader))
    answer = client.request("POST", f"/compatibility/subjects/{subject}/versions/latest",
                            {"schema": json.dumps(writer)})
    assert answer["is_compatible"] == (reader_incompatibilities(reader, writer) == [])


def _register(url: str, subject: str, fields: list[dict[str, Any]]) -> int:
    schema = {"type": "record", "name": "Point", "namespace": "com.example", "fields": fields}
    return ConfluentRegistryClient({"url": url}).register_schema(subject, ConfluentSchema(json.dumps(schema), "AVRO"))


def test_values_are_written_with_the_latest_schema_which_confluents_deserializer_reads(
        schema_registry: str, topic_name: str) -> None:
    latest_id = _register(schema_registry, f"{topic_name}-value", [
        {"name": "x", "type": "long"}, {"name": "label", "type": "string", "default": "n/a"}])
    data = _converter(schema_registry).from_connect_data(topic_name, POINT, Struct(POINT).put("x", 2**40))
    assert data is not None and int.from_bytes(data[1:5]) == latest_id
    deserializer = AvroDeserializer(ConfluentRegistryClient({"url": schema_registry}))
    assert deserializer(data, SerializationContext(topic_name, MessageField.VALUE)) == {"x": 2**40, "label": "n/a"}


def test_a_latest_schema_that_cannot_read_the_data_is_refused_unless_the_check_is_off(
        schema_registry: str, topic_name: str) -> None:
    latest_id = _register(schema_registry, f"{topic_name}-value", [{"name": "x", "type": "int"}])
    with pytest.raises(DataError, match=r"Incompatible schema of type 'AVRO'.*latest version \(1\) of subject "
                                        rf"{topic_name}-value.*x/: the reader's int cannot read the writer's long.*"
                                        r"latest\.compatibility\.strict=false"):
        _converter(schema_registry).from_connect_data(topic_name, POINT, Struct(POINT).put("x", 5))
    lenient = _converter(schema_registry, **{"latest.compatibility.strict": "false"})
    data = lenient.from_connect_data(topic_name, POINT, Struct(POINT).put("x", 5))
    assert data is not None and int.from_bytes(data[1:5]) == latest_id
    deserializer = AvroDeserializer(ConfluentRegistryClient({"url": schema_registry}))
    assert deserializer(data, SerializationContext(topic_name, MessageField.VALUE)) == {"x": 5}

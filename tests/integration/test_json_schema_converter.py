"""The JsonSchemaConverter against a real Schema Registry (Apicurio, Confluent's API) and a real broker.

Oracle: Confluent's own Python serializers (``confluent_kafka.schema_registry.json_schema``). What
they write, Kopycat reads to the same Connect values; what Kopycat writes, they read (validating it
against the registered schema) to the same JSON. Bad records (no magic byte, an unknown id) fail as
DataErrors; records go through a real topic and back.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient as ConfluentRegistryClient
from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from kopycat.api.data import Schema, SchemaBuilder, Struct
from kopycat.api.errors import DataError
from kopycat.converters.json_schema import JsonSchemaConverter
from kopycat.converters.json_schema_data import from_connect_value, to_json_schema
from kopycat.plugins import converter_class
from tests.integration.test_avro_converter import ORDER, _order
from tests.support.kafka import consume_records, produce

pytestmark = pytest.mark.integration


def _converter(url: str, is_key: bool = False, **extra: str) -> JsonSchemaConverter:
    converter = JsonSchemaConverter()
    converter.configure({"schema.registry.url": url, **extra}, is_key)
    return converter


def _plain(i: int) -> dict[str, Any]:
    """An order as the JSON Confluent's JsonSchemaConverter writes for it (json.loads of our payload)."""
    return json.loads(json.dumps(from_connect_value(ORDER, _order(i))))


def test_what_kopycat_writes_confluents_deserializer_reads_and_validates(schema_registry: str, topic_name: str) -> None:
    converter = _converter(schema_registry)
    client = ConfluentRegistryClient({"url": schema_registry})
    context = SerializationContext(topic_name, MessageField.VALUE)
    deserializer = JSONDeserializer(None, schema_registry_client=client)
    for i in range(4):
        data = converter.from_connect_data(topic_name, ORDER, _order(i))
        assert data is not None and data[0] == 0
        assert deserializer(data, context) == _plain(i)
    registered = converter.client.request("GET", f"/subjects/{topic_name}-value/versions/latest")  # type: ignore[union-attr]
    assert registered["schemaType"] == "JSON"
    assert json.loads(registered["schema"]) == to_json_schema(ORDER)


def test_what_confluents_serializer_writes_kopycat_reads_to_the_same_connect_values(
        schema_registry: str, topic_name: str) -> None:
    schema_text = json.dumps(to_json_schema(ORDER))
    client = ConfluentRegistryClient({"url": schema_registry})
    serializer = JSONSerializer(schema_text, client)
    context = SerializationContext(topic_name, MessageField.VALUE)
    reader = _converter(schema_registry)
    for i in range(4):
        schema, value = reader.to_connect_data(topic_name, serializer(_plain(i), context))
        assert schema == ORDER
        assert value == _order(i)
    writer = _converter(schema_registry)
    batch = writer.from_connect_data_batch(topic_name, ORDER, [None, _order(1), _order(2)])
    assert batch[0] is None
    assert [reader.to_connect_data(topic_name, b).value for b in batch[1:]] == [_order(1), _order(2)]


def test_a_schema_written_by_hand_maps_to_connect_types_as_confluents(schema_registry: str, topic_name: str) -> None:
    schema_text = json.dumps({
        "title": "Person", "type": "object", "properties": {
            "name": {"type": "string"}, "age": {"type": "integer"}, "score": {"type": ["number", "null"]},
            "tags": {"type": "array", "items": {"type": "string"}}}, "required": ["name"]})
    serializer = JSONSerializer(schema_text, ConfluentRegistryClient({"url": schema_registry}))
    data = serializer({"name": "Ann", "age": 41, "score": None, "tags": ["x"]},
                      SerializationContext(topic_name, MessageField.VALUE))
    schema, value = _converter(schema_registry).to_connect_data(topic_name, data)
    assert schema == (SchemaBuilder.struct().name("Person").version(1).field("name", Schema.STRING_SCHEMA)
                      .field("age", Schema.INT64_SCHEMA).field("score", Schema.OPTIONAL_FLOAT64_SCHEMA)
                      .field("tags", SchemaBuilder.array(Schema.STRING_SCHEMA).build()).build())
    assert (value.get("name"), value.get("age"), value.get("score"), value.get("tags")) == ("Ann", 41, None, ["x"])


def test_definitions_references_and_all_of_read_as_confluents_json_schema_data(
        schema_registry: str, topic_name: str) -> None:
    schema_text = json.dumps({
        "$schema": "http://json-schema.org/draft-07/schema#", "title": "Order", "type": "object",
        "definitions": {
            "Money": {"type": "object", "properties": {"units": {"type": "integer"}, "currency": {"type": "string"}},
                      "required": ["units", "currency"]},
            "Base": {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]}},
        "allOf": [{"$ref": "#/definitions/Base"},
                  {"properties": {"total": {"$ref": "#/definitions/Money"},
                                  "lines": {"type": "array", "items": {"$ref": "#/definitions/Money"}}},
                   "required": ["total", "lines"]}]})
    serializer = JSONSerializer(schema_text, ConfluentRegistryClient({"url": schema_registry}))
    context = SerializationContext(topic_name, MessageField.VALUE)
    orders = [{"id": i, "total": {"units": 10 * i, "currency": "EUR"},
               "lines": [{"units": n, "currency": "EUR"} for n in range(i)]} for i in range(1, 4)]
    reader = _converter(schema_registry)
    money = SchemaBuilder.struct().field("units", Schema.INT64_SCHEMA).field("currency", Schema.STRING_SCHEMA).build()
    for order in orders:
        schema, value = reader.to_connect_data(topic_name, serializer(order, context))
        assert schema == (SchemaBuilder.struct().field("id", Schema.INT64_SCHEMA).field("total", money)
                          .field("lines", SchemaBuilder.array(money).build()).build())
        assert value.get("id") == order["id"] and value.get("total").get("units") == order["total"]["units"]
        assert [(line.get("units"), line.get("currency")) for line in value.get("lines")] == [
            (line["units"], "EUR") for line in order["lines"]]


def test_keys_use_the_key_subject_and_record_name_strategies_the_title(schema_registry: str, topic_name: str) -> None:
    # Apicurio accepts JSON Schemas of objects (or with "$schema") only, so the key is a struct here.
    key_schema = SchemaBuilder.struct().name("com.example.OrderKey").field("id", Schema.STRING_SCHEMA).build()
    keys = _converter(schema_registry, is_key=True)
    data = keys.from_connect_data(topic_name, key_schema, Struct(key_schema).put("id", "order-7"))
    read_schema, key = keys.to_connect_data(topic_name, data)
    # no connect.version in the schema: the Connect schema takes the registry's version, as Confluent's
    assert read_schema.version == 1 and key.get("id") == "order-7"
    assert keys.from_connect_data(topic_name, ORDER, None) is None
    assert keys.to_connect_data(topic_name, None) == (None, None)
    by_record = _converter(schema_registry, **{"value.subject.name.strategy": "TopicRecordNameStrategy"})
    by_record.from_connect_data(topic_name, ORDER, _order(1))
    subjects = keys.client.request("GET", "/subjects")  # type: ignore[union-attr]
    assert f"{topic_name}-key" in subjects and f"{topic_name}-com.example.Order" in subjects


def test_no_magic_byte_an_unknown_id_and_bad_json_are_data_errors(schema_registry: str, topic_name: str) -> None:
    converter = _converter(schema_registry)
    with pytest.raises(DataError, match="unknown magic byte"):
        converter.to_connect_data(topic_name, b'{"id": 1}')
    with pytest.raises(DataError, match="schema id 987654 could not be fetched.*404"):
        converter.to_connect_data(topic_name, b"\x00\x00\x0f\x12\x06{}")
    good = converter.from_connect_data(topic_name, ORDER, _order(1))
    assert good is not None
    with pytest.raises(DataError, match="JSON Schema data for topic .* with schema id"):
        converter.to_connect_data(topic_name, good[:5] + b"{not json")
    lookup_only = _converter(schema_registry, **{"auto.register.schemas": "false"})
    with pytest.raises(DataError, match="404"):
        lookup_only.from_connect_data(f"{topic_name}-other", ORDER, _order(1))


def test_the_converter_loads_under_confluents_class_name() -> None:
    assert converter_class("io.confluent.connect.json.JsonSchemaConverter") is JsonSchemaConverter


def test_records_written_to_a_topic_are_read_back_from_it(
        schema_registry: str, bootstrap_servers: str, topic_name: str) -> None:
    converter = _converter(schema_registry)
    written = converter.from_connect_data_batch(topic_name, ORDER, [_order(i) for i in range(20)])
    produce(bootstrap_servers, topic_name, [data for data in written if data is not None])
    read = [_converter(schema_registry).to_connect_data(topic_name, m.value())
            for m in consume_records(bootstrap_servers, topic_name)]
    assert read == [(ORDER, _order(i)) for i in range(20)]

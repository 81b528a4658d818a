"""The ProtobufConverter against a real Schema Registry (Apicurio, Confluent's API) and a real broker.

Oracle: Confluent's own Python serializers (``confluent_kafka.schema_registry.protobuf``), with
message classes built at run time from the ``.proto`` Kopycat registers (no ``protoc`` here): what
Confluent's ProtobufSerializer writes (wire header, message indexes, payload), Kopycat reads to
the same Connect values; what Kopycat writes, Confluent's ProtobufDeserializer parses into the same
message. Bad records (no magic byte, an unknown id, bytes that are no such message) are DataErrors.
"""

from __future__ import annotations

import datetime as dt
import decimal
from typing import Any

import pytest
from confluent_kafka.schema_registry import Schema as ConfluentSchema
from confluent_kafka.schema_registry import SchemaRegistryClient as ConfluentRegistryClient
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from google.protobuf import wrappers_pb2

from kopycat.api.data import Date, Decimal, Schema, SchemaBuilder, Struct, Time, Timestamp, Type
from kopycat.api.errors import DataError
from kopycat.converters.protobuf import ProtobufConverter
from kopycat.converters.protobuf_descriptors import CompiledProto
from kopycat.converters.protobuf_schema import parse_proto
from kopycat.plugins import converter_class
from tests.support.kafka import consume_records, produce

pytestmark = pytest.mark.integration

TAG = "io.confluent.connect.protobuf.Tag"
ADDRESS = (SchemaBuilder.struct().name("com.example.Address")
           .field("street", Schema.STRING_SCHEMA).field("zip", Schema.INT32_SCHEMA).build())
ORDER = (SchemaBuilder.struct().name("com.example.Order")
         .field("id", Schema.INT64_SCHEMA).field("tiny", Schema.INT8_SCHEMA).field("qty", Schema.INT32_SCHEMA)
         .field("ratio", Schema.FLOAT32_SCHEMA).field("price", Schema.FLOAT64_SCHEMA)
         .field("paid", Schema.BOOLEAN_SCHEMA).field("note", Schema.STRING_SCHEMA).field("blob", Schema.BYTES_SCHEMA)
         .field("tags", SchemaBuilder.array(Schema.STRING_SCHEMA).build())
         .field("counts", SchemaBuilder.map(Schema.STRING_SCHEMA, Schema.INT64_SCHEMA).build())
         .field("by_zip", SchemaBuilder.map(Schema.INT32_SCHEMA, ADDRESS).build())
         .field("ship_to", ADDRESS).field("bill_to", SchemaBuilder.struct().name("com.example.Address")
                                          .field("street", Schema.STRING_SCHEMA).field("zip", Schema.INT32_SCHEMA)
                                          .optional().build())
         .build())
LOGICAL = (SchemaBuilder.struct().name("com.example.Payment")
           .field("amount", Decimal.builder(2).parameter("connect.decimal.precision", "12").build())
           .field("day", Date.SCHEMA).field("at", Time.SCHEMA).field("created", Timestamp.SCHEMA).build())


def _order(i: int) -> Struct:
    address = Struct(ADDRESS).put("street", f"Main St {i}").put("zip", 10_000 + i)
    values: dict[str, Any] = {
        "id": 2**40 + i, "tiny": -3, "qty": i, "ratio": 0.5, "price": 9.75, "paid": bool(i % 2), "note": f"note {i}",
        "blob": b"\x00\xff" * (i % 3), "tags": ["a", f"t{i}"], "counts": {"x": i, "y": 2},
        "by_zip": {10_000 + i: address}, "ship_to": address}
    order = Struct(ORDER)
    for name, value in values.items():
        order.put(name, value)
    if i % 2:
        order.put("bill_to", Struct(ORDER.field("bill_to").schema).put("street", "Bill St").put("zip", 1))
    return order


def _payment(i: int) -> Struct:
    return (Struct(LOGICAL).put("amount", decimal.Decimal(f"-{i}.{i:02d}")).put("day", dt.date(2024, 2, 29))
            .put("at", dt.time(23, 59, 58, 123000))
            .put("created", dt.datetime(2024, 5, 6, 7, 8, 9, 10000, tzinfo=dt.UTC)))


def _converter(url: str, is_key: bool = False, **extra: str) -> ProtobufConverter:
    converter = ProtobufConverter()
    converter.configure({"schema.registry.url": url, **extra}, is_key)
    return converter


def _message_class(converter: ProtobufConverter, topic: str) -> Any:
    """The message class of the schema Kopycat registered for ``topic``, built from its .proto text."""
    text = converter.client.request("GET", f"/subjects/{topic}-value/versions/latest")["schema"]  # type: ignore[union-attr]
    compiled = CompiledProto(parse_proto(text))
    return compiled.message_class(compiled.message_name([0]))


def test_what_kopycat_writes_confluents_deserializer_parses_to_the_same_message(
        schema_registry: str, topic_name: str) -> None:
    converter = _converter(schema_registry)
    data = [converter.from_connect_data(topic_name, ORDER, _order(i)) for i in range(3)]
    message_class = _message_class(converter, topic_name)
    deserializer = ProtobufDeserializer(message_class, {"use.deprecated.format": False})
    context = SerializationContext(topic_name, MessageField.VALUE)
    for i, payload in enumerate(data):
        assert payload is not None and payload[:1] == b"\x00" and payload[5:6] == b"\x00"  # magic, id, [0]
        message = deserializer(payload, context)
        assert (message.id, message.tiny, message.note) == (2**40 + i, -3, f"note {i}")
        assert list(message.tags) == ["a", f"t{i}"]
        assert dict(message.counts) == {"x": i, "y": 2} and message.by_zip[10_000 + i].street == f"Main St {i}"
        assert message.ship_to.zip == 10_000 + i and message.HasField("bill_to") == bool(i % 2)
    registered = converter.client.request("GET", f"/subjects/{topic_name}-value/versions/latest")  # type: ignore[union-attr]
    assert registered["schemaType"] == "PROTOBUF" and registered["schema"].startswith('syntax = "proto3";')


def test_what_confluents_serializer_writes_kopycat_reads_to_the_same_connect_values(
        schema_registry: str, topic_name: str) -> None:
    writer = _converter(schema_registry)
    writer.from_connect_data(topic_name, ORDER, _order(0))
    message_class = _message_class(writer, topic_name)
    serializer = ProtobufSerializer(message_class, ConfluentRegistryClient({"url": schema_registry}),
                                    {"use.deprecated.format": False, "auto.register.schemas": True})
    context = SerializationContext(f"{topic_name}-confluent", MessageField.VALUE)
    reader = _converter(schema_registry)
    for i in range(3):
        message = message_class.FromString(writer.from_connect_data(topic_name, ORDER, _order(i))[6:])
        schema, value = reader.to_connect_data(f"{topic_name}-confluent", serializer(message, context))
        # the class built here has no (confluent.field_meta) options, so its descriptor says int32, not int8
        assert schema.name == "Order" and schema.field("tiny").schema.type is Type.INT32
        assert all(f.schema.optional and f.schema.parameters[TAG] == str(n) for n, f in enumerate(schema.fields, 1))
        assert value.get("id") == 2**40 + i and value.get("tiny") == -3 and value.get("blob") == b"\x00\xff" * (i % 3)
        assert value.get("tags") == ["a", f"t{i}"] and value.get("counts") == {"x": i, "y": 2}
        assert value.get("by_zip")[10_000 + i].get("street") == f"Main St {i}"
        assert (value.get("bill_to") is None) == (i % 2 == 0)


def test_logical_types_round_trip_through_confluents_messages(schema_registry: str, topic_name: str) -> None:
    converter = _converter(schema_registry)
    data = converter.from_connect_data(topic_name, LOGICAL, _payment(3))
    message = ProtobufDeserializer(_message_class(converter, topic_name), {"use.deprecated.format": False})(
        data, SerializationContext(topic_name, MessageField.VALUE))
    assert (message.amount.value, message.amount.scale) == ((-303).to_bytes(2, "big", signed=True), 2)
    assert (message.day.year, message.day.month, message.day.day) == (2024, 2, 29)
    assert (message.at.hours, message.at.nanos, message.created.seconds) == (23, 123_000_000, 1714979289)
    schema, value = _converter(schema_registry).to_connect_data(topic_name, data)
    assert schema.field("amount").schema.parameters["scale"] == "2"
    assert schema.field("amount").schema.parameters["connect.decimal.precision"] == "12"
    assert [value.get(f) for f in ("amount", "day", "at", "created")] == [
        _payment(3).get(f) for f in ("amount", "day", "at", "created")]


def test_optional_for_nullables_keeps_nulls_and_plain_fields_read_back_as_zero(
        schema_registry: str, topic_name: str) -> None:
    schema = (SchemaBuilder.struct().name("com.example.Maybe").field("n", Schema.OPTIONAL_INT32_SCHEMA)
              .field("s", Schema.OPTIONAL_STRING_SCHEMA).build())
    empty = Struct(schema)
    plain = _converter(schema_registry)
    assert plain.to_connect_data(topic_name, plain.from_connect_data(topic_name, schema, empty)).value.get("n") == 0
    optional = _converter(schema_registry, **{"optional.for.nullables": "true"})
    other = f"{topic_name}-optional"
    data = optional.from_connect_data(other, schema, empty)
    assert "optional int32 n = 1;" in optional.client.request(  # type: ignore[union-attr]
        "GET", f"/subjects/{other}/versions/latest".replace(other, other + "-value"))["schema"]
    read = optional.to_connect_data(other, data).value
    assert (read.get("n"), read.get("s")) == (None, None)
    assert optional.to_connect_data(other, optional.from_connect_data(other, schema, Struct(schema).put("n", 0))
                                    ).value.get("n") == 0


def test_a_string_key_is_a_google_protobuf_string_value_as_confluent_writes_it(
        schema_registry: str, topic_name: str) -> None:
    keys = _converter(schema_registry, is_key=True)
    data = keys.from_connect_data(topic_name, Schema.STRING_SCHEMA, "order-7")
    assert data is not None and data[5:7] == b"\x02\x0e"  # message indexes [7]: StringValue in wrappers.proto
    context = SerializationContext(topic_name, MessageField.KEY)
    assert ProtobufDeserializer(wrappers_pb2.StringValue, {"use.deprecated.format": False})(data, context).value == \
        "order-7"
    assert keys.to_connect_data(topic_name, data) == (SchemaBuilder.string().version(1).build(), "order-7")
    serializer = ProtobufSerializer(wrappers_pb2.StringValue, ConfluentRegistryClient({"url": schema_registry}),
                                    {"use.deprecated.format": False})
    theirs = serializer(wrappers_pb2.StringValue(value="order-8"),
                        SerializationContext(f"{topic_name}-c", MessageField.KEY))
    assert keys.to_connect_data(f"{topic_name}-c", theirs).value == "order-8"


def test_records_written_to_a_topic_are_read_back_from_it(
        schema_registry: str, bootstrap_servers: str, topic_name: str) -> None:
    converter = _converter(schema_registry)
    written = converter.from_connect_data_batch(topic_name, ORDER, [None, *(_order(i) for i in range(10))])
    assert written[0] is None
    produce(bootstrap_servers, topic_name, [data for data in written if data is not None])
    reader = _converter(schema_registry)
    read = [reader.to_connect_data(topic_name, m.value()).value for m in consume_records(bootstrap_servers, topic_name)]
    assert [(v.get("id"), v.get("ship_to").get("street")) for v in read] == [
        (2**40 + i, f"Main St {i}") for i in range(10)]


def test_scrubbed_names_register_and_confluents_deserializer_parses_them(schema_registry: str, topic_name: str) -> None:
    row = (SchemaBuilder.struct().name("my-shop.Order Row").field("order id", Schema.INT64_SCHEMA)
           .field("_note", Schema.STRING_SCHEMA).build())
    converter = _converter(schema_registry, **{"scrub.invalid.names": "true"})
    data = converter.from_connect_data(topic_name, row, Struct(row).put("order id", 7).put("_note", "rush"))
    deserializer = ProtobufDeserializer(_message_class(converter, topic_name), {"use.deprecated.format": False})
    message = deserializer(data, SerializationContext(topic_name, MessageField.VALUE))
    assert (message.DESCRIPTOR.full_name, message.order_id, message.x_note) == ("my_shop.Order_Row", 7, "rush")
    schema, value = converter.to_connect_data(topic_name, data)
    assert [f.name for f in schema.fields] == ["order_id", "x_note"] and value.get("x_note") == "rush"


def test_no_magic_byte_an_unknown_id_and_bad_bytes_are_data_errors(schema_registry: str, topic_name: str) -> None:
    converter = _converter(schema_registry)
    with pytest.raises(DataError, match="unknown magic byte"):
        converter.to_connect_data(topic_name, b"\x08\x01")
    with pytest.raises(DataError, match="schema id 987654 could not be fetched.*404"):
        converter.to_connect_data(topic_name, b"\x00\x00\x0f\x12\x06\x00\x08\x01")
    good = converter.from_connect_data(topic_name, ORDER, _order(1))
    assert good is not None
    with pytest.raises(DataError, match="Protobuf data for topic .* with schema id"):
        converter.to_connect_data(topic_name, good[:6] + b"\xff\xff\xff")
    with pytest.raises(DataError, match="no root message for a map"):
        converter.from_connect_data(topic_name, SchemaBuilder.map(Schema.STRING_SCHEMA, Schema.INT32_SCHEMA).build(),
                                    {"x": 1})
    assert converter_class("io.confluent.connect.protobuf.ProtobufConverter") is ProtobufConverter


def test_use_latest_version_with_another_latest_schema_is_refused_not_written_under_its_id(
        schema_registry: str, topic_name: str) -> None:
    """Protobuf bytes follow the .proto's field numbers: written under another schema's id they would be
    misread, so a lenient latest check still refuses (naming the fix) instead of writing them."""
    other = 'syntax = "proto3";\npackage com.example;\n\nmessage Other {\n  string label = 1;\n}\n'
    ConfluentRegistryClient({"url": schema_registry}).register_schema(
        f"{topic_name}-value", ConfluentSchema(other, "PROTOBUF"))
    lenient = _converter(schema_registry, **{"use.latest.version": "true", "auto.register.schemas": "false",
                                             "latest.compatibility.strict": "false"})
    with pytest.raises(DataError, match="use.latest.version=false, auto.register.schemas=true"):
        lenient.from_connect_data(topic_name, ORDER, _order(1))
    strict = _converter(schema_registry, **{"use.latest.version": "true", "auto.register.schemas": "false"})
    with pytest.raises(DataError, match="latest.compatibility.strict=false"):
        strict.from_connect_data(topic_name, ORDER, _order(1))

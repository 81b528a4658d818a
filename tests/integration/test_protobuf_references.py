"""Protobuf enums and imported files (schema references) against a real registry (Apicurio).

Oracle: Confluent's Python ``ProtobufSerializer`` with an ``Order`` message in ``shop/order.proto``
that uses an enum and imports ``shop/common.proto`` for its ``Money`` type. The serializer registers
the imported file under its own subject and the order's schema with a reference to it; Kopycat reads
the records through the reference to the same values, the enum as its symbol. The descriptors are
built here by hand (no ``protoc``, and not by Kopycat's compiler).
"""

from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka.schema_registry import Schema as ConfluentSchema
from confluent_kafka.schema_registry import SchemaRegistryClient as ConfluentRegistryClient
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from kopycat.api.data import Type
from kopycat.api.errors import DataError
from kopycat.converters.protobuf import ProtobufConverter

pytestmark = pytest.mark.integration

_INT64, _STRING, _MESSAGE, _ENUM = 3, 9, 11, 14
_OPTIONAL, _REPEATED = 1, 3
ENUM_PARAM = "io.confluent.connect.protobuf.Enum"


def _classes() -> tuple[Any, Any]:
    """``shop.Order`` and ``shop.common.Money`` classes from two hand-built files in a pool of their own."""
    common = descriptor_pb2.FileDescriptorProto(name="shop/common.proto", package="shop.common", syntax="proto3")
    money = common.message_type.add(name="Money")
    money.field.add(name="units", number=1, type=_INT64, label=_OPTIONAL, json_name="units")
    money.field.add(name="currency", number=2, type=_STRING, label=_OPTIONAL, json_name="currency")
    order_file = descriptor_pb2.FileDescriptorProto(name="shop/order.proto", package="shop", syntax="proto3",
                                                    dependency=["shop/common.proto"])
    status = order_file.enum_type.add(name="Status")
    for number, symbol in enumerate(["NEW", "PAID", "SHIPPED"]):
        status.value.add(name=symbol, number=number)
    order = order_file.message_type.add(name="Order")
    order.field.add(name="id", number=1, type=_INT64, label=_OPTIONAL, json_name="id")
    order.field.add(name="total", number=2, type=_MESSAGE, type_name=".shop.common.Money", label=_OPTIONAL,
                    json_name="total")
    order.field.add(name="status", number=3, type=_ENUM, type_name=".shop.Status", label=_OPTIONAL,
                    json_name="status")
    order.field.add(name="history", number=4, type=_ENUM, type_name=".shop.Status", label=_REPEATED,
                    json_name="history")
    pool = descriptor_pool.DescriptorPool()
    pool.Add(common)
    pool.Add(order_file)
    return (message_factory.GetMessageClass(pool.FindMessageTypeByName("shop.Order")),
            message_factory.GetMessageClass(pool.FindMessageTypeByName("shop.common.Money")))


def _converter(url: str) -> ProtobufConverter:
    converter = ProtobufConverter()
    converter.configure({"schema.registry.url": url}, False)
    return converter


def test_an_order_with_an_enum_and_an_imported_message_reads_through_its_reference(
        schema_registry: str, topic_name: str) -> None:
    order_class, money_class = _classes()
    registry = ConfluentRegistryClient({"url": schema_registry})
    serializer = ProtobufSerializer(order_class, registry, {"auto.register.schemas": True})
    context = SerializationContext(topic_name, MessageField.VALUE)
    orders = [order_class(id=i, total=money_class(units=100 * i, currency="EUR"), status=i % 3,
                          history=list(range(i % 3 + 1))) for i in range(1, 5)]
    written = [serializer(order, context) for order in orders]

    registered = registry.get_latest_version(f"{topic_name}-value").schema
    assert [(r.name, r.subject) for r in registered.references] == [("shop/common.proto", "shop/common.proto")]
    reader = _converter(schema_registry)
    for order, data in zip(orders, written, strict=True):
        schema, value = reader.to_connect_data(topic_name, data)
        assert schema is not None and schema.name == "Order"
        total = schema.field("total").schema
        assert total.type is Type.STRUCT and total.name == "Money"
        assert schema.field("status").schema.parameters[ENUM_PARAM] == "Status"
        assert value.get("id") == order.id
        assert (value.get("total").get("units"), value.get("total").get("currency")) == (order.total.units, "EUR")
        assert value.get("status") == ["NEW", "PAID", "SHIPPED"][order.status]
        assert value.get("history") == ["NEW", "PAID", "SHIPPED"][:len(order.history)]

    # what Kopycat writes back from those Connect values, Confluent's deserializer parses to the same orders
    writer = _converter(schema_registry)
    again = SerializationContext(f"{topic_name}-again", MessageField.VALUE)
    deserializer = ProtobufDeserializer(order_class, {"use.deprecated.format": False})
    for order, data in zip(orders, written, strict=True):
        schema, value = reader.to_connect_data(topic_name, data)
        assert deserializer(writer.from_connect_data(f"{topic_name}-again", schema, value), again) == order


def test_an_import_no_reference_names_is_a_data_error_naming_it(schema_registry: str, topic_name: str) -> None:
    subject = f"{topic_name}-value"
    text = ('syntax = "proto3";\npackage shop;\nimport "shop/missing.proto";\n'
            'message Order {\n  shop.common.Money total = 1;\n}\n')
    schema_id = ConfluentRegistryClient({"url": schema_registry}).register_schema(subject,
                                                                                 ConfluentSchema(text, "PROTOBUF"))
    with pytest.raises(DataError, match=r"imports 'shop/missing\.proto', which none of its schema references names"):
        _converter(schema_registry).to_connect_data(topic_name, b"\x00" + schema_id.to_bytes(4, "big") + b"\x00")

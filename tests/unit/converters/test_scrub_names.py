"""``scrub.invalid.names``: Connect names Avro or Protobuf refuse, scrubbed as Confluent's ``doScrubName``s.

The expected names follow ``doScrubName``: Java's ``URLEncoder`` (UTF-8, space as ``+``, ``.-*_``
kept), ``x`` before a leading digit, then each character still invalid as ``_``. Without scrubbing,
such a name is a DataError naming it and the key, as Confluent's converter fails on it.
"""

from __future__ import annotations

import io
import json

import fastavro
import pytest

from kopycat.api.data import Schema, SchemaBuilder, Struct
from kopycat.api.errors import DataError
from kopycat.converters.avro import AvroConverter
from kopycat.converters.avro_data import avro_values_converter, to_avro_schema
from kopycat.converters.scrub_names import invalid_name, scrub_full_name, scrub_name


@pytest.mark.parametrize(("name", "scrubbed"), [
    ("unit price", "unit_price"), ("1st", "x1st"), ("9", "x9"), ("€", "_E2_82_AC"), ("prix_é", "prix__C3_A9"),
    ("a-b", "a_b"), ("a.b", "a_b"), ("~tilde", "_7Etilde"), ("ok_Name9", "ok_Name9"), ("_x", "_x"), ("", ""),
])
def test_names_are_scrubbed_as_confluents_do_scrub_name(name: str, scrubbed: str) -> None:
    assert scrub_name(name) == scrubbed


def test_a_full_name_is_scrubbed_part_by_part() -> None:
    assert scrub_full_name("my-shop.v2.Order Row") == "my_shop.v2.Order_Row"
    assert scrub_full_name("com.acme.Order") == "com.acme.Order"


ITEM = SchemaBuilder.struct().name("shop.Line Item").field("2nd qty", Schema.INT32_SCHEMA).build()
ORDER = (SchemaBuilder.struct().name("my-shop.Order Row")
         .field("order id", Schema.INT64_SCHEMA)
         .field("unit-price", SchemaBuilder.float64().default_value(1.5).build())
         .field("items", SchemaBuilder.array(ITEM).build())
         .field("first", SchemaBuilder.struct().name("shop.Line Item").field("2nd qty", Schema.INT32_SCHEMA)
                .optional().build())
         .build())


def _order() -> Struct:
    return (Struct(ORDER).put("order id", 7).put("unit-price", 2.5).put("items", [Struct(ITEM).put("2nd qty", 3)])
            .put("first", None))


def test_the_scrubbed_schema_names_records_and_fields_validly_and_keeps_connect_name() -> None:
    avro = to_avro_schema(ORDER, scrub=True)
    assert isinstance(avro, dict)
    assert (avro["namespace"], avro["name"], avro["connect.name"]) == ("my_shop", "Order_Row", "my-shop.Order Row")
    assert [f["name"] for f in avro["fields"]] == ["order_id", "unit_price", "items", "first"]
    item = avro["fields"][2]["type"]["items"]
    assert (item["namespace"], item["name"], item["fields"][0]["name"]) == ("shop", "Line_Item", "x2nd_qty")
    assert avro["fields"][1]["default"] == 1.5
    assert invalid_name(ORDER) == "struct name 'my-shop.Order Row'"


def test_a_struct_default_has_its_field_names_scrubbed_too() -> None:
    inner = SchemaBuilder.struct().name("In").field("a b", Schema.INT32_SCHEMA).build()
    outer = (SchemaBuilder.struct().name("Out")
             .field("in", SchemaBuilder.struct().name("In").field("a b", Schema.INT32_SCHEMA)
                    .default_value(Struct(inner).put("a b", 4)).build()).build())
    avro = to_avro_schema(outer, scrub=True)
    assert isinstance(avro, dict)
    assert avro["fields"][0]["default"] == {"a_b": 4}


def test_values_are_keyed_by_the_scrubbed_names_and_decode_with_the_scrubbed_schema() -> None:
    avro = to_avro_schema(ORDER, scrub=True)
    buffer = io.BytesIO()
    fastavro.schemaless_writer(buffer, fastavro.parse_schema(avro),
                               avro_values_converter(ORDER, scrub=True)([_order()])[0])
    buffer.seek(0)
    assert fastavro.schemaless_reader(buffer, fastavro.parse_schema(avro), None) == {
        "order_id": 7, "unit_price": 2.5, "items": [{"x2nd_qty": 3}], "first": None}


def test_the_converter_refuses_an_invalid_name_without_scrubbing_naming_it_and_the_key() -> None:
    converter = AvroConverter(client=object())  # type: ignore[arg-type]  # no registry call is reached
    converter.configure({"schema.registry.url": "http://127.0.0.1:1"}, False)
    with pytest.raises(DataError, match=r"struct name 'my-shop\.Order Row' is not a valid Avro name.*"
                                        r"scrub\.invalid\.names=true"):
        converter.from_connect_data("orders", ORDER, _order())
    plain = SchemaBuilder.struct().name("ok.Row").field("unit price", Schema.INT32_SCHEMA).build()
    with pytest.raises(DataError, match=r"field name 'unit price' of ok\.Row is not a valid Avro name"):
        converter.from_connect_data("orders", plain, Struct(plain).put("unit price", 1))


def test_scrubbing_leaves_valid_names_and_so_the_registered_text_unchanged() -> None:
    valid = SchemaBuilder.struct().name("com.acme.Order").field("id", Schema.INT64_SCHEMA).build()
    assert json.dumps(to_avro_schema(valid, scrub=True)) == json.dumps(to_avro_schema(valid))
    assert invalid_name(valid) is None


@pytest.mark.parametrize(("name", "scrubbed"), [("_id", "x_id"), ("unit price", "unit_price"), ("1st", "x1st"),
                                                ("ok_9", "ok_9"), ("€", "_E2_82_AC")])  # "%E2..." gets no x
def test_protobuf_names_are_scrubbed_as_protobuf_datas_which_refuses_a_leading_underscore_too(
        name: str, scrubbed: str) -> None:
    assert scrub_name(name, protobuf=True) == scrubbed


def test_the_protobuf_converter_scrubs_field_message_and_package_names_and_fills_the_fields() -> None:
    from kopycat.converters.protobuf_data import ProtobufOptions, from_connect_message, to_proto_file
    from kopycat.converters.protobuf_descriptors import CompiledProto
    from kopycat.converters.protobuf_schema import print_proto

    inner = SchemaBuilder.struct().name("Line Item").field("_qty", Schema.INT32_SCHEMA).build()
    row = (SchemaBuilder.struct().name("my-shop.Order Row").field("order id", Schema.INT64_SCHEMA)
           .field("line", inner).build())
    proto, index = to_proto_file(row, ProtobufOptions(scrub_invalid_names=True))
    text = print_proto(proto)
    assert "package my_shop;" in text and "message Order_Row {" in text and "message Line_Item {" in text
    assert "int64 order_id = 1;" in text and "int32 x_qty = 1;" in text
    compiled = CompiledProto(proto)
    name = compiled.message_name([index])
    message = from_connect_message(compiled.message_class(name)(), row,
                                   Struct(row).put("order id", 7).put("line", Struct(inner).put("_qty", 3)))
    assert (message.order_id, message.line.x_qty) == (7, 3)

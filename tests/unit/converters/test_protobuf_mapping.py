"""Connect <-> Protobuf as Confluent's ProtobufData maps it, without a registry.

Every Connect type, optional fields, nested structs, arrays and maps go to a ``.proto`` file,
through its printed text and the parser, into a message class, through the binary encoding, and
back to the Connect values; the Connect schema read back is Confluent's (every field optional and
tagged with its number). The message indexes are encoded as Confluent's serializers write them.
"""

from __future__ import annotations

import base64
from typing import Any, Final

import pytest

from kopycat.api.data import Decimal, Schema, SchemaBuilder, Struct, Type
from kopycat.api.errors import DataError
from kopycat.converters.protobuf import ProtobufConverter, read_message_indexes, write_message_indexes
from kopycat.converters.protobuf_data import (
    ProtobufOptions,
    from_connect_message,
    to_connect_schema,
    to_connect_value,
    to_proto_file,
)
from kopycat.converters.protobuf_descriptors import CompiledProto
from kopycat.converters.protobuf_schema import parse_proto, print_proto
from tests.unit.converters.test_avro_mapping import CASES as AVRO_CASES
from tests.unit.converters.test_avro_mapping import INNER

TAG = "io.confluent.connect.protobuf.Tag"

_SHARED: Final = {"int8", "int16", "int32", "int64", "float32", "float64", "boolean", "string", "bytes", "decimal",
                  "date", "time", "timestamp", "array-of-structs", "map-string-keys", "map-struct-values"}
CASES: list[tuple[str, Schema, Any]] = [
    *(case for case in AVRO_CASES if case[0] in _SHARED),  # the others hold nulls Protobuf cannot carry
    ("array", SchemaBuilder.array(Schema.INT32_SCHEMA).build(), [1, 0, 3]),
    ("map-int-keys", SchemaBuilder.map(Schema.INT64_SCHEMA, Schema.STRING_SCHEMA).build(), {1: "one", 2: "two"}),
    ("struct", INNER, Struct(INNER).put("a", 7)),
]


def _compiled(schema: Schema, options: ProtobufOptions | None = None) -> tuple[CompiledProto, str]:
    compiled = CompiledProto(parse_proto(print_proto(to_proto_file(schema, options)[0])))
    return compiled, compiled.message_name([0])


def _round_trip(schema: Schema, value: Struct, options: ProtobufOptions | None = None) -> tuple[Schema, Struct]:
    compiled, name = _compiled(schema, options)
    message_class = compiled.message_class(name)
    data = from_connect_message(message_class(), schema, value).SerializeToString()
    back = to_connect_schema(compiled, name, None, options)
    return back, to_connect_value(back, message_class.FromString(data))


def _plain(value: Any) -> Any:
    """Structs as dicts: the schema read back differs from the one written (optional, tagged fields)."""
    if isinstance(value, Struct):
        return {f.name: _plain(value.get(f)) for f in value.schema.fields}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def _wrapped(schema: Schema) -> Schema:
    return SchemaBuilder.struct().name("com.acme.Row").field("f", schema).build()


@pytest.mark.parametrize(("schema", "value"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_every_connect_type_survives_proto_text_and_binary_round_trip(schema: Schema, value: Any) -> None:
    row = _wrapped(schema)
    back, read = _round_trip(row, Struct(row).put("f", value))
    assert _plain(read.get("f")) == _plain(value)
    field_schema = back.field("f").schema
    assert field_schema.optional and field_schema.parameters[TAG] == "1"
    expected_name = {Type.STRUCT: (schema.name or "").rpartition(".")[2], Type.MAP: "f"}.get(schema.type, schema.name)
    assert field_schema.type is schema.type and field_schema.name == expected_name


def test_the_proto_text_is_confluents_form() -> None:
    schema = (SchemaBuilder.struct().name("com.acme.Order").field("tiny", Schema.INT8_SCHEMA)
              .field("amount", Decimal.builder(2).build())
              .field("tags", SchemaBuilder.array(Schema.STRING_SCHEMA).build())
              .field("inner", SchemaBuilder.struct().field("x", Schema.BOOLEAN_SCHEMA).build()).build())
    text = print_proto(to_proto_file(schema)[0])
    assert text.startswith('syntax = "proto3";\npackage com.acme;\n\nimport "confluent/type/decimal.proto";\n')
    assert '  int32 tiny = 1 [(confluent.field_meta) = {\n    params: [\n      {\n        key: "connect.type",' in text
    assert "  confluent.type.Decimal amount = 2 [" in text and "  repeated string tags = 3;\n" in text
    assert "  ConnectDefault1 inner = 4;\n  message ConnectDefault1 {\n    bool x = 1;\n  }\n" in text
    assert print_proto(parse_proto(text)) == text


def test_optional_for_nullables_writes_proto3_optional_and_keeps_nulls() -> None:
    schema = SchemaBuilder.struct().name("M").field("n", Schema.OPTIONAL_INT32_SCHEMA).build()
    assert "optional int32 n = 1;" in print_proto(to_proto_file(schema, ProtobufOptions(True))[0])
    assert _round_trip(schema, Struct(schema), ProtobufOptions(True))[1].get("n") is None
    assert _round_trip(schema, Struct(schema))[1].get("n") == 0  # a plain proto3 field reads back as zero
    assert _round_trip(schema, Struct(schema).put("n", 0), ProtobufOptions(True))[1].get("n") == 0


def test_wrapper_for_nullables_writes_wrapper_messages_and_reads_them_back_as_nullable_primitives() -> None:
    schema = (SchemaBuilder.struct().name("M").field("n", Schema.OPTIONAL_INT64_SCHEMA)
              .field("s", Schema.OPTIONAL_STRING_SCHEMA).field("b", Schema.BOOLEAN_SCHEMA).build())
    options = ProtobufOptions(wrapper_for_nullables=True)
    text = print_proto(to_proto_file(schema, options)[0])
    assert 'import "google/protobuf/wrappers.proto";' in text and "  google.protobuf.Int64Value n = 1;" in text
    back, read = _round_trip(schema, Struct(schema).put("s", "x").put("b", False), options)
    assert [(f.schema.type, f.schema.optional) for f in back.fields] == [
        (Type.INT64, True), (Type.STRING, True), (Type.BOOLEAN, False)]
    assert (read.get("n"), read.get("s"), read.get("b")) == (None, "x", False)


def test_a_oneof_is_a_union_struct_both_ways() -> None:
    compiled = CompiledProto(parse_proto('syntax = "proto3"; message M { int64 id = 1; '
                                         'oneof pick { int32 a = 2; string b = 3; } optional bool c = 4; }'))
    schema = to_connect_schema(compiled, "M")
    union = schema.field("pick_0").schema
    assert [f.name for f in schema.fields] == ["pick_0", "id", "c"]
    assert union.name == "io.confluent.connect.protobuf.Union.pick" and union.optional
    assert [(f.name, f.schema.type, f.schema.optional) for f in union.fields] == [
        ("a", Type.INT32, True), ("b", Type.STRING, True)]
    message_class = compiled.message_class("M")
    value = to_connect_value(schema, message_class(id=1, b="x"))
    assert value.get("pick_0").get("b") == "x" and value.get("pick_0").get("a") is None
    written = from_connect_message(message_class(), schema, value)
    assert written.WhichOneof("pick") == "b" and written.b == "x"
    back, read = _round_trip(schema, value)
    assert "  oneof pick {\n    int32 a = 2;\n    string b = 3;\n  }\n" in print_proto(to_proto_file(schema)[0])
    assert read.get("pick_0").get("b") == "x"


def test_a_nested_struct_not_set_reads_back_as_null_and_names_follow_confluent() -> None:
    address = SchemaBuilder.struct().name("a.Address").field("city", Schema.STRING_SCHEMA).optional().build()
    schema = (SchemaBuilder.struct().name("a.Customer").field("id", Schema.INT64_SCHEMA)
              .field("home", address).field("Address", address).build())
    text = print_proto(to_proto_file(schema)[0])
    assert "  Address home = 2;\n  AddressMessage Address = 3;\n" in text
    back, read = _round_trip(schema, Struct(schema).put("id", 1).put("home", Struct(address).put("city", "Oslo")))
    assert read.get("home").get("city") == "Oslo" and read.get("Address") is None


def test_schemas_written_elsewhere_are_read_from_proto_text_or_base64_descriptors() -> None:
    text = """
        syntax = "proto3";
        package shop;  // a comment
        import "google/protobuf/timestamp.proto";
        option java_package = "x.y";
        message Other { string s = 1; }
        message Cart {
          sint32 n = 1 [deprecated = true];
          uint32 u = 2;
          Status status = 3;
          repeated Item items = 4;
          google.protobuf.Timestamp at = 5;
          reserved 9;
          enum Status { NEW = 0; DONE = 1; }
          message Item { string sku = 1; fixed64 count = 2; }
        }
    """
    compiled = CompiledProto(parse_proto(text))
    name = compiled.message_name([1])
    assert name == "shop.Cart"
    schema = to_connect_schema(compiled, name, 2)
    assert schema.version == 2 and [f.schema.type for f in schema.fields] == [
        Type.INT32, Type.INT64, Type.STRING, Type.ARRAY, Type.INT64]
    assert schema.field("n").schema.parameters["io.confluent.connect.protobuf.Type"] == "sint32"
    assert schema.field("status").schema.parameters["io.confluent.connect.protobuf.Enum.DONE"] == "1"
    message = compiled.message_class(name)(n=-5, u=7, status=1)
    message.items.add(sku="s", count=3)
    value = to_connect_value(schema, message)
    assert (value.get("n"), value.get("status"), value.get("at")) == (-5, "DONE", None)
    assert value.get("items")[0].get("count") == 3
    serialized = base64.b64encode(compiled.pool.FindFileByName("kopycat/registered.proto").serialized_pb).decode()
    again = CompiledProto(parse_proto(serialized))
    assert to_connect_schema(again, "shop.Cart", 2) == schema


def test_an_enum_read_from_protobuf_is_written_back_as_the_enum_nested_in_its_message() -> None:
    text = """syntax = "proto3"; package shop; enum Status { NEW = 0; DONE = 5; }
              message Cart { Status status = 1; repeated Status history = 2; }"""
    compiled = CompiledProto(parse_proto(text))
    schema = to_connect_schema(compiled, "shop.Cart")
    proto, index = to_proto_file(schema)
    printed = print_proto(proto)
    assert "enum Status {" in printed and "DONE = 5;" in printed and "Status status = 1;" in printed
    assert "repeated Status history = 2;" in printed
    value = Struct(schema).put("status", "DONE").put("history", ["NEW", "DONE"])
    written = CompiledProto(proto)
    message = from_connect_message(written.message_class(written.message_name([index]))(), schema, value)
    assert compiled.message_class("shop.Cart").FromString(message.SerializeToString()) == \
        compiled.message_class("shop.Cart")(status=5, history=[0, 5])


@pytest.mark.parametrize(("schema", "value", "index"), [
    (Schema.STRING_SCHEMA, "order-7", 7), (Schema.INT64_SCHEMA, -5, 2), (Schema.BYTES_SCHEMA, b"\x01", 8),
    (Schema.FLOAT64_SCHEMA, 0.25, 0), (Schema.BOOLEAN_SCHEMA, True, 6)], ids=lambda v: str(v)[:12])
def test_a_primitive_root_is_its_google_protobuf_wrapper_and_reads_back_as_the_primitive(
        schema: Schema, value: Any, index: int) -> None:
    proto, found = to_proto_file(schema)
    assert found == index and proto.package == "google.protobuf"
    compiled = CompiledProto(parse_proto(print_proto(proto)))
    name = compiled.message_name([index])
    message = from_connect_message(compiled.message_class(name)(), schema, value)
    back = to_connect_schema(compiled, name, 1)
    assert back == SchemaBuilder(schema.type).version(1).build() and to_connect_value(back, message) == value


@pytest.mark.parametrize(("indexes", "encoded"), [([0], b"\x00"), ([1], b"\x02\x02"), ([2, 0, 1], b"\x06\x04\x00\x02")])
def test_message_indexes_are_zig_zag_varints_with_the_first_message_as_one_zero(
        indexes: list[int], encoded: bytes) -> None:
    assert write_message_indexes(indexes) == encoded
    assert read_message_indexes(encoded + b"rest") == (indexes, len(encoded))


def test_what_has_no_protobuf_form_is_a_data_error() -> None:
    with pytest.raises(DataError, match="no root message for a array"):
        to_proto_file(SchemaBuilder.array(Schema.INT32_SCHEMA).build())
    with pytest.raises(DataError, match="array of arrays"):
        to_proto_file(_wrapped(SchemaBuilder.array(SchemaBuilder.array(Schema.INT32_SCHEMA).build()).build()))
    with pytest.raises(DataError, match="imports 'other.proto'"):
        CompiledProto(parse_proto('syntax = "proto3"; import "other.proto"; message M { int32 a = 1; }'))
    with pytest.raises(DataError, match="does not define"):
        CompiledProto(parse_proto('syntax = "proto3"; message M { Missing a = 1; }'))
    converter = ProtobufConverter()
    converter.configure({"schema.registry.url": "http://127.0.0.1:1"}, False)
    with pytest.raises(DataError, match="unknown magic byte"):
        converter.to_connect_data("t", b"\x01\x00\x00\x00\x01\x00")

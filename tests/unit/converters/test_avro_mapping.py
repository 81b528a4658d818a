"""Connect <-> Avro as Confluent's AvroData maps it, both ways, without a registry.

Every Connect type, optional and default values, nested structs, arrays and maps go to an Avro
schema (:mod:`kopycat.converters.avro_data`), through fastavro's binary encoding, and back
(:mod:`kopycat.converters.avro_to_connect`) to the same schema and values. Avro schemas written
by other tools (no ``connect.*`` properties) map to the Connect types AvroData gives them.
"""

from __future__ import annotations

import datetime as dt
import decimal
import io
from typing import Any

import fastavro
import pytest

from kopycat.api.data import Date, Decimal, Schema, SchemaBuilder, Struct, Time, Timestamp
from kopycat.api.errors import ConfigError, DataError
from kopycat.converters.avro import AvroConverter, subject_name
from kopycat.converters.avro_data import avro_values_converter, to_avro_schema
from kopycat.converters.avro_to_connect import connect_values_converter, plain_reader_schema, to_connect_schema

INNER = SchemaBuilder.struct().name("com.acme.Inner").field("a", Schema.INT32_SCHEMA).build()

CASES: list[tuple[str, Schema, Any]] = [
    ("int8", Schema.INT8_SCHEMA, -128),
    ("int16", Schema.INT16_SCHEMA, 32767),
    ("int32", Schema.INT32_SCHEMA, -(2**31)),
    ("int64", Schema.INT64_SCHEMA, 2**63 - 1),
    ("float32", Schema.FLOAT32_SCHEMA, 1.5),
    ("float64", Schema.FLOAT64_SCHEMA, -2.25e300),
    ("boolean", Schema.BOOLEAN_SCHEMA, True),
    ("string", Schema.STRING_SCHEMA, "héllo"),
    ("bytes", Schema.BYTES_SCHEMA, b"\x00\xff"),
    ("decimal", Decimal.schema(3), decimal.Decimal("-12345.678")),
    ("decimal-precision", Decimal.builder(2).parameter("connect.decimal.precision", "9").build(),
     decimal.Decimal("0.01")),
    ("date", Date.SCHEMA, dt.date(1969, 12, 31)),
    ("time", Time.SCHEMA, dt.time(13, 14, 15, 16000)),
    ("timestamp", Timestamp.SCHEMA, dt.datetime(2024, 2, 29, 1, 2, 3, 4000, tzinfo=dt.UTC)),
    ("optional-null", Schema.OPTIONAL_STRING_SCHEMA, None),
    ("optional-set", Schema.OPTIONAL_INT64_SCHEMA, 5),
    ("default", SchemaBuilder.int32().default_value(42).build(), 7),
    ("named-doc-version-params", SchemaBuilder.string().name("com.acme.Code").doc("a code").version(3)
     .parameter("p", "v").build(), "X1"),
    ("array", SchemaBuilder.array(Schema.OPTIONAL_INT32_SCHEMA).build(), [1, None, 3]),
    ("array-of-structs", SchemaBuilder.array(INNER).build(), [Struct(INNER).put("a", 1)]),
    ("map-string-keys", SchemaBuilder.map(Schema.STRING_SCHEMA, Schema.FLOAT64_SCHEMA).build(), {"x": 1.0}),
    ("map-int-keys", SchemaBuilder.map(Schema.INT64_SCHEMA, Schema.OPTIONAL_STRING_SCHEMA).build(),
     {1: "one", 2: None}),
    ("map-struct-values", SchemaBuilder.map(Schema.STRING_SCHEMA, INNER).optional().build(),
     {"k": Struct(INNER).put("a", 2)}),
]


def _round_trip(schema: Schema, value: Any) -> tuple[Schema, Any]:
    avro = to_avro_schema(schema)
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(avro), avro_values_converter(schema)([value])[0])
    decoded = fastavro.schemaless_reader(io.BytesIO(out.getvalue()), fastavro.parse_schema(plain_reader_schema(avro)),
                                         None)
    back = to_connect_schema(avro)
    return back, connect_values_converter(back)(decoded)


@pytest.mark.parametrize(("schema", "value"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_every_connect_type_survives_avro_schema_and_binary_round_trip(schema: Schema, value: Any) -> None:
    assert _round_trip(schema, value) == (schema, value)


def test_a_nested_struct_with_optional_and_default_fields_comes_back_with_defaults_filled() -> None:
    address = (SchemaBuilder.struct().name("com.acme.Address").field("city", Schema.STRING_SCHEMA)
               .field("zip", Schema.OPTIONAL_STRING_SCHEMA).optional().build())
    schema = (SchemaBuilder.struct().name("com.acme.Customer").doc("a customer")
              .field("id", Schema.INT64_SCHEMA)
              .field("tier", SchemaBuilder.string().default_value("basic").build())
              .field("score", SchemaBuilder.float64().optional().default_value(0.5).build())
              .field("home", address).field("work", address)
              .field("history", SchemaBuilder.array(SchemaBuilder.map(Schema.INT32_SCHEMA, address).build()).build())
              .build())
    home = Struct(address).put("city", "Oslo")
    value = Struct(schema).put("id", 1).put("home", home).put("history", [{1: home, 2: None}])
    back_schema, back = _round_trip(schema, value)
    assert back_schema == schema
    assert [back.get(f) for f in schema.fields] == [1, "basic", 0.5, home, None, [{1: home, 2: None}]]


def test_the_avro_schema_carries_confluents_connect_properties() -> None:
    schema = (SchemaBuilder.struct().name("com.acme.Row").version(2)
              .field("n", SchemaBuilder.int16().optional().build())
              .field("d", Decimal.builder(2).parameter("connect.decimal.precision", "10").build())
              .field("m", SchemaBuilder.map(Schema.INT32_SCHEMA, Schema.STRING_SCHEMA).build()).build())
    assert to_avro_schema(schema) == {
        "type": "record", "name": "Row", "namespace": "com.acme", "fields": [
            {"name": "n", "type": ["null", {"type": "int", "connect.type": "int16"}], "default": None},
            {"name": "d", "type": {"type": "bytes", "scale": 2, "precision": 10, "connect.version": 1,
                                   "connect.parameters": {"scale": "2", "connect.decimal.precision": "10"},
                                   "connect.name": "org.apache.kafka.connect.data.Decimal",
                                   "logicalType": "decimal"}},
            {"name": "m", "type": {"type": "array", "items": {
                "type": "record", "name": "MapEntry", "namespace": "io.confluent.connect.avro", "fields": [
                    {"name": "key", "type": "int"}, {"name": "value", "type": "string"}]}}}],
        "connect.version": 2, "connect.name": "com.acme.Row"}
    plain = to_avro_schema(schema, connect_meta_data=False)
    assert "connect.name" not in plain and "connect.version" not in plain["fields"][1]["type"]


def test_avro_schemas_without_connect_properties_map_as_avro_data_reads_them() -> None:
    avro = {"type": "record", "name": "Event", "namespace": "org.other", "doc": "an event", "fields": [
        {"name": "id", "type": "long"}, {"name": "kind", "type": {"type": "enum", "name": "Kind", "symbols": ["A"]}},
        {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "day", "type": ["null", {"type": "int", "logicalType": "date"}], "default": None},
        {"name": "price", "type": {"type": "bytes", "logicalType": "decimal", "precision": 64, "scale": 4}},
        {"name": "attrs", "type": {"type": "map", "values": "string"}, "default": {}, "doc": "free form"},
        {"name": "retries", "type": "int", "default": 3}]}
    schema = to_connect_schema(avro)
    assert schema.name == "org.other.Event"
    assert schema.parameters == {"io.confluent.connect.avro.record.doc": "an event",
                                 "io.confluent.connect.avro.field.doc.attrs": "free form"}
    assert [f.schema.type.name for f in schema.fields] == ["INT64", "STRING", "INT64", "INT32", "BYTES", "MAP",
                                                           "INT32"]
    assert schema.field("kind").schema.parameters == {"io.confluent.connect.avro.Enum": "org.other.Kind",
                                                      "io.confluent.connect.avro.Enum.A": "A"}
    assert schema.field("kind").schema.name == "org.other.Kind"
    assert schema.field("at").schema == Timestamp.SCHEMA
    assert schema.field("day").schema == Date.builder().optional().build()
    assert schema.field("price").schema == Decimal.schema(4)
    retries = schema.field("retries").schema
    assert (retries.default, retries.parameters) == (3, {"io.confluent.connect.avro.field.default": "true"})


def test_an_avro_enum_reads_as_a_string_and_goes_back_to_the_enum_only_with_enhanced_support() -> None:
    kind = {"type": "enum", "name": "Kind", "namespace": "org.other", "doc": "kinds", "symbols": ["A", "B"],
            "default": "A"}
    schema = to_connect_schema({"type": "record", "name": "E", "namespace": "org.other",
                                "fields": [{"name": "kind", "type": kind}]})
    field = schema.field("kind").schema
    assert field.type.name == "STRING" and field.parameters["io.confluent.connect.avro.enum.doc.Kind"] == "kinds"
    assert to_avro_schema(field, connect_meta_data=False) == "string"
    enum = to_avro_schema(field, enhanced=True)
    assert {k: enum[k] for k in ("type", "name", "namespace", "doc", "symbols", "default")} == kind
    assert to_connect_schema(enum) == field
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(enum), "B")
    assert out.getvalue() == b"\x02"


def test_connect_meta_data_false_leaves_out_every_connect_property() -> None:
    schema = SchemaBuilder.struct().name("a.B").version(1).field("x", Schema.INT8_SCHEMA).build()
    assert to_avro_schema(schema, connect_meta_data=False) == {
        "type": "record", "name": "B", "namespace": "a", "fields": [{"name": "x", "type": "int"}]}


def test_the_registry_version_applies_only_where_connect_version_is_absent() -> None:
    assert to_connect_schema("string", version=3) == SchemaBuilder.string().version(3).build()
    versioned = SchemaBuilder.struct().name("com.acme.V").version(5).field("a", Schema.INT32_SCHEMA).build()
    assert to_connect_schema(to_avro_schema(versioned), version=3) == versioned


def test_general_unions_and_recursive_records_are_data_errors_naming_the_type() -> None:
    with pytest.raises(DataError, match="union"):
        to_connect_schema({"type": "record", "name": "U", "fields": [{"name": "x", "type": ["int", "string"]}]})
    with pytest.raises(DataError, match="a.Node refers to itself"):
        to_connect_schema({"type": "record", "name": "Node", "namespace": "a",
                           "fields": [{"name": "next", "type": ["null", "Node"]}]})


@pytest.mark.parametrize(("strategy", "is_key", "subject"), [
    ("io.confluent.kafka.serializers.subject.TopicNameStrategy", False, "orders-value"),
    ("io.confluent.kafka.serializers.subject.TopicNameStrategy", True, "orders-key"),
    ("io.confluent.kafka.serializers.subject.RecordNameStrategy", False, "com.acme.Inner"),
    ("io.confluent.kafka.serializers.subject.TopicRecordNameStrategy", True, "orders-com.acme.Inner"),
])
def test_subject_name_strategies_name_subjects_as_confluents(strategy: str, is_key: bool, subject: str) -> None:
    assert subject_name(strategy, "orders", is_key, to_avro_schema(INNER)) == subject


def test_configuration_needs_a_registry_url_and_a_known_strategy() -> None:
    with pytest.raises(ConfigError, match="schema.registry.url"):
        AvroConverter().configure({}, False)
    with pytest.raises(ConfigError, match="value.subject.name.strategy"):
        AvroConverter().configure({"schema.registry.url": "http://127.0.0.1:1",
                                   "value.subject.name.strategy": "NoSuchStrategy"}, False)
    short = AvroConverter()
    short.configure({"schema.registry.url": "http://u:p%40ss@127.0.0.1:1/apis/ccompat/v7",
                     "key.subject.name.strategy": "RecordNameStrategy"}, True)
    assert short.strategy == "io.confluent.kafka.serializers.subject.RecordNameStrategy"
    assert short.client is not None and short.client.urls == ["http://127.0.0.1:1/apis/ccompat/v7"]


def test_bytes_without_the_magic_byte_are_a_data_error_before_any_registry_call() -> None:
    converter = AvroConverter()
    converter.configure({"schema.registry.url": "http://127.0.0.1:1"}, False)
    for data in (b"", b"\x00\x00", b"\x01\x00\x00\x00\x01\x02"):
        with pytest.raises(DataError, match="unknown magic byte"):
            converter.to_connect_data("t", data)

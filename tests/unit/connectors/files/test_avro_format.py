"""format.class=avro: Confluent's AvroData schemas, values read back with fastavro and with Avro's Java reader."""

from __future__ import annotations

import datetime as dt
import decimal
import io
import json
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import fastavro
import pytest
from fastavro.read import HEADER_SCHEMA

from kopycat.api.data import Date, Decimal, Schema, SchemaBuilder, Struct, Time, Timestamp
from kopycat.api.errors import ConfigError, DataError
from kopycat.api.records import SinkRecord, TopicPartition
from kopycat.connectors.files import record_formats
from kopycat.connectors.files.file_sink import FileSinkTask
from kopycat.connectors.files.record_formats import AvroFormat, format_from_config
from kopycat.converters.avro_data import avro_values_converter, to_avro_schema
from kopycat.runtime.sink_task_context import WorkerSinkTaskContext

TP0 = TopicPartition("orders", 0)
ADDRESS = SchemaBuilder.struct().name("shop.Address").field("city", Schema.STRING_SCHEMA).build()
EVERY_TYPE = (SchemaBuilder.struct().name("shop.Order").version(3).doc("an order")
              .field("i8", Schema.INT8_SCHEMA).field("i16", Schema.INT16_SCHEMA).field("i32", Schema.INT32_SCHEMA)
              .field("i64", Schema.INT64_SCHEMA).field("f32", Schema.FLOAT32_SCHEMA)
              .field("f64", Schema.FLOAT64_SCHEMA).field("flag", Schema.BOOLEAN_SCHEMA)
              .field("text", Schema.STRING_SCHEMA).field("blob", Schema.BYTES_SCHEMA)
              .field("amount", Decimal.schema(2)).field("day", Date.SCHEMA).field("at", Time.SCHEMA)
              .field("ts", Timestamp.SCHEMA).build())
NESTED = (SchemaBuilder.struct()
          .field("note", Schema.OPTIONAL_STRING_SCHEMA)
          .field("qty", SchemaBuilder.int32().optional().default_value(7).build())
          .field("home", ADDRESS).field("work", SchemaBuilder.struct().name("shop.Address").optional()
                                        .field("city", Schema.STRING_SCHEMA).build())
          .field("tags", SchemaBuilder.array(Schema.STRING_SCHEMA).build())
          .field("lines", SchemaBuilder.array(SchemaBuilder.struct().field("sku", Schema.STRING_SCHEMA)
                                              .field("price", Decimal.schema(2)).build()).build())
          .field("attrs", SchemaBuilder.map(Schema.STRING_SCHEMA, Schema.OPTIONAL_INT64_SCHEMA).build())
          .field("by_id", SchemaBuilder.map(Schema.INT32_SCHEMA, Schema.STRING_SCHEMA).optional().build())
          .build())
BASE_MS = 1_795_000_000_000


def every_type(n: int) -> Struct:
    return (Struct(EVERY_TYPE).put("i8", -n).put("i16", 300 + n).put("i32", -70_000 - n).put("i64", 2**40 + n)
            .put("f32", 1.5 + n).put("f64", 0.1 + n).put("flag", n % 2 == 0).put("text", f"héllo {n}")
            .put("blob", bytes([n, 0, 255])).put("amount", decimal.Decimal(-12345 - n) / 100)
            .put("day", dt.date(2026, 11, 1) + dt.timedelta(days=n)).put("at", dt.time(12, n % 60, 5, 123000))
            .put("ts", dt.datetime.fromtimestamp((BASE_MS + n) / 1000, dt.UTC)))


def nested(n: int, with_nulls: bool = False) -> Struct:
    line = NESTED.field("lines").schema.value_schema  # type: ignore[union-attr]
    value = (Struct(NESTED).put("home", Struct(ADDRESS).put("city", "Oslo"))
             .put("tags", [] if with_nulls else ["a", "b"])
             .put("lines", [Struct(line).put("sku", f"s{n}").put("price", decimal.Decimal("9.99"))])
             .put("attrs", {"x": None, "y": n}))
    if not with_nulls:
        work = NESTED.field("work").schema  # type: ignore[union-attr]
        value.put("note", "hi").put("qty", n).put("work", Struct(work).put("city", "Bergen"))
        value.put("by_id", {1: "one", -2: "minus two"})
    return value


def record(offset: int, value: Any, schema: Schema | None) -> SinkRecord:
    return SinkRecord(topic="orders", kafka_partition=0, key_schema=None, key=None, value_schema=schema,
                      value=value, kafka_offset=offset, timestamp=BASE_MS + offset)


def start(tmp_path: Path, **props: str) -> FileSinkTask:
    config = {"name": "files", "topics": "orders", "store.url": f"file://{tmp_path}/store", "format.class": "avro",
              **props}
    task = FileSinkTask(background_commits=False)  # reads the store right after put()
    task.initialize(WorkerSinkTaskContext(config))
    task.start(config)
    task.open([TP0])
    return task


def committed(tmp_path: Path) -> list[Path]:
    root = tmp_path / "store"
    return sorted(p for p in root.rglob("*") if p.is_file() and "+tmp" not in p.parts)


def read_back(path: Path) -> tuple[dict[str, Any], list[Any]]:
    """The file's Avro schema (header JSON) and its values, as fastavro reads them."""
    with path.open("rb") as stream:
        reader = fastavro.reader(stream)
        return json.loads(reader.metadata["avro.schema"]), list(reader)


def header(data: bytes) -> dict[str, bytes]:
    return fastavro.schemaless_reader(io.BytesIO(data), HEADER_SCHEMA)["meta"]  # type: ignore[index,return-value]


def test_every_connect_type_is_written_as_confluents_avro_data_schema(tmp_path: Path) -> None:
    task = start(tmp_path, **{"flush.size": "2"})
    task.put([record(n, every_type(n), EVERY_TYPE) for n in range(2)])
    [path] = committed(tmp_path)
    schema, values = read_back(path)
    assert schema == {
        "type": "record", "name": "Order", "namespace": "shop", "fields": [
            {"name": "i8", "type": {"type": "int", "connect.type": "int8"}},
            {"name": "i16", "type": {"type": "int", "connect.type": "int16"}},
            {"name": "i32", "type": "int"}, {"name": "i64", "type": "long"},
            {"name": "f32", "type": "float"}, {"name": "f64", "type": "double"},
            {"name": "flag", "type": "boolean"}, {"name": "text", "type": "string"},
            {"name": "blob", "type": "bytes"},
            {"name": "amount", "type": {"type": "bytes", "scale": 2, "precision": 64, "connect.version": 1,
                                        "connect.parameters": {"scale": "2"},
                                        "connect.name": "org.apache.kafka.connect.data.Decimal",
                                        "logicalType": "decimal"}},
            {"name": "day", "type": {"type": "int", "connect.version": 1,
                                     "connect.name": "org.apache.kafka.connect.data.Date", "logicalType": "date"}},
            {"name": "at", "type": {"type": "int", "connect.version": 1,
                                    "connect.name": "org.apache.kafka.connect.data.Time",
                                    "logicalType": "time-millis"}},
            {"name": "ts", "type": {"type": "long", "connect.version": 1,
                                    "connect.name": "org.apache.kafka.connect.data.Timestamp",
                                    "logicalType": "timestamp-millis"}}],
        "connect.doc": "an order", "connect.version": 3, "connect.name": "shop.Order"}
    assert values == [{
        "i8": -n, "i16": 300 + n, "i32": -70_000 - n, "i64": 2**40 + n, "f32": 1.5 + n, "f64": 0.1 + n,
        "flag": n % 2 == 0, "text": f"héllo {n}", "blob": bytes([n, 0, 255]),
        "amount": decimal.Decimal(-12345 - n) / 100, "day": dt.date(2026, 11, 1) + dt.timedelta(days=n),
        "at": dt.time(12, n, 5, 123000), "ts": dt.datetime.fromtimestamp((BASE_MS + n) / 1000, dt.UTC),
    } for n in range(2)]


def test_optionals_defaults_nested_structs_arrays_and_both_map_forms(tmp_path: Path) -> None:
    task = start(tmp_path, **{"flush.size": "2"})
    task.put([record(0, nested(0), NESTED), record(1, nested(1, with_nulls=True), NESTED)])
    schema, values = read_back(committed(tmp_path)[0])
    assert schema == {"type": "record", "name": "ConnectDefault", "namespace": "io.confluent.connect.avro", "fields": [
        {"name": "note", "type": ["null", "string"], "default": None},
        {"name": "qty", "type": [{"type": "int", "connect.default": 7}, "null"], "default": 7},
        {"name": "home", "type": {"type": "record", "name": "Address", "namespace": "shop",
                                  "fields": [{"name": "city", "type": "string"}], "connect.name": "shop.Address"}},
        {"name": "work", "type": ["null", "shop.Address"], "default": None},  # the same struct: a name reference
        {"name": "tags", "type": {"type": "array", "items": "string"}},
        {"name": "lines", "type": {"type": "array", "items": {
            "type": "record", "name": "ConnectDefault2", "fields": [
                {"name": "sku", "type": "string"},
                {"name": "price", "type": {"type": "bytes", "scale": 2, "precision": 64, "connect.version": 1,
                                           "connect.parameters": {"scale": "2"},
                                           "connect.name": "org.apache.kafka.connect.data.Decimal",
                                           "logicalType": "decimal"}}]}}},
        {"name": "attrs", "type": {"type": "map", "values": ["null", "long"]}},
        {"name": "by_id", "type": ["null", {"type": "array", "items": {
            "type": "record", "name": "MapEntry", "fields": [{"name": "key", "type": "int"},
                                                             {"name": "value", "type": "string"}]}}],
         "default": None}]}
    line = {"sku": "s0", "price": decimal.Decimal("9.99")}
    assert values[0] == {"note": "hi", "qty": 0, "home": {"city": "Oslo"}, "work": {"city": "Bergen"},
                         "tags": ["a", "b"], "lines": [line], "attrs": {"x": None, "y": 0},
                         "by_id": [{"key": 1, "value": "one"}, {"key": -2, "value": "minus two"}]}
    assert values[1] == {"note": None, "qty": 7, "home": {"city": "Oslo"}, "work": None, "tags": [],
                         "lines": [{**line, "sku": "s1"}], "attrs": {"x": None, "y": 1}, "by_id": None}


def test_top_level_values_of_any_type_are_written_as_confluent_does(tmp_path: Path) -> None:
    schema = SchemaBuilder.array(Schema.INT16_SCHEMA).build()
    task = start(tmp_path, **{"flush.size": "2"})
    task.put([record(0, [1, 2], schema), record(1, [], schema)])
    avro_schema, values = read_back(committed(tmp_path)[0])
    assert avro_schema == {"type": "array", "items": {"type": "int", "connect.type": "int16"}}
    assert values == [[1, 2], []]


def test_committed_files_are_avro_and_a_schema_change_rolls_a_new_file(tmp_path: Path) -> None:
    v2 = SchemaBuilder.struct().name("shop.Order").version(4).field("i8", Schema.INT8_SCHEMA).build()
    task = start(tmp_path, **{"flush.size": "100"})
    task.put([record(0, every_type(0), EVERY_TYPE), record(1, every_type(1), EVERY_TYPE),
              record(2, Struct(v2).put("i8", 5), v2), record(3, every_type(3), EVERY_TYPE)])
    assert task.pre_commit({TP0: 4}) == {TP0: 3}
    files = committed(tmp_path)
    assert [str(p.relative_to(tmp_path / "store")) for p in files] == [
        "topics/orders/partition=0/orders+0+0000000000+0000000001.avro",
        "topics/orders/partition=0/orders+0+0000000002+0000000002.avro"]
    (_, first), (second_schema, second) = read_back(files[0]), read_back(files[1])
    assert [v["i8"] for v in first] == [0, -1] and second == [{"i8": 5}]
    assert second_schema["connect.version"] == 4


def test_schemaless_values_fail_naming_the_record_and_the_fix(tmp_path: Path) -> None:
    task = start(tmp_path)
    with pytest.raises(DataError, match=r"orders-0 offset 3 has no value schema.*schemas.enable=true"):
        task.put([record(3, {"id": 1}, None)])


def test_a_value_that_does_not_fit_fails_naming_the_records(tmp_path: Path) -> None:
    schema = SchemaBuilder.struct().field("id", Schema.INT32_SCHEMA).build()
    task = start(tmp_path)
    with pytest.raises(DataError, match=r"orders-0 offsets 4..5 do not fit their Avro schema"):
        task.put([record(4, Struct(schema).put("id", 1), schema),
                  record(5, Struct.of_values(schema, ["not a number"]), schema)])


def test_two_different_structs_of_one_name_are_refused_as_avro_refuses_them() -> None:
    other = SchemaBuilder.struct().name("shop.Address").field("zip", Schema.INT32_SCHEMA).build()
    schema = SchemaBuilder.struct().field("a", ADDRESS).field("b", other).build()
    with pytest.raises(DataError, match="shop.Address"):
        to_avro_schema(schema)


@pytest.mark.parametrize("codec", ["null", "deflate", "bzip2"])
def test_avro_codec_compresses_the_blocks(codec: str) -> None:
    contents = format_from_config({"format.class": "avro", "avro.codec": codec.upper()}).new_file(EVERY_TYPE)
    contents.add([record(n, every_type(n), EVERY_TYPE) for n in range(50)])
    stream = io.BytesIO()
    contents.write_to(stream)  # type: ignore[arg-type]
    assert header(stream.getvalue())["avro.codec"] == codec.encode()
    stream.seek(0)
    assert [v["i16"] for v in fastavro.reader(stream)] == [300 + n for n in range(50)]


def test_avro_codecs_that_cannot_be_written_are_refused_with_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ConfigError, match=r"'lzo' for configuration avro.codec: .*null, deflate, snappy, bzip2"):
        format_from_config({"format.class": "avro", "avro.codec": "lzo"})
    monkeypatch.setattr(record_formats, "_snappy_available", lambda: False)
    with pytest.raises(ConfigError, match=r"'snappy' for configuration avro.codec: needs python-snappy"):
        format_from_config({"format.class": "io.confluent.connect.s3.format.avro.AvroFormat", "avro.codec": "snappy"})


def test_the_sink_passes_avro_codec_to_its_files(tmp_path: Path) -> None:
    task = start(tmp_path, **{"avro.codec": "deflate", "flush.size": "1"})
    task.put([record(0, every_type(0), EVERY_TYPE)])
    assert header(committed(tmp_path)[0].read_bytes())["avro.codec"] == b"deflate"


def test_batches_convert_unset_fields_to_their_defaults_and_logical_values_to_connects_encoding() -> None:
    schema = (SchemaBuilder.struct().field("d", Decimal.schema(1)).field("n", SchemaBuilder.int64().default_value(9)
                                                                             .build()).build())
    convert = avro_values_converter(schema)
    assert convert([Struct(schema).put("d", decimal.Decimal("-0.1")), Struct(schema).put("d", decimal.Decimal(1))]
                   ) == [{"d": b"\xff", "n": 9}, {"d": b"\x0a", "n": 9}]


# ------------------------------------------------------------------ Avro's own (Java) reader

JAVA_READER = """
import org.apache.avro.file.DataFileReader;
import org.apache.avro.generic.GenericDatumReader;
import org.apache.avro.generic.GenericDatumWriter;
import org.apache.avro.io.EncoderFactory;
import org.apache.avro.io.JsonEncoder;

public class AvroCat {
  public static void main(String[] args) throws Exception {
    try (DataFileReader<Object> reader = new DataFileReader<>(new java.io.File(args[0]), new GenericDatumReader<>())) {
      System.out.println(reader.getSchema().toString());
      JsonEncoder out = EncoderFactory.get().jsonEncoder(reader.getSchema(), System.out);
      GenericDatumWriter<Object> writer = new GenericDatumWriter<>(reader.getSchema());
      for (Object value : reader) { writer.write(value, out); out.flush(); System.out.println(); }
    }
  }
}
"""


def java_avro_classpath() -> str | None:
    """Avro's Java library and what it needs, as pyspark ships them; None without a JDK or pyspark."""
    try:
        import pyspark
    except ImportError:
        return None
    jars = Path(pyspark.__file__).parent / "jars"
    wanted = ("avro-1", "jackson-core", "jackson-databind", "jackson-annotations", "slf4j-api", "commons-compress")
    found = [str(p) for p in jars.glob("*.jar") if p.name.startswith(wanted)]
    return ":".join(found) if shutil.which("java") and len(found) >= len(wanted) else None


def java_cat(tmp_path: Path, path: Path) -> list[str]:
    source = tmp_path / "AvroCat.java"
    source.write_text(JAVA_READER)
    done = subprocess.run(["java", "-cp", str(java_avro_classpath()), str(source), str(path)],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return [line for line in done.stdout.splitlines() if line.strip()]


def avro_json(schema: Any, values: Sequence[Any]) -> list[Any]:
    """Values in Avro's JSON encoding, written by fastavro, to compare with Java's."""
    out = io.StringIO()
    fastavro.json_writer(out, schema, list(values))
    return [json.loads(line) for line in out.getvalue().splitlines()]


def test_avros_java_reader_reads_our_files_and_prints_their_schema_byte_for_byte(tmp_path: Path) -> None:
    assert java_avro_classpath() is not None, "needs a JDK and pyspark's Avro jars: run .ci/bootstrap"
    # A struct without namespace used twice under a namespaced record: Java resolves the short
    # reference through the null namespace, fastavro cannot; the file keeps Java's form.
    plain = SchemaBuilder.struct().name("Address").field("city", Schema.STRING_SCHEMA).build()
    twice = SchemaBuilder.struct().field("home", plain).field("work", plain).field("n", NESTED).build()
    contents = AvroFormat("deflate").new_file(twice)
    contents.add([record(0, Struct(twice).put("home", Struct(plain).put("city", "A"))
                         .put("work", Struct(plain).put("city", "B")).put("n", nested(0)), twice)])
    path = tmp_path / "twice.avro"
    with path.open("wb") as stream:
        contents.write_to(stream)  # type: ignore[arg-type]
    schema_text, *values = java_cat(tmp_path, path)
    assert schema_text.encode() == header(path.read_bytes())["avro.schema"]
    assert '"work","type":"Address"' in schema_text
    assert json.loads(values[0])["home"] == {"city": "A"} and json.loads(values[0])["work"] == {"city": "B"}

    task = start(tmp_path, **{"flush.size": "3"})
    task.put([record(n, every_type(n), EVERY_TYPE) for n in range(3)])
    [file] = committed(tmp_path)
    schema_text, *values = java_cat(tmp_path, file)
    assert schema_text.encode() == header(file.read_bytes())["avro.schema"]
    schema, read = read_back(file)
    assert [json.loads(v) for v in values] == avro_json(schema, read)

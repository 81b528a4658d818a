"""Every Avro schema AvroData gives a Connect schema is one Avro's Java library parses and reads.

Oracle: Avro's own Java reader (pyspark's Avro jars, as the storage sink's file test uses them).
For each Connect type of :mod:`test_avro_mapping`'s cases, and for structs whose fields carry
defaults of every type (logical types, optional with a default, nested struct, array and maps),
the Java program parses the registered text with default validation on (the registry's and
Confluent's deserializers' parser), reads the payload fastavro wrote with GenericDatumReader
(exactly to its end) and writes it again: the bytes must be the same.
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import io
import json
import subprocess
from pathlib import Path
from typing import Any

import fastavro

from kopycat.api.data import Date, Decimal, Schema, SchemaBuilder, Struct, Time, Timestamp
from kopycat.converters.avro_data import avro_values_converter, to_avro_schema
from kopycat.converters.avro_to_connect import to_connect_schema
from tests.unit.connectors.files.test_avro_format import java_avro_classpath
from tests.unit.converters.test_avro_mapping import CASES, INNER

JAVA_SCHEMAS = """
import java.nio.file.*;
import java.util.Base64;
import org.apache.avro.Schema;
import org.apache.avro.generic.*;
import org.apache.avro.io.*;

public class AvroSchemas {
  public static void main(String[] args) throws Exception {
    for (String line : Files.readAllLines(Paths.get(args[0]))) {
      String[] parts = line.split("\\t");
      try {
        Schema schema = new Schema.Parser().setValidateDefaults(true).parse(parts[0]);
        byte[] payload = Base64.getDecoder().decode(parts[1]);
        BinaryDecoder in = DecoderFactory.get().binaryDecoder(payload, null);
        Object value = new GenericDatumReader<Object>(schema).read(null, in);
        if (!in.isEnd()) throw new IllegalStateException("the value ends before the payload");
        java.io.ByteArrayOutputStream bytes = new java.io.ByteArrayOutputStream();
        BinaryEncoder out = EncoderFactory.get().binaryEncoder(bytes, null);
        new GenericDatumWriter<Object>(schema).write(value, out);
        out.flush();
        System.out.println("ok\\t" + Base64.getEncoder().encodeToString(bytes.toByteArray()));
      } catch (Exception e) {
        System.out.println("error\\t" + e.toString().replace('\\n', ' '));
      }
    }
  }
}
"""

ADDRESS = (SchemaBuilder.struct().name("com.acme.Address").field("city", Schema.STRING_SCHEMA)
           .field("zip", Schema.OPTIONAL_STRING_SCHEMA).build())
_HOME = SchemaBuilder.struct().name("com.acme.Home").field("city", Schema.STRING_SCHEMA).optional()
HOME = _HOME.default_value(Struct(_HOME.build()).put("city", "Bergen")).build()
_LOOKUP = SchemaBuilder.struct().name("com.acme.Lookup").field("ids", SchemaBuilder.map(
    Schema.INT32_SCHEMA, Schema.STRING_SCHEMA).build())
LOOKUP = _LOOKUP.default_value(Struct(_LOOKUP.build()).put("ids", {1: "one"})).build()
DEFAULTS = (SchemaBuilder.struct().name("com.acme.Defaults").version(2).doc("defaults of every type")
            .field("i8", SchemaBuilder.int8().default_value(-8).build())
            .field("i16", SchemaBuilder.int16().optional().default_value(16).build())
            .field("i64", SchemaBuilder.int64().default_value(2**40).build())
            .field("f32", SchemaBuilder.float32().default_value(1.5).build())
            .field("f64", SchemaBuilder.float64().optional().default_value(0.25).build())
            .field("flag", SchemaBuilder.bool().default_value(True).build())
            .field("text", SchemaBuilder.string().optional().default_value("héllo").build())
            .field("blob", SchemaBuilder.bytes().default_value(b"\x00\xff").build())
            .field("amount", Decimal.builder(2).default_value(decimal.Decimal("-1.50")).build())
            .field("day", Date.builder().default_value(dt.date(2026, 11, 27)).build())
            .field("at", Time.builder().optional().default_value(dt.time(12, 30)).build())
            .field("ts", Timestamp.builder().default_value(dt.datetime(2026, 11, 27, 1, tzinfo=dt.UTC)).build())
            .field("tags", SchemaBuilder.array(Schema.STRING_SCHEMA).default_value(["a", "b"]).build())
            .field("attrs", SchemaBuilder.map(Schema.STRING_SCHEMA, Schema.INT32_SCHEMA)
                   .default_value({"x": 1}).build())
            .field("by_id", SchemaBuilder.map(Schema.INT32_SCHEMA, Schema.STRING_SCHEMA)
                   .default_value({7: "seven"}).build())
            .field("no_ids", SchemaBuilder.map(Schema.INT32_SCHEMA, Schema.STRING_SCHEMA).default_value({}).build())
            .field("lookup", LOOKUP)
            .field("home", HOME)
            .field("address", ADDRESS).field("other", SchemaBuilder.struct().name("com.acme.Other").optional()
                                             .field("address", ADDRESS).build())
            .build())


def defaults_value() -> Struct:
    """Set fields only where no default fills them."""
    return Struct(DEFAULTS).put("address", Struct(ADDRESS).put("city", "Oslo"))


def wire(schema: Schema, value: Any) -> tuple[str, bytes]:
    """The text the converter registers for ``schema`` and ``value`` written by fastavro against it."""
    avro = to_avro_schema(schema)
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(avro), avro_values_converter(schema)([value])[0])
    return json.dumps(avro, separators=(",", ":"), ensure_ascii=False), out.getvalue()


def java_read(tmp_path: Path, cases: dict[str, tuple[str, bytes]]) -> dict[str, str]:
    """Each case's payload as Avro's Java library read and wrote it again (base64), or its error."""
    classpath = java_avro_classpath()
    assert classpath is not None, "needs a JDK and pyspark's Avro jars: run .ci/bootstrap"
    source, lines = tmp_path / "AvroSchemas.java", tmp_path / "cases.tsv"
    source.write_text(JAVA_SCHEMAS)
    lines.write_text("".join(f"{text}\t{base64.b64encode(payload).decode()}\n" for text, payload in cases.values()),
                     encoding="utf-8")
    done = subprocess.run(["java", "-Dfile.encoding=UTF-8", "-cp", classpath, str(source), str(lines)],
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    answers = done.stdout.splitlines()
    assert len(answers) == len(cases), done.stdout
    return dict(zip(cases, answers, strict=True))


def test_avros_java_reader_parses_every_avro_data_schema_and_reads_its_bytes_back(tmp_path: Path) -> None:
    cases = {name: wire(schema, value) for name, schema, value in CASES}
    cases["struct-of-every-case"] = wire(*every_case_struct())
    cases["defaults-of-every-type"] = wire(DEFAULTS, defaults_value())
    cases["defaults-of-every-type-set"] = wire(DEFAULTS, defaults_value().put("i16", None).put("text", None)
                                               .put("home", Struct(HOME).put("city", "B")))
    answers = java_read(tmp_path, cases)
    expected = {name: "ok\t" + base64.b64encode(payload).decode() for name, (_, payload) in cases.items()}
    assert answers == expected


def test_a_default_avro_cannot_hold_is_left_off_the_field_as_confluent_does_and_kept_in_connect_default() -> None:
    fields = {field["name"]: field for field in to_avro_schema(DEFAULTS)["fields"]}
    assert "default" not in fields["by_id"] and "default" not in fields["lookup"]  # [[7, "seven"]] is no MapEntry
    assert fields["by_id"]["type"]["connect.default"] == [[7, "seven"]]
    assert (fields["no_ids"]["default"], fields["attrs"]["default"], fields["tags"]["default"]) == ([], {"x": 1},
                                                                                                   ["a", "b"])
    back = to_connect_schema(to_avro_schema(DEFAULTS))
    assert back.field("by_id").schema.default == {7: "seven"}


def every_case_struct() -> tuple[Schema, Struct]:
    """One record holding every case as a field, optional ones twice (set and null), INNER reused."""
    builder = SchemaBuilder.struct().name("com.acme.Every")
    for name, schema, _ in CASES:
        builder.field(name.replace("-", "_"), schema)
    builder.field("inner_again", INNER)
    schema = builder.build()
    value = Struct(schema).put("inner_again", Struct(INNER).put("a", 9))
    for name, _, case_value in CASES:
        value.put(name.replace("-", "_"), case_value)
    return schema, value

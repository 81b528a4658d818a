"""JsonConverter per CPU second next to Kafka's own JsonConverter and to ``orjson`` of the payload alone.

100,000 records of a 10-field struct (int32, int64, strings, doubles, booleans, a Timestamp)
with ``schemas.enable=true``, in batches of 1,000 records (a poll's worth). Kopycat's converter
is timed on both of a runner's paths, reported apart:

- *record path*: ``from_connect_data_batch`` over Structs (what a source runner does with records);
- *column path*: ``from_arrow_array`` over the same values as an Arrow struct column (what a
  source runner does with a connector's Arrow batches).

The anchors, over the very same values:

- Kafka's ``org.apache.kafka.connect.json.JsonConverter`` (connect-json from the ``connect`` jar
  set, include/jars/connect): bench/java/JsonConverterBench.java, compiled here with ``javac``
  into a temp dir, fed the records as text, warmed up (the JIT compiled), then timed in its one
  thread's CPU time. Goal: the column path >= 1.0x of it;
- ``orjson.dumps`` / ``orjson.loads`` of the payload alone (timestamps as epoch ms, no schema):
  the cost of JSON itself, without Connect's envelope and schema.

The Python movers run once untimed, then take turns for ``--rounds`` rounds
(``bench.common.median_rounds``), timed in process CPU time (Arrow's threads included); Kafka's
runs its rounds in its own JVM after its warm-up. Each figure is the median round, with its spread.
"""

from __future__ import annotations

import datetime as dt
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from statistics import median_low
from typing import Any

import orjson

from bench.common import BenchResult, Measure, median_rounds, print_results, rounds_lines, size_and_switch
from kopycat.api.arrow_values import to_arrow_batch
from kopycat.api.data import Schema, SchemaBuilder, Struct, Timestamp
from kopycat.converters.json import JsonConverter
from kopycat.dev.jars import ensure_jars
from kopycat.dev.processes import java_executable

RECORDS = 100_000
BATCH = 1_000
TOPIC = "orders"
GOAL_KAFKA = 1.0
JAVA_SOURCE = Path(__file__).parent / "java" / "JsonConverterBench.java"
JAVA_WARM_UP_S = 5.0
UNIT = "records/CPU-s"

SCHEMA = (SchemaBuilder.struct().name("bench.Order")
          .field("id", Schema.INT64_SCHEMA)
          .field("customer_id", Schema.INT32_SCHEMA)
          .field("name", Schema.STRING_SCHEMA)
          .field("email", Schema.OPTIONAL_STRING_SCHEMA)
          .field("city", Schema.STRING_SCHEMA)
          .field("amount", Schema.FLOAT64_SCHEMA)
          .field("discount", Schema.OPTIONAL_FLOAT64_SCHEMA)
          .field("active", Schema.BOOLEAN_SCHEMA)
          .field("quantity", Schema.INT32_SCHEMA)
          .field("created_at", Timestamp.SCHEMA)
          .build())
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def _row(i: int) -> dict[str, Any]:
    return {
        "id": 10_000_000_000 + i, "customer_id": i % 5000, "name": f"customer {i}",
        "email": f"user{i}@example.com", "city": ("Berlin", "Lyon", "Porto", "Oslo")[i % 4],
        "amount": round(i * 1.37 % 10_000, 2), "discount": (i % 7) / 10, "active": i % 3 == 0,
        "quantity": i % 17, "created_at": _EPOCH + dt.timedelta(milliseconds=1_700_000_000_000 + i * 997),
    }


def _structs(rows: list[dict[str, Any]]) -> list[Struct]:
    structs = []
    for row in rows:
        struct = Struct(SCHEMA)
        for name, value in row.items():
            struct.put(name, value)
        structs.append(struct)
    return structs


def _plain(row: dict[str, Any]) -> dict[str, Any]:
    return {**row, "created_at": (row["created_at"] - _EPOCH) // dt.timedelta(milliseconds=1)}


def _batches(items: list[Any]) -> list[list[Any]]:
    return [items[start:start + BATCH] for start in range(0, len(items), BATCH)]


def cpu_pass(mover: str, convert: Callable[[Any], Any], batches: Sequence[Any], records: int) -> Callable[[], Measure]:
    """One timed pass of ``convert`` over every batch; its "wall" time is this process's CPU time."""
    def run() -> Measure:
        start = time.process_time()
        for batch in batches:
            convert(batch)
        return Measure(mover, records, time.process_time() - start)
    return run


# ------------------------------------------------------------------ Kafka's JsonConverter


def tsv_lines(rows: Sequence[dict[str, Any]]) -> str:
    """The rows as JsonConverterBench.java reads them: ten tab-separated fields, doubles as repr
    (Java parses back the same double), the timestamp as epoch ms."""
    return "".join("\t".join((str(plain["id"]), str(plain["customer_id"]), plain["name"], plain["email"],
                              plain["city"], repr(plain["amount"]), repr(plain["discount"]),
                              str(plain["active"]).lower(), str(plain["quantity"]), str(plain["created_at"]))) + "\n"
                   for plain in map(_plain, rows))


def parse_java(output: str, records: int) -> tuple[bytes, Measure, Measure]:
    """(first record's bytes, serialize, deserialize) from JsonConverterBench's output: each the
    median round in thread CPU time, with every round's time."""
    first, rounds = b"", {"serialize": [], "deserialize": []}  # type: dict[str, list[float]]
    for line in output.splitlines():
        key, _, value = line.partition("\t")
        if key == "first":
            first = bytes.fromhex(value)
        elif key in rounds:
            rounds[key].append(int(value) / 1e9)
    measures = [Measure(f"Kafka JsonConverter {key}, one thread", records, median_low(cpu), walls=tuple(cpu))
                for key, cpu in rounds.items()]
    return first, measures[0], measures[1]


def kafka_json_converter(rows: Sequence[dict[str, Any]], rounds: int) -> tuple[bytes, Measure, Measure]:
    """JsonConverterBench.java compiled against the `connect` jars and run on ``rows``."""
    jars = f"{ensure_jars('connect')}/*"
    java = java_executable()
    javac = str(Path(java).with_name("javac")) if Path(java).with_name("javac").exists() else shutil.which("javac")
    if javac is None:
        raise RuntimeError("no `javac` next to `java` nor on PATH: a JDK is needed for Kafka's JsonConverter")
    with tempfile.TemporaryDirectory(prefix="kopycat-bench-json-") as work:
        subprocess.run([javac, "-cp", jars, "-d", work, str(JAVA_SOURCE)], check=True, capture_output=True)
        data = Path(work) / "rows.tsv"
        data.write_text(tsv_lines(rows))
        done = subprocess.run([java, "-cp", f"{work}:{jars}", "JsonConverterBench", str(data), str(rounds),
                               str(JAVA_WARM_UP_S)], capture_output=True, text=True, timeout=900, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"JsonConverterBench failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return parse_java(done.stdout, len(rows))


# ------------------------------------------------------------------ the bench


def _result(name: str, kopycat: Measure, anchor: Measure, goal: float | None = None) -> BenchResult:
    return BenchResult(name, kopycat.rate, anchor.rate, unit=UNIT, goal=goal, spread=kopycat.spread,
                       anchor_spread=anchor.spread)


def run(argv: Sequence[str] = ()) -> list[BenchResult]:
    """``python -m bench json_converter [--records N] [--rounds N] [--no-java]``."""
    args = size_and_switch(argv, bench="json_converter", doc=__doc__,
                           size=("--records", RECORDS, "records converted per pass"),
                           switch=("--no-java", "leave out Kafka's JsonConverter (no JDK)"), rounds=True)
    records = args.records
    rows = [_row(i) for i in range(records)]
    structs = _batches(_structs(rows))
    arrow_schema = to_arrow_batch(SCHEMA, structs[0]).schema
    columns = [to_arrow_batch(SCHEMA, batch, arrow_schema).to_struct_array() for batch in structs]
    plain = _batches([_plain(row) for row in rows])
    converter = JsonConverter()
    converter.configure({"schemas.enable": "true"}, is_key=False)
    encoded = [converter.from_connect_data_batch(TOPIC, SCHEMA, batch) for batch in structs]
    column_bytes = converter.from_arrow_array(TOPIC, SCHEMA, columns[0])
    if column_bytes is None or column_bytes.to_pylist() != encoded[0]:
        raise RuntimeError("the column path did not give the record path's bytes")
    payloads = [[orjson.dumps(row) for row in batch] for batch in plain]
    dumps, loads = orjson.dumps, orjson.loads

    movers = [
        cpu_pass("Kopycat record path (from_connect_data_batch)",
                 lambda batch: converter.from_connect_data_batch(TOPIC, SCHEMA, batch), structs, records),
        cpu_pass("Kopycat column path (from_arrow_array)",
                 lambda column: converter.from_arrow_array(TOPIC, SCHEMA, column), columns, records),
        cpu_pass("orjson.dumps, payload alone", lambda batch: [dumps(row) for row in batch], plain, records),
        cpu_pass("Kopycat to_connect_data_batch", lambda batch: converter.to_connect_data_batch(TOPIC, batch),
                 encoded, records),
        cpu_pass("orjson.loads, payload alone", lambda batch: [loads(data) for data in batch], payloads, records)]
    for mover in movers:  # an untimed pass each, as Kafka's side is warmed up: caches filled, memory taken
        mover()
    record, column, orjson_dumps, read, orjson_loads = median_rounds(movers, args.rounds)
    print(f"json_converter: {records:,} records of a 10-field struct, schemas.enable=true, batches of {BATCH:,}",
          flush=True)
    runs = [record, column, orjson_dumps, read, orjson_loads]
    found = [_result("json_converter_serialize_column_vs_orjson", column, orjson_dumps),
             _result("json_converter_serialize_record_vs_orjson", record, orjson_dumps),
             _result("json_converter_deserialize_vs_orjson", read, orjson_loads)]
    if not args.no_java:
        first, kafka_write, kafka_read = kafka_json_converter(rows, args.rounds)
        same = "the same bytes" if first == encoded[0][0] else f"other bytes: {first[:200]!r}"
        print(f"  Kafka's JsonConverter wrote {same} for the first record", flush=True)
        runs += [kafka_write, kafka_read]
        found = [BenchResult("kafka_json_converter_serialize", kafka_write.rate, unit=UNIT, spread=kafka_write.spread),
                 _result("json_converter_serialize_column_vs_kafka", column, kafka_write, GOAL_KAFKA),
                 _result("json_converter_serialize_record_vs_kafka", record, kafka_write),
                 _result("json_converter_deserialize_vs_kafka", read, kafka_read), *found]
    for line in rounds_lines(runs):
        print(line.replace(" s ([median])", " CPU s ([median])"), flush=True)
    return found


if __name__ == "__main__":
    print_results(run)

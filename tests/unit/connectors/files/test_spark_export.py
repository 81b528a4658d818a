"""spark_export: the Spark bulk export's ranges, resume rule, decoding, command and result (no Spark)."""

from __future__ import annotations

import datetime as dt
import decimal
import importlib.util
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from kopycat.api.arrow import to_arrow_schema
from kopycat.api.data import Date, Decimal, Schema, SchemaBuilder, Struct, Timestamp
from kopycat.api.errors import ConfigError, ConnectError, DataError
from kopycat.api.records import TopicPartition
from kopycat.connectors.files.committed_files import committed_name
from kopycat.connectors.files.partitioners import partitioner_from_config
from kopycat.connectors.files.spark_decoder import (
    DIR_COLUMN,
    OFFSET_COLUMN,
    TopicDecoder,
    decode_dir,
    spark_arrow_schema,
)
from kopycat.connectors.files.spark_export import (
    JOB_PATH,
    RESULT_KEY,
    ExportedFile,
    ExportResult,
    OffsetRange,
    end_at_live_positions,
    live_positions,
    parse_result,
    ranges_from_json,
    ranges_to_json,
    resume_ranges,
    s3a_conf,
    spark_export_job,
    spark_offsets,
)
from kopycat.connectors.files.spark_options import read_options_file
from kopycat.converters.json import JsonConverter
from tests.support.orders import ORDER


def order_bytes(n: int, schema: Schema = ORDER) -> bytes:
    value = (Struct(schema).put("id", n).put("name", f"n{n}").put("amount", decimal.Decimal(n) / 4)
             .put("day", dt.date(2026, 1, 1) + dt.timedelta(days=n))
             .put("ts", dt.datetime(2026, 1, 1, tzinfo=dt.UTC) + dt.timedelta(milliseconds=n))
             .put("note", None if n % 2 else f"note {n}"))
    data = JsonConverter().from_connect_data("orders", schema, value)
    assert data is not None
    return data


class Collected:
    """Stands in for the Spark accumulator: keeps what ``add`` was given."""

    def __init__(self) -> None:
        self.added: list[dict[int, list[int]]] = []

    def add(self, value: dict[int, list[int]]) -> None:
        self.added.append(value)


def kafka_batch(partition: int, offsets: list[int], values: list[bytes | None]) -> pa.RecordBatch:
    return pa.record_batch({"value": pa.array(values, pa.binary()),
                            "partition": pa.array([partition] * len(offsets), pa.int32()),
                            "offset": pa.array(offsets, pa.int64())})


# ---------------------------------------------------------------- ranges

def test_ranges_round_trip_through_json_sorted_by_topic_and_partition() -> None:
    ranges = [OffsetRange("orders", 1, 5, 9), OffsetRange("orders", 0, 0, 10), OffsetRange("a", 0, 3, 3)]
    text = ranges_to_json(ranges)
    assert text == '{"a":{"0":[3,3]},"orders":{"0":[0,10],"1":[5,9]}}'
    assert ranges_from_json(text) == sorted(ranges)


@pytest.mark.parametrize("text, words", [
    ("not json", "not JSON"),
    ("{}", "no topics"),
    ('{"orders": [1, 2]}', "maps to no partitions"),
    ('{"orders": {"x": [0, 1]}}', "is not a number"),
    ('{"orders": {"0": [0]}}', "is not [start, end]"),
    ('{"orders": {"0": [5, 2]}}', "0 <= start <= end"),
    ('{"orders": {"0": [true, 2]}}', "is not [start, end]"),
])
def test_bad_ranges_are_refused_naming_the_entry_and_the_shape(text: str, words: str) -> None:
    with pytest.raises(ConfigError, match="ranges") as caught:
        ranges_from_json(text)
    assert words in str(caught.value)


def test_spark_offsets_assign_exactly_the_ranges_partitions() -> None:
    options = spark_offsets([OffsetRange("orders", 2, 7, 9), OffsetRange("orders", 0, 1, 4)])
    assert json.loads(options["assign"]) == {"orders": [0, 2]}
    assert json.loads(options["startingOffsets"]) == {"orders": {"0": 1, "2": 7}}
    assert json.loads(options["endingOffsets"]) == {"orders": {"0": 4, "2": 9}}


# ---------------------------------------------------------------- resume

def test_ranges_resume_after_the_greatest_committed_offset_of_each_partition() -> None:
    names = [committed_name("orders", 0, 0, 49, "parquet"), committed_name("orders", 0, 50, 99, "parquet"),
             committed_name("orders", 1, 0, 9, "parquet"), "part-00000-x.parquet"]
    ranges = [OffsetRange("orders", 0, 0, 100), OffsetRange("orders", 1, 0, 30), OffsetRange("orders", 2, 5, 8)]
    to_read, committed = resume_ranges(ranges, names)
    assert to_read == [OffsetRange("orders", 1, 10, 30), OffsetRange("orders", 2, 5, 8)]
    assert committed == [OffsetRange("orders", 0, 0, 100)]


def test_a_range_behind_the_committed_files_is_committed_whole() -> None:
    names = [committed_name("orders", 0, 0, 500, "parquet")]
    to_read, committed = resume_ranges([OffsetRange("orders", 0, 100, 200)], names)
    assert (to_read, committed) == ([], [OffsetRange("orders", 0, 100, 200)])


def test_the_live_position_is_after_the_committed_files_else_the_groups_offset_else_unknown() -> None:
    names = [committed_name("orders", 0, 0, 49, "parquet"), committed_name("orders", 0, 50, 99, "parquet"),
             committed_name("orders", 1, 0, 9, "parquet")]
    group = {TopicPartition("orders", 0): 300, TopicPartition("orders", 2): 70, TopicPartition("orders", 3): -1001}
    partitions = [TopicPartition("orders", p) for p in range(4)]
    assert live_positions(partitions, names, group) == {
        TopicPartition("orders", 0): 100, TopicPartition("orders", 1): 10, TopicPartition("orders", 2): 70}
    to_read, _ = resume_ranges([OffsetRange("orders", 0, 0, 500)], names)
    assert to_read[0].start == live_positions(partitions, names, {})[TopicPartition("orders", 0)]


def test_a_windows_ranges_end_at_the_live_position_and_are_empty_from_it_on() -> None:
    live = {TopicPartition("orders", 0): 100, TopicPartition("orders", 1): 10, TopicPartition("orders", 2): 900}
    ranges = [OffsetRange("orders", 0, 40, 300), OffsetRange("orders", 1, 20, 30), OffsetRange("orders", 2, 5, 8),
              OffsetRange("orders", 3, 5, 8)]
    assert end_at_live_positions(ranges, live) == [
        OffsetRange("orders", 0, 40, 100), OffsetRange("orders", 1, 10, 10), OffsetRange("orders", 2, 5, 8),
        OffsetRange("orders", 3, 5, 8)]


# ---------------------------------------------------------------- decoding

def test_decoder_yields_the_value_columns_typed_for_spark_and_reports_offsets() -> None:
    stats = Collected()
    decoder = TopicDecoder("orders", to_arrow_schema(ORDER), stats)
    batches = [kafka_batch(3, [10, 11], [order_bytes(10), order_bytes(11)]),
               kafka_batch(3, [13], [order_bytes(13)])]
    out = list(decoder(batches))
    assert [b.schema for b in out] == [spark_arrow_schema(to_arrow_schema(ORDER))] * 2
    rows = pa.Table.from_batches(out).to_pylist()
    assert [r["id"] for r in rows] == [10, 11, 13]
    assert rows[0] == {"id": 10, "name": "n10", "amount": decimal.Decimal("2.50"), "day": dt.date(2026, 1, 11),
                       "ts": dt.datetime(2026, 1, 1, 0, 0, 0, 10000, tzinfo=dt.UTC), "note": "note 10"}
    assert stats.added == [{0: {"partition": 3, "first": 10, "last": 13, "rows": 3, "filtered": 0,
                                "dirs": {"partition=3": [10, 13, 3]}}}]


def test_spark_schema_differs_from_the_arrow_schema_only_in_timestamp_units() -> None:
    arrow = to_arrow_schema(ORDER)
    spark = spark_arrow_schema(arrow)
    assert spark.field("ts").type == pa.timestamp("us", tz="UTC")
    assert [f.type for f in spark if f.name != "ts"] == [f.type for f in arrow if f.name != "ts"]
    assert spark.field("amount").type == pa.decimal128(10, 2)


def test_decoder_rows_equal_the_shared_arrow_conversion_of_the_sink() -> None:
    from kopycat.api.arrow_values import to_arrow_batch

    values = [order_bytes(n) for n in range(5)]
    expected = to_arrow_batch(ORDER, [JsonConverter().to_connect_data("orders", v).value for v in values])
    decoded = TopicDecoder("orders", to_arrow_schema(ORDER)).decode(JsonConverter(), 0, list(range(5)), values)
    assert decoded.equals(expected)


def test_a_tombstone_fails_naming_the_record_unless_ignored() -> None:
    batch = kafka_batch(1, [4, 5, 6], [order_bytes(4), None, order_bytes(6)])
    with pytest.raises(DataError, match=r"orders\[1\]@5 has a null value.*behavior-on-null-values ignore"):
        list(TopicDecoder("orders", to_arrow_schema(ORDER))([batch]))
    stats = Collected()
    out = list(TopicDecoder("orders", to_arrow_schema(ORDER), stats, "ignore")([batch]))
    assert pa.Table.from_batches(out).column("id").to_pylist() == [4, 6]
    assert stats.added == [{0: {"partition": 1, "first": 4, "last": 6, "rows": 2, "filtered": 0,
                                "dirs": {"partition=1": [4, 6, 2]}}}]


def test_a_value_with_another_column_layout_fails_naming_the_record() -> None:
    other = SchemaBuilder.struct().name("order").field("id", Schema.INT64_SCHEMA).build()
    changed = JsonConverter().from_connect_data("orders", other, Struct(other).put("id", 1))
    assert changed is not None
    batch = kafka_batch(0, [0, 1], [order_bytes(0), changed])
    with pytest.raises(DataError, match=r"orders\[0\]@1 has columns \(id int64 not null\) but the export's .* are "
                                        r"\(id int64 not null, name string not null, amount decimal128"):
        list(TopicDecoder("orders", to_arrow_schema(ORDER))([batch]))


def test_a_compatible_schema_version_in_the_same_batch_is_decoded_in_order() -> None:
    documented = (SchemaBuilder.struct().name("order").doc("v2").version(2)
                  .field("id", Schema.INT64_SCHEMA).field("name", Schema.STRING_SCHEMA)
                  .field("amount", Decimal.builder(2).parameter("connect.decimal.precision", "10").build())
                  .field("day", Date.SCHEMA).field("ts", Timestamp.SCHEMA)
                  .field("note", Schema.OPTIONAL_STRING_SCHEMA).build())
    values = [order_bytes(0), order_bytes(1, documented), order_bytes(2)]
    decoded = TopicDecoder("orders", to_arrow_schema(ORDER)).decode(JsonConverter(), 0, [0, 1, 2], values)
    assert decoded.column("id").to_pylist() == [0, 1, 2]


def test_bytes_that_are_no_envelope_fail_naming_the_record() -> None:
    batch = kafka_batch(2, [7, 8], [order_bytes(7), b'{"id": 8}'])
    with pytest.raises(DataError, match=r"orders\[2\]@8 is not a JsonConverter envelope"):
        list(TopicDecoder("orders", to_arrow_schema(ORDER))([batch]))


# ---------------------------------------------------------------- time-based layout and window

BERLIN_DAILY = {"partitioner.class": "DailyPartitioner", "locale": "en", "timezone": "Europe/Berlin",
                "timestamp.extractor": "Record"}
MIDNIGHT_BERLIN = 1_795_215_600_000  # 2026-11-20T23:00:00Z, 2026-11-21 00:00 in Berlin (CET)
DAY_MS = 86_400_000


def stamped_batch(partition: int, offsets: list[int], stamps: list[int], types: list[int] | None = None,
                  values: list[bytes | None] | None = None) -> pa.RecordBatch:
    """The Kafka source's columns as Spark hands them to mapInArrow (timestamps in microseconds)."""
    return pa.record_batch({
        "value": pa.array(values if values is not None else [order_bytes(o) for o in offsets], pa.binary()),
        "partition": pa.array([partition] * len(offsets), pa.int32()),
        "offset": pa.array(offsets, pa.int64()),
        "timestamp": pa.array([s * 1000 for s in stamps], pa.timestamp("us", tz="Etc/UTC")),
        "timestampType": pa.array(types if types is not None else [0] * len(offsets), pa.int32())})


def test_decoder_places_each_record_where_the_python_sinks_partitioner_puts_its_kafka_timestamp() -> None:
    stamps = [MIDNIGHT_BERLIN - 2, MIDNIGHT_BERLIN - 1, MIDNIGHT_BERLIN, MIDNIGHT_BERLIN + 1, MIDNIGHT_BERLIN - 3,
              MIDNIGHT_BERLIN + 5]
    stats = Collected()
    decoder = TopicDecoder("orders", to_arrow_schema(ORDER), stats, partitioner=BERLIN_DAILY)
    out = pa.Table.from_batches(list(decoder([stamped_batch(2, [10, 11, 12, 13, 14, 15], stamps)])))
    python = partitioner_from_config(BERLIN_DAILY)
    expected = [python.encode_timestamp(stamp) for stamp in stamps]
    assert expected[0] == "year=2026/month=11/day=20" and expected[2] == "year=2026/month=11/day=21"
    assert [decode_dir(d) for d in out.column(DIR_COLUMN).to_pylist()] == expected
    assert out.column(OFFSET_COLUMN).to_pylist() == out.column("id").to_pylist() == [10, 11, 12, 13, 14, 15]
    assert out.schema.names == [*to_arrow_schema(ORDER).names, DIR_COLUMN, OFFSET_COLUMN]
    [added] = stats.added
    assert added[0]["dirs"] == {"year=2026/month=11/day=20": [10, 14, 3], "year=2026/month=11/day=21": [12, 15, 3]}
    assert (added[0]["rows"], added[0]["filtered"]) == (6, 0)


def test_a_window_keeps_the_records_stamped_inside_it_and_counts_the_others_as_filtered() -> None:
    stamps = [MIDNIGHT_BERLIN - 1, MIDNIGHT_BERLIN, MIDNIGHT_BERLIN + DAY_MS, MIDNIGHT_BERLIN - 5,
              MIDNIGHT_BERLIN + DAY_MS - 1, MIDNIGHT_BERLIN + 7]
    stats = Collected()
    decoder = TopicDecoder("orders", to_arrow_schema(ORDER), stats, partitioner=BERLIN_DAILY,
                           window=(MIDNIGHT_BERLIN, MIDNIGHT_BERLIN + DAY_MS))
    batches = [stamped_batch(0, [0, 1, 2], stamps[:3]),
               stamped_batch(0, [3, 4, 5, 6], [*stamps[3:], MIDNIGHT_BERLIN + 9], types=[0, 0, 0, -1])]
    out = pa.Table.from_batches(list(decoder(batches)))
    assert out.column("id").to_pylist() == [1, 4, 5], "inside: [start, end), stamped records only"
    [added] = stats.added
    assert added[0]["dirs"] == {"year=2026/month=11/day=21": [1, 5, 3]}
    assert (added[0]["first"], added[0]["last"], added[0]["rows"], added[0]["filtered"]) == (0, 6, 3, 4)


def test_a_record_without_a_kafka_timestamp_cannot_be_placed_and_is_named() -> None:
    decoder = TopicDecoder("orders", to_arrow_schema(ORDER), partitioner=BERLIN_DAILY)
    batch = stamped_batch(1, [7, 8], [MIDNIGHT_BERLIN, -1], types=[1, -1])
    with pytest.raises(DataError, match=r"topic orders partition 1 offset 8: it has no Kafka timestamp"):
        list(decoder([batch]))


def test_ignored_tombstones_leave_the_rows_aligned_with_their_offsets_and_directories() -> None:
    stamps = [MIDNIGHT_BERLIN - 1, MIDNIGHT_BERLIN, MIDNIGHT_BERLIN + 1]
    batch = stamped_batch(0, [0, 1, 2], stamps, values=[order_bytes(0), None, order_bytes(2)])
    out = pa.Table.from_batches(list(TopicDecoder("orders", to_arrow_schema(ORDER), None, "ignore",
                                                  partitioner=BERLIN_DAILY)([batch])))
    assert out.column("id").to_pylist() == out.column(OFFSET_COLUMN).to_pylist() == [0, 2]
    assert [decode_dir(d) for d in out.column(DIR_COLUMN).to_pylist()] == [
        "year=2026/month=11/day=20", "year=2026/month=11/day=21"]


# ---------------------------------------------------------------- spark-submit

def _jar_sets(root: Path) -> None:
    """Both jar sets as include/jars' poms lay them out (empty files: only names matter here)."""
    sets = {"spark-kafka": ("spark-sql-kafka-0-10_2.13-4.2.0.jar", "kafka-clients-3.9.2.jar"),
            "spark-s3a": ("hadoop-aws-3.5.0.jar", "s3-2.35.4.jar")}
    for name, jars in sets.items():
        (root / name).mkdir()
        for jar in jars:
            (root / name / jar).touch()


def test_the_job_command_names_the_job_its_jars_conf_and_arguments(tmp_path: Path) -> None:
    _jar_sets(tmp_path)
    job = spark_export_job([OffsetRange("orders", 0, 0, 10)], store_url="file:///lake", connector_name="exp",
                           bootstrap_servers="127.0.0.1:9092", run_id="r1", jars_root=tmp_path,
                           kafka_options={"security.protocol": "PLAINTEXT"}, python="/venv/bin/python")
    class_path = job.conf["spark.driver.extraClassPath"].split(":")
    assert [Path(j).name for j in class_path] == ["kafka-clients-3.9.2.jar", "spark-sql-kafka-0-10_2.13-4.2.0.jar"]
    assert job.jars == []
    assert job.env == {"PYSPARK_PYTHON": "/venv/bin/python", "PYSPARK_DRIVER_PYTHON": "/venv/bin/python",
                       "SPARK_LOCAL_IP": "127.0.0.1"}
    cmd = job.command("spark-submit")
    assert cmd[:5] == ["spark-submit", "--master", "local[2]", "--name", "kopycat-export-exp"]
    assert cmd[cmd.index(str(JOB_PATH)) + 1:] == [
        "--ranges", '{"orders":{"0":[0,10]}}', "--store-url", "file:///lake", "--topics-dir", "topics",
        "--connector-name", "exp", "--bootstrap-servers", "127.0.0.1:9092", "--run-id", "r1",
        "--behavior-on-null-values", "fail", "--kafka-option", "security.protocol=PLAINTEXT"]
    assert "spark.pyspark.python=/venv/bin/python" in cmd
    assert JOB_PATH.is_file()


def test_an_s3a_store_gets_hadoop_aws_and_its_secret_stays_out_of_the_shown_command(tmp_path: Path) -> None:
    _jar_sets(tmp_path)
    conf = s3a_conf("http://127.0.0.1:9000", "AKIA", "s3cr3t")
    job = spark_export_job([OffsetRange("orders", 0, 0, 10)], store_url="s3a://bucket/lake", connector_name="exp",
                           bootstrap_servers="b:9092", conf=conf, jars_root=tmp_path, master="spark://m:7077")
    assert [Path(j).name for j in job.jars] == ["kafka-clients-3.9.2.jar", "spark-sql-kafka-0-10_2.13-4.2.0.jar",
                                                "hadoop-aws-3.5.0.jar", "s3-2.35.4.jar"]
    assert "spark.driver.extraClassPath" not in job.conf and "SPARK_LOCAL_IP" not in job.env
    assert job.command("spark-submit")[5:7] == ["--jars", ",".join(job.jars)]
    assert conf["spark.hadoop.fs.s3a.path.style.access"] == "true"
    assert conf["spark.hadoop.fs.s3a.connection.ssl.enabled"] == "false"
    shown = " ".join(job.redacted_command("spark-submit"))
    assert "s3cr3t" not in shown and "AKIA" not in shown
    assert "spark.hadoop.fs.s3a.endpoint=http://127.0.0.1:9000" in shown
    assert "spark.hadoop.fs.s3a.secret.key=s3cr3t" in job.command("spark-submit")


def test_bad_job_settings_are_refused_before_anything_runs(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="behavior.on.null.values"):
        spark_export_job([OffsetRange("t", 0, 0, 1)], store_url="file:///x", connector_name="c",
                         bootstrap_servers="b", null_values="drop", jars_root=tmp_path)
    with pytest.raises(ConfigError, match="at least one offset range"):
        spark_export_job([], store_url="file:///x", connector_name="c", bootstrap_servers="b", jars_root=tmp_path)


# ---------------------------------------------------------------- result

def test_the_result_line_round_trips_and_is_found_after_other_output() -> None:
    result = ExportResult(
        connector="exp", run_id="r1",
        files=[ExportedFile("orders", 0, 0, 9, 10, "file:/lake/topics/orders/partition=0/x.parquet")],
        read=[OffsetRange("orders", 0, 0, 10)], skipped=[OffsetRange("orders", 1, 0, 5)],
        committed_offsets={TopicPartition("orders", 0): 10, TopicPartition("orders", 1): 5})
    line = result.to_json_line()
    assert line.startswith(f'{{"{RESULT_KEY}":1,')
    assert parse_result(f"some log\n{line}\n\n") == result


def test_output_without_a_result_line_is_an_error_that_says_so() -> None:
    with pytest.raises(ConnectError, match="printed no result line"):
        parse_result("Traceback ...\n")


# ---------------------------------------------------------------- the job's command line

def load_job() -> Any:
    spec = importlib.util.spec_from_file_location("kafka_to_files", JOB_PATH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_job_reads_its_arguments_with_repeatable_key_value_options(tmp_path: Path) -> None:
    job = load_job()
    ranges_file = tmp_path / "ranges.json"
    ranges_file.write_text('{"orders": {"0": [0, 5]}}')
    args = job.parse_args(["--ranges", str(ranges_file), "--store-url", "file:///lake", "--connector-name", "c",
                           "--bootstrap-servers", "b:9092", "--kafka-option", "security.protocol=SSL",
                           "--kafka-option", "ssl.key.password=a=b"])
    assert args.kafka_option == {"security.protocol": "SSL", "ssl.key.password": "a=b"}
    assert (args.topics_dir, args.behavior_on_null_values, args.client_option) == ("topics", "fail", {})
    assert len(args.run_id) == 32
    assert job.read_ranges(args.ranges) == job.read_ranges('{"orders": {"0": [0, 5]}}') == [
        OffsetRange("orders", 0, 0, 5)]
    with pytest.raises(SystemExit):
        job.parse_args(["--ranges", "{}", "--store-url", "x", "--connector-name", "c", "--bootstrap-servers", "b",
                        "--client-option", "no-equals-sign"])


def test_a_job_writing_its_result_to_a_file_passes_the_path_as_its_last_argument(tmp_path: Path) -> None:
    _jar_sets(tmp_path)
    job = spark_export_job([OffsetRange("orders", 0, 0, 10)], store_url="file:///lake", connector_name="exp",
                           bootstrap_servers="127.0.0.1:9092", run_id="r1", jars_root=tmp_path)
    writing = job.writing_result_to("/tmp/result.json")
    assert writing.application_args == [*job.application_args, "--result-file", "/tmp/result.json"]
    assert load_job().parse_args(writing.application_args).result_file == "/tmp/result.json"
    assert load_job().parse_args(job.application_args).result_file is None


def test_a_python_worker_trace_is_reduced_to_its_kopycat_error() -> None:
    trace = ("An exception was thrown from the Python worker:\nTraceback (most recent call last):\n  File ...\n"
             "kopycat.api.errors.DataError: Record orders[0]@5 has a null value (a tombstone)")
    assert load_job()._kopycat_error(trace) == "DataError: Record orders[0]@5 has a null value (a tombstone)"
    assert load_job()._kopycat_error("java.lang.OutOfMemoryError") is None


def _job_args(*extra: str) -> list[str]:
    return ["--ranges", '{"orders": {"0": [0, 5]}}', "--store-url", "file:///lake", "--connector-name", "c",
            "--bootstrap-servers", "b:9092", *extra]


def test_the_job_checks_its_layout_and_window_before_reading_or_writing_anything() -> None:
    job = load_job()
    daily = json.dumps(BERLIN_DAILY)
    layout = job.Layout.of(job.parse_args(_job_args("--partitioner", daily, "--window",
                                                    f"{MIDNIGHT_BERLIN},{MIDNIGHT_BERLIN + DAY_MS}")))
    assert (layout.time_based, layout.window_dirs) == (True, ["year=2026/month=11/day=21"])
    assert job.Layout.of(job.parse_args(_job_args())).time_based is False
    with pytest.raises(ConfigError, match=r"Invalid value 'Wallclock' for configuration timestamp.extractor: .*"
                                          r"set timestamp.extractor=Record"):
        job.Layout.of(job.parse_args(_job_args("--partitioner", json.dumps({**BERLIN_DAILY,
                                                                             "timestamp.extractor": "Wallclock"}))))
    not_midnight = MIDNIGHT_BERLIN + 3_600_000
    with pytest.raises(ConfigError, match=rf"Invalid value {not_midnight} for configuration kopycat.window.start.ms: "
                                          r".*bucket boundaries"):
        job.Layout.of(job.parse_args(_job_args("--partitioner", daily, "--window",
                                               f"{not_midnight},{MIDNIGHT_BERLIN + DAY_MS}")))
    with pytest.raises(SystemExit):
        job.parse_args(_job_args("--window", "yesterday"))


def test_round_manifests_name_files_as_the_python_sinks_store_does() -> None:
    job = load_job()
    assert job._python_root("file:///data/lake") == "/data/lake"
    assert job._python_root("hdfs://nn:8020/data/lake/") == "/data/lake"
    assert job._python_root("s3a://bucket/exports") == "bucket/exports"
    assert job._python_root("s3a://bucket") == "bucket"


def test_secret_kafka_settings_reach_the_job_through_a_private_file_never_its_command_line(tmp_path: Path) -> None:
    _jar_sets(tmp_path)
    jaas = 'x.ScramLoginModule required username="u" password="pw-1";'
    security = {"security.protocol": "SASL_SSL", "sasl.jaas.config": jaas, "ssl.truststore.password": "pw-2"}
    job = spark_export_job([OffsetRange("orders", 0, 0, 10)], store_url="file:///lake", connector_name="exp",
                           bootstrap_servers="b:9093", jars_root=tmp_path, kafka_options=security,
                           client_options=security)
    assert "pw-1" not in repr(job) and "pw-1" not in " ".join(job.command("spark-submit"))
    with job.staged() as staged:
        command = staged.command("spark-submit")
        assert not any(secret in " ".join(command) for secret in ("pw-1", "pw-2"))
        path = Path(command[command.index("--options-file") + 1])
        assert path.stat().st_mode & 0o777 == 0o600 and path.parent.stat().st_mode & 0o777 == 0o700
        args = load_job().parse_args(staged.application_args)
    assert not path.parent.exists(), "the options file outlived the job"
    assert args.kafka_option == args.client_option == security
    assert "--kafka-option" in command and "security.protocol=SASL_SSL" in command


def test_a_job_without_secret_settings_gets_no_options_file(tmp_path: Path) -> None:
    _jar_sets(tmp_path)
    job = spark_export_job([OffsetRange("orders", 0, 0, 10)], store_url="file:///lake", connector_name="exp",
                           bootstrap_servers="b:9092", jars_root=tmp_path, kafka_options={"security.protocol": "SSL"})
    with job.staged() as staged:
        assert staged is job and "--options-file" not in staged.command("spark-submit")


def test_an_unreadable_options_file_stops_the_job_with_its_path_and_no_value(tmp_path: Path) -> None:
    bad = tmp_path / "options.json"
    bad.write_text('{"other": {"sasl.jaas.config": "pw-3"}}')
    with pytest.raises(ConfigError, match="must hold a JSON object") as caught:
        read_options_file(str(bad))
    assert "pw-3" not in str(caught.value)
    with pytest.raises(SystemExit):
        load_job().parse_args(["--ranges", "{}", "--store-url", "x", "--connector-name", "c", "--bootstrap-servers",
                               "b", "--options-file", str(tmp_path / "missing.json")])

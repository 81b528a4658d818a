"""The file sink bench's pieces that need no broker: options, props, records, checks, report."""

from __future__ import annotations

import datetime as dt
import decimal
import itertools
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from kopycat.api.arrow import to_arrow_schema
from kopycat.api.records import TopicPartition
from kopycat.converters.json import JsonConverter

from bench import bench_file_sink as bench


def test_records_default_to_a_million_and_take_a_smaller_count() -> None:
    assert bench.parse_options([]) == bench.Options(records=1_000_000, profile=False)
    assert bench.parse_options(["--records", "200000"]) == bench.Options(records=200_000)
    assert bench.parse_options(["--records=7", "--profile"]) == bench.Options(7, profile=True)


def test_a_record_count_below_one_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        bench.parse_options(["--records", "0"])

    assert "--records must be 1 or more, not 0" in capsys.readouterr().err


def test_sink_props_write_snappy_parquet_every_100000_records_with_one_task() -> None:
    props = bench.sink_props("bench-file-sink-1", "orders", "file:///tmp/store")

    assert props == {
        "name": "bench-file-sink-1",
        "connector.class": "kopycat.connectors.files.FileSinkConnector",
        "topics": "orders", "tasks.max": "1", "store.url": "file:///tmp/store",
        "format.class": "parquet", "parquet.codec": "snappy", "flush.size": "100000",
        "key.converter": "org.apache.kafka.connect.json.JsonConverter",
        "key.converter.schemas.enable": "true",
        "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter.schemas.enable": "true"}


def test_an_order_has_ten_fields_and_its_price_carries_the_decimal_precision() -> None:
    assert [f.name for f in bench.ORDER.fields] == [
        "id", "customer", "country", "quantity", "price", "discount", "created", "day", "active",
        "note"]
    arrow = to_arrow_schema(bench.ORDER)

    assert arrow.field("price").type == pa.decimal128(10, 2)
    assert arrow.field("created").type == pa.timestamp("ms", tz="UTC")
    assert arrow.field("day").type == pa.date32()
    assert [f.name for f in arrow if f.nullable] == ["note"]


def test_order_values_are_deterministic_and_survive_the_json_envelope() -> None:
    converter = JsonConverter()
    converter.configure({"schemas.enable": "true"}, is_key=False)
    rows = [bench.order_row(n) for n in (0, 1, 4, 99_999)]

    encoded = converter.from_connect_data_batch("orders", bench.ORDER,
                                                [bench.order_struct(r) for r in rows])
    decoded = converter.to_connect_data_batch("orders", encoded)

    assert [d.value.values() for d in decoded] == rows
    assert rows[1][4] == decimal.Decimal("79.19")
    assert rows[1][6] == dt.datetime(2026, 11, 1, 0, 0, 1, tzinfo=dt.UTC)
    assert [row[9] for row in rows] == ["gift wrap for order 0", None, "gift wrap for order 4",
                                        None]
    assert encoded[0].startswith(b'{"schema":{"type":"struct","fields":[{"type":"int64"')


def test_the_anchor_table_holds_the_same_values_as_the_records() -> None:
    table = bench.order_table(25_001)

    assert table.num_rows == 25_001
    assert table.schema == to_arrow_schema(bench.ORDER)
    assert table.slice(12_345, 1).to_pylist()[0] == dict(
        zip((f.name for f in bench.ORDER.fields), bench.order_row(12_345), strict=True))


def _write_files(store: Path, table: pa.Table, cuts: list[int]) -> None:
    directory = store / "topics" / "orders" / "partition=0"
    directory.mkdir(parents=True)
    for start, stop in itertools.pairwise(cuts):
        pq.write_table(table.slice(start, stop - start),
                       directory / f"orders+0+{start:010d}.parquet")


def test_files_read_back_in_any_order_count_and_leave_temporary_files_out(tmp_path: Path) -> None:
    table = bench.order_table(1_000)
    _write_files(tmp_path, table.take(list(range(500, 1_000)) + list(range(500))), [0, 300, 1_000])
    (tmp_path / "topics" / "orders" / "+tmp").mkdir()
    pq.write_table(table.slice(0, 10), tmp_path / "topics" / "orders" / "+tmp" / "x.parquet")

    assert bench.check_files(tmp_path, table) == 2


def test_files_with_a_record_twice_or_a_record_missing_fail_the_bench(tmp_path: Path) -> None:
    table = bench.order_table(100)
    _write_files(tmp_path / "twice", table.take([*range(99), 0]), [0, 50, 100])
    _write_files(tmp_path / "missing", table.slice(0, 99), [0, 99])

    with pytest.raises(RuntimeError, match="distinct ids in the files: 99 instead of 100"):
        bench.check_files(tmp_path / "twice", table)
    with pytest.raises(RuntimeError, match=r"rows in the 1 files under .*: 99 instead of 100"):
        bench.check_files(tmp_path / "missing", table)


def test_the_spark_measure_is_pending() -> None:
    assert bench.spark_export_measure("127.0.0.1:9092", "orders", {TopicPartition("orders", 0): 5},
                                      "file:///tmp/spark") is None


def _report(consume_s: float, write_s: float, spark: bench.Measure | None = None) -> bench.Report:
    return bench.Report(
        consume=bench.Measure("raw confluent-kafka Consumer (consume only)", 1_000_000, consume_s,
                              1.9, 60),
        write=bench.Measure("pyarrow.parquet.write_table (snappy, 1 file)", 1_000_000, write_s),
        kopycat=bench.Measure("Kopycat FileSink (parquet, flush.size 100000)", 1_000_000, 10.0,
                              11.5, 420, 9.6),
        spark=spark, record_bytes=1021.4, files=10)


def test_the_sink_is_read_against_the_slower_anchor_with_the_goal() -> None:
    lines = [r.line() for r in bench.results(_report(consume_s=1.0, write_s=4.0))]

    assert lines == [
        "file_sink_raw_consume: anchor 1,000,000 records/s",
        "file_sink_parquet_write_table: anchor 250,000 records/s",
        ("file_sink_parquet_vs_limit: kopycat 100,000 records/s, anchor 250,000 records/s, "
         "ratio 0.40 (goal >= 0.5)")]


def test_the_table_names_the_limit_shows_each_mover_and_spark_as_pending() -> None:
    text = bench.table(_report(consume_s=2.0, write_s=1.0))

    assert text.splitlines()[0] == ("Kafka -> Parquet files: 1,000,000 records in 2 partitions, "
                                    "1021 B as JSON with schemas; one task")
    assert ("limit min(consume, write) 500,000 records/s (consume); Kopycat/limit 0.20 "
            "(goal >= 0.5)") in text
    kopycat = next(line for line in text.splitlines() if "Kopycat FileSink" in line).split()[-5:]
    assert kopycat == ["100,000", "10.00", "11.5", "420", "9.60"]
    spark = next(line for line in text.splitlines() if "Spark" in line)
    assert spark.split(None, 3)[-1] == "n/a (Spark job pending)"
    assert "Kopycat committed 10 files: 1,000,000 rows read back, ids unique" in text


def test_a_spark_measure_once_there_gets_its_row_and_ratio() -> None:
    spark = bench.Measure("Spark export job (local[2])", 1_000_000, 5.0, 8.0)
    report = _report(consume_s=1.0, write_s=2.0, spark=spark)

    assert "n/a" not in bench.table(report)
    assert bench.results(report)[-1].line() == (
        "file_sink_spark_vs_limit: kopycat 200,000 records/s, anchor 500,000 records/s, "
        "ratio 0.40")

"""The file sink bench's pieces that need no broker: options, props, records, checks, report."""

from __future__ import annotations

import dataclasses
import datetime as dt
import decimal
import itertools
import os
import signal
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from bench import bench_file_sink as bench
from bench.common import run_child
from kopycat.api.arrow import to_arrow_schema
from kopycat.api.records import TopicPartition
from kopycat.converters.json import JsonConverter


def test_records_default_to_a_million_and_take_a_smaller_count() -> None:
    assert bench.parse_options([]) == bench.Options(records=1_000_000, profile=False, rounds=3)
    assert bench.parse_options(["--records", "200000"]) == bench.Options(records=200_000)
    assert bench.parse_options(["--records=7", "--profile"]) == bench.Options(7, profile=True)
    assert bench.parse_options(["--rounds", "5"]) == bench.Options(rounds=5)


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


def test_the_first_orders_end_where_order_n_is_offset_n_halved_of_partition_n_mod_2() -> None:
    ends = {TopicPartition("orders", 0): 500, TopicPartition("orders", 1): 500}

    assert bench.first_orders(ends, 7) == {TopicPartition("orders", 0): 4, TopicPartition("orders", 1): 3}
    assert bench.first_orders(ends, 1_000) == ends
    with pytest.raises(RuntimeError, match="orders below the cut end offsets: 1,000 instead of 1,001"):
        bench.first_orders(ends, 1_001)


_CHILD = ("import sys, time\nheld = bytearray(int(sys.argv[1]) << 20)\nheld[::4096] = b'x' * len(held[::4096])\n"
          "end = time.process_time() + 0.3\nwhile time.process_time() < end: pass\nprint('done')")


def test_a_child_reports_its_own_cpu_and_peak_rss_not_an_earlier_childs(tmp_path: Path) -> None:
    out, err = tmp_path / "out", tmp_path / "err"

    floor = _rss_mib()  # a child's peak starts at this process's RSS (see run_child)
    big = run_child([sys.executable, "-c", _CHILD, str(int(floor) + 600)], dict(os.environ), out, err, 60)
    small = run_child([sys.executable, "-c", _CHILD, "1"], dict(os.environ), out, err, 60)

    assert (big.code, out.read_text()) == (0, "done\n")
    assert big.peak_rss_mib > floor + 600 and small.peak_rss_mib < big.peak_rss_mib - 400
    assert 0.3 <= big.cpu_s <= big.wall_s and 0.3 <= small.cpu_s <= small.wall_s


def _rss_mib() -> float:
    status = Path("/proc/self/status").read_text()
    return int(status.split("VmRSS:")[1].split()[0]) / 1024


def test_a_child_past_its_timeout_is_killed(tmp_path: Path) -> None:
    child = run_child([sys.executable, "-c", "import time; time.sleep(60)"], dict(os.environ),
                      tmp_path / "out", tmp_path / "err", 0.5)

    assert child.code == -signal.SIGKILL and child.wall_s < 30


def test_the_spark_jobs_own_time_is_the_sum_of_dag_scheduler_jobs_in_ms_or_s() -> None:
    log = ("26/11/24 07:14:17 INFO DAGScheduler: Job 0 is finished. Cancelling potential speculative tasks\n"
           "26/11/24 07:14:17 INFO DAGScheduler: Job 0 finished: parquet at NativeMethodAccessorImpl.java:0, "
           "took 14371.5 ms\n"
           "24/01/02 10:00:00 INFO DAGScheduler: Job 1 finished: collect at <stdin>:1, took 0.25 s\n")

    assert bench.spark_job_seconds(log) == pytest.approx(14.6215)
    assert bench.spark_job_seconds("26/11/24 07:14:17 INFO SparkContext: Running Spark version 4.2.0") is None


def _measure(mover: str, count: int, fixed_s: float, rate: float) -> bench.Measure:
    return bench.Measure(mover, count, fixed_s + count / rate)


def test_a_fit_through_two_runs_gives_the_fixed_cost_and_the_per_record_rate() -> None:
    fit = bench.Fit.through(_measure("k", 200_000, 2.0, 50_000), _measure("k", 1_000_000, 2.0, 50_000))

    assert fit is not None and (fit.fixed_s, fit.rate) == (pytest.approx(2.0), pytest.approx(50_000))
    assert str(fit) == "2.0 s + n / 50,000/s"
    assert bench.Fit.through(bench.Measure("k", 200_000, 5.0), bench.Measure("k", 1_000_000, 5.0)) is None


def _report(consume_s: float, write_s: float, kopycat: tuple[float, float] = (1.0, 100_000 / 0.9),
            spark: tuple[float, float] = (20.0, 200_000)) -> bench.Report:
    """Kopycat's and Spark's runs of 1,000,000 and 200,000 records on the lines t = fixed + n / rate."""
    def runs(mover: str, fit: tuple[float, float]) -> tuple[bench.Measure, bench.Measure]:
        return _measure(mover, 1_000_000, *fit), _measure(mover, 200_000, *fit)
    kopycat_run, kopycat_small = runs("Kopycat FileSink (parquet, flush.size 100000)", kopycat)
    spark_run, spark_small = runs("Spark export job (local[2], spark-submit)", spark)
    return bench.Report(
        consume=bench.Measure("raw confluent-kafka Consumer (consume only)", 1_000_000, consume_s,
                              1.9, 60),
        write=bench.Measure("pyarrow.parquet.write_table (snappy, 1 file)", 1_000_000, write_s),
        kopycat=dataclasses.replace(kopycat_run, cpu_s=11.5, rss_mib=420, duration_s=9.6),
        spark=dataclasses.replace(spark_run, cpu_s=40.2, rss_mib=830, duration_s=14.37),
        record_bytes=1021.4, files=(10, 10, 11), spark_files=2, kopycat_small=kopycat_small, spark_small=spark_small)


def test_the_sink_and_spark_are_read_against_the_slower_anchor_and_each_other() -> None:
    lines = [r.line() for r in bench.results(_report(consume_s=1.0, write_s=4.0))]

    assert lines == [
        "file_sink_raw_consume: anchor 1,000,000 records/s",
        "file_sink_parquet_write_table: anchor 250,000 records/s",
        ("file_sink_parquet_vs_limit: kopycat 100,000 records/s, anchor 250,000 records/s, "
         "ratio 0.40 (goal >= 0.5)"),
        "file_sink_spark_vs_limit: kopycat 40,000 records/s, anchor 250,000 records/s, ratio 0.16",
        ("file_sink_spark_per_record_vs_kopycat: kopycat 200,000 records/s, anchor 111,111 records/s, "
         "ratio 1.80")]


def test_the_table_names_the_limit_shows_each_mover_the_checked_files_and_the_crossover() -> None:
    text = bench.table(_report(consume_s=2.0, write_s=1.0))

    assert text.splitlines()[0] == ("Kafka -> Parquet files: 1,000,000 records in 2 partitions, "
                                    "1021 B as JSON with schemas; one task")
    assert ("limit min(consume, write) 500,000 records/s (consume); Kopycat/limit 0.20 "
            "(goal >= 0.5)") in text
    kopycat = next(line for line in text.splitlines() if "Kopycat FileSink" in line).split()[-5:]
    assert kopycat == ["100,000", "10.00", "11.5", "420", "9.60"]
    spark = next(line for line in text.splitlines() if "Spark export job" in line).split()[-5:]
    assert spark == ["40,000", "25.00", "40.2", "830", "14.37"]
    assert "Kopycat committed 10/10/11 files (per round): 1,000,000 rows read back each, ids unique" in text
    assert "Spark committed 2 files: 1,000,000 rows read back, ids unique" in text
    assert text.splitlines()[-1] == (
        "  crossover (t = fixed + n / rate, runs of 1,000,000 and 200,000 records): "
        "Kopycat 1.0 s + n / 111,111/s, Spark 20.0 s + n / 200,000/s; Spark is faster above 4,750,000 records")


def test_the_crossover_says_when_spark_never_wins_or_always_does_or_cannot_be_fitted() -> None:
    def last_line(**fits: tuple[float, float]) -> str:
        return bench.crossover(_report(1.0, 1.0, **fits)).split("; ")[-1]

    assert last_line(spark=(20.0, 50_000)) == (
        "Spark is not faster at any volume on this machine: its per-record rate 50,000 < Kopycat's 111,111")
    assert last_line(spark=(0.5, 200_000)) == "Spark is faster at any volume"
    assert last_line(spark=(0.5, 100_000)) == "Spark is faster only below 500,000 records"
    assert last_line(spark=(20.0, -1e12)) == (
        "  crossover not measurable: Spark's larger run was not slower (runs of 1,000,000 and 200,000 records)")


def test_kopycat_is_read_against_the_limit_over_its_copy_when_its_start_is_known() -> None:
    report = _report(consume_s=1.0, write_s=4.0)
    report = dataclasses.replace(report, kopycat=dataclasses.replace(report.kopycat, copy_s=8.0))

    [line] = [r.line() for r in bench.results(report) if r.name == "file_sink_parquet_vs_limit"]
    text = bench.table(report)

    assert line == ("file_sink_parquet_vs_limit: kopycat 125,000 records/s, anchor 250,000 records/s, "
                    "ratio 0.50 (goal >= 0.5)")
    assert ("  Kopycat copy 125,000 records/s: 8.00 s of its 9.60 s run after 1.60 s of start "
            "(consumer made and assigned, group offsets read, task started)") in text.splitlines()
    assert "Kopycat/limit 0.50 (goal >= 0.5)" in text
    assert "Kopycat 1.0 s + n / 111,111/s" in text.splitlines()[-1]  # the crossover fits the whole runs

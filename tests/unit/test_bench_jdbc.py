"""The JDBC bench's pieces that need no broker or database: options, connector props, report."""

from __future__ import annotations

import cProfile

import pytest

from bench import bench_jdbc as jdbc
from bench.__main__ import split_options
from bench.common import per_row, profiled

DATABASE = jdbc.Database(dsn="host=127.0.0.1 dbname=bench", url="postgresql+psycopg://k@h/bench")


def test_rows_default_to_a_million_and_take_a_smaller_count() -> None:
    assert jdbc.parse_options([]) == jdbc.Options(rows=1_000_000, profile=False, rounds=3)
    assert jdbc.parse_options(["--rows", "50000"]) == jdbc.Options(rows=50_000)
    assert jdbc.parse_options(["--rows=7", "--profile"]) == jdbc.Options(rows=7, profile=True)


def test_a_row_count_below_one_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        jdbc.parse_options(["--rows", "0"])

    assert "--rows must be 1 or more, not 0" in capsys.readouterr().err


def test_bench_names_come_before_the_options_handed_to_the_bench() -> None:
    assert split_options(["jdbc", "--rows", "50000"]) == (["jdbc"], ["--rows", "50000"])
    assert split_options(["raw_kafka", "jdbc"]) == (["raw_kafka", "jdbc"], [])
    assert split_options([]) == ([], [])


def test_source_props_copy_the_one_table_with_schemas_and_never_reread_it() -> None:
    bulk = jdbc.source_props(DATABASE, "bulk", "bench-jdbc-bulk-1-")
    incrementing = jdbc.source_props(DATABASE, "incrementing", "bench-jdbc-inc-1-")

    assert {k: bulk[k] for k in ("connection.url", "mode", "tasks.max", "table.whitelist",
                                 "topic.prefix", "value.converter.schemas.enable")} == {
        "connection.url": DATABASE.url, "mode": "bulk", "tasks.max": "1",
        "table.whitelist": "bench_rows", "topic.prefix": "bench-jdbc-bulk-1-",
        "value.converter.schemas.enable": "true"}
    assert int(bulk["poll.interval.ms"]) >= 3_600_000
    assert "incrementing.column.name" not in bulk
    assert incrementing["incrementing.column.name"] == "id"


def test_sink_props_upsert_on_the_id_field_of_the_value() -> None:
    props = jdbc.sink_props(DATABASE, "bench-jdbc-topic", "bench_sink_kopycat")

    assert {k: props[k] for k in ("topics", "insert.mode", "pk.mode", "pk.fields",
                                  "table.name.format", "tasks.max")} == {
        "topics": "bench-jdbc-topic", "insert.mode": "upsert", "pk.mode": "record_value",
        "pk.fields": "id", "table.name.format": "bench_sink_kopycat", "tasks.max": "1"}


def _source(read_s: float, produce_s: float) -> jdbc.Source:
    return jdbc.Source(
        read=jdbc.Measure("COPY bench_rows TO STDOUT (psycopg)", 1_000_000, read_s, 0.8, 40),
        produce=jdbc.Measure("raw confluent-kafka Producer, 700 B values", 1_000_000, produce_s),
        bulk=jdbc.Measure("Kopycat JdbcSource bulk", 1_000_000, 10.0, 9.5, 120, 9.8),
        incrementing=jdbc.Measure("Kopycat JdbcSource incrementing", 1_000_000, 8.0),
        row_bytes=96.4, record_bytes=700)


def test_the_source_limit_is_the_slower_anchor_and_each_mode_is_read_against_it() -> None:
    source = _source(read_s=1.0, produce_s=4.0)
    sink = jdbc.Measure("Kopycat JdbcSink upsert", 1_000_000, 20.0)
    copy = jdbc.Measure("COPY bench_sink_copy FROM STDIN (psycopg)", 1_000_000, 5.0)

    lines = [r.line() for r in jdbc.results(source, sink, copy)]

    assert source.limit == 250_000
    assert lines == [
        "jdbc_pg_copy_to_stdout: anchor 1,000,000 rows/s",
        "jdbc_raw_produce_700B: anchor 250,000 rows/s",
        ("jdbc_source_bulk_vs_limit: kopycat 100,000 rows/s, anchor 250,000 rows/s, "
         "ratio 0.40 (goal >= 0.5)"),
        ("jdbc_source_incrementing_vs_limit: kopycat 125,000 rows/s, anchor 250,000 rows/s, "
         "ratio 0.50 (goal >= 0.5)"),
        "jdbc_pg_copy_from_stdin: anchor 200,000 rows/s",
        "jdbc_sink_upsert_vs_copy_from: kopycat 50,000 rows/s, anchor 200,000 rows/s, ratio 0.25"]


def test_the_table_names_the_limiting_anchor_and_shows_each_movers_numbers() -> None:
    source = _source(read_s=2.0, produce_s=1.0)
    sink = jdbc.Measure("Kopycat JdbcSink upsert", 1_000_000, 20.0)
    copy = jdbc.Measure("COPY bench_sink_copy FROM STDIN (psycopg)", 1_000_000, 5.0)

    text = jdbc.table(source, sink, copy)

    assert "1,000,000 rows, 96 B as COPY text, 700 B as JSON records with schemas" in text
    assert ("limit min(read, produce) 500,000 rows/s (read); Kopycat/limit: bulk 0.20, "
            "incrementing 0.25 (goal >= 0.5)") in text
    assert "Kopycat/COPY FROM 0.25" in text
    bulk = next(line for line in text.splitlines() if "JdbcSource bulk" in line).split()[-5:]
    assert bulk == ["100,000", "10.00", "9.5", "120", "9.80"]


def test_per_row_shows_own_and_cumulative_microseconds_per_row() -> None:
    profiler = cProfile.Profile()
    with profiler:
        sorted(range(100_000), key=lambda n: -n)

    report = per_row(profiler, rows=100_000, count=3).splitlines()

    assert report[0].split() == ["own", "µs/row", "cum", "µs/row", "calls", "function"]
    assert any("<lambda>" in line and "100,000" in line for line in report[1:])


def _negated(n: int) -> int:
    return -n


def test_profiled_returns_the_calls_result_and_its_report_per_row() -> None:
    result, report = profiled("sorting", lambda: sorted(range(50_000), key=_negated), 50_000, unit="rows")

    assert result[:2] == [49_999, 49_998]
    lines = report.splitlines()
    assert lines[0].startswith("=== sorting under cProfile: 50,000 rows in ")
    assert lines[1].split() == ["own", "µs/row", "cum", "µs/row", "calls", "function"]
    assert any("_negated" in line and "50,000" in line for line in lines[2:]), report
    assert "Ordered by: cumulative time" in report

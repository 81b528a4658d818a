"""The Python sources bench's pieces that need no broker: options, the table, connector props, report."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from bench import bench_python_sources as py
from bench.common import Measure, set_quick


def test_rows_default_to_500000_a_tenth_under_quick_and_take_a_smaller_count() -> None:
    assert py.parse_options([]) == py.Options(rows=500_000, profile=False, rounds=3)
    assert py.parse_options(["--rows", "5000", "--rounds", "5"]) == py.Options(rows=5_000, rounds=5)
    set_quick(True)
    try:
        assert py.parse_options([]).rows == 50_000
    finally:
        set_quick(False)


def test_a_row_count_below_one_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        py.parse_options(["--rows", "0"])

    assert "--rows must be 1 or more, not 0" in capsys.readouterr().err


def test_the_table_holds_the_rows_with_unique_growing_stamps_and_the_taps_columns(tmp_path: Path) -> None:
    database = tmp_path / "orders.db"
    py.fill(database, 100_000)

    with sqlite3.connect(database) as connection:
        rows = connection.execute("SELECT * FROM orders ORDER BY id").fetchall()
    connection.close()

    assert [row[0] for row in rows] == list(range(1, 100_001))
    stamps = [row[1] for row in rows]
    assert stamps == sorted(stamps) and len(set(stamps)) == 100_000
    assert rows[0] == (1, "2026-01-01T00:00:01+00:00", "customer 1", None, "1.25", "1.123456789",
                       "2026-02-02", '["a"]', None)
    assert rows[-1][1] == "2026-01-02T03:46:40+00:00"
    assert sum(row[3] is None for row in rows) == 50_000  # odd ids: no email


def test_singer_props_take_the_taps_config_file_and_no_setting_keys(tmp_path: Path) -> None:
    tap, config = py.tap_executable(tmp_path), py.tap_config(tmp_path, tmp_path / "orders.db")

    props = py.singer_props(tap, config, "bench-py-1-")

    assert json.loads(config.read_text()) == {"database": str(tmp_path / "orders.db"), "page_size": 10_000}
    assert props["singer.tap.executable"] == str(tap) and props["singer.tap.config.file"] == str(config)
    assert [k for k in props if k.startswith("singer.tap.config.") and k != "singer.tap.config.file"] == []
    assert props["topic.prefix"] == "bench-py-1-" and props["value.converter.schemas.enable"] == "true"
    assert str(py.TAP_SCRIPT) in tap.read_text()


def test_dlt_props_pass_the_backend_only_when_it_is_not_the_default() -> None:
    alchemy = py.dlt_props("sqlite:///o.db", "sqlalchemy", "p-")
    arrow = py.dlt_props("sqlite:///o.db", "pyarrow", "p-")

    assert "dlt.args.backend" not in alchemy and arrow["dlt.args.backend"] == "pyarrow"
    assert {k: arrow[k] for k in ("dlt.source", "dlt.args.credentials", "dlt.args.table_names", "tasks.max")} == {
        "dlt.source": "dlt.sources.sql_database:sql_database", "dlt.args.credentials": "sqlite:///o.db",
        "dlt.args.table_names": '["orders"]', "tasks.max": "1"}


def test_jdbc_props_read_the_same_table_once_incrementing_on_id() -> None:
    props = py.jdbc_props("sqlite:///o.db", "p-")

    assert {k: props[k] for k in ("connection.url", "mode", "incrementing.column.name", "table.whitelist")} == {
        "connection.url": "sqlite:///o.db", "mode": "incrementing", "incrementing.column.name": "id",
        "table.whitelist": "orders"}
    assert int(props["poll.interval.ms"]) >= 3_600_000


def test_an_arrow_table_counts_its_rows_and_a_dict_counts_one() -> None:
    import pyarrow as pa

    assert py.items_rows(pa.table({"id": [1, 2, 3]})) == 3
    assert py.items_rows({"id": 1}) == 1


def _pairs() -> tuple[list[py.Pair], Measure]:
    rows = 200_000
    pairs = [py.Pair("singer", Measure("Kopycat SingerSource tap-orders", rows, 25.0, 3.0, 200, 24.5,
                                       walls=(24.0, 25.0, 27.0)),
                     Measure("tap-orders > /dev/null", rows, 20.0, 19.0, 150, walls=(20.0, 19.0, 21.0)),
                     Measure("raw Producer, singer records", rows, 1.0)),
             py.Pair("dlt_pyarrow", Measure("Kopycat DltSource sql_database pyarrow", rows, 2.0),
                     Measure("dlt sql_database pyarrow, own iteration", rows, 0.5),
                     Measure("raw Producer, dlt_pyarrow records", rows, 1.6, walls=(1.5, 1.6, 2.0)))]
    return pairs, Measure("Kopycat JdbcSource incrementing", rows, 4.0)


def test_each_source_is_read_against_its_own_rate_and_with_the_goal_against_the_slower_of_own_and_produce() -> None:
    pairs, jdbc = _pairs()

    lines = [r.line() for r in py.results(pairs, jdbc)]

    assert pairs[0].ratio == 0.8 and pairs[0].limit is pairs[0].own and pairs[0].limited_ratio == 0.8
    assert pairs[1].limit is pairs[1].produce and pairs[1].limited_ratio == 0.8
    assert lines == [
        "py_jdbc_source_sqlite: anchor 50,000 rows/s",
        "py_singer_own: anchor 10,000 rows/s (spread 10%)",
        "py_singer_raw_produce: anchor 200,000 rows/s",
        "py_singer_source_vs_own: kopycat 8,000 rows/s (spread 12%), anchor 10,000 rows/s (spread 10%), ratio 0.80",
        ("py_singer_source_vs_limit: kopycat 8,000 rows/s (spread 12%), anchor 10,000 rows/s (spread 10%), "
         "ratio 0.80 (goal >= 0.8)"),
        "py_singer_source_vs_jdbc_source: kopycat 8,000 rows/s (spread 12%), anchor 50,000 rows/s, ratio 0.16",
        "py_dlt_pyarrow_own: anchor 400,000 rows/s",
        "py_dlt_pyarrow_raw_produce: anchor 125,000 rows/s (spread 31%)",
        "py_dlt_pyarrow_source_vs_own: kopycat 100,000 rows/s, anchor 400,000 rows/s, ratio 0.25",
        ("py_dlt_pyarrow_source_vs_limit: kopycat 100,000 rows/s, anchor 125,000 rows/s (spread 31%), "
         "ratio 0.80 (goal >= 0.8)"),
        "py_dlt_pyarrow_source_vs_jdbc_source: kopycat 100,000 rows/s, anchor 50,000 rows/s, ratio 2.00"]


def test_the_table_shows_each_movers_numbers_its_rounds_and_both_ratios_with_their_spreads() -> None:
    pairs, jdbc = _pairs()

    text = py.table(pairs, jdbc)

    assert "200,000 rows of orders" in text
    singer = next(line for line in text.splitlines() if "Kopycat SingerSource" in line).split()[-5:]
    assert singer == ["8,000", "25.00", "3.0", "200", "24.50"]
    assert "raw Producer, dlt_pyarrow records" in text
    assert "rounds of tap-orders > /dev/null: [20.00] 19.00 21.00 s ([median])" in text
    assert "singer: Kopycat/own 0.80 (spreads 12% / 10%), Kopycat/JDBC source 0.16" in text
    assert "singer: Kopycat/min(own, produce) 0.80 (goal >= 0.8; limit own; spreads 12% / 10%)" in text
    assert "dlt_pyarrow: Kopycat/own 0.25 (spreads - / -), Kopycat/JDBC source 2.00" in text
    assert "dlt_pyarrow: Kopycat/min(own, produce) 0.80 (goal >= 0.8; limit produce; spreads - / 31%)" in text

"""bench.common: rounds (movers take turns, each one's median run counts), options, table and result lines."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass

import pytest

from bench.common import (
    BenchResult,
    Measure,
    checked_summary,
    measure_row,
    median_rounds,
    parse_into,
    print_results,
    rounds_lines,
    size_and_switch,
)
from kopycat.runtime.bounds import RunSummary


def _mover(name: str, walls: list[float], calls: list[str]) -> object:
    remaining = iter(walls)

    def run() -> Measure:
        calls.append(name)
        return Measure(name, 1_000, next(remaining), cpu_s=float(len(calls)))
    return run


def test_movers_take_turns_and_each_keeps_its_median_run_with_every_rounds_wall() -> None:
    calls: list[str] = []
    anchor = _mover("anchor", [3.0, 1.0, 2.0], calls)
    mover = _mover("mover", [5.0, 9.0, 4.0], calls)

    found = median_rounds([anchor, mover], 3)  # type: ignore[list-item]

    assert calls == ["anchor", "mover", "mover", "anchor", "anchor", "mover"]
    assert [(m.mover, m.wall_s, m.walls) for m in found] == [("anchor", 2.0, (3.0, 1.0, 2.0)),
                                                            ("mover", 5.0, (5.0, 9.0, 4.0))]
    assert found[0].cpu_s == 5.0  # the median run's own figures, not a mix of rounds


def test_rounds_lines_mark_the_median_and_skip_a_mover_run_once() -> None:
    several = Measure("Kopycat FileSink", 1_000, 2.0, walls=(3.0, 2.0, 1.5))
    once = Measure("raw consume", 1_000, 1.0)

    assert rounds_lines([several, once]) == ["    rounds of Kopycat FileSink: 3.00 [2.00] 1.50 s ([median])"]


def test_rounds_default_to_three_and_below_one_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    def parse(*argv: str) -> int:
        return size_and_switch(argv, bench="b", doc="d", size=("--rows", 10, "rows"), switch=("--keep", "k"),
                               rounds=True).rounds

    assert parse() == 3
    assert parse("--rounds", "1") == 1
    with pytest.raises(SystemExit):
        parse("--rounds", "0")
    assert "--rounds must be 1 or more, not 0" in capsys.readouterr().err


@dataclass(frozen=True)
class Sized:
    records: int
    profile: bool


@dataclass(frozen=True)
class SizedRounds:
    rows: int
    keep: bool
    rounds: int


def test_parse_into_fills_the_benchs_dataclass_by_field_name_with_rounds_only_when_it_has_them(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert parse_into(SizedRounds, ["--rows", "7", "--keep"], bench="b", doc="d", size=("--rows", 10, "rows"),
                      switch=("--keep", "k"), default_rounds=5) == SizedRounds(rows=7, keep=True, rounds=5)
    def sized(*argv: str) -> Sized:
        return parse_into(Sized, argv, bench="b", doc="d", size=("--records", 10, "records"), switch=("--profile", "p"))

    assert sized() == Sized(records=10, profile=False)
    with pytest.raises(SystemExit):
        sized("--rounds", "2")
    assert "unrecognized arguments: --rounds 2" in capsys.readouterr().err


def test_print_results_runs_the_bench_with_the_command_lines_options_and_prints_its_lines(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    seen: list[list[str]] = []

    def run(argv: Sequence[str]) -> list[BenchResult]:
        seen.append(list(argv))
        return [BenchResult("raw", 1000.0), BenchResult("copy", 500.0, 1000.0, goal=0.5)]

    monkeypatch.setattr(sys, "argv", ["bench_x.py", "--rows", "10"])
    print_results(run)
    assert seen == [["--rows", "10"]]
    assert capsys.readouterr().out.splitlines() == [
        "raw: anchor 1,000 records/s", "copy: kopycat 500 records/s, anchor 1,000 records/s, ratio 0.50 (goal >= 0.5)"]


def test_a_measure_row_shows_dashes_for_what_was_not_measured() -> None:
    row = measure_row(Measure("Kopycat JDBC source", 1_000, 2.0, cpu_s=1.5))
    assert row.split() == ["Kopycat", "JDBC", "source", "500", "2.00", "1.5", "-", "-"]


def test_checked_summary_refuses_a_failed_run_and_a_wrong_count() -> None:
    good = RunSummary(connector="c", task=0, records=3)
    assert checked_summary([good], "copy", 3) is good
    with pytest.raises(RuntimeError, match="copy records: 2 instead of 3"):
        checked_summary([RunSummary(connector="c", task=0, records=2)], "copy", 3)
    with pytest.raises(RuntimeError, match="copy failed: no summary"):
        checked_summary([None], "copy", 3)

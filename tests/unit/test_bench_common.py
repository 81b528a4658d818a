"""bench.common's rounds: anchors and movers take turns, and each one's median run counts."""

from __future__ import annotations

import pytest

from bench.common import Measure, median_rounds, rounds_lines, size_and_switch


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

"""The progress bar of ``kopycat run``: counts every task's records, a bar only with a known total."""

from __future__ import annotations

import io

from kopycat.runtime.bounds import RunSummary
from kopycat.runtime.progress import ProgressBar


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_bar_fills_with_the_records_of_every_task_against_the_planned_total() -> None:
    clock, out = _Clock(), io.StringIO()
    bar = ProgressBar(out, total=10_000, width=10, clock=clock)
    first, second = RunSummary("c", 0), RunSummary("c", 1)
    bar.add(first)
    bar.add(second)
    first.records, second.records = 2_000, 3_000
    clock.now += 2.0
    assert bar.line() == "[#####.....]  50%  5,000/10,000 records  2,500/s  2 tasks"
    first.records = 9_000  # more than planned (records arrived as it ran): the bar stops at full
    assert bar.line().startswith("[##########] 100%  12,000/10,000 records")


def test_without_a_total_it_counts_and_off_a_terminal_it_writes_plain_lines() -> None:
    clock, out = _Clock(), io.StringIO()
    with ProgressBar(out, clock=clock, plain_interval_s=3600) as bar:
        summary = RunSummary("c", 0)
        bar.add(summary)
        summary.records = 1_234
        clock.now += 1.0
    assert out.getvalue() == "1,234 records  1,234/s  1 task\n"  # StringIO is no tty: no \r redraws

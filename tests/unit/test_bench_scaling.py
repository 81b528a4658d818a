"""bench.bench_scaling's ratios and bench.bench_sink_memory's sizes: which run is read against which."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from bench import bench_scaling, bench_sink_memory
from bench.common import set_quick
from bench.raw_processes import Spread


@pytest.fixture
def quick() -> Iterator[None]:
    set_quick(True)
    yield
    set_quick(False)


def _run(mover: str, wall_s: float, task_s: float) -> bench_scaling.Run:
    return bench_scaling.Run(mover, 1_000_000, wall_s, cpu_s=1.0, broker_cpu_s=0.5, machine_busy=0.5,
                             task_s=task_s, walls=(wall_s,))


def test_every_mover_is_read_against_one_task_in_a_process_and_only_two_processes_carry_the_goal() -> None:
    runs = [_run(f"sink {bench_scaling.PLURAL[mode]} tasks.max={tasks}", 10.0 / tasks, 8.0 / tasks)
            for tasks in bench_scaling.TASKS for mode in bench_scaling.MODES]
    rows = bench_scaling.results("sink", runs)
    assert {row.anchor for row in rows} == {100_000.0, 125_000.0}  # wall and task time of tasks.max=1 processes
    goals = [(row.name, row.value / row.anchor) for row in rows if row.goal == bench_scaling.GOAL]
    assert goals == [("scaling sink: tasks.max=2 processes vs tasks.max=1 processes", 2.0),
                     ("scaling sink: tasks.max=2 processes vs tasks.max=1 processes, task time", 2.0)]
    assert len(rows) == 5


def test_the_memory_bench_runs_ten_million_records_only_at_full_size(quick: None) -> None:
    assert bench_sink_memory.sizes() == [100_000, 300_000]
    set_quick(False)
    assert bench_sink_memory.sizes() == [1_000_000, 3_000_000, 10_000_000]


def test_the_raw_processes_line_reads_two_against_one_without_a_goal() -> None:
    one = Spread(1, 1_000_000, 2.0, 1.5, walls=(2.0, 2.2, 1.9))
    two = Spread(2, 1_000_000, 1.25, 2.4, walls=(1.25, 1.25, 1.5))
    line, row = bench_scaling.raw_lines("source", one, two)
    assert line == ("  raw producers (bench.raw_processes), the machine's own scaling: 1 process 500,000 records/s "
                    "(spread 15%), 2 processes 800,000 (spread 20%): 1.60x")
    assert (row.value, row.anchor, row.goal) == (800_000.0, 500_000.0, None)
    assert bench_scaling.raw_lines("sink", one, two)[1].name == "scaling sink: raw consumers, 2 processes vs 1"

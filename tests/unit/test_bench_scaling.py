"""bench.bench_scaling's ratios and bench.bench_sink_memory's sizes: which run is read against which."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from bench import bench_scaling, bench_sink_memory
from bench.common import set_quick


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

"""The metrics bench's pieces that need no broker: options, and metrics switched off doing nothing."""

from __future__ import annotations

from bench import bench_metrics as bench
from bench.common import Measure


def test_records_default_to_200000_and_rounds_to_nine_pairs() -> None:
    assert bench.parse_options([]) == bench.Options(records=200_000, keep=False, rounds=9)
    assert bench.parse_options(["--records", "1000", "--rounds", "3"]) == bench.Options(1000, rounds=3)


def test_metrics_off_takes_every_call_a_runner_makes() -> None:
    off = bench.MetricsOff()
    off.batch_s = 0.5
    off.record_batch(10)
    off.record_commit(0.1, True)
    off.set_status("running")
    assert off.figures() == {}


def _measure(wall_s: float, cpu_s: float, thread_cpu_s: float | None = None) -> Measure:
    return Measure("m", 1000, wall_s, cpu_s, thread_cpu_s=thread_cpu_s)


def test_paired_ratios_are_off_over_on_per_round_and_runs_alternate_their_order() -> None:
    calls: list[str] = []
    times = iter([(1.0, 0.8), (1.1, 0.8), (2.0, 1.6), (2.0, 1.6)])  # in call order

    def run(label: str) -> Measure:
        calls.append(label)
        return _measure(*next(times))

    paired = bench.paired_rounds("file source", lambda: run("on"), lambda: run("off"), 2)

    assert calls == ["on", "off", "off", "on"]
    assert paired.ratios("wall") == [1.1 / 1.0, 2.0 / 2.0]
    assert paired.ratios("CPU") == [1.0, 1.0]
    assert paired.ratios("task thread CPU") == []  # not measured: no ratio
    assert paired.median_run(True).walls == (1.0, 2.0)


def test_the_ratio_line_gives_median_interquartile_range_and_extremes() -> None:
    pairs = tuple((_measure(1.0, 1.0), _measure(ratio, ratio)) for ratio in (0.90, 0.96, 0.98, 0.99, 1.00, 1.02, 1.10))
    line = bench.ratio_line(bench.Paired("file sink", pairs), "wall")
    assert "median paired ratio 0.990" in line
    assert line.endswith("min-max 0.900-1.100, 7 rounds)")


def test_the_goal_is_read_on_the_task_threads_cpu() -> None:
    on, off = _measure(1.0, 0.9, thread_cpu_s=0.50), _measure(1.1, 0.8, thread_cpu_s=0.49)
    line = bench.ratio_line(bench.Paired("file sink", ((on, off),)), "task thread CPU")
    assert line == "metrics on/off, file sink, task thread CPU: paired ratios 0.980; goal >= 0.98"
    results = bench.compare("file sink", on, off)  # the median runs, shown without the goal
    assert [r.goal for r in results] == [None, None, None]
    assert results[-1].value == 1000 / 0.50 and results[-1].anchor == 1000 / 0.49

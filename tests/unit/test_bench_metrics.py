"""The metrics bench's pieces that need no broker: options, and metrics switched off doing nothing."""

from __future__ import annotations

from bench import bench_metrics as bench


def test_records_default_to_200000_and_rounds_to_three() -> None:
    assert bench.parse_options([]) == bench.Options(records=200_000, keep=False, rounds=3)
    assert bench.parse_options(["--records", "1000", "--rounds", "3"]) == bench.Options(1000, rounds=3)


def test_metrics_off_takes_every_call_a_runner_makes() -> None:
    off = bench.MetricsOff()
    off.batch_s = 0.5
    off.record_batch(10)
    off.record_commit(0.1, True)
    off.set_status("running")
    assert off.figures() == {}

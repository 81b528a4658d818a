"""The file pipeline bench's pieces that need no broker: its input, its report and peak RSS."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from bench import bench_file_pipeline as pipeline
from bench.common import BenchResult, peak_rss_mib, reset_peak_rss, set_quick, vm_hwm_mib

MILLION = 1_000_000


def test_options_default_to_rounds_of_four_million_lines_a_tenth_under_quick() -> None:
    assert pipeline.parse_options([]) == pipeline.Options(records=4_000_000, profile=False, rounds=3)
    assert pipeline.parse_options(["--records", "200000", "--rounds", "7"]) == pipeline.Options(200_000, rounds=7)
    assert pipeline.parse_options(["--records=7", "--profile"]) == pipeline.Options(7, profile=True)
    set_quick(True)
    try:
        assert pipeline.parse_options([]).records == 400_000
    finally:
        set_quick(False)


def test_a_record_count_below_one_is_refused_naming_the_flag(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        pipeline.parse_options(["--records", "0"])
    assert "--records must be 1 or more, not 0" in capsys.readouterr().err


def test_bench_line_shows_the_goal_next_to_the_ratio() -> None:
    assert BenchResult("file_source_vs_raw", 60_000, 100_000, goal=0.5).line() == (
        "file_source_vs_raw: kopycat 60,000 records/s, anchor 100,000 records/s, "
        "ratio 0.60 (goal >= 0.5)")


def test_input_holds_distinct_numbered_lines_of_100_bytes(tmp_path: Path) -> None:
    path = tmp_path / "input.txt"

    pipeline.write_lines(path, 250_000)

    lines = path.read_bytes().split(b"\n")
    assert lines.pop() == b""
    assert len(lines) == 250_000
    assert {len(line) for line in lines} == {100}
    assert [int(line[:8]) for line in lines] == list(range(250_000))


def test_tables_give_each_ratio_with_its_goal_over_wall_and_cpu_time() -> None:
    raw = pipeline.Measure("raw confluent-kafka Producer", wall_s=2.0, records=MILLION, cpu_s=2.5)
    kopycat = pipeline.Measure("Kopycat FileStreamSource", wall_s=4.0, records=MILLION, cpu_s=4.0, duration_s=3.9,
                               rss_mib=80)
    connect = pipeline.Measure("Kafka Connect FileStreamSource", wall_s=20.0, records=MILLION, cpu_s=30.0,
                               rss_mib=400, start_s=12.0, steady_s=5.0, steady_cpu_s=8.0)

    text = pipeline.table("file -> Kafka (source)", raw, kopycat, connect, pipeline.RAW_GOALS["source"])
    names = [r.line().split(":")[0] for r in pipeline._results("source", raw, kopycat, connect)]

    assert "Kopycat/raw 0.50, per CPU s 0.62 (goal >= 0.8)" in text
    assert "Kopycat/Kafka Connect steady 1.25, per CPU s 2.00 (goal >= 1.0)" in text
    assert "Kopycat/Kafka Connect launch->done 5.00, per CPU s 7.50" in text
    steady = next(line for line in text.splitlines() if ", steady" in line).split()[-6:]
    assert steady == ["200,000", "5.00", "8.0", "125,000", "400", "0.0"]
    assert names == ["file_source_vs_raw", "file_source_vs_kafka_connect_steady",
                     "file_source_vs_kafka_connect_launch", "file_source_vs_raw_per_cpu",
                     "file_source_vs_kafka_connect_steady_per_cpu"]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="VmHWM and clear_refs are Linux's")
def test_a_reset_starts_a_new_peak_while_the_run_peak_is_kept() -> None:
    block = bytearray(96 << 20)
    block[::4096] = b"x" * len(block[::4096])  # touch every page so it is resident
    before = vm_hwm_mib()
    del block

    assert reset_peak_rss()
    after = vm_hwm_mib()

    assert before is not None and after is not None
    assert after < before - 64
    assert peak_rss_mib() >= before - 1  # the kernel's RSS counters are batched per CPU


def test_kopycat_is_read_against_the_anchors_over_its_copy_and_against_the_launch_over_its_run() -> None:
    raw = pipeline.Measure("raw confluent-kafka Producer", wall_s=2.0, records=MILLION, cpu_s=2.5)
    kopycat = pipeline.Measure("Kopycat FileStreamSource", wall_s=4.0, records=MILLION, cpu_s=4.0,
                               duration_s=3.9, copy_s=3.2)
    connect = pipeline.Measure("Kafka Connect FileStreamSource", wall_s=20.0, records=MILLION, cpu_s=30.0,
                               start_s=12.0, steady_s=5.0, steady_cpu_s=8.0)

    text = pipeline.table("file -> Kafka (source)", raw, kopycat, connect, pipeline.RAW_GOALS["source"])
    ratios = {r.name: round(r.value / (r.anchor or 1), 3) for r in pipeline._results("source", raw, kopycat, connect)}

    assert "Kopycat RunSummary.duration_s 3.90 s, of which start 0.70 s (its ratios are over the rest" in text
    assert "Kopycat/raw 0.62, per CPU s 0.62 (goal >= 0.8)" in text
    assert ratios["file_source_vs_raw"] == 0.625
    assert ratios["file_source_vs_kafka_connect_steady"] == 1.562
    assert ratios["file_source_vs_kafka_connect_launch"] == 5.0

"""The mirror bench's report, which needs no broker: start-up and steady state for both engines, every round."""

from __future__ import annotations

from bench.bench_mirror import Copy, results, table
from bench.common import Measure


def test_table_gives_start_up_and_steady_state_for_both_engines_and_every_round() -> None:
    raw = Measure("raw confluent-kafka Consumer", 1_000, 1.0, walls=(1.0, 2.0, 0.5))
    kopycat = Copy(Measure("Kopycat MirrorSourceConnector", 1_000, 2.0), 0.5, 2.0, walls=(2.0, 3.0, 1.0))
    warm = Copy(Measure("MM2 4.1.1, warm JVM", 1_000, 4.0), 1.0, 4.0, walls=(4.0, 5.0, 3.0))
    cold = Copy(Measure("MM2 4.1.1, cold JVM", 1_000, 8.0), 3.0, 8.0)

    text = table(raw, kopycat, cold, warm)

    assert "start-up (start -> first record landed): Kopycat 0.50 s, MM2 warm 1.00 s, MM2 cold 3.00 s" in text
    assert "steady (first -> last record landed): Kopycat 667 records/s, MM2 warm 333 records/s" in text
    assert "    rounds of Kopycat MirrorSourceConnector: [2.00] 3.00 1.00 s ([median])" in text
    assert "    rounds of MM2 4.1.1, warm JVM: [4.00] 5.00 3.00 s ([median])" in text
    lines = [result.line() for result in results(raw, kopycat, cold, warm)]
    assert ("mirror_vs_mm2_warm: kopycat 500 records/s (spread 100%), anchor 250 records/s (spread 50%), "
            "ratio 2.00 (goal >= 1.0)") in lines
    assert "mirror_vs_mm2_warm_steady: kopycat 667 records/s, anchor 333 records/s, ratio 2.00 (goal >= 1.0)" in lines

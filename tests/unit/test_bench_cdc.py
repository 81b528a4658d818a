"""The CDC bench's pieces that need no broker or database: options, connector props, ratios."""

from __future__ import annotations

from bench import bench_cdc as cdc
from bench.common import Measure

DATABASE = cdc.Database(dsn="host=127.0.0.1 port=5432 user=kopycat dbname=bench", url="postgresql+psycopg://k@h/bench")


def test_options_default_to_200k_rows_three_rounds_and_debezium() -> None:
    assert cdc.parse_options([]) == cdc.Options(rows=200_000, rounds=3, debezium=True)
    assert cdc.parse_options(["--rows", "5000", "--rounds", "1", "--no-debezium"]) == cdc.Options(5_000, 1, False)


def test_both_sides_get_the_same_connector_config_but_the_slot_prefix_and_mode() -> None:
    props = cdc.connector_props(DATABASE, "n", "bench-cdc-1", "bench_slot", "no_data")
    assert {k: props[k] for k in ("connector.class", "database.hostname", "database.port", "database.dbname",
                                  "slot.name", "publication.name", "table.include.list", "snapshot.mode",
                                  "value.converter.schemas.enable", "tasks.max")} == {
        "connector.class": "io.debezium.connector.postgresql.PostgresConnector", "database.hostname": "127.0.0.1",
        "database.port": "5432", "database.dbname": "bench", "slot.name": "bench_slot",
        "publication.name": "bench_cdc", "table.include.list": "public.bench_rows", "snapshot.mode": "no_data",
        "value.converter.schemas.enable": "true", "tasks.max": "1"}


def test_a_phase_compares_kopycat_with_the_slower_limit_and_with_debezium() -> None:
    phase = cdc.Phase("streaming", "changes/s", read=Measure("peek", 1_000, 0.1),
                      produce=Measure("produce", 1_000, 0.5), kopycat=Measure("kopycat", 1_000, 1.0),
                      debezium=Measure("debezium", 1_000, 2.0))
    assert phase.limit == 2_000
    lines = "\n".join(phase.lines())
    assert "Kopycat/min(read, produce) 0.50 (goal >= 0.5)" in lines and "Kopycat/Debezium 2.00 (goal >= 1.0)" in lines
    [*_, vs_limit, vs_debezium] = phase.results("streaming")
    assert (vs_limit.name, vs_limit.value, vs_limit.anchor, vs_limit.goal) == ("cdc_streaming_vs_limit", 1_000,
                                                                               2_000, 0.5)
    assert (vs_debezium.anchor, vs_debezium.goal) == (500, 1.0)
    assert len(cdc.Phase("s", "rows/s", phase.read, phase.produce, phase.kopycat, None).results("s")) == 3

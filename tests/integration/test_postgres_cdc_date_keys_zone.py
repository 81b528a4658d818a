"""Date-keyed incremental snapshots handed over with a Debezium 3.6.1 worker whose JVM runs in America/New_York.

Debezium stores a date key as ``java.sql.Date`` at local midnight in its JVM's zone and binds it
back as the local date there, so a key stored as UTC midnight reads back in New York as the day
before. With ``kopycat.cdc.jvm.time.zone=America/New_York`` Kopycat writes and reads the keys as
that JVM: each side reads on from the other's stored key, every row exactly once, the same bytes.
Kopycat left at UTC refuses the New York JVM's key, naming the offset it was written at and the key.
"""

from __future__ import annotations

import uuid
import zoneinfo
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from kopycat.connectors.postgres_cdc.java_keys import read_keys
from kopycat.dev.jars import ensure_jars
from kopycat.dev.kafka_broker import LocalKafkaBroker
from kopycat.dev.kafka_connect import TEST_JVM_OPTIONS, LocalKafkaConnect
from kopycat.embedded import Kopycat
from kopycat.runtime.bounds import Bounds
from tests.integration.test_postgres_cdc_debezium import start_debezium, wait_for_records
from tests.integration.test_postgres_cdc_incremental_debezium import INCREMENTAL, copy, reads
from tests.integration.test_postgres_cdc_incremental_debezium_keys import debezium_cut_snapshot, kopycat_cut_snapshot
from tests.support.cdc import connector_props, consume_json, execute, last_offset, released_slots

pytestmark = [pytest.mark.timeout(1200), pytest.mark.usefixtures("released_slots")]

__all__ = ["released_slots"]  # the fixture pytestmark uses

ROWS = 30
ZONE = {"kopycat.cdc.jvm.time.zone": "America/New_York"}
ZONE_INFO = zoneinfo.ZoneInfo("America/New_York")
SIGNAL = '{"data-collections": ["public.items"], "type": "incremental"}'


@pytest.fixture(scope="module")
def debezium_new_york(kafka_broker: LocalKafkaBroker) -> Iterator[LocalKafkaConnect]:
    """A Kafka Connect worker with Debezium's PostgreSQL connector, its JVM in America/New_York."""
    plugins = ensure_jars("debezium").parent
    with LocalKafkaConnect(kafka_broker.bootstrap_servers, name="debezium-ny",
                           extra_settings={"plugin.path": str(plugins)},
                           jvm_options=(*TEST_JVM_OPTIONS, "-Duser.timezone=America/New_York")) as connect:
        yield connect


def create_items(url: str) -> None:
    """Dates from 2024-02-21: a UTC midnight is 19:00 the day before in New York."""
    execute(url, "CREATE TABLE items (id DATE PRIMARY KEY, label TEXT)",
            f"INSERT INTO items SELECT DATE '2024-02-20' + n, 'row ' || n FROM generate_series(1, {ROWS}) n",
            "CREATE TABLE dbz_signal (id VARCHAR(42) PRIMARY KEY, type VARCHAR(32) NOT NULL, data VARCHAR(2048))")


def days(records: list[tuple[Any, Any]]) -> Counter[int]:
    return Counter(k["payload"]["id"] for k, _ in reads(records))


def test_a_new_york_debezium_reads_on_from_kopycats_date_key_written_in_its_zone(
        debezium_new_york: LocalKafkaConnect, bootstrap_servers: str, postgres_url: str) -> None:
    create_items(postgres_url)
    run = uuid.uuid4().hex[:8]
    name, prefix = f"nyk-{run}", f"nyk{run}"
    props = {**connector_props(postgres_url, name, prefix, f"nyk_{run}"), **INCREMENTAL, **ZONE,
             "max.batch.size": "4"}
    stored = kopycat_cut_snapshot(bootstrap_servers, postgres_url, props, debezium_new_york.offsets_topic,
                                  SIGNAL, records=14)  # stops in the 2nd chunk
    assert stored["incremental_snapshot_maximum_key"].endswith("0000018e5f2a6e0078"), stored  # 2024-03-21T04:00Z

    start_debezium(debezium_new_york, props)
    try:
        records = wait_for_records(bootstrap_servers, f"{prefix}.public.items", ROWS, timeout_s=240)
    finally:
        debezium_new_york.delete_connector(name)
    found = days(records)
    assert (len(found), max(found.values())) == (ROWS, 1), found  # the last day too: 0 lost, 0 duplicate


def test_kopycat_reads_on_from_a_new_york_debeziums_date_key_and_refuses_it_in_utc(
        debezium_new_york: LocalKafkaConnect, bootstrap_servers: str, postgres_url: str) -> None:
    create_items(postgres_url)
    run = uuid.uuid4().hex[:8]
    name, prefix, slot = f"nyd-{run}", f"nyd{run}", f"nyd_{run}"
    props = {**connector_props(postgres_url, name, prefix, slot), **INCREMENTAL, "incremental.snapshot.chunk.size": "1"}
    offsets = debezium_new_york.offsets_topic
    theirs = debezium_cut_snapshot(debezium_new_york, bootstrap_servers, postgres_url, props, slot)
    assert theirs["incremental_snapshot_maximum_key"].endswith("0000018e5f2a6e0078"), theirs  # its local midnight

    worker = {"offset.storage.topic": offsets, "offset.storage.replication.factor": "1",
              "offset.storage.partitions": "1", "offset.flush.interval.ms": "500"}
    with Kopycat(bootstrap_servers, worker_props=worker) as kc:  # at the default UTC: refused, with the fix
        [summary] = kc.run_once(props, Bounds(max_seconds=120), timeout_s=300)
    assert summary is not None and summary.error is not None
    assert "UTC-04:00" in summary.error or "UTC-05:00" in summary.error, summary.error
    assert "kopycat.cdc.jvm.time.zone" in summary.error, summary.error

    copy(bootstrap_servers, {**props, **ZONE, "incremental.snapshot.chunk.size": "10"}, offsets,
         Bounds(max_seconds=300))
    found = days(consume_json(bootstrap_servers, f"{prefix}.public.items"))
    assert (len(found), max(found.values())) == (ROWS, 1), found  # Debezium's rows, then Kopycat's: each once
    ours = last_offset(bootstrap_servers, offsets, name, prefix)
    assert ours["incremental_snapshot_maximum_key"] == theirs["incremental_snapshot_maximum_key"]  # the same bytes
    assert read_keys(ours["incremental_snapshot_primary_key"], ZONE_INFO) == \
        read_keys(ours["incremental_snapshot_maximum_key"], ZONE_INFO)

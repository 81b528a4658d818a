"""Kopycat's incremental snapshot against Debezium 3.6.1's on the same execute-snapshot signal.

Both connectors stream ``items`` (snapshot.mode=no_data, their own slots) and read the same signal
table, so one ``execute-snapshot`` row starts both snapshots; each ignores the other's watermarks
(their chunk ids differ). Their ``r`` events must be equal field by field once the fields that
depend on when each side read are left out (as in test_postgres_cdc_debezium). Then the handover:
a Kopycat run stopped mid-snapshot leaves Debezium's offset keys, and Debezium, started with the
same name on those offsets, reads on from the stored key: together every row once; and the
reverse, Kopycat reading on from a Debezium snapshot stopped mid-way.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

import psycopg
import pytest

from kopycat.connectors.postgres_cdc.java_keys import read_keys
from kopycat.dev.kafka_connect import LocalKafkaConnect
from kopycat.embedded import Kopycat
from kopycat.runtime.bounds import Bounds
from tests.integration.test_postgres_cdc_debezium import compared, debezium_connect, start_debezium, wait_for_records
from tests.support.cdc import (
    connector_props,
    consume_json,
    dsn,
    execute,
    last_offset,
    released_slots,
)

pytestmark = [pytest.mark.timeout(900), pytest.mark.usefixtures("released_slots")]

__all__ = ["debezium_connect", "released_slots"]  # fixtures shared with other modules

ROWS, CHUNK = 60, 10
SIGNAL = '{"data-collections": ["public.items"], "type": "incremental"}'
INCREMENTAL = {"snapshot.mode": "no_data", "signal.data.collection": "public.dbz_signal",
               "incremental.snapshot.chunk.size": str(CHUNK), "key.converter.schemas.enable": "true",
               "value.converter.schemas.enable": "true"}


def create_tables(url: str) -> None:
    execute(url, "CREATE TABLE items (id INT PRIMARY KEY, label TEXT, amount NUMERIC(10, 2), seen TIMESTAMP)",
            f"INSERT INTO items SELECT n, 'row ' || n, n / 4.0, TIMESTAMP '2024-01-01' "
            f"FROM generate_series(1, {ROWS}) n",
            "CREATE TABLE dbz_signal (id VARCHAR(42) PRIMARY KEY, type VARCHAR(32) NOT NULL, data VARCHAR(2048))")


def copy(bootstrap: str, props: dict[str, str], offsets_topic: str, bounds: Bounds) -> None:
    worker = {"offset.storage.topic": offsets_topic, "offset.storage.replication.factor": "1",
              "offset.storage.partitions": "1", "offset.flush.interval.ms": "500"}
    with Kopycat(bootstrap, worker_props=worker) as kc:
        [summary] = kc.run_once(props, bounds, timeout_s=300)
    assert summary is not None and summary.error is None, summary.error if summary else None


def wait_streaming(url: str, slot: str) -> None:
    """Until Debezium reads its slot: a signal inserted before would be in its snapshot's past."""
    deadline = time.monotonic() + 180
    with psycopg.connect(dsn(url), autocommit=True) as conn:
        while not conn.execute("SELECT active FROM pg_replication_slots WHERE slot_name = %s",
                               (slot,)).fetchone() == (True,):
            assert time.monotonic() < deadline, f"Debezium never started reading slot {slot}"
            time.sleep(0.5)


def stored_key(bootstrap: str, offsets: str, name: str, prefix: str) -> int:
    """The first column of the stored incremental_snapshot_primary_key; 0 before one is stored."""
    stored = [v for k, v in consume_json(bootstrap, offsets) if k == [name, {"server": prefix}]]
    key = read_keys(stored[-1].get("incremental_snapshot_primary_key") or "aced000570") if stored else None
    return int(key[0]) if key else 0


def reads(records: list[tuple[Any, Any]]) -> list[tuple[Any, Any]]:
    return [(k, v) for k, v in records if v is not None and v["payload"]["op"] == "r"]


def test_incremental_snapshot_events_equal_debeziums_on_the_same_signal(
        debezium_connect: LocalKafkaConnect, bootstrap_servers: str, postgres_url: str) -> None:
    run = uuid.uuid4().hex[:8]
    create_tables(postgres_url)
    dbz_prefix, kc_prefix = f"dbz{run}", f"kc{run}"
    dbz = {**connector_props(postgres_url, f"dbz-{run}", dbz_prefix, f"dbz_{run}"), **INCREMENTAL}
    kc = {**connector_props(postgres_url, f"kc-{run}", kc_prefix, f"kc_{run}"), **INCREMENTAL}
    start_debezium(debezium_connect, dbz)
    copy(bootstrap_servers, kc, f"offsets-{run}", Bounds(max_seconds=120))  # Kopycat's slot
    wait_streaming(postgres_url, f"dbz_{run}")
    execute(postgres_url, f"INSERT INTO dbz_signal VALUES ('snap-{run}', 'execute-snapshot', '{SIGNAL}')")
    copy(bootstrap_servers, kc, f"offsets-{run}", Bounds(max_seconds=300))

    theirs = reads(wait_for_records(bootstrap_servers, f"{dbz_prefix}.public.items", ROWS))
    ours = reads(consume_json(bootstrap_servers, f"{kc_prefix}.public.items"))
    assert [k["payload"]["id"] for k, _ in ours] == list(range(1, ROWS + 1))
    differences = compared(ours, theirs, kc_prefix, dbz_prefix)
    assert not differences, "\n".join(differences)
    assert {v["payload"]["source"]["snapshot"] for _, v in ours} == {"incremental"}
    debezium_connect.delete_connector(f"dbz-{run}")  # its slot is then dropped with Kopycat's


def test_debezium_reads_on_from_a_kopycat_run_stopped_mid_snapshot(
        debezium_connect: LocalKafkaConnect, bootstrap_servers: str, postgres_url: str) -> None:
    run = uuid.uuid4().hex[:8]
    create_tables(postgres_url)
    name, prefix = f"ho-inc-{run}", f"hoi{run}"
    props = {**connector_props(postgres_url, name, prefix, f"hoi_{run}"), **INCREMENTAL, "max.batch.size": "5"}
    offsets = debezium_connect.offsets_topic
    copy(bootstrap_servers, props, offsets, Bounds(max_seconds=120))
    execute(postgres_url, f"INSERT INTO dbz_signal VALUES ('snap-{run}', 'execute-snapshot', '{SIGNAL}')")
    copy(bootstrap_servers, props, offsets, Bounds(max_records=25, max_seconds=300))
    stored = last_offset(bootstrap_servers, offsets, name, prefix)
    sent = read_keys(stored["incremental_snapshot_primary_key"])
    assert sent is not None and 20 <= sent[0] < ROWS, stored
    assert read_keys(stored["incremental_snapshot_maximum_key"]) == [ROWS]
    ours = [k["payload"]["id"] for k, _ in reads(consume_json(bootstrap_servers, f"{prefix}.public.items"))]
    assert ours == list(range(1, sent[0] + 1))

    execute(postgres_url, "UPDATE items SET label = 'late' WHERE id = 1")
    start_debezium(debezium_connect, props)
    records = wait_for_records(bootstrap_servers, f"{prefix}.public.items", ROWS + 1)
    ids = [k["payload"]["id"] for k, _ in reads(records)]
    assert ids == list(range(1, ROWS + 1)), ids  # Debezium's chunks start after Kopycat's last key: no repeat
    updates = [(k["payload"]["id"], v["payload"]["after"]["label"]) for k, v in records if v["payload"]["op"] == "u"]
    assert updates == [(1, "late")]  # streamed from Kopycat's stored position, once
    debezium_connect.delete_connector(name)


def test_kopycat_reads_on_from_a_debezium_snapshot_stopped_mid_way(
        debezium_connect: LocalKafkaConnect, bootstrap_servers: str, postgres_url: str) -> None:
    run = uuid.uuid4().hex[:8]
    create_tables(postgres_url)
    # Each watermark waits 50 ms, so Debezium's chunks of one row take long enough to stop it mid-way.
    execute(postgres_url, "CREATE FUNCTION slow_mark() RETURNS trigger LANGUAGE plpgsql AS "
                          "$$ BEGIN PERFORM pg_sleep(0.05); RETURN NEW; END $$",
            "CREATE TRIGGER slow BEFORE INSERT ON dbz_signal FOR EACH ROW EXECUTE FUNCTION slow_mark()")
    name, prefix, slot = f"rev-inc-{run}", f"rev{run}", f"rev_{run}"
    props = {**connector_props(postgres_url, name, prefix, slot), **INCREMENTAL,
             "incremental.snapshot.chunk.size": "1"}
    offsets = debezium_connect.offsets_topic
    start_debezium(debezium_connect, props)
    wait_streaming(postgres_url, slot)
    execute(postgres_url, f"INSERT INTO dbz_signal VALUES ('snap-{run}', 'execute-snapshot', '{SIGNAL}')")
    deadline = time.monotonic() + 180
    while stored_key(bootstrap_servers, offsets, name, prefix) < 5:
        assert time.monotonic() < deadline, "Debezium stored no incremental snapshot offset"
        time.sleep(0.2)
    debezium_connect.stop_connector(name)
    debezium_connect.wait_for_connector_state(name, "STOPPED", timeout_s=120)
    debezium_connect.delete_connector(name)
    theirs = last_offset(bootstrap_servers, offsets, name, prefix)
    sent = read_keys(theirs["incremental_snapshot_primary_key"])
    assert sent is not None and 5 <= sent[0] < ROWS, theirs

    execute(postgres_url, "DROP TRIGGER slow ON dbz_signal")
    copy(bootstrap_servers, {**props, "incremental.snapshot.chunk.size": str(CHUNK)}, offsets,
         Bounds(max_seconds=300))
    ids = [k["payload"]["id"] for k, _ in reads(consume_json(bootstrap_servers, f"{prefix}.public.items"))]
    assert ids == list(range(1, ROWS + 1)), (sent, ids)  # Debezium's up to its stored key, then Kopycat's
    ours = last_offset(bootstrap_servers, offsets, name, prefix)
    assert read_keys(ours["incremental_snapshot_primary_key"]) == [ROWS]  # the last r event's key
    incremental = sorted(k for k in theirs if k.startswith("incremental_snapshot"))
    assert sorted(k for k in ours if k.startswith("incremental_snapshot")) == incremental
    assert ours["snapshot"] == "INCREMENTAL"  # an r event's offset, as Debezium's r events store them
    assert [ours[k] for k in incremental if k != "incremental_snapshot_primary_key"] == \
        [theirs[k] for k in incremental if k != "incremental_snapshot_primary_key"]  # the same bytes and JSON

"""Debezium 3.6.1 and Kopycat read on from each other's incremental snapshot stopped mid-way, for keys beyond integers.

For each key type Kopycat stores as Debezium's Java values (uuid as ``java.util.UUID``, numeric as
``java.math.BigDecimal``, date as ``java.sql.Date``, bigint pairs as two ``Long``), a Kopycat run
stops mid-snapshot; Debezium, started with the same name on those offsets, must deserialize the
stored keys and read on from the last key sent: together every row exactly once.

timestamp/timestamptz keys are not handed over here: Debezium 3.6.1 alone stops after its first
chunk of such a table (it binds the key's text with ``setObject(String)``: "operator does not
exist: timestamp with time zone > character varying", then skips the table), whoever wrote the
offset. Kopycat stores them as that text, which the unit tests prove byte for byte.
"""

from __future__ import annotations

import time
import uuid
from collections import Counter
from typing import Any

import pytest

from kopycat.connectors.postgres_cdc.java_keys import read_keys
from kopycat.dev.kafka_connect import LocalKafkaConnect
from kopycat.runtime.bounds import Bounds
from tests.integration.test_postgres_cdc_debezium import compared, debezium_connect, start_debezium, wait_for_records
from tests.integration.test_postgres_cdc_incremental_debezium import INCREMENTAL, copy, reads, wait_streaming
from tests.support.cdc import connector_props, consume_json, execute, last_offset, released_slots

pytestmark = [pytest.mark.timeout(900), pytest.mark.usefixtures("released_slots")]

__all__ = ["debezium_connect", "released_slots"]  # fixtures shared with other modules

ROWS = 30
SIGNAL = '{"data-collections": ["public.items"], "type": "incremental"}'
SIGNAL_TABLE = "CREATE TABLE dbz_signal (id VARCHAR(42) PRIMARY KEY, type VARCHAR(32) NOT NULL, data VARCHAR(2048))"
KEYS = {  # the key columns' DDL, the n-th row's key as SQL, the key columns
    "uuid": ("id UUID PRIMARY KEY", "md5(n::text)::uuid", ("id",)),
    "numeric": ("id NUMERIC(12, 2) PRIMARY KEY", "n * 2.25 - 10", ("id",)),
    "date": ("id DATE PRIMARY KEY", "DATE '2024-02-20' + n", ("id",)),
    "bigint pair": ("a BIGINT, b BIGINT, PRIMARY KEY (a, b)", "n / 3 * 5000000000, -n", ("a", "b")),
}


def kopycat_cut_snapshot(bootstrap: str, postgres_url: str, props: dict[str, str], offsets: str, signal: str,
                         records: int) -> dict[str, Any]:
    """Kopycat's snapshot of ``public.items`` cut after its first ``records`` records: its stored offset.

    A first run makes the slot; ``signal`` (an ``execute-snapshot`` signal's data) then starts the
    snapshot, which a run with ``max_records`` stops inside."""
    name, prefix = props["name"], props["topic.prefix"]
    copy(bootstrap, props, offsets, Bounds(max_seconds=120))  # the slot
    execute(postgres_url, f"INSERT INTO dbz_signal VALUES ('cut-{name}', 'execute-snapshot', '{signal}')")
    copy(bootstrap, props, offsets, Bounds(max_records=records, max_seconds=300))
    return last_offset(bootstrap, offsets, name, prefix)


def debezium_cut_snapshot(connect: LocalKafkaConnect, bootstrap: str, postgres_url: str, props: dict[str, str],
                          slot: str) -> dict[str, Any]:
    """Debezium's incremental snapshot of ``public.items`` stopped after its first rows: its stored offset.

    Each watermark insert into ``dbz_signal`` waits 50 ms, so chunks of one row are slow enough to stop
    it mid-way; the trigger is dropped before returning."""
    name, prefix = props["name"], props["topic.prefix"]
    execute(postgres_url, "CREATE FUNCTION slow_mark() RETURNS trigger LANGUAGE plpgsql AS "
                          "$$ BEGIN PERFORM pg_sleep(0.05); RETURN NEW; END $$",
            "CREATE TRIGGER slow BEFORE INSERT ON dbz_signal FOR EACH ROW EXECUTE FUNCTION slow_mark()")
    start_debezium(connect, props)
    wait_streaming(postgres_url, slot)
    execute(postgres_url, f"INSERT INTO dbz_signal VALUES ('snap-{name}', 'execute-snapshot', '{SIGNAL}')")
    deadline = time.monotonic() + 180
    while len(reads(consume_json(bootstrap, f"{prefix}.public.items"))) < 5:
        assert time.monotonic() < deadline, "Debezium sent no incremental snapshot rows"
        time.sleep(0.5)
    connect.stop_connector(name)
    connect.wait_for_connector_state(name, "STOPPED", timeout_s=120)
    connect.delete_connector(name)
    execute(postgres_url, "DROP TRIGGER slow ON dbz_signal", "DROP FUNCTION slow_mark()")
    return last_offset(bootstrap, connect.offsets_topic, name, prefix)


def keyed_items(postgres_url: str, kind: str) -> tuple[str, ...]:
    """``items`` keyed as ``KEYS[kind]`` says, ROWS rows, and the signal table; the key columns."""
    ddl, value, columns = KEYS[kind]
    execute(postgres_url, f"CREATE TABLE items ({ddl}, label TEXT)",
            f"INSERT INTO items ({', '.join(columns)}, label) SELECT {value}, 'row ' || n "
            f"FROM generate_series(1, {ROWS}) n", SIGNAL_TABLE)
    return columns


def assert_each_row_once(records: list[tuple[Any, Any]], columns: tuple[str, ...]) -> None:
    """The snapshot reads among ``records`` hold every row's key exactly once: 0 lost, 0 duplicate."""
    keys = Counter(tuple(str(k["payload"][c]) for c in columns) for k, _ in reads(records))
    assert (len(keys), max(keys.values())) == (ROWS, 1), keys


@pytest.mark.parametrize("kind", list(KEYS))
def test_debezium_reads_on_from_kopycats_stored_key_of_each_type(
        kind: str, debezium_connect: LocalKafkaConnect, bootstrap_servers: str, postgres_url: str) -> None:
    columns = keyed_items(postgres_url, kind)
    run = uuid.uuid4().hex[:8]
    name, prefix = f"keys-{run}", f"keys{run}"
    props = {**connector_props(postgres_url, name, prefix, f"keys_{run}"), **INCREMENTAL, "max.batch.size": "4"}
    stored = kopycat_cut_snapshot(bootstrap_servers, postgres_url, props, debezium_connect.offsets_topic,
                                  SIGNAL, records=14)  # stops in the 2nd chunk
    sent = read_keys(stored["incremental_snapshot_primary_key"])
    assert sent is not None and len(sent) == len(columns), stored

    start_debezium(debezium_connect, props)
    try:
        records = wait_for_records(bootstrap_servers, f"{prefix}.public.items", ROWS, timeout_s=240)
    except AssertionError as exc:
        raise AssertionError(f"{exc}; Debezium: {debezium_connect.connector_status(name)}") from None
    finally:
        debezium_connect.delete_connector(name)
    assert_each_row_once(records, columns)


@pytest.mark.parametrize("kind", list(KEYS))
def test_kopycat_reads_on_from_debeziums_stored_key_of_each_type_and_stores_the_same_bytes(
        kind: str, debezium_connect: LocalKafkaConnect, bootstrap_servers: str, postgres_url: str) -> None:
    columns = keyed_items(postgres_url, kind)
    run = uuid.uuid4().hex[:8]
    name, prefix, slot = f"rkeys-{run}", f"rkeys{run}", f"rkeys_{run}"
    props = {**connector_props(postgres_url, name, prefix, slot), **INCREMENTAL, "incremental.snapshot.chunk.size": "1"}
    offsets = debezium_connect.offsets_topic
    theirs = debezium_cut_snapshot(debezium_connect, bootstrap_servers, postgres_url, props, slot)
    sent = read_keys(theirs["incremental_snapshot_primary_key"])
    assert sent is not None and len(sent) == len(columns), theirs

    copy(bootstrap_servers, {**props, "incremental.snapshot.chunk.size": "10"}, offsets, Bounds(max_seconds=300))
    # Debezium's rows, then Kopycat's: each once
    assert_each_row_once(consume_json(bootstrap_servers, f"{prefix}.public.items"), columns)
    ours = last_offset(bootstrap_servers, offsets, name, prefix)
    assert ours["incremental_snapshot_maximum_key"] == theirs["incremental_snapshot_maximum_key"]  # the same bytes
    assert read_keys(ours["incremental_snapshot_primary_key"]) == read_keys(ours["incremental_snapshot_maximum_key"])


def test_blocking_snapshot_events_equal_debeziums_on_the_same_signal(
        debezium_connect: LocalKafkaConnect, bootstrap_servers: str, postgres_url: str) -> None:
    execute(postgres_url, "CREATE TABLE items (id INT PRIMARY KEY, label TEXT, amount NUMERIC(10, 2))",
            f"INSERT INTO items SELECT n, 'row ' || n, n / 4.0 FROM generate_series(1, {ROWS}) n",
            SIGNAL_TABLE)
    run = uuid.uuid4().hex[:8]
    dbz_prefix, kc_prefix = f"bdbz{run}", f"bkc{run}"
    dbz = {**connector_props(postgres_url, f"bdbz-{run}", dbz_prefix, f"bdbz_{run}"), **INCREMENTAL}
    kc = {**connector_props(postgres_url, f"bkc-{run}", kc_prefix, f"bkc_{run}"), **INCREMENTAL}
    start_debezium(debezium_connect, dbz)
    copy(bootstrap_servers, kc, f"offsets-{run}", Bounds(max_seconds=120))
    wait_streaming(postgres_url, f"bdbz_{run}")
    blocking = '{"data-collections": ["public.items"], "type": "blocking"}'
    execute(postgres_url, f"INSERT INTO dbz_signal VALUES ('block-{run}', 'execute-snapshot', '{blocking}')")
    copy(bootstrap_servers, kc, f"offsets-{run}", Bounds(max_seconds=300))
    theirs = reads(wait_for_records(bootstrap_servers, f"{dbz_prefix}.public.items", ROWS))
    ours = reads(consume_json(bootstrap_servers, f"{kc_prefix}.public.items"))
    debezium_connect.delete_connector(f"bdbz-{run}")
    assert [k["payload"]["id"] for k, _ in ours] == list(range(1, ROWS + 1))
    differences = compared(ours, theirs, kc_prefix, dbz_prefix)
    assert not differences, "\n".join(differences)


def test_debezium_takes_over_a_cut_blocking_snapshots_offset_and_streams_on_after_its_signal(
        debezium_connect: LocalKafkaConnect, bootstrap_servers: str, postgres_url: str) -> None:
    execute(postgres_url, "CREATE TABLE items (id INT PRIMARY KEY, label TEXT)",
            f"INSERT INTO items SELECT n, 'row ' || n FROM generate_series(1, {ROWS}) n",
            SIGNAL_TABLE)
    run = uuid.uuid4().hex[:8]
    name, prefix = f"hob-{run}", f"hob{run}"
    props = {**connector_props(postgres_url, name, prefix, f"hob_{run}"), **INCREMENTAL, "max.batch.size": "4"}
    topic = f"{prefix}.public.items"
    stored = kopycat_cut_snapshot(bootstrap_servers, postgres_url, props, debezium_connect.offsets_topic,
                                  '{"data-collections": ["public.items"], "type": "blocking"}', records=10)
    assert (stored["snapshot"], stored["snapshot_completed"]) == ("BLOCKING", False), stored
    assert read_keys(stored["blocking_snapshot_primary_key"]) == [len(reads(consume_json(bootstrap_servers, topic)))]

    execute(postgres_url, "UPDATE items SET label = 'late' WHERE id = 1")
    before = len(consume_json(bootstrap_servers, topic))
    start_debezium(debezium_connect, props)  # Kopycat's extra keys must not trouble it
    try:
        records = wait_for_records(bootstrap_servers, topic, before + 1, timeout_s=240)
    finally:
        debezium_connect.delete_connector(name)
    # Debezium does not resume a blocking snapshot (DBZ-7903): it streams on after the signal, the update once
    assert [(v["payload"]["op"], k["payload"]["id"]) for k, v in records[before:]] == [("u", 1)]

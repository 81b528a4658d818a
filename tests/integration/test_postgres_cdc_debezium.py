"""Kopycat's PostgresConnector against Debezium 3.6.1's, on the same database and the same changes.

Debezium runs in a real Kafka Connect worker (its own slot and publication); Kopycat runs bounded
on the same rows. With JsonConverter (schemas.enable=true) both sides' keys and values must be
equal field by field, schemas included, once the topic prefix is put aside and these fields,
which depend on when and how each side read, are left out:

- the envelope's ``ts_ms``/``ts_us``/``ts_ns`` (when the event was made);
- in snapshot (``r``) events the source block's ``ts_*``, ``txId``, ``lsn`` and ``sequence``
  (each side's own snapshot transaction and slot);
- a heartbeat's ``ts_ms`` (when it was sent).

With ``provide.transaction.metadata=true`` the ``<prefix>.transaction`` topics are compared whole
(status, id, event_count, data_collections with their order, ts_ms: the commit time, equal on both
sides) and so are the change events' ``transaction`` blocks (id, total_order, data_collection_order).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from kopycat.dev.jars import ensure_jars
from kopycat.dev.kafka_broker import LocalKafkaBroker
from kopycat.dev.kafka_connect import LocalKafkaConnect
from kopycat.embedded import Kopycat
from kopycat.runtime.bounds import Bounds
from tests.support.cdc import connector_props, consume_json, execute, last_offset, transaction

pytestmark = pytest.mark.timeout(900)

SNAPSHOT_SOURCE_FIELDS = ("ts_ms", "ts_us", "ts_ns", "txId", "lsn", "sequence")


@pytest.fixture(scope="module")
def debezium_connect(kafka_broker: LocalKafkaBroker) -> Iterator[LocalKafkaConnect]:
    """A Kafka Connect worker with Debezium's PostgreSQL connector on its plugin.path."""
    plugins = ensure_jars("debezium").parent
    with LocalKafkaConnect(kafka_broker.bootstrap_servers, name="debezium",
                           extra_settings={"plugin.path": str(plugins)}) as connect:
        yield connect


def wait_for_records(bootstrap: str, topic: str, count: int, timeout_s: float = 180) -> list[tuple[Any, Any]]:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            found = consume_json(bootstrap, topic)
        except (KeyError, AssertionError):
            found = []
        if len(found) >= count or time.monotonic() > deadline:
            assert len(found) == count, f"{topic}: {len(found)} records, expected {count}: {ops(found)}"
            return found
        time.sleep(1)


def normalized(message: Any, prefix: str) -> Any:
    """The JSON with the topic prefix replaced and the fields allowed to differ removed."""
    if message is None:
        return None
    text = repr(message).replace(prefix, "PREFIX")
    value = eval(text)  # noqa: S307 - our own repr of decoded JSON
    payload = value.get("payload")
    if isinstance(payload, dict) and set(payload) == {"ts_ms"}:  # a heartbeat
        payload.pop("ts_ms")
    if isinstance(payload, dict) and "op" in payload:
        for field in ("ts_ms", "ts_us", "ts_ns"):
            payload.pop(field, None)
        if payload["op"] == "r":
            for field in SNAPSHOT_SOURCE_FIELDS:
                payload["source"].pop(field, None)
    return value


def differ(ours: Any, theirs: Any, path: str) -> list[str]:
    """Every path where the two JSON values differ, with both sides."""
    if isinstance(ours, dict) and isinstance(theirs, dict):
        out = []
        for key in list(ours) + [k for k in theirs if k not in ours]:
            out += differ(ours.get(key, "<missing>"), theirs.get(key, "<missing>"), f"{path}.{key}")
        return out
    if isinstance(ours, list) and isinstance(theirs, list) and len(ours) == len(theirs):
        return [d for i, (a, b) in enumerate(zip(ours, theirs, strict=True)) for d in differ(a, b, f"{path}[{i}]")]
    return [] if ours == theirs else [f"{path}: kopycat {ours!r} != debezium {theirs!r}"]


def compared(ours: list[tuple[Any, Any]], theirs: list[tuple[Any, Any]], kc_prefix: str,
             dbz_prefix: str) -> list[str]:
    """Every difference between two topics' records (keys and values), once normalized."""
    if len(ours) != len(theirs):
        return [f"kopycat has {len(ours)} records, debezium {len(theirs)}: {ours} != {theirs}"]
    differences: list[str] = []
    for index, (mine, debezium) in enumerate(zip(ours, theirs, strict=True)):
        for part, (a, b) in enumerate(zip(mine, debezium, strict=True)):
            differences += differ(normalized(a, kc_prefix), normalized(b, dbz_prefix),
                                  f"record {index} {('key', 'value')[part]}")
    return differences


def start_debezium(connect: LocalKafkaConnect, props: dict[str, str]) -> None:
    """Run ``props`` (Kopycat's connector_props) in the Debezium worker, JSON with schemas."""
    config = {**props, "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
              "key.converter.schemas.enable": "true", "value.converter.schemas.enable": "true"}
    connect.create_connector(props["name"], config)
    connect.wait_for_task_state(props["name"], "RUNNING", timeout_s=180)


def copy_once(bootstrap: str, props: dict[str, str], offsets_topic: str) -> None:
    """One bounded Kopycat run of ``props`` with its offsets in ``offsets_topic``."""
    worker = {"offset.storage.topic": offsets_topic, "offset.storage.replication.factor": "1",
              "offset.storage.partitions": "1", "offset.flush.interval.ms": "500"}
    with Kopycat(bootstrap, worker_props=worker) as kc:
        [summary] = kc.run_once(props, Bounds(max_seconds=120), timeout_s=300)
    assert summary is not None and summary.error is None, summary.error if summary else None


MODES = [{}, {"decimal.handling.mode": "string", "time.precision.mode": "connect"}, {"decimal.handling.mode": "double"}]


@pytest.mark.parametrize("modes", MODES, ids=lambda m: "-".join(m.values()) or "default")
def test_kopycat_events_equal_debeziums_field_by_field(
        debezium_connect: LocalKafkaConnect, bootstrap_servers: str, postgres_url: str, modes: dict[str, str]) -> None:
    run = uuid.uuid4().hex[:8]
    execute(postgres_url, "CREATE TABLE items (id INT PRIMARY KEY, label TEXT, amount NUMERIC(10, 2), "
                          "price NUMERIC, seen TIMESTAMP, at TIMESTAMPTZ, day DATE, flag BOOLEAN, big BIGINT, "
                          "small SMALLINT, ratio DOUBLE PRECISION, code UUID, doc JSONB, raw BYTEA, "
                          "name VARCHAR(20) NOT NULL, d_int INT DEFAULT 7, d_neg BIGINT DEFAULT -3, "
                          "d_small SMALLINT DEFAULT 2, d_text TEXT DEFAULT 'hi', d_var VARCHAR(10) DEFAULT upper('x'), "
                          "d_num NUMERIC(8, 3) DEFAULT 1.5, d_free NUMERIC DEFAULT 2.25, d_ts TIMESTAMP DEFAULT now(), "
                          "d_ts3 TIMESTAMP(3) DEFAULT '2024-01-02 03:04:05.678', "
                          "d_tz TIMESTAMPTZ DEFAULT '2024-05-01 10:00:00+02', d_date DATE DEFAULT CURRENT_DATE, "
                          "d_day DATE DEFAULT '2024-02-29', d_time TIME DEFAULT '12:30:00', "
                          "d_flag BOOLEAN NOT NULL DEFAULT true, d_float DOUBLE PRECISION DEFAULT 2.5, "
                          "d_real REAL DEFAULT 0.25, d_uuid UUID DEFAULT 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', "
                          "d_json JSONB DEFAULT '{}', d_null TEXT DEFAULT NULL, d_serial SERIAL)",
            "INSERT INTO items SELECT n, 'before ' || n, n / 4.0, n / 3.0, TIMESTAMP '2024-01-01 10:00:00.123456', "
            "TIMESTAMPTZ '2024-01-01 10:00:00.5+02', DATE '2024-02-29', n % 2 = 0, n * 10000000000, n, n / 7.0, "
            "'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '{\"a\": 1}', '\\x0102', 'n' || n FROM generate_series(1, 5) n")
    dbz_prefix, kc_prefix = f"dbz{run}", f"kc{run}"
    dbz = connector_props(postgres_url, f"dbz-{run}", dbz_prefix, f"dbz_{run}")
    dbz.pop("connector.class")
    dbz = {"connector.class": "io.debezium.connector.postgresql.PostgresConnector", **dbz,
           "key.converter.schemas.enable": "true", "value.converter.schemas.enable": "true", **modes}
    debezium_connect.create_connector(f"dbz-{run}", dbz)
    debezium_connect.wait_for_task_state(f"dbz-{run}", "RUNNING", timeout_s=180)
    topic = "public.items"
    wait_for_records(bootstrap_servers, f"{dbz_prefix}.{topic}", 5)

    props = {**connector_props(postgres_url, f"kc-{run}", kc_prefix, f"kc_{run}"), **modes}
    worker = {"offset.storage.topic": f"offsets-{run}", "offset.storage.replication.factor": "1",
              "offset.storage.partitions": "1", "offset.flush.interval.ms": "500"}
    with Kopycat(bootstrap_servers, worker_props=worker) as kc:
        [summary] = kc.run_once(props, Bounds(max_seconds=120), timeout_s=300)
    assert summary is not None and summary.error is None, summary.error if summary else None

    execute(postgres_url, "INSERT INTO items (id, label, name) VALUES (6, 'six', 'n6')",
            "UPDATE items SET label = 'changed', amount = 1.5 WHERE id IN (1, 6)", "DELETE FROM items WHERE id = 2",
            "ALTER TABLE items REPLICA IDENTITY FULL", "UPDATE items SET amount = 9.99 WHERE id = 3",
            "DELETE FROM items WHERE id = 4")
    with Kopycat(bootstrap_servers, worker_props=worker) as kc:
        [summary] = kc.run_once(props, Bounds(max_seconds=120), timeout_s=300)
    assert summary is not None and summary.error is None, summary.error if summary else None

    theirs = wait_for_records(bootstrap_servers, f"{dbz_prefix}.{topic}", 13)
    ours = consume_json(bootstrap_servers, f"{kc_prefix}.{topic}")
    assert not compared(ours, theirs, kc_prefix, dbz_prefix), "\n".join(compared(ours, theirs, kc_prefix, dbz_prefix))

    our_offset = last_offset(bootstrap_servers, f"offsets-{run}", f"kc-{run}", kc_prefix)
    java_offset = debezium_offset_like(our_offset, bootstrap_servers, debezium_connect.offsets_topic,
                                       f"dbz-{run}", dbz_prefix)
    assert set(our_offset) == set(java_offset) - {"transaction_id"}, (our_offset, java_offset)


def ops(records: list[tuple[Any, Any]]) -> list[tuple[int, str | None]]:
    """(id, op) of each record; op None for a tombstone."""
    return [(key["payload"]["id"], value["payload"]["op"] if value else None) for key, value in records]


@pytest.mark.parametrize("beats", [{}, {"heartbeat.interval.ms": "100"}], ids=["plain", "heartbeats"])
def test_debezium_resumes_from_kopycats_offsets_and_kopycat_from_debeziums(
        debezium_connect: LocalKafkaConnect, bootstrap_servers: str, postgres_url: str, beats: dict[str, str]) -> None:
    run = uuid.uuid4().hex[:8]
    name, prefix = f"handover-{run}", f"ho{run}"
    execute(postgres_url, "CREATE TABLE items (id INT PRIMARY KEY, label TEXT)",
            "INSERT INTO items SELECT n, 'row ' || n FROM generate_series(1, 3) n")
    props = connector_props(postgres_url, name, prefix, f"ho_{run}")
    props.update({"key.converter.schemas.enable": "true", "value.converter.schemas.enable": "true", **beats})
    worker = {"offset.storage.topic": debezium_connect.offsets_topic, "offset.flush.interval.ms": "500"}
    topic = f"{prefix}.public.items"

    with Kopycat(bootstrap_servers, worker_props=worker) as kc:
        kc.run_once(props, Bounds(max_seconds=120), timeout_s=300)
    # WAL no transaction owns (a non-transactional logical message pgoutput does not send): with
    # heartbeats the run ends on a heartbeat whose offset is past the last commit.
    execute(postgres_url, "INSERT INTO items VALUES (4, 'four')", "UPDATE items SET label = 'one' WHERE id = 1",
            "SELECT pg_logical_emit_message(false, 'kopycat-test', 'wal')")
    with Kopycat(bootstrap_servers, worker_props=worker) as kc:
        kc.run_once(props, Bounds(max_seconds=120), timeout_s=300)
    ours = last_offset(bootstrap_servers, debezium_connect.offsets_topic, name, prefix)
    if beats:
        [(_, beat)] = consume_json(bootstrap_servers, f"__debezium-heartbeat.{prefix}")[-1:]
        assert beat["payload"]["ts_ms"] > 0 and ours["lsn"] == ours["lsn_commit"]

    execute(postgres_url, "INSERT INTO items VALUES (5, 'five')", "DELETE FROM items WHERE id = 3")
    debezium_connect.create_connector(name, props)
    debezium_connect.wait_for_task_state(name, "RUNNING", timeout_s=180)
    records = wait_for_records(bootstrap_servers, topic, 8)
    assert ops(records) == [(1, "r"), (2, "r"), (3, "r"), (4, "c"), (1, "u"), (5, "c"), (3, "d"), (3, None)]

    execute(postgres_url, "UPDATE items SET label = 'two' WHERE id = 2")
    wait_for_records(bootstrap_servers, topic, 9)
    deadline = time.monotonic() + 60
    while last_offset(bootstrap_servers, debezium_connect.offsets_topic, name, prefix)["lsn"] <= ours["lsn"]:
        assert time.monotonic() < deadline, "Debezium never committed an offset past Kopycat's"
        time.sleep(1)
    debezium_connect.stop_connector(name)
    debezium_connect.wait_for_connector_state(name, "STOPPED", timeout_s=120)
    debezium_connect.delete_connector(name)
    theirs = last_offset(bootstrap_servers, debezium_connect.offsets_topic, name, prefix)

    execute(postgres_url, "INSERT INTO items VALUES (6, 'six')")
    with Kopycat(bootstrap_servers, worker_props=worker) as kc:
        [summary] = kc.run_once(props, Bounds(max_seconds=120), timeout_s=300)
    assert summary is not None and summary.error is None, summary.error if summary else None
    theirs = last_offset(bootstrap_servers, debezium_connect.offsets_topic, name, prefix)
    assert ops(consume_json(bootstrap_servers, topic))[8:] == [(2, "u"), (6, "c")], (ours, theirs)


def test_transaction_metadata_and_blocks_equal_debeziums_field_by_field(
        debezium_connect: LocalKafkaConnect, bootstrap_servers: str, postgres_url: str) -> None:
    run = uuid.uuid4().hex[:8]
    execute(postgres_url, "CREATE TABLE items (id INT PRIMARY KEY, label TEXT)",
            "CREATE TABLE others (id INT PRIMARY KEY, note TEXT)", "CREATE TABLE noise (id INT PRIMARY KEY)",
            "INSERT INTO items VALUES (1, 'one'), (2, 'two')")
    metadata = {"table.include.list": "public.items,public.others", "provide.transaction.metadata": "true",
                "key.converter.schemas.enable": "true", "value.converter.schemas.enable": "true"}
    dbz_prefix, kc_prefix = f"dbz{run}", f"kc{run}"
    dbz = {**connector_props(postgres_url, f"dbz-{run}", dbz_prefix, f"dbz_{run}"), **metadata}
    kc = {**connector_props(postgres_url, f"kc-{run}", kc_prefix, f"kc_{run}"), **metadata}
    start_debezium(debezium_connect, dbz)
    wait_for_records(bootstrap_servers, f"{dbz_prefix}.public.items", 2)
    copy_once(bootstrap_servers, kc, f"offsets-{run}")

    # One transaction over both tables, one per statement after it; "noise" is published but not
    # captured: its transaction is a BEGIN and an END with no events on both sides.
    transaction(postgres_url, "INSERT INTO items VALUES (3, 'three')", "INSERT INTO others VALUES (1, 'a')",
                "UPDATE items SET label = 'uno' WHERE id = 1", "INSERT INTO others VALUES (2, 'b')",
                "INSERT INTO others VALUES (3, 'c')")
    execute(postgres_url, "DELETE FROM items WHERE id = 2", "INSERT INTO noise VALUES (1)",
            "UPDATE others SET note = 'z' WHERE id = 1")
    copy_once(bootstrap_servers, kc, f"offsets-{run}")

    differences: list[str] = []
    for topic, count in (("transaction", 8), ("public.items", 6), ("public.others", 4)):
        theirs = wait_for_records(bootstrap_servers, f"{dbz_prefix}.{topic}", count)
        ours = consume_json(bootstrap_servers, f"{kc_prefix}.{topic}")
        differences += [f"{topic}: {d}" for d in compared(ours, theirs, kc_prefix, dbz_prefix)]
    assert not differences, "\n".join(differences)
    statuses = [(v["payload"]["status"], v["payload"]["event_count"])
                for _, v in consume_json(bootstrap_servers, f"{kc_prefix}.transaction")]
    assert statuses == [("BEGIN", None), ("END", 5), ("BEGIN", None), ("END", 1), ("BEGIN", None), ("END", 0),
                        ("BEGIN", None), ("END", 1)]

    ours = last_offset(bootstrap_servers, f"offsets-{run}", f"kc-{run}", kc_prefix)
    deadline = time.monotonic() + 60
    while (theirs := last_offset(bootstrap_servers, debezium_connect.offsets_topic, f"dbz-{run}",
                                 dbz_prefix)).get("lsn") != ours["lsn"]:
        assert time.monotonic() < deadline, f"Debezium never stored the offset of the last END: {theirs} {ours}"
        time.sleep(1)
    assert ours == theirs  # the END's offset: the same WAL positions, xid, commit time and counts


def test_heartbeat_records_equal_debeziums(
        debezium_connect: LocalKafkaConnect, bootstrap_servers: str, postgres_url: str) -> None:
    run = uuid.uuid4().hex[:8]
    execute(postgres_url, "CREATE TABLE items (id INT PRIMARY KEY)", "INSERT INTO items VALUES (1)")
    beats = {"heartbeat.interval.ms": "500", "key.converter.schemas.enable": "true",
             "value.converter.schemas.enable": "true"}
    dbz_prefix, kc_prefix = f"dbz{run}", f"kc{run}"
    start_debezium(debezium_connect, {**connector_props(postgres_url, f"dbz-{run}", dbz_prefix, f"dbz_{run}"),
                                      **beats})
    wait_for_records(bootstrap_servers, f"{dbz_prefix}.public.items", 1)
    execute(postgres_url, "INSERT INTO items VALUES (2)")
    wait_for_records(bootstrap_servers, f"{dbz_prefix}.public.items", 2)
    copy_once(bootstrap_servers, {**connector_props(postgres_url, f"kc-{run}", kc_prefix, f"kc_{run}"), **beats},
              f"offsets-{run}")
    ours = consume_json(bootstrap_servers, f"__debezium-heartbeat.{kc_prefix}")
    deadline = time.monotonic() + 120
    while not (theirs := _present_topic(bootstrap_servers, f"__debezium-heartbeat.{dbz_prefix}")):
        assert time.monotonic() < deadline, "Debezium sent no heartbeat"
        time.sleep(1)
    assert len(ours) == 1
    assert not compared(ours, theirs[:1], kc_prefix, dbz_prefix), compared(ours, theirs[:1], kc_prefix, dbz_prefix)


def _present_topic(bootstrap: str, topic: str) -> list[tuple[Any, Any]]:
    try:
        return consume_json(bootstrap, topic)
    except (KeyError, AssertionError):
        return []


def test_bulk_transactions_streamed_as_columns_equal_debeziums_field_by_field(
        debezium_connect: LocalKafkaConnect, bootstrap_servers: str, postgres_url: str) -> None:
    """A 300-row INSERT and a 200-row UPDATE (one transaction each) take Kopycat's columnar path
    (a run of at least 64 new rows of one table): the bytes must still be Debezium's, NULLs,
    escapes and every type the path parses included, and so must the offset after the last one."""
    run = uuid.uuid4().hex[:8]
    execute(postgres_url, "CREATE TABLE items (id BIGINT PRIMARY KEY, n INT NOT NULL, small SMALLINT, label TEXT, "
                          "code VARCHAR(30), fixed CHAR(3), amount NUMERIC(10, 2), seen TIMESTAMP, day DATE, "
                          "flag BOOLEAN, uid UUID, doc JSONB, d_text TEXT DEFAULT 'hi')")
    dbz_prefix, kc_prefix = f"dbz{run}", f"kc{run}"
    streaming = {"snapshot.mode": "no_data", "key.converter.schemas.enable": "true",
                 "value.converter.schemas.enable": "true"}
    start_debezium(debezium_connect, {**connector_props(postgres_url, f"dbz-{run}", dbz_prefix, f"dbz_{run}"),
                                      **streaming})
    kc = {**connector_props(postgres_url, f"kc-{run}", kc_prefix, f"kc_{run}"), **streaming}
    copy_once(bootstrap_servers, kc, f"offsets-{run}")  # the slot, before the changes

    execute(postgres_url,
            "INSERT INTO items (id, n, small, label, code, fixed, amount, seen, day, flag, uid, doc) "
            "SELECT n * 10000000000, -n, CASE WHEN n % 5 = 0 THEN NULL ELSE n END, "
            "CASE n % 4 WHEN 0 THEN NULL WHEN 1 THEN 'plain ' || n WHEN 2 THEN 'say \"' || n || E'\" \\\\ tab\\t' "
            "ELSE 'é 漢 😀 ' || n END, 'c' || n, lpad((n % 1000)::text, 3), n / 7.0 - 20, "
            "TIMESTAMP '1969-12-31 23:59:58' + n * INTERVAL '1.000123 second', DATE '1960-02-29' + n * 97, "
            "n % 2 = 0, md5(n::text)::uuid, jsonb_build_object('n', n, 's', 'q\"' || n) "
            "FROM generate_series(1, 300) n",
            "UPDATE items SET label = 'up ' || n, amount = NULL, flag = NOT flag WHERE n >= -200")
    copy_once(bootstrap_servers, kc, f"offsets-{run}")

    topic = "public.items"
    theirs = wait_for_records(bootstrap_servers, f"{dbz_prefix}.{topic}", 500)
    ours = consume_json(bootstrap_servers, f"{kc_prefix}.{topic}")
    assert len(ours) == len(theirs), (ops(ours)[:5], len(ours))
    differences = compared(ours, theirs, kc_prefix, dbz_prefix)
    assert not differences, "\n".join(differences[:20])

    our_offset = last_offset(bootstrap_servers, f"offsets-{run}", f"kc-{run}", kc_prefix)
    assert our_offset["messageType"] == "COMMIT" and our_offset["lsn"] == our_offset["lsn_commit"]
    java_offset = debezium_offset_like(our_offset, bootstrap_servers, debezium_connect.offsets_topic,
                                       f"dbz-{run}", dbz_prefix)
    assert set(our_offset) == set(java_offset) - {"transaction_id"}, (our_offset, java_offset)


def test_bulk_snapshot_read_as_columns_equals_debeziums_field_by_field(
        debezium_connect: LocalKafkaConnect, bootstrap_servers: str, postgres_url: str) -> None:
    """Two tables of 300 and 100 rows take Kopycat's columnar snapshot (chunks of at least 64 rows):
    the ``r`` events must still be Debezium's, NULLs, escapes, every type the path parses and the
    source block's snapshot marks (first, first_in_data_collection, last_in_data_collection, last)
    included, and so must the offset after the last one."""
    run = uuid.uuid4().hex[:8]
    execute(postgres_url, "CREATE TABLE a_items (id BIGINT PRIMARY KEY, n INT NOT NULL, small SMALLINT, label TEXT, "
                          "code VARCHAR(30), fixed CHAR(3), amount NUMERIC(10, 2), seen TIMESTAMP, day DATE, "
                          "flag BOOLEAN, uid UUID, doc JSONB, ratio DOUBLE PRECISION, at TIMESTAMPTZ, "
                          "d_text TEXT DEFAULT 'hi')",
            "INSERT INTO a_items (id, n, small, label, code, fixed, amount, seen, day, flag, uid, doc, ratio, at) "
            "SELECT n * 10000000000, -n, CASE WHEN n % 5 = 0 THEN NULL ELSE n END, "
            "CASE n % 4 WHEN 0 THEN NULL WHEN 1 THEN 'plain ' || n WHEN 2 THEN 'say \"' || n || E'\" \\\\ tab\\t' "
            "ELSE 'é 漢 😀 ' || n END, 'c' || n, lpad((n % 1000)::text, 3), n / 7.0 - 20, "
            "TIMESTAMP '1969-12-31 23:59:58' + n * INTERVAL '1.000123 second', DATE '1960-02-29' + n * 97, "
            "n % 2 = 0, md5(n::text)::uuid, jsonb_build_object('n', n, 's', 'q\"' || n), n / 3.0, "
            "TIMESTAMPTZ '2024-01-01 10:00:00.5+02' + n * INTERVAL '1.25 second' FROM generate_series(1, 300) n",
            "CREATE TABLE b_items (id INT PRIMARY KEY, label TEXT NOT NULL)",
            "INSERT INTO b_items SELECT n, 'b ' || n FROM generate_series(1, 100) n")
    dbz_prefix, kc_prefix = f"dbz{run}", f"kc{run}"
    tables = {"table.include.list": "public.a_items,public.b_items"}
    start_debezium(debezium_connect, {**connector_props(postgres_url, f"dbz-{run}", dbz_prefix, f"dbz_{run}"),
                                      **tables})
    kc = {**connector_props(postgres_url, f"kc-{run}", kc_prefix, f"kc_{run}"), **tables,
          "key.converter.schemas.enable": "true", "value.converter.schemas.enable": "true"}
    copy_once(bootstrap_servers, kc, f"offsets-{run}")

    for topic, count in (("public.a_items", 300), ("public.b_items", 100)):
        theirs = wait_for_records(bootstrap_servers, f"{dbz_prefix}.{topic}", count)
        ours = consume_json(bootstrap_servers, f"{kc_prefix}.{topic}")
        assert len(ours) == len(theirs) == count, (ops(ours)[:5], len(ours))
        differences = compared(ours, theirs, kc_prefix, dbz_prefix)
        assert not differences, "\n".join(differences[:20])
        marks = [value["payload"]["source"]["snapshot"] for _, value in ours]
        assert marks[1:-1] == ["true"] * (count - 2)
        assert (marks[0], marks[-1]) == (("first", "last_in_data_collection") if topic == "public.a_items"
                                         else ("first_in_data_collection", "last"))

    our_offset = last_offset(bootstrap_servers, f"offsets-{run}", f"kc-{run}", kc_prefix)
    assert our_offset["last_snapshot_record"] is True and our_offset["snapshot_completed"] is True
    java_offset = debezium_offset_like(our_offset, bootstrap_servers, debezium_connect.offsets_topic,
                                       f"dbz-{run}", dbz_prefix)
    assert set(our_offset) == set(java_offset) - {"transaction_id"}, (our_offset, java_offset)


def debezium_offset_like(our_offset: dict[str, Any], bootstrap_servers: str, offsets_topic: str, name: str,
                         prefix: str) -> dict[str, Any]:
    """Debezium's last stored offset once it has Kopycat's keys, or the last one read after 180 s.

    Debezium's worker flushes its offsets on its own clock: its records can be in the topic while its
    stored offset is still an earlier change's (a loaded machine showed the first INSERT's).
    """
    deadline = time.monotonic() + 180
    while True:
        java_offset = last_offset(bootstrap_servers, offsets_topic, name, prefix)
        if set(our_offset) == set(java_offset) - {"transaction_id"} or time.monotonic() > deadline:
            return java_offset
        time.sleep(1)

"""Heartbeats confirm an idle slot past WAL that has no captured change, and run heartbeat.action.query.

The publication holds only ``items`` (publication.autocreate.mode=filtered): writes to other tables
make WAL the slot decodes but never sends, and writes to another database WAL it never decodes.
Without heartbeats the stored offset and the slot would stay at the last captured commit and
PostgreSQL would keep that WAL; with them each bounded run ends with a heartbeat carrying the
run's end position, and the slot is confirmed there.
"""

from __future__ import annotations

import uuid

import psycopg
import pytest

from kopycat.dev.postgres import LocalPostgres
from kopycat.embedded import Kopycat
from kopycat.runtime.bounds import Bounds
from tests.support.cdc import confirmed_flush, connector_props, consume_json, dsn, execute, last_offset, wal_position
from tests.support.kafka import consume_records

pytestmark = pytest.mark.timeout(600)


def beats_run(url: str) -> int:
    with psycopg.connect(dsn(url), autocommit=True) as conn:
        row = conn.execute("SELECT count(*) FROM beats").fetchone()
    assert row is not None
    return int(row[0])


def test_an_idle_slot_is_confirmed_past_unpublished_wal_by_heartbeats_that_run_the_action_query(
        bootstrap_servers: str, postgres_server: LocalPostgres, postgres_url: str) -> None:
    run = uuid.uuid4().hex[:8]
    name, prefix, slot, offsets_topic = f"hb-{run}", f"hb{run}", f"hb_{run}", f"offsets-{run}"
    execute(postgres_url, "CREATE TABLE items (id INT PRIMARY KEY, label TEXT)",
            "CREATE TABLE noise (id INT PRIMARY KEY, pad TEXT)", "CREATE TABLE beats (n SERIAL PRIMARY KEY)",
            "INSERT INTO items VALUES (1, 'one')")
    props = {**connector_props(postgres_url, name, prefix, slot), "publication.autocreate.mode": "filtered",
             "heartbeat.interval.ms": "1000", "heartbeat.action.query": "INSERT INTO beats DEFAULT VALUES"}
    worker = {"offset.storage.topic": offsets_topic, "offset.storage.replication.factor": "1",
              "offset.storage.partitions": "1", "offset.flush.interval.ms": "500"}

    def copy() -> None:
        with Kopycat(bootstrap_servers, worker_props=worker) as kc:
            [summary] = kc.run_once(props, Bounds(max_seconds=120), timeout_s=300)
        assert summary is not None and summary.error is None, summary.error if summary else None

    copy()  # the snapshot, then a heartbeat at the end of the (empty) stream
    assert [k["payload"]["id"] for k, _ in consume_json(bootstrap_servers, f"{prefix}.public.items")] == [1]
    after_snapshot = confirmed_flush(postgres_url, slot)

    execute(postgres_url, "INSERT INTO noise SELECT n, repeat('x', 200) FROM generate_series(1, 2000) n")
    elsewhere = postgres_server.create_database(f"other_{run}")  # another database's WAL: never decoded here
    execute(elsewhere, "CREATE TABLE busy (id INT)", "INSERT INTO busy SELECT generate_series(1, 2000)")
    noise_end = wal_position(postgres_url)
    assert noise_end > after_snapshot
    copy()  # nothing captured: only the heartbeat moves the offset
    offset = last_offset(bootstrap_servers, offsets_topic, name, prefix)
    assert offset["lsn"] == offset["lsn_commit"] >= noise_end, (offset, noise_end)
    assert confirmed_flush(postgres_url, slot) == offset["lsn_commit"]
    assert len(consume_json(bootstrap_servers, f"{prefix}.public.items")) == 1

    beats = consume_records(bootstrap_servers, f"__debezium-heartbeat.{prefix}")
    assert len(beats) == 2 == beats_run(postgres_url)  # one per run; the action query once per heartbeat
    assert {m.partition() for m in beats} == {0}
    key, value = consume_json(bootstrap_servers, f"__debezium-heartbeat.{prefix}")[-1]
    assert key == {"schema": {"type": "struct", "fields": [{"type": "string", "optional": False,
                                                             "field": "serverName"}],
                              "optional": False, "name": "io.debezium.connector.common.ServerNameKey",
                              "version": 1}, "payload": {"serverName": prefix}}
    assert value["schema"]["name"] == "io.debezium.connector.common.Heartbeat"
    assert [f["field"] for f in value["schema"]["fields"]] == ["ts_ms"] and value["payload"]["ts_ms"] > 0

    execute(postgres_url, "INSERT INTO items VALUES (2, 'two')")
    copy()  # a captured change after the heartbeat's position is copied once
    events = consume_json(bootstrap_servers, f"{prefix}.public.items")
    assert [(k["payload"]["id"], v["payload"]["op"]) for k, v in events] == [(1, "r"), (2, "c")]
    offset = last_offset(bootstrap_servers, offsets_topic, name, prefix)
    assert confirmed_flush(postgres_url, slot) == offset["lsn_commit"]
    assert len(consume_records(bootstrap_servers, f"__debezium-heartbeat.{prefix}")) == beats_run(postgres_url)

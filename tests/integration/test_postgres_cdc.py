"""PostgreSQL CDC (Debezium's PostgresConnector) in exact bounded runs on a real server and broker.

Two runs with writes between them copy every change exactly once, in commit order per key; after
each run the slot's confirmed_flush_lsn is the stored offset's lsn.
"""

from __future__ import annotations

import uuid

import psycopg
import pytest

from kopycat.embedded import Kopycat
from kopycat.runtime.bounds import Bounds
from tests.support.cdc import confirmed_flush, connector_props, consume_json, dsn, execute, last_offset

pytestmark = pytest.mark.timeout(600)


def test_two_bounded_runs_copy_each_change_once_in_commit_order_and_confirm_the_slot_at_the_offset(
        bootstrap_servers: str, postgres_url: str) -> None:
    run = uuid.uuid4().hex[:8]
    name, prefix, slot, offsets_topic = f"cdc-{run}", f"pg{run}", f"slot_{run}", f"offsets-{run}"
    execute(postgres_url, "CREATE TABLE items (id INT PRIMARY KEY, label TEXT, amount NUMERIC(10, 2), "
                          "seen TIMESTAMP)",
            "INSERT INTO items SELECT n, 'before ' || n, n / 4.0, TIMESTAMP '2024-01-01' FROM generate_series(1, 5) n")
    props = connector_props(postgres_url, name, prefix, slot)
    worker = {"offset.storage.topic": offsets_topic, "offset.storage.replication.factor": "1",
              "offset.storage.partitions": "1", "offset.flush.interval.ms": "500"}
    topic = f"{prefix}.public.items"

    with Kopycat(bootstrap_servers, worker_props=worker) as kc:
        [summary] = kc.run_once(props, Bounds(max_seconds=120), timeout_s=300)
    assert summary is not None and summary.error is None, summary.error if summary else None
    events = consume_json(bootstrap_servers, topic)
    assert [(k["payload"]["id"], v["payload"]["op"]) for k, v in events] == [(n, "r") for n in range(1, 6)]
    first = events[0][1]
    assert first["schema"]["name"] == f"{topic}.Envelope"
    assert [f["field"] for f in first["schema"]["fields"]] == [
        "before", "after", "source", "transaction", "op", "ts_ms", "ts_us", "ts_ns"]
    assert first["payload"]["after"] == {"id": 1, "label": "before 1", "amount": "GQ==",
                                         "seen": 1_704_067_200_000_000}
    assert first["payload"]["source"]["snapshot"] == "first"

    execute(postgres_url, "INSERT INTO items VALUES (6, 'six', 6.5, NULL)",
            "UPDATE items SET label = 'changed' WHERE id IN (1, 6)", "DELETE FROM items WHERE id = 2",
            "ALTER TABLE items REPLICA IDENTITY FULL", "UPDATE items SET amount = 9.99 WHERE id = 3")
    with Kopycat(bootstrap_servers, worker_props=worker) as kc:
        [summary] = kc.run_once(props, Bounds(max_seconds=120), timeout_s=300)
    assert summary is not None and summary.error is None, summary.error if summary else None
    events = consume_json(bootstrap_servers, topic)[5:]
    changes = [(k["payload"]["id"], v["payload"]["op"] if v else None) for k, v in events]
    assert changes == [(6, "c"), (1, "u"), (6, "u"), (2, "d"), (2, None), (3, "u")]
    update = events[-1][1]["payload"]
    assert update["before"]["amount"] == "Sw==" and update["after"]["amount"] == "A+c="  # 0.75 -> 9.99
    source = update["source"]
    assert (source["connector"], source["name"], source["schema"], source["table"]) == (
        "postgresql", prefix, "public", "items")
    offset = last_offset(bootstrap_servers, offsets_topic, name, prefix)
    assert offset["lsn"] == offset["lsn_commit"] == confirmed_flush(postgres_url, slot)

    with Kopycat(bootstrap_servers, worker_props=worker) as kc:  # nothing new: nothing copied again
        [summary] = kc.run_once(props, Bounds(max_seconds=120), timeout_s=300)
    assert summary is not None and summary.error is None and summary.records == 0
    assert len(consume_json(bootstrap_servers, topic)) == 11


def test_no_data_streams_only_changes_after_the_slot_through_a_filtered_publication(
        bootstrap_servers: str, postgres_url: str) -> None:
    run = uuid.uuid4().hex[:8]
    name, prefix, slot = f"cdc-{run}", f"pg{run}", f"slot_{run}"
    execute(postgres_url, "CREATE TABLE items (id INT PRIMARY KEY, label TEXT)",
            "CREATE TABLE other (id INT PRIMARY KEY)", "INSERT INTO items VALUES (1, 'old')")
    props = {**connector_props(postgres_url, name, prefix, slot), "snapshot.mode": "no_data",
             "publication.autocreate.mode": "filtered"}
    worker = {"offset.storage.topic": f"offsets-{run}", "offset.storage.replication.factor": "1",
              "offset.storage.partitions": "1", "offset.flush.interval.ms": "500"}
    with Kopycat(bootstrap_servers, worker_props=worker) as kc:  # creates the slot; nothing to copy yet
        [summary] = kc.run_once(props, Bounds(max_seconds=120), timeout_s=300)
    assert summary is not None and summary.error is None and summary.records == 0

    execute(postgres_url, "INSERT INTO items VALUES (2, 'new')", "INSERT INTO other VALUES (1)")
    with Kopycat(bootstrap_servers, worker_props=worker) as kc:
        [summary] = kc.run_once(props, Bounds(max_seconds=120), timeout_s=300)
    assert summary is not None and summary.error is None, summary.error if summary else None
    events = consume_json(bootstrap_servers, f"{prefix}.public.items")
    assert [(k["payload"]["id"], v["payload"]["op"]) for k, v in events] == [(2, "c")]
    with psycopg.connect(dsn(postgres_url)) as conn:
        tables = conn.execute("SELECT tablename FROM pg_publication_tables WHERE pubname = %s",
                              (f"pub_{slot}",)).fetchall()
    assert tables == [("items",)]


def test_a_run_longer_than_many_polls_and_commits_copies_every_change_once(
        bootstrap_servers: str, postgres_url: str) -> None:
    run = uuid.uuid4().hex[:8]
    name, prefix, slot = f"cdc-{run}", f"pg{run}", f"slot_{run}"
    execute(postgres_url, "CREATE TABLE items (id INT PRIMARY KEY, label TEXT)")
    props = {**connector_props(postgres_url, name, prefix, slot), "snapshot.mode": "never", "max.batch.size": "100"}
    worker = {"offset.storage.topic": f"offsets-{run}", "offset.storage.replication.factor": "1",
              "offset.storage.partitions": "1", "offset.flush.interval.ms": "50"}
    with Kopycat(bootstrap_servers, worker_props=worker) as kc:
        kc.run_once(props, Bounds(max_seconds=120), timeout_s=300)

    execute(postgres_url, "INSERT INTO items SELECT n, 'bulk' FROM generate_series(1, 5000) n",
            *[f"INSERT INTO items VALUES ({n}, 'single')" for n in range(5001, 5301)])
    with Kopycat(bootstrap_servers, worker_props=worker) as kc:
        [summary] = kc.run_once(props, Bounds(max_seconds=300), timeout_s=400)
    assert summary is not None and summary.error is None, summary.error if summary else None
    ids = [k["payload"]["id"] for k, _ in consume_json(bootstrap_servers, f"{prefix}.public.items")]
    assert ids == list(range(1, 5301))
    assert last_offset(bootstrap_servers, f"offsets-{run}", name, prefix)["lsn"] == confirmed_flush(postgres_url, slot)

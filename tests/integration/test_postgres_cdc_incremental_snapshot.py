"""An execute-snapshot signal re-reads a streamed table in chunks while writers change the same keys.

``items`` (5,000 rows) is streamed with snapshot.mode=no_data; a writer thread updates, deletes
and re-inserts random keys the whole time, each write stamping the row with the next value of a
sequence (``version``), under REPLICA IDENTITY FULL so a delete event carries the deleted version.
The signal asks for an incremental snapshot; bounded runs with a record budget stop mid-snapshot
and the next run reads on from the stored incremental_snapshot_primary_key (in the kill test,
``kopycat standalone`` is killed -9 twice mid-snapshot and restarted). Then:

- the topic's latest event per key equals the table (0 lost keys, no deleted key alive);
- every row the writer never touched has exactly one ``r`` event, with the row's values;
- no ``r`` event is older than a change of its key streamed before it (DBLog): its version is at
  least the last streamed version of the key, and above a streamed delete's;
- no key has two ``r`` events after clean stops: a resumed run starts after the last key Kafka
  holds (after a kill -9, at least once: rows after the last stored key may be read again).
"""

from __future__ import annotations

import random
import signal
import subprocess
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest

from kopycat.api.errors import ConnectError
from kopycat.connectors.postgres_cdc.config import CdcSettings
from kopycat.connectors.postgres_cdc.incremental_snapshot import IncrementalSnapshot
from kopycat.connectors.postgres_cdc.java_keys import read_keys
from kopycat.embedded import Kopycat
from kopycat.runtime.bounds import Bounds
from kopycat.storage.file_offset_store import loads_offsets
from kopycat.storage.offset_codec import decode_value
from tests.support.cdc import (
    connector_props,
    consume_json,
    dsn,
    execute,
    last_offset,
    released_slots,
)
from tests.support.standalone import start_worker, write_props

pytestmark = [pytest.mark.timeout(1200), pytest.mark.usefixtures("released_slots")]

__all__ = ["released_slots"]  # the fixture pytestmark uses

ROWS, CHUNK = 5000, 400
SIGNAL = '{"data-collections": ["public.items"], "type": "incremental"}'


class Writer(threading.Thread):
    """Random updates, deletes and re-inserts of keys 1..ROWS+200, one transaction each, until halted."""

    def __init__(self, url: str) -> None:
        super().__init__(daemon=True)
        self.url, self.halted, self.writes, self.touched = url, threading.Event(), 0, set[int]()
        self.error: BaseException | None = None

    def run(self) -> None:
        rng = random.Random(3306)
        try:
            with psycopg.connect(dsn(self.url), autocommit=True) as conn:
                while not self.halted.is_set():
                    key, roll = rng.randint(1, ROWS + 200), rng.random()
                    if roll < 0.7:
                        conn.execute("UPDATE items SET label = 'upd', version = nextval('versions') WHERE id = %s",
                                     (key,))
                    elif roll < 0.85:
                        conn.execute("DELETE FROM items WHERE id = %s", (key,))
                    else:
                        conn.execute("INSERT INTO items VALUES (%s, 'ins', nextval('versions')) ON CONFLICT (id) "
                                     "DO UPDATE SET label = EXCLUDED.label, version = EXCLUDED.version", (key,))
                    self.touched.add(key)
                    self.writes += 1
                    self.halted.wait(0.002)
        except BaseException as exc:  # noqa: BLE001 - reported by the test thread
            self.error = exc


def table_rows(url: str) -> dict[int, tuple[str, int]]:
    with psycopg.connect(dsn(url), autocommit=True) as conn:
        return {row[0]: (row[1], row[2]) for row in conn.execute("SELECT id, label, version FROM items")}


def slot_exists(url: str, slot: str) -> bool:
    with psycopg.connect(dsn(url), autocommit=True) as conn:
        return conn.execute("SELECT 1 FROM pg_replication_slots WHERE slot_name = %s", (slot,)).fetchone() is not None


def create_items(url: str) -> None:
    execute(url, "CREATE SEQUENCE versions",
            "CREATE TABLE items (id INT PRIMARY KEY, label TEXT, version BIGINT NOT NULL)",
            "ALTER TABLE items REPLICA IDENTITY FULL",
            f"INSERT INTO items SELECT n, 'row ' || n, nextval('versions') FROM generate_series(1, {ROWS}) n",
            "CREATE TABLE dbz_signal (id VARCHAR(42) PRIMARY KEY, type VARCHAR(32) NOT NULL, data VARCHAR(2048))")


def incremental_props(url: str, name: str, prefix: str, slot: str) -> dict[str, str]:
    return {**connector_props(url, name, prefix, slot), "snapshot.mode": "no_data",
            "signal.data.collection": "public.dbz_signal", "incremental.snapshot.chunk.size": str(CHUNK),
            "max.batch.size": "300", "key.converter.schemas.enable": "false",
            "value.converter.schemas.enable": "false"}


def mismatches(events: list[tuple[Any, Any]], rows: dict[int, tuple[str, int]]) -> tuple[list[int], ...]:
    """Keys of the table whose latest event is missing or a delete, keys alive only in the topic, and
    keys whose latest values differ from the table."""
    latest: dict[int, Any] = {}
    for key, value in events:
        if value is not None:
            latest[key["id"]] = value
    lost = [k for k in rows if k not in latest or latest[k]["op"] == "d"]
    alive = [k for k, v in latest.items() if v["op"] != "d" and k not in rows]
    wrong = [k for k in rows if k in latest and latest[k]["op"] != "d"
             and (latest[k]["after"]["label"], latest[k]["after"]["version"]) != rows[k]]
    return lost, alive, wrong


def stale_reads(events: list[tuple[Any, Any]]) -> list[tuple[int, int, float]]:
    """``r`` events older than a change of their key streamed before them (the DBLog guarantee broken)."""
    floor: dict[int, float] = {}  # per key: the newest streamed version seen so far (+0.5 after a delete)
    stale = []
    for key, value in events:
        if value is None:
            continue
        op, ident = value["op"], key["id"]
        if op == "r":
            if value["after"]["version"] < floor.get(ident, 0):
                stale.append((ident, value["after"]["version"], floor[ident]))
        elif op == "d":
            floor[ident] = max(floor.get(ident, 0), value["before"]["version"] + 0.5)
        else:
            floor[ident] = max(floor.get(ident, 0), value["after"]["version"])
    return stale


def test_a_signalled_incremental_snapshot_under_concurrent_writes_loses_no_key_and_keeps_dblog_order(
        bootstrap_servers: str, postgres_url: str) -> None:
    run = uuid.uuid4().hex[:8]
    name, prefix, slot, offsets_topic = f"inc-{run}", f"inc{run}", f"slot_inc_{run}", f"offsets-inc-{run}"
    create_items(postgres_url)
    props = incremental_props(postgres_url, name, prefix, slot)
    worker = {"offset.storage.topic": offsets_topic, "offset.storage.replication.factor": "1",
              "offset.storage.partitions": "1", "offset.flush.interval.ms": "200"}
    topic = f"{prefix}.public.items"

    def copy(bounds: Bounds) -> int:
        with Kopycat(bootstrap_servers, worker_props=worker) as kc:
            [summary] = kc.run_once(props, bounds, timeout_s=600)
        assert summary is not None and summary.error is None, summary.error if summary else None
        return summary.records

    copy(Bounds(max_seconds=120))  # the slot: no data, nothing to copy
    untouched_before = table_rows(postgres_url)
    writer = Writer(postgres_url)
    writer.start()
    try:
        execute(postgres_url, f"INSERT INTO dbz_signal VALUES ('snap-{run}', 'execute-snapshot', '{SIGNAL}')")
        resumed_from: list[Any] = []
        for _ in range(30):  # each run stops after its budget, mid-snapshot, until the snapshot is done
            copy(Bounds(max_records=1500, max_seconds=300))
            offset = last_offset(bootstrap_servers, offsets_topic, name, prefix)
            if "incremental_snapshot_primary_key" not in offset:
                break
            resumed_from.append(read_keys(offset["incremental_snapshot_primary_key"]))
        else:
            pytest.fail(f"the incremental snapshot did not finish in 30 runs: {offset}")
    finally:
        writer.halted.set()
        writer.join(60)
    assert writer.error is None, writer.error
    copy(Bounds(max_seconds=300))  # the stream's tail after the writer stopped

    events = consume_json(bootstrap_servers, topic)
    rows = table_rows(postgres_url)
    lost, alive, wrong = mismatches(events, rows)
    assert (lost, alive, wrong) == ([], [], []), (lost[:10], alive[:10], wrong[:10])

    reads = [(key["id"], value["after"]) for key, value in events if value is not None and value["op"] == "r"]
    duplicates = sum(n - 1 for n in Counter(k for k, _ in reads).values())
    assert duplicates == 0
    untouched = {k: v for k, v in untouched_before.items() if k not in writer.touched}
    read_values = dict(reads)
    assert {k: (read_values[k]["label"], read_values[k]["version"]) for k in untouched if k in read_values} \
        == untouched and untouched.keys() <= read_values.keys()
    assert all(v["source"]["snapshot"] == "incremental" for _, v in events if v is not None and v["op"] == "r")

    assert stale_reads(events) == [], stale_reads(events)[:10]
    with psycopg.connect(dsn(postgres_url), autocommit=True) as conn:
        marks = dict(conn.execute("SELECT type, count(*) FROM dbz_signal GROUP BY type").fetchall())
    chunks = marks.get("snapshot-window-close", 0)  # insert_insert: both watermarks of every chunk stay
    assert marks.get("snapshot-window-open") == chunks and chunks >= ROWS // CHUNK, marks
    streamed_instead = sum(1 for k in rows if k not in read_values)
    assert resumed_from and all(isinstance(k, list) and 1 <= k[0] <= ROWS + 200 for k in resumed_from), resumed_from
    print(f"incremental snapshot: {ROWS} rows, {chunks} chunks of {CHUNK}, {len(reads)} r events "
          f"({len(untouched)} untouched rows all read), {len(events)} events, {writer.writes} concurrent writes, "
          f"{len(resumed_from) + 1} runs (resumed after keys {[k[0] for k in resumed_from]}), 0 lost, "
          f"{duplicates} duplicates, {streamed_instead} rows of the table only streamed (changed inside a window)")


def test_stop_snapshot_ends_the_chunk_in_flight_and_a_later_signal_snapshots_again(
        bootstrap_servers: str, postgres_url: str) -> None:
    run = uuid.uuid4().hex[:8]
    name, prefix, slot, offsets_topic = f"stop-{run}", f"stop{run}", f"slot_stop_{run}", f"offsets-stop-{run}"
    execute(postgres_url, "CREATE TABLE items (id INT PRIMARY KEY, label TEXT)",
            "INSERT INTO items SELECT n, 'row ' || n FROM generate_series(1, 50) n",
            "CREATE TABLE dbz_signal (id VARCHAR(42) PRIMARY KEY, type VARCHAR(32) NOT NULL, data VARCHAR(2048))")
    props = {**connector_props(postgres_url, name, prefix, slot), "snapshot.mode": "no_data",
             "signal.data.collection": "public.dbz_signal", "incremental.snapshot.chunk.size": "10",
             "key.converter.schemas.enable": "false", "value.converter.schemas.enable": "false",
             "publication.autocreate.mode": "filtered"}
    worker = {"offset.storage.topic": offsets_topic, "offset.storage.replication.factor": "1",
              "offset.storage.partitions": "1", "offset.flush.interval.ms": "200"}

    def copy() -> None:
        with Kopycat(bootstrap_servers, worker_props=worker) as kc:
            [summary] = kc.run_once(props, Bounds(max_seconds=300), timeout_s=600)
        assert summary is not None and summary.error is None, summary.error if summary else None

    copy()
    # The first chunk is read at the execute signal's commit; its close watermark comes after the
    # stop signal in the WAL, so it is no longer expected and the chunk is never emitted.
    execute(postgres_url, f"INSERT INTO dbz_signal VALUES ('go-{run}', 'execute-snapshot', '{SIGNAL}')",
            f"INSERT INTO dbz_signal VALUES ('stop-{run}', 'stop-snapshot', '{SIGNAL}')",
            "UPDATE items SET label = 'changed' WHERE id = 3")
    copy()
    events = consume_json(bootstrap_servers, f"{prefix}.public.items")
    assert [(k["id"], v["op"]) for k, v in events] == [(3, "u")]
    assert "incremental_snapshot_collections" not in last_offset(bootstrap_servers, offsets_topic, name, prefix)

    execute(postgres_url, f"INSERT INTO dbz_signal VALUES ('again-{run}', 'execute-snapshot', '{SIGNAL}')")
    copy()
    reads = [k["id"] for k, v in consume_json(bootstrap_servers, f"{prefix}.public.items")[1:] if v["op"] == "r"]
    assert reads == list(range(1, 51))
    with psycopg.connect(dsn(postgres_url), autocommit=True) as conn:
        published = conn.execute("SELECT tablename FROM pg_publication_tables WHERE pubname = %s ORDER BY 1",
                                 (f"pub_{slot}",)).fetchall()
    assert published == [("dbz_signal",), ("items",)]  # filtered: the signal table's rows reach the slot too


def test_kill_9_mid_snapshot_resumes_from_the_stored_key_with_no_lost_key(
        bootstrap_servers: str, postgres_url: str, tmp_path: Path) -> None:
    run = uuid.uuid4().hex[:8]
    name, prefix, slot = f"kill-{run}", f"kill{run}", f"slot_kill_{run}"
    create_items(postgres_url)
    offsets = tmp_path / "connect.offsets"
    worker = write_props(tmp_path / "worker.properties", {
        "bootstrap.servers": bootstrap_servers, "offset.storage.file.filename": str(offsets),
        "offset.flush.interval.ms": "200"})
    connector = write_props(tmp_path / "connector.properties", {
        **incremental_props(postgres_url, name, prefix, slot), "incremental.snapshot.chunk.size": "50",
        "max.batch.size": "100", "poll.interval.ms": "100"})
    log = tmp_path / "worker.log"

    def committed() -> dict[str, Any]:
        stored = loads_offsets(offsets.read_bytes(), str(offsets)) if offsets.exists() else {}
        return next((decode_value(v) for v in stored.values() if v is not None), {})

    def stored_key() -> list[Any] | None:
        key = committed().get("incremental_snapshot_primary_key")
        return read_keys(key) if key else None

    def wait_for(condition: Callable[[], bool], what: str, process: subprocess.Popen[bytes]) -> None:
        deadline = time.monotonic() + 300
        while not condition():
            assert process.poll() is None, f"worker exited: {log.read_text()[-3000:]}"
            assert time.monotonic() < deadline, f"{what}: {log.read_text()[-3000:]}"
            time.sleep(0.1)

    process = start_worker(worker, connector, log)
    wait_for(lambda: slot_exists(postgres_url, slot), "the task did not create its slot", process)  # the signal's past
    writer = Writer(postgres_url)
    writer.start()
    killed_at: list[Any] = []
    try:
        execute(postgres_url, f"INSERT INTO dbz_signal VALUES ('snap-{run}', 'execute-snapshot', '{SIGNAL}')")
        for _ in range(2):  # kill -9 once a mid-snapshot key is stored, twice
            before = stored_key()
            wait_for(lambda b=before: stored_key() not in (None, b), "no new snapshot key was stored", process)
            process.send_signal(signal.SIGKILL)
            process.wait(30)
            killed_at.append(stored_key())
            process = start_worker(worker, connector, log)
        wait_for(lambda: "incremental_snapshot_collections" not in committed(), "the snapshot never ended",
                 process)
    finally:
        writer.halted.set()
        writer.join(60)
    assert writer.error is None, writer.error
    rows = table_rows(postgres_url)
    topic = f"{prefix}.public.items"
    wait_for(lambda: mismatches(consume_json(bootstrap_servers, topic), rows) == ([], [], []),
             "the topic never matched the table", process)
    process.send_signal(signal.SIGTERM)
    assert process.wait(120) == 0, log.read_text()[-3000:]

    events = consume_json(bootstrap_servers, topic)
    assert stale_reads(events) == [], stale_reads(events)[:10]
    reads = Counter(key["id"] for key, value in events if value is not None and value["op"] == "r")
    untouched = [k for k in rows if k not in writer.touched]
    assert all(reads[k] >= 1 for k in untouched), [k for k in untouched if not reads[k]][:10]
    assert all(k is not None and 1 <= k[0] <= ROWS + 200 for k in killed_at), killed_at
    print(f"incremental snapshot kill -9: {sum(reads.values())} r events ({len(reads)} keys, "
          f"{sum(n - 1 for n in reads.values())} re-read after kills at keys {[k[0] for k in killed_at]}), "
          f"{len(events)} events, {writer.writes} concurrent writes, 0 lost")


def test_a_missing_signal_table_fails_the_chunk_with_the_create_statement(postgres_url: str) -> None:
    run = uuid.uuid4().hex[:8]
    props = {**connector_props(postgres_url, f"miss-{run}", f"miss{run}", f"slot_miss_{run}"),
             "signal.data.collection": f"public.missing_{run}"}
    stored = {"incremental_snapshot_collections": '[{"incremental_snapshot_collections_id":"public.items"}]',
              "incremental_snapshot_primary_key": "aced000570"}
    snapshot = IncrementalSnapshot(CdcSettings.parse(props), {"server": f"miss{run}"}, ["public.items"], stored)
    try:
        with pytest.raises(ConnectError, match=f'signal.data.collection=public.missing_{run}: .*CREATE TABLE '
                                               f'"public"."missing_{run}" \\(id VARCHAR\\(42\\) PRIMARY KEY'):
            snapshot.resume()
    finally:
        snapshot.close()

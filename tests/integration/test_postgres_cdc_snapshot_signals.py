"""pause-snapshot, resume-snapshot, additional-conditions and keys beyond integers and text, on a real database.

Each test streams its tables (snapshot.mode=no_data) in bounded runs against one offsets topic,
inserts signals between runs, and asserts on the ``r`` events (keys, counts, 0 lost, 0 duplicate)
and on the stored offsets: the incremental snapshot keys as Debezium stores them, and Kopycat's
``incremental_snapshot_paused`` while paused.
"""

from __future__ import annotations

import datetime as dt
import json
import uuid
from collections import Counter
from decimal import Decimal
from typing import Any

import psycopg
import pytest

from kopycat.connectors.postgres_cdc.java_keys import read_keys
from kopycat.embedded import Kopycat
from kopycat.runtime.bounds import Bounds
from tests.support.cdc import connector_props, consume_json, dsn, execute, last_offset, released_slots

pytestmark = [pytest.mark.timeout(900), pytest.mark.usefixtures("released_slots")]

__all__ = ["released_slots"]  # the fixture pytestmark uses

SIGNAL_TABLE = "CREATE TABLE dbz_signal (id VARCHAR(42) PRIMARY KEY, type VARCHAR(32) NOT NULL, data VARCHAR(2048))"


class Runs:
    """Bounded runs of one connector against one offsets topic, and what they left there."""

    def __init__(self, bootstrap: str, url: str, props: dict[str, str]) -> None:
        self.bootstrap, self.url, self.props = bootstrap, url, props
        self.name, self.prefix = props["name"], props["topic.prefix"]
        self.worker = {"offset.storage.topic": f"offsets-{self.prefix}", "offset.storage.replication.factor": "1",
                       "offset.storage.partitions": "1", "offset.flush.interval.ms": "200"}

    def copy(self, bounds: Bounds | None = None) -> None:
        with Kopycat(self.bootstrap, worker_props=self.worker) as kc:
            [summary] = kc.run_once(self.props, bounds or Bounds(max_seconds=300), timeout_s=600)
        assert summary is not None and summary.error is None, summary.error if summary else None

    def signal(self, kind: str, data: dict[str, Any] | None = None) -> None:
        with psycopg.connect(dsn(self.url), autocommit=True) as conn:
            conn.execute("INSERT INTO dbz_signal VALUES (%s, %s, %s)",
                         (str(uuid.uuid4()), kind, json.dumps(data) if data is not None else None))

    def offset(self) -> dict[str, Any]:
        return last_offset(self.bootstrap, self.worker["offset.storage.topic"], self.name, self.prefix)

    def events(self, table: str = "items") -> list[tuple[Any, Any]]:
        return consume_json(self.bootstrap, f"{self.prefix}.public.{table}")

    def ended(self) -> bool:
        """Whether the offset of a change streamed after the snapshot carries no snapshot keys (as Debezium's:
        the last ``r`` event's offset keeps them until the next record)."""
        execute(self.url, "UPDATE items SET label = 'after' WHERE id = (SELECT min(id) FROM items)")
        self.copy()
        return not any(k.startswith("incremental_snapshot") for k in self.offset())


def runs_for(bootstrap: str, url: str, chunk: int, tables: str = "public.items") -> Runs:
    run = uuid.uuid4().hex[:8]
    props = {**connector_props(url, f"sig-{run}", f"sig{run}", f"slot_sig_{run}"), "snapshot.mode": "no_data",
             "signal.data.collection": "public.dbz_signal", "incremental.snapshot.chunk.size": str(chunk),
             "table.include.list": tables, "key.converter.schemas.enable": "false",
             "value.converter.schemas.enable": "false", "max.batch.size": "5"}
    return Runs(bootstrap, url, props)


def reads(events: list[tuple[Any, Any]]) -> list[Any]:
    return [value["after"] for _, value in events if value is not None and value["op"] == "r"]


def test_pause_stops_chunk_reads_while_streaming_goes_on_and_a_restart_stays_paused(
        bootstrap_servers: str, postgres_url: str) -> None:
    execute(postgres_url, "CREATE TABLE items (id INT PRIMARY KEY, label TEXT)",
            "INSERT INTO items SELECT n, 'row ' || n FROM generate_series(1, 100) n", SIGNAL_TABLE)
    runs = runs_for(bootstrap_servers, postgres_url, chunk=10)
    runs.copy()  # the slot
    # The first chunk is read at the execute signal's commit; the pause comes before its close
    # watermark, so that chunk is sent and no other.
    runs.signal("execute-snapshot", {"data-collections": ["public.items"], "type": "incremental"})
    runs.signal("pause-snapshot")
    runs.copy()
    assert [row["id"] for row in reads(runs.events())] == list(range(1, 11))
    paused = runs.offset()
    assert paused["incremental_snapshot_paused"] is True
    assert [read_keys(paused[f"incremental_snapshot_{k}_key"]) for k in ("primary", "maximum")] == [[10], [100]]

    execute(postgres_url, "UPDATE items SET label = 'streamed' WHERE id = 50")
    runs.copy()  # a restart: still paused, the update streams
    events = runs.events()
    assert [(row["id"], row["label"]) for _, v in events if v and v["op"] == "u" for row in [v["after"]]] == \
        [(50, "streamed")]
    assert len(reads(events)) == 10
    assert runs.offset()["incremental_snapshot_paused"] is True

    runs.signal("resume-snapshot")
    runs.copy()
    ids = [row["id"] for row in reads(runs.events())]
    assert ids == list(range(1, 101))  # every row once: 0 lost, 0 duplicates
    assert runs.ended()


def test_additional_conditions_snapshot_only_the_matching_rows_and_store_the_filter_as_debezium(
        bootstrap_servers: str, postgres_url: str) -> None:
    execute(postgres_url, "CREATE TABLE items (id INT PRIMARY KEY, region TEXT, label TEXT)",
            "INSERT INTO items SELECT n, CASE WHEN n % 3 = 0 THEN 'eu' ELSE 'us' END, 'row ' || n "
            "FROM generate_series(1, 200) n", SIGNAL_TABLE)
    runs = runs_for(bootstrap_servers, postgres_url, chunk=8)
    runs.copy()
    # An OR inside the filter must not widen the chunk bounds: Debezium parenthesizes it.
    runs.signal("execute-snapshot", {"data-collections": ["public.items"], "type": "incremental",
                                     "additional-conditions": [{"data-collection": "PUBLIC\\.ITEMS",
                                                                "filter": "region = 'eu' OR id = 1"}]})
    runs.copy(Bounds(max_records=20, max_seconds=300))
    stored = runs.offset()
    [collection] = json.loads(stored["incremental_snapshot_collections"])
    assert collection == {"incremental_snapshot_collections_id": "public.items",
                          "incremental_snapshot_collections_additional_condition": "(region = 'eu' OR id = 1)",
                          "incremental_snapshot_collections_surrogate_key": None}
    assert read_keys(stored["incremental_snapshot_maximum_key"]) == [198]  # the largest matching key
    runs.copy()
    ids = [row["id"] for row in reads(runs.events())]
    expected = [1] + [n for n in range(1, 201) if n % 3 == 0]
    assert ids == expected and len(ids) == len(set(ids))
    assert runs.ended()


KEY_TABLES = {  # table: (primary key DDL, the n-th row's key as SQL)
    "k_uuid": ("id UUID PRIMARY KEY", "md5(n::text)::uuid"),
    "k_numeric": ("id NUMERIC(20, 3) PRIMARY KEY", "n * 1.125 - 30"),
    "k_varnum": ("id NUMERIC PRIMARY KEY", "n / 7.0"),  # VariableScaleDecimal: a struct in the event key
    "k_date": ("id DATE PRIMARY KEY", "DATE '1969-12-20' + n"),
    "k_tstz": ("id TIMESTAMPTZ PRIMARY KEY", "TIMESTAMPTZ '2024-01-01 00:00:00.25+02' + n * INTERVAL '7 hours'"),
    "k_ts": ("id TIMESTAMP PRIMARY KEY", "TIMESTAMP '1999-12-31 23:00' + n * INTERVAL '90 minutes'"),
    "k_pair": ("a BIGINT, b BIGINT, PRIMARY KEY (a, b)", "n / 4 * 5000000000, -n"),
}


def test_keys_of_uuid_numeric_date_timestamps_and_bigint_pairs_resume_from_stored_keys_with_no_loss(
        bootstrap_servers: str, postgres_url: str) -> None:
    statements = [SIGNAL_TABLE, "CREATE TABLE k_inet (id INET PRIMARY KEY)", "INSERT INTO k_inet VALUES ('10.0.0.1')"]
    for table, (key, value) in KEY_TABLES.items():
        columns = "a, b" if table == "k_pair" else "id"
        statements += [f"CREATE TABLE {table} ({key}, label TEXT)", f"INSERT INTO {table} ({columns}, label) "
                       f"SELECT {value}, 'row ' || n FROM generate_series(1, 45) n"]
    execute(postgres_url, *statements)
    runs = runs_for(bootstrap_servers, postgres_url, chunk=7, tables="public.k_.*")
    runs.copy()
    names = [f"public.{t}" for t in [*KEY_TABLES, "k_inet"]]
    runs.signal("execute-snapshot", {"data-collections": names, "type": "incremental"})
    stored: list[dict[str, Any]] = []
    for _ in range(40):  # runs of 25 records: each stops mid-chunk and the next reads on from the stored key
        runs.copy(Bounds(max_records=25, max_seconds=300))
        offset = runs.offset()
        stored.append(offset)
        if len(json.loads(offset["incremental_snapshot_collections"])) == 1 and \
                offset["incremental_snapshot_primary_key"] == offset["incremental_snapshot_maximum_key"]:
            break  # the last table's last row was sent
    else:
        pytest.fail(f"the snapshot did not end in 40 runs: {runs.offset()}")
    queued = {c["incremental_snapshot_collections_id"] for o in stored
              for c in json.loads(o["incremental_snapshot_collections"])}
    assert queued == {f"public.{t}" for t in KEY_TABLES}  # k_inet refused at the signal (its error: unit-tested)
    for table in KEY_TABLES:  # each table has 45 rows, none changed: each read once
        events = reads(runs.events(table))
        keys = Counter(f"{r['a']},{r['b']}" if table == "k_pair" else str(r["id"]) for r in events)
        assert (len(events), len(keys)) == (45, 45), (table, len(events), len(keys))  # 0 lost, 0 duplicate
    # Mid-snapshot offsets held each table's keys as values of its type (Debezium's Java classes)
    kinds = {type(v) for offset in stored for v in read_keys(offset["incremental_snapshot_primary_key"]) or []}
    assert {uuid.UUID, Decimal, dt.date, str, int} <= kinds, kinds


def test_a_blocking_snapshot_reads_the_tables_whole_between_the_changes_before_and_after_its_signal(
        bootstrap_servers: str, postgres_url: str) -> None:
    execute(postgres_url, "CREATE TABLE items (id INT PRIMARY KEY, label TEXT)",
            "INSERT INTO items SELECT n, 'row ' || n FROM generate_series(1, 300) n", SIGNAL_TABLE)
    runs = runs_for(bootstrap_servers, postgres_url, chunk=50)
    runs.copy()
    execute(postgres_url, "UPDATE items SET label = 'before' WHERE id = 1")
    runs.signal("execute-snapshot", {"data-collections": ["public.items"], "type": "blocking"})
    execute(postgres_url, "UPDATE items SET label = 'after' WHERE id = 2", "INSERT INTO items VALUES (301, 'new')",
            "DELETE FROM items WHERE id = 3")
    runs.copy()
    events = [(v["op"], (v["after"] or v["before"])["id"], v["source"]["snapshot"]) for _, v in runs.events() if v]
    reads_ = [e for e in events if e[0] == "r"]
    # the rows as the snapshot found them: read at the signal's commit, while the stream waited
    assert sorted(e[1] for e in reads_) == [n for n in range(1, 302) if n != 3]  # every row once, 0 duplicates
    assert (reads_[0][2], reads_[-1][2]) == ("first", "last")
    streamed = [e[:2] for e in events if e[0] != "r"]
    assert streamed == [("u", 1), ("u", 2), ("c", 301), ("d", 3)]  # nothing lost around the snapshot
    first_read = events.index(reads_[0])
    assert events[:first_read] == [("u", 1, "false")] and len(events) == first_read + len(reads_) + 3
    assert runs.offset().get("snapshot") is None  # the stream's own offset after the snapshot


def blocking_pending(offset: dict[str, Any]) -> bool:
    """Whether ``offset`` is a blocking snapshot's ``r`` event before its last one."""
    return offset.get("snapshot") == "BLOCKING" and not offset.get("snapshot_completed")


def test_a_blocking_snapshot_cut_short_resumes_from_its_last_key_and_streams_each_later_change_once(
        bootstrap_servers: str, postgres_url: str) -> None:
    execute(postgres_url, "CREATE TABLE items (id INT PRIMARY KEY, label TEXT)",
            "INSERT INTO items SELECT n, 'row ' || n FROM generate_series(1, 500) n",
            "CREATE TABLE days (day DATE PRIMARY KEY, label TEXT)",
            "INSERT INTO days SELECT DATE '2024-02-20' + n, 'day ' || n FROM generate_series(1, 40) n", SIGNAL_TABLE)
    runs = runs_for(bootstrap_servers, postgres_url, chunk=50, tables="public.items,public.days")
    runs.copy()
    runs.signal("execute-snapshot", {"data-collections": ["public.items", "public.days"], "type": "blocking"})
    runs.copy(Bounds(max_records=60, max_seconds=300))  # cut after the first batches of items
    cut = runs.offset()
    first = [row["id"] for row in reads(runs.events())]
    assert blocking_pending(cut) and 60 <= len(first) < 500, (len(first), cut)
    assert json.loads(cut["blocking_snapshot_collections"]) == ["public.items", "public.days"]
    assert first == list(range(1, len(first) + 1))  # in key order, up to the stored key
    assert read_keys(cut["blocking_snapshot_primary_key"]) == [first[-1]]
    # changes between runs, to rows already read (7, 3) and still to read (400, the new 501)
    execute(postgres_url, "UPDATE items SET label = 'later' WHERE id = 7", "UPDATE items SET label = 'later' "
            "WHERE id = 400", "INSERT INTO items VALUES (501, 'new')", "DELETE FROM items WHERE id = 3")
    cuts = [cut]
    for _ in range(30):  # runs of 60 records, each cut and resumed from the key the last one stored
        runs.copy(Bounds(max_records=60, max_seconds=300))
        cuts.append(runs.offset())
        if not blocking_pending(cuts[-1]):
            break
    else:
        pytest.fail(f"the blocking snapshot did not end in 30 runs: {cuts[-1]}")
    assert any(json.loads(c["blocking_snapshot_collections"]) == ["public.days"] for c in cuts)  # cut in days too
    runs.copy()
    events = [(v["op"], (v["after"] or v["before"])["id"]) for _, v in runs.events() if v]
    items = Counter(i for op, i in events if op == "r")
    assert items == Counter(range(1, 502)), set(items.elements()) ^ set(range(1, 502))  # each row once, 0 lost
    last_read = max(n for n, (op, _) in enumerate(events) if op == "r")
    assert events[last_read + 1:] == [("u", 7), ("u", 400), ("c", 501), ("d", 3)]  # streamed after it, once
    assert [row["label"] for row in reads(runs.events()) if row["id"] in (7, 400)] == ["row 7", "later"]
    days = Counter(row["day"] for row in reads(runs.events("days")))
    assert (len(days), max(days.values())) == (40, 1)
    assert not any(k.startswith("blocking_snapshot") for k in runs.offset())

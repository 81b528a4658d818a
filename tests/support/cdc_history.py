"""The database's history of a CDC test table, written by a trigger, and the change events to compare with it.

A trigger logs every write to ``items`` as (id, version, op) in the writing transaction itself, so
the ``history`` table is exactly what committed, in execution order (which per key is commit
order: a row's writers wait on its lock). :class:`Writer` makes inserts, updates of the same keys
and deletes, in transactions of 1 to 300 rows, from a thread or in one go.
"""

from __future__ import annotations

import random
import threading
import time
from collections import defaultdict
from typing import Any

import orjson
import psycopg

from tests.support.cdc import dsn
from tests.support.kafka import consume_records

__all__ = ["SCHEMA", "Change", "Writer", "changes", "history", "per_key"]

Change = tuple[int, int, str]  # (id, version, op)

SCHEMA = (
    "CREATE TABLE items (id INT PRIMARY KEY, version INT NOT NULL, label TEXT)",
    "ALTER TABLE items REPLICA IDENTITY FULL",  # a delete's before carries the version it deleted
    "CREATE TABLE history (seq BIGSERIAL PRIMARY KEY, id INT, version INT, op TEXT)",
    """CREATE FUNCTION log_change() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN
         IF TG_OP = 'DELETE' THEN INSERT INTO history (id, version, op) VALUES (OLD.id, OLD.version, 'd');
         ELSE INSERT INTO history (id, version, op) VALUES (NEW.id, NEW.version,
                                                             CASE TG_OP WHEN 'INSERT' THEN 'c' ELSE 'u' END);
         END IF;
         RETURN NULL;
       END $$""",
    "CREATE TRIGGER log_change AFTER INSERT OR UPDATE OR DELETE ON items FOR EACH ROW EXECUTE FUNCTION log_change()",
)


class Writer:
    """Transactions of inserts, updates of the same keys, and deletes: ``rounds`` of them, or in a
    thread between :meth:`start` and :meth:`halt` (one writer at a time: ids are handed out here)."""

    def __init__(self, url: str, seed: int) -> None:
        self.url, self.rng, self.next_id = url, random.Random(seed), 1
        self.next_large = 10_000_000  # large transactions take ids no other write touches, so they may run alongside
        self.stop = threading.Event()
        self.thread: threading.Thread | None = None

    def start(self) -> None:
        self.stop.clear()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def halt(self) -> None:
        self.stop.set()
        if self.thread is not None:
            self.thread.join(60)
            assert not self.thread.is_alive(), "the writer thread did not stop"

    def write(self, rounds: int) -> None:
        with psycopg.connect(dsn(self.url)) as conn:
            for _ in range(rounds):
                self.transaction(conn)

    def large(self, rows: int) -> None:
        """One transaction inserting ``rows`` rows and updating each of them: 2 x ``rows`` changes, one commit."""
        first = self.next_large
        self.next_large += rows
        with psycopg.connect(dsn(self.url)) as conn, conn.transaction():
            conn.execute("INSERT INTO items SELECT n, 1, 'large ' || n FROM generate_series(%s::int, %s::int) n",
                         (first, first + rows - 1))
            conn.execute("UPDATE items SET version = version + 1 WHERE id BETWEEN %s AND %s",
                         (first, first + rows - 1))

    def delete_every(self, nth: int) -> None:
        """Delete every ``nth`` row, each in a transaction of its own."""
        with psycopg.connect(dsn(self.url), autocommit=True) as conn:
            for (key,) in conn.execute("SELECT id FROM items WHERE id %% %s = 0 ORDER BY id", (nth,)).fetchall():
                conn.execute("DELETE FROM items WHERE id = %s", (key,))

    def run(self) -> None:
        with psycopg.connect(dsn(self.url)) as conn:
            while not self.stop.is_set():
                self.transaction(conn)
                time.sleep(0.02)

    def transaction(self, conn: psycopg.Connection[Any]) -> None:
        rng, first = self.rng, self.next_id
        rows = rng.choice((1, 5, 50, 300))
        self.next_id += rows
        with conn.transaction():
            conn.execute("INSERT INTO items SELECT n, 1, 'row ' || n FROM generate_series(%s::int, %s::int) n",
                         (first, first + rows - 1))
            hot = [rng.randrange(1, self.next_id) for _ in range(rng.randrange(1, 20))]
            conn.execute("UPDATE items SET version = version + 1 WHERE id = ANY(%s)", (hot,))
            conn.execute("UPDATE items SET version = version + 1 WHERE id = ANY(%s)", (hot[:3],))
            if rng.random() < 0.3:
                conn.execute("DELETE FROM items WHERE id = ANY(%s)", ([rng.randrange(1, self.next_id)],))


def history(url: str) -> list[Change]:
    with psycopg.connect(dsn(url)) as conn:
        return [(i, v, op) for i, v, op in conn.execute("SELECT id, version, op FROM history ORDER BY seq")]


def changes(bootstrap: str, topic: str, *, committed_only: bool) -> list[Change]:
    """(id, version, op) of each change event in the topic (tombstones left out)."""
    out = []
    for message in consume_records(bootstrap, topic, committed_only=committed_only):
        if message.value() is None:
            continue
        event = orjson.loads(message.value())
        row = event["after"] if event["op"] != "d" else event["before"]
        out.append((row["id"], row["version"], event["op"]))
    return out


def per_key(events: list[Change]) -> dict[int, list[Change]]:
    keys: dict[int, list[Change]] = defaultdict(list)
    for event in events:
        keys[event[0]].append(event)
    return keys

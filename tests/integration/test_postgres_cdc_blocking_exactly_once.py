"""Kill -9 ``kopycat standalone`` inside a blocking snapshot under exactly-once: it resumes, each row once.

With ``exactly.once.source.support=enabled`` each Kafka transaction holds the ``r`` events and the
offset of the last one, which carries the blocking snapshot's progress (the tables left, the last
key sent). A kill aborts the open transaction; the restarted worker resumes after the committed key.
A read_committed consumer must see every row of the table as exactly one ``r`` event, and the
changes made between the kills exactly once, after the snapshot.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path

import orjson
import pytest

from kopycat.connectors.postgres_cdc.java_keys import read_keys
from tests.support.cdc import execute
from tests.support.cdc_exactly_once import exactly_once_cdc
from tests.support.kafka import consume_records, create_topic

pytestmark = pytest.mark.timeout(1800)

ROWS, KILLS = 400_000, 2  # a snapshot that outlasts two kills: the columnar snapshot reads ~75k rows/s


def events(bootstrap: str, topic: str, *, committed_only: bool) -> list[tuple[str, int]]:
    """(op, id) of each change event of ``topic`` (tombstones left out)."""
    found = []
    for message in consume_records(bootstrap, topic, committed_only=committed_only):
        if message.value():
            value = orjson.loads(message.value())
            found.append((value["op"], (value["after"] or value["before"])["id"]))
    return found


def test_kill_9_inside_a_blocking_snapshot_resumes_it_with_every_row_once_for_read_committed_consumers(
        bootstrap_servers: str, postgres_url: str, tmp_path: Path) -> None:
    cdc = exactly_once_cdc(tmp_path, bootstrap_servers, postgres_url, "beos", interval_ms=200,
                           **{"signal.data.collection": "public.dbz_signal", "publication.autocreate.mode": "disabled"})
    topic = create_topic(bootstrap_servers, cdc.topic)
    execute(postgres_url, "CREATE TABLE items (id INT PRIMARY KEY, label TEXT)",
            f"INSERT INTO items SELECT n, 'row ' || n FROM generate_series(1, {ROWS}) n",
            "CREATE TABLE dbz_signal (id VARCHAR(42) PRIMARY KEY, type VARCHAR(32) NOT NULL, data VARCHAR(2048))",
            f'CREATE PUBLICATION "pub_{cdc.slot}" FOR TABLE items, dbz_signal',
            f"SELECT pg_create_logical_replication_slot('{cdc.slot}', 'pgoutput')",
            "INSERT INTO dbz_signal VALUES ('block-1', 'execute-snapshot', "
            "'{\"data-collections\": [\"public.items\"], \"type\": \"blocking\"}')")

    keys = []
    rng = random.Random(41)
    for kill in range(KILLS):
        # the run's first commit may be the streamed signal's, before the snapshot's first chunk
        offset = cdc.kill_after_a_commit(rng, 0.05, 0.2, inside=lambda at: at.get("snapshot") == "BLOCKING")
        assert offset["snapshot"] == "BLOCKING" and not offset["snapshot_completed"], f"kill {kill} after: {offset}"
        assert json.loads(offset["blocking_snapshot_collections"]) == ["public.items"]
        keys.append(read_keys(offset["blocking_snapshot_primary_key"])[0])  # type: ignore[index]
        if kill == 0:  # changes between the runs: to a row already read and to a new one
            execute(postgres_url, "UPDATE items SET label = 'later' WHERE id = 5",
                    f"INSERT INTO items VALUES ({ROWS + 1}, 'new')")
    assert keys == sorted(keys) and keys[0] < keys[-1] < ROWS, keys  # each run read on from the last

    cdc.finish(lambda: len(events(bootstrap_servers, topic, committed_only=True)), ROWS + 3)
    seen = events(bootstrap_servers, topic, committed_only=True)
    reads = Counter(i for op, i in seen if op == "r")
    assert reads == Counter(range(1, ROWS + 2)), (len(reads), max(reads.values()))  # 0 lost, 0 duplicate
    assert seen[-2:] == [("u", 5), ("c", ROWS + 1)] and len(seen) == ROWS + 3  # streamed after it, once
    aborted = len(events(bootstrap_servers, topic, committed_only=False)) - len(seen)
    assert aborted > 0, "no kill landed inside an open transaction: nothing was aborted, nothing proven"
    print(f"blocking snapshot exactly-once: {ROWS + 1} rows once after {KILLS} kills at keys {keys}, "
          f"{aborted} aborted records")

"""Kill -9 ``kopycat standalone`` while it streams a table under concurrent writes, exactly once.

With ``exactly.once.source.support=enabled`` the CDC task's change records and their offsets go
in one Kafka transaction (``ExactlyOnceSourceTaskRunner``) and the slot is confirmed only after
that transaction commits (``PostgresCdcTask.commit``). A trigger logs every write as (id, version,
op) in the writing transaction itself, so the log is the database's history; a read_committed
consumer must see exactly that history: each change once, in the log's order per key.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.support.cdc import confirmed_flush, execute
from tests.support.cdc_exactly_once import ExactlyOnceCdc, exactly_once_cdc
from tests.support.cdc_history import SCHEMA, Writer, changes, history, per_key
from tests.support.kafka import create_topic

pytestmark = pytest.mark.timeout(1800)

KILLS = 3


def test_kill_9_mid_stream_leaves_every_change_exactly_once_for_read_committed_consumers(
        bootstrap_servers: str, postgres_url: str, tmp_path: Path) -> None:
    # the transaction stays open between commits, so a kill lands inside one and is proven aborted
    cdc = exactly_once_cdc(tmp_path, bootstrap_servers, postgres_url, "eos", interval_ms=1000)
    topic = create_topic(bootstrap_servers, cdc.topic)
    execute(postgres_url, *SCHEMA, f'CREATE PUBLICATION "pub_{cdc.slot}" FOR TABLE items',
            f"SELECT pg_create_logical_replication_slot('{cdc.slot}', 'pgoutput')")  # the history starts here

    writer = Writer(postgres_url, seed=20261128)
    writer.write(300)  # a backlog: each run is busy streaming from its first second
    writer.start()
    try:
        offsets = kill_while_streaming(cdc, lambda: confirmed_flush(postgres_url, cdc.slot))
    finally:
        writer.halt()
    expected = history(postgres_url)
    cdc.finish(lambda: len(changes(bootstrap_servers, topic, committed_only=True)), len(expected))

    seen = changes(bootstrap_servers, topic, committed_only=True)
    duplicates = sum(n - 1 for n in Counter(seen).values() if n > 1)
    lost = Counter(expected) - Counter(seen)
    assert duplicates == 0 and not lost and len(seen) == len(expected), (duplicates, list(lost)[:10])
    assert per_key(seen) == per_key(expected), "a key's changes arrived out of commit order"
    aborted = len(changes(bootstrap_servers, topic, committed_only=False)) - len(seen)
    assert aborted > 0, "no kill landed inside an open transaction: nothing was aborted, nothing proven"
    assert len(set(map(orjson.dumps, offsets))) == KILLS, f"a run committed nothing before its kill: {offsets}"
    print(f"cdc exactly-once: {len(seen)} changes of {len(per_key(seen))} keys, 0 lost, 0 duplicates, "
          f"{aborted} aborted records, {KILLS} kills")


def kill_while_streaming(cdc: ExactlyOnceCdc, slot_position: Callable[[], int]) -> list[Any]:
    """Kill -9 each run once it has committed a transaction of its own; the offsets left after each kill.

    After each kill the slot is confirmed no further than the committed offset: WAL is released
    only once a committed Kafka transaction holds its changes."""
    rng = random.Random(33)
    offsets = []
    for _ in range(KILLS):
        offsets.append(offset := cdc.kill_after_a_commit(rng, 0.2, 0.8))
        assert slot_position() <= offset["lsn_commit"], (slot_position(), offset)
    return offsets

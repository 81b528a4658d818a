"""Kill -9 ``kopycat standalone`` while it streams a table under concurrent writes, exactly once.

With ``exactly.once.source.support=enabled`` the CDC task's change records and their offsets go
in one Kafka transaction (``ExactlyOnceSourceTaskRunner``) and the slot is confirmed only after
that transaction commits (``PostgresCdcTask.commit``). A trigger logs every write as (id, version,
op) in the writing transaction itself, so the log is the database's history; a read_committed
consumer must see exactly that history: each change once, in the log's order per key.
"""

from __future__ import annotations

import random
import signal
import time
import uuid
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from kopycat.storage.kafka_offset_store import KafkaOffsetStore
from kopycat.storage.offset_storage_reader_writer import OffsetStorageReaderImpl
from tests.support.cdc import confirmed_flush, connector_props, execute
from tests.support.cdc_history import SCHEMA, Writer, changes, history, per_key
from tests.support.kafka import create_topic
from tests.support.standalone import start_worker, write_props

pytestmark = pytest.mark.timeout(1800)

KILLS = 3


def test_kill_9_mid_stream_leaves_every_change_exactly_once_for_read_committed_consumers(
        bootstrap_servers: str, postgres_url: str, tmp_path: Path) -> None:
    run = uuid.uuid4().hex[:8]
    name, prefix, slot, offsets_topic = f"cdc-eos-{run}", f"eos{run}", f"slot_eos_{run}", f"offsets-eos-{run}"
    topic = create_topic(bootstrap_servers, f"{prefix}.public.items")
    execute(postgres_url, *SCHEMA, f'CREATE PUBLICATION "pub_{slot}" FOR TABLE items',
            f"SELECT pg_create_logical_replication_slot('{slot}', 'pgoutput')")  # the history starts here
    worker = write_props(tmp_path / "worker.properties", {
        "bootstrap.servers": bootstrap_servers, "exactly.once.source.support": "enabled",
        "group.id": f"eos-{run}", "offset.storage.topic": offsets_topic,
        "offset.storage.replication.factor": "1", "offset.storage.partitions": "1"})
    connector = write_props(tmp_path / "connector.properties", {
        **connector_props(postgres_url, name, prefix, slot), "snapshot.mode": "no_data",
        "key.converter.schemas.enable": "false", "value.converter.schemas.enable": "false",
        # the transaction stays open between commits, so a kill lands inside one and is proven aborted
        "transaction.boundary": "interval", "transaction.boundary.interval.ms": "1000",
        "max.batch.size": "500", "poll.interval.ms": "100"})
    log = tmp_path / "worker.log"

    def committed() -> Any:
        with KafkaOffsetStore(bootstrap_servers, topic=offsets_topic, replication_factor=1, partitions=1) as store:
            return OffsetStorageReaderImpl(store, name).offset({"server": prefix})

    writer = Writer(postgres_url, seed=20261128)
    writer.write(300)  # a backlog: each run is busy streaming from its first second
    writer.start()
    try:
        offsets = kill_while_streaming(worker, connector, log, committed, lambda: confirmed_flush(postgres_url, slot))
    finally:
        writer.halt()
    expected = history(postgres_url)
    finish(worker, connector, log, lambda: len(changes(bootstrap_servers, topic, committed_only=True)),
           len(expected))

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


def kill_while_streaming(worker: Path, connector: Path, log: Path, committed: Callable[[], Any],
                         slot_position: Callable[[], int]) -> list[Any]:
    """Kill -9 each run once it has committed a transaction of its own; the offsets left after each kill.

    After each kill the slot is confirmed no further than the committed offset: WAL is released
    only once a committed Kafka transaction holds its changes."""
    rng = random.Random(33)
    offsets = []
    for _ in range(KILLS):
        before = committed()
        process = start_worker(worker, connector, log)
        deadline = time.monotonic() + 300
        while committed() == before:  # started and streaming, however slow the machine
            assert process.poll() is None, f"worker exited: {log.read_text()[-3000:]}"
            assert time.monotonic() < deadline, f"no progress: {log.read_text()[-3000:]}"
            time.sleep(0.1)
        time.sleep(rng.uniform(0.2, 0.8))
        process.send_signal(signal.SIGKILL)
        process.wait(30)
        offsets.append(offset := committed())
        assert slot_position() <= offset["lsn_commit"], (slot_position(), offset)
    return offsets


def finish(worker: Path, connector: Path, log: Path, count: Callable[[], int], expected: int) -> None:
    """A last run until the read_committed count reaches the history's (or stalls), then a clean stop."""
    seen = log.stat().st_size
    process = start_worker(worker, connector, log)
    deadline = time.monotonic() + 300
    while b"standalone worker running" not in log.read_bytes()[seen:]:
        assert process.poll() is None, f"worker exited early: {log.read_text()[-3000:]}"
        assert time.monotonic() < deadline, f"the worker did not start: {log.read_text()[-3000:]}"
        time.sleep(0.2)
    last, stalled_since = -1, time.monotonic()
    while (now := count()) < expected:
        assert process.poll() is None, f"worker exited early: {log.read_text()[-3000:]}"
        if now != last:
            last, stalled_since = now, time.monotonic()
        assert time.monotonic() - stalled_since < 180, f"stalled at {now}/{expected}: {log.read_text()[-3000:]}"
        time.sleep(1.0)
    process.send_signal(signal.SIGTERM)
    assert process.wait(120) == 0, log.read_text()[-3000:]

"""Continuous ``kopycat standalone`` CDC: heartbeats keep an idle slot's WAL released, restarts keep every change once.

The publication holds only ``items`` (``publication.autocreate.mode=filtered``) and ``items`` stays
idle while another database takes writes: its WAL is never decoded for this slot, so only the
heartbeats (Debezium's ``HeartbeatImpl`` every ``heartbeat.interval.ms``) move the stored offset
and, through ``PostgresCdcTask.commit``, the slot's ``confirmed_flush_lsn``. Without them
PostgreSQL would keep all that WAL for the slot. The bounded-run twin of this test is
test_postgres_cdc_heartbeat.py.

A SIGTERM stop and a kill -9 (taken once the slot is confirmed past every change written, so
at-least-once delivery has nothing in flight to repeat) are each followed by writes while the
worker is down and a restart: the ``items`` topic must then hold every change exactly once, in
commit order.
"""

from __future__ import annotations

import signal
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from kopycat.dev.postgres import LocalPostgres
from tests.support.cdc import confirmed_flush, connector_props, consume_json, execute, wal_position
from tests.support.kafka import consume_records, create_topic
from tests.support.standalone import start_worker, write_props

pytestmark = pytest.mark.timeout(900)

WAIT_S = 240.0  # generous: a loaded 2-core machine runs eight helpers' brokers and workers


class Traffic:
    """Writes to another database's ``busy`` table every 0.1 s until halted: WAL the captured slot never decodes."""

    def __init__(self, url: str) -> None:
        self.url, self.halted, self.batches = url, threading.Event(), 0
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self.halted.wait(0.1):
            execute(self.url, "INSERT INTO busy SELECT n, repeat('x', 100) FROM generate_series(1, 200) n")
            self.batches += 1

    def __enter__(self) -> Traffic:
        self.thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.halted.set()
        self.thread.join(60)


def wait_until(what: str, done: Callable[[], bool], process: subprocess.Popen[bytes], log: Path) -> None:
    """Until ``done()``; fails (with the worker's log tail) when the worker exits or ``WAIT_S`` passes."""
    deadline = time.monotonic() + WAIT_S
    while not done():
        assert process.poll() is None, f"worker exited while waiting for {what}: {log.read_text()[-3000:]}"
        assert time.monotonic() < deadline, f"timed out waiting for {what}: {log.read_text()[-3000:]}"
        time.sleep(0.2)


@pytest.fixture
def workers() -> Iterator[list[subprocess.Popen[bytes]]]:
    """The workers a test starts: one still running when it ends (a failed assertion) is killed."""
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for process in started:
        if process.poll() is None:
            process.kill()
            process.wait(30)


def item_ids(bootstrap: str, topic: str) -> list[int]:
    """The ids of the ``items`` change events in topic order (tombstones left out)."""
    return [value["after"]["id"] for _, value in consume_json(bootstrap, topic) if value is not None]


def test_continuous_heartbeats_confirm_an_idle_slot_and_restarts_lose_or_repeat_no_change(
        bootstrap_servers: str, postgres_server: LocalPostgres, postgres_url: str, tmp_path: Path,
        workers: list[subprocess.Popen[bytes]]) -> None:
    run = uuid.uuid4().hex[:8]
    name, prefix, slot = f"hbc-{run}", f"hbc{run}", f"hbc_{run}"
    topic = create_topic(bootstrap_servers, f"{prefix}.public.items")
    beats_topic = create_topic(bootstrap_servers, f"__debezium-heartbeat.{prefix}")
    execute(postgres_url, "CREATE TABLE items (id INT PRIMARY KEY, label TEXT)",
            "INSERT INTO items SELECT n, 'snapshot' FROM generate_series(1, 5) n")
    worker = write_props(tmp_path / "worker.properties", {
        "bootstrap.servers": bootstrap_servers, "offset.storage.file.filename": str(tmp_path / "connect.offsets"),
        "offset.flush.interval.ms": "300"})
    connector = write_props(tmp_path / "connector.properties", {
        **connector_props(postgres_url, name, prefix, slot), "publication.autocreate.mode": "filtered",
        "key.converter.schemas.enable": "false", "value.converter.schemas.enable": "false",
        "heartbeat.interval.ms": "300", "poll.interval.ms": "100"})
    log = tmp_path / "worker.log"
    elsewhere = postgres_server.create_database(f"busy_{run}")
    execute(elsewhere, "CREATE TABLE busy (id INT, pad TEXT)")
    expected = [1, 2, 3, 4, 5]

    def write_items(first: int, last: int) -> None:
        execute(postgres_url, f"INSERT INTO items SELECT n, 'stream' FROM generate_series({first}, {last}) n")
        expected.extend(range(first, last + 1))

    def copied() -> bool:
        return len(item_ids(bootstrap_servers, topic)) >= len(expected)

    def start() -> subprocess.Popen[bytes]:
        workers.append(start_worker(worker, connector, log))
        return workers[-1]

    process = start()
    wait_until("the snapshot", copied, process, log)

    # idle captured table, busy other database: the slot follows the WAL by heartbeats alone
    with Traffic(elsewhere) as traffic:
        positions = [confirmed_flush(postgres_url, slot)]
        for _ in range(3):
            wait_until("WAL written past the slot", lambda: wal_position(elsewhere) > positions[-1], process, log)
            target = wal_position(elsewhere)
            wait_until(f"the slot confirmed past {target}", lambda t=target: confirmed_flush(postgres_url, slot) >= t,
                       process, log)
            positions.append(confirmed_flush(postgres_url, slot))
        assert traffic.batches > 0
    assert positions == sorted(positions) and len(set(positions)) == 4, positions
    beats = len(consume_records(bootstrap_servers, beats_topic))
    assert beats >= 3, f"{beats} heartbeats for three confirmed advances"

    write_items(6, 20)  # captured changes while running, then a clean stop
    wait_until("the streamed changes", copied, process, log)
    process.send_signal(signal.SIGTERM)
    assert process.wait(120) == 0, log.read_text()[-3000:]

    write_items(21, 30)  # while the worker is down, with WAL traffic elsewhere around them
    execute(elsewhere, "INSERT INTO busy SELECT generate_series(1, 1000)")
    process = start()
    wait_until("the changes written while stopped", copied, process, log)
    write_items(31, 40)
    with Traffic(elsewhere):
        written = wal_position(postgres_url)
        wait_until(f"the slot confirmed past {written}", lambda: confirmed_flush(postgres_url, slot) >= written,
                   process, log)  # every change above is stored as an offset: nothing is in flight
    assert copied()
    process.send_signal(signal.SIGKILL)
    process.wait(60)

    write_items(41, 50)
    execute(elsewhere, "INSERT INTO busy SELECT generate_series(1, 1000)")
    process = start()
    wait_until("the changes written after the kill", copied, process, log)
    after_restart = wal_position(elsewhere)
    wait_until("a heartbeat after the restart", lambda: confirmed_flush(postgres_url, slot) >= after_restart,
               process, log)
    process.send_signal(signal.SIGTERM)
    assert process.wait(120) == 0, log.read_text()[-3000:]

    ids = item_ids(bootstrap_servers, topic)
    assert ids == expected, f"lost {sorted(set(expected) - set(ids))}, repeated {len(ids) - len(set(ids))}"
    assert len(consume_records(bootstrap_servers, beats_topic)) > beats

"""Kill -9 a ``kopycat run`` of dlt's sql_database mid-copy, then run it again: nothing is lost.

Unsorted (dlt's default): a resource's state is stored once the resource is exhausted (no
earlier state is a safe place to resume), and the killed run stored none: the rerun copies the
table again from the state before it. Every row arrives, and the duplicates are exactly the rows
the killed run had written: the at-least-once window of such a resource is its whole run.

Sorted (``dlt.incremental.row.order=asc``, pyarrow chunks): each batch carries the state after
it, so the rerun starts after the last batch the killed run committed. With exactly-once
(``exactly.once.source.support=enabled``: a poll's records and offsets in one transaction) a
read_committed consumer sees every row once: duplicates = 0.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from tests.support.kafka import consume_records, create_topic
from tests.support.kills import kill_when
from tests.support.standalone import write_props

pytestmark = pytest.mark.timeout(900)

ROWS = 400_000  # an unloaded run copies it in seconds: the kill comes at the first records it sees
CHUNK = 2000  # rows a poll returns (dlt's chunk and the batch)


def _create_table(database: Path) -> None:
    with sqlite3.connect(database) as connection:
        connection.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, amount INTEGER NOT NULL)")
        connection.executemany("INSERT INTO orders VALUES (?, ?)", ((i, i % 97) for i in range(1, ROWS + 1)))


def _records_in(bootstrap: str, topic: str, timeout_s: float = 60.0) -> int:
    """Records in partition 0: a new client may not know a just-created topic yet, so it asks again."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "watermarks"})
    deadline = time.monotonic() + timeout_s
    try:
        while True:
            try:
                low, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
                return int(high - low)
            except KafkaException as exc:
                if exc.args[0].code() != KafkaError._UNKNOWN_PARTITION or time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
    finally:
        consumer.close()


def _command(worker: Path, connector: Path) -> list[str]:
    return [sys.executable, "-m", "kopycat.cli", "run", str(worker), str(connector), "--no-progress"]


def _prepared(tmp_path: Path, worker: dict[str, str], bootstrap: str, topic_name: str, *, sorted_rows: bool,
              exactly_once: bool) -> tuple[str, Path, Path]:
    """Fill the table and create its topic; the topic, and the worker's and the connector's properties files."""
    database = tmp_path / "shop.db"
    _create_table(database)
    topic = f"{topic_name}.orders"
    create_topic(bootstrap, topic)
    eos = {"exactly.once.source.support": "enabled", "group.id": f"eos-{topic_name}"} if exactly_once else {}
    worker_file = write_props(tmp_path / "worker.properties", {
        **worker, **eos, "key.converter": "org.apache.kafka.connect.json.JsonConverter",
        "key.converter.schemas.enable": "false", "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter.schemas.enable": "false", "offset.flush.interval.ms": "200"})
    order = {"dlt.incremental.row.order": "asc"} if sorted_rows else {}
    connector_file = write_props(tmp_path / "dlt.properties", {
        "name": f"{topic_name}-dlt", "connector.class": "kopycat.connectors.dlt.DltSourceConnector",
        "dlt.source": "dlt.sources.sql_database:sql_database", "dlt.args.credentials": f"sqlite:///{database}",
        "dlt.args.table_names": '["orders"]', "dlt.args.backend": "pyarrow", "dlt.args.chunk_size": str(CHUNK),
        "dlt.batch.max.rows": str(CHUNK), "dlt.incremental": "orders:id", **order, "topic.prefix": f"{topic_name}."})
    return topic, worker_file, connector_file


def _kill_mid_copy(worker_file: Path, connector_file: Path, log_path: Path, bootstrap: str, topic: str,
                   progress: Callable[[], int]) -> int:
    """Start a run, kill -9 it once ``progress`` (records in the topic) is past 0; the topic's end offset then."""
    with log_path.open("w") as log:
        process = subprocess.Popen(_command(worker_file, connector_file), stdout=log, stderr=subprocess.STDOUT)
        # copying, however slow the machine
        kill_when(process, lambda: progress() > 0, log_path, waiting_for="records in the topic", poll_s=0.02)
    written = _records_in(bootstrap, topic)
    assert 0 < written < ROWS, f"the kill did not land mid-copy: {written} of {ROWS}"
    return written


def test_a_kill_mid_copy_loses_no_row_and_the_rerun_repeats_exactly_what_the_killed_run_wrote(
        tmp_path: Path, worker: dict[str, str], bootstrap_servers: str, topic_name: str) -> None:
    topic, worker_file, connector_file = _prepared(tmp_path, worker, bootstrap_servers, topic_name,
                                                   sorted_rows=False, exactly_once=False)
    written_by_killed = _kill_mid_copy(worker_file, connector_file, tmp_path / "killed.log", bootstrap_servers,
                                       topic, lambda: _records_in(bootstrap_servers, topic))

    rerun = subprocess.run(_command(worker_file, connector_file), capture_output=True, text=True, timeout=600)
    assert rerun.returncode == 0, rerun.stderr[-3000:]

    keys = [json.loads(message.key())["id"] for message in consume_records(bootstrap_servers, topic)]
    counts = Counter(keys)
    assert set(counts) == set(range(1, ROWS + 1))  # lost = 0
    duplicates = len(keys) - ROWS
    print(f"killed run wrote {written_by_killed} of {ROWS}; duplicates after the rerun: {duplicates}")
    assert duplicates == written_by_killed and max(counts.values()) == 2


def test_a_sorted_resource_with_exactly_once_shows_every_row_once_after_a_kill_and_a_rerun(
        tmp_path: Path, worker: dict[str, str], bootstrap_servers: str, topic_name: str) -> None:
    topic, worker_file, connector_file = _prepared(tmp_path, worker, bootstrap_servers, topic_name,
                                                   sorted_rows=True, exactly_once=True)
    # killed once a transaction committed (the topic is past its 2000 records and commit marker, as the
    # next poll's transaction starts after it): the rerun must start after it, not copy the table again
    _kill_mid_copy(worker_file, connector_file, tmp_path / "killed.log", bootstrap_servers, topic,
                   lambda: max(0, _records_in(bootstrap_servers, topic) - CHUNK - 1))
    committed_by_killed = len(consume_records(bootstrap_servers, topic, committed_only=True))
    assert 0 < committed_by_killed < ROWS

    rerun = subprocess.run(_command(worker_file, connector_file), capture_output=True, text=True, timeout=600)
    assert rerun.returncode == 0, rerun.stderr[-3000:]

    committed = [json.loads(m.key())["id"] for m in consume_records(bootstrap_servers, topic, committed_only=True)]
    assert committed == list(range(1, ROWS + 1))  # lost = 0, duplicates = 0, in order
    everything = len(consume_records(bootstrap_servers, topic))
    print(f"exactly-once: the killed run committed {committed_by_killed} rows; after the rerun {everything} "
          f"records in the topic (read_uncommitted), {len(committed)} visible to read_committed")

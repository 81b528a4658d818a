"""Kill -9 a ``kopycat run`` of dlt's sql_database mid-copy, then run it again: nothing is lost.

A resource's state is stored once the resource is exhausted (dlt's sql_database does not sort
rows by the cursor, so no earlier state is a safe place to resume), and the killed run stored
none: the rerun copies the table again from the state before it. So every row arrives, and the
duplicates are exactly the rows the killed run had written: the at-least-once window of a
resource is its whole run. Exactly-once would not shrink it: the polls a killed run committed
carried the state the run started from.
"""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition

from tests.support.kafka import consume_records, create_topic

pytestmark = pytest.mark.timeout(900)

ROWS = 400_000  # an unloaded run copies it in seconds: the kill comes at the first records it sees


def _properties(path: Path, props: dict[str, str]) -> Path:
    path.write_text("".join(f"{key}={value}\n" for key, value in props.items()))
    return path


def _create_table(database: Path) -> None:
    with sqlite3.connect(database) as connection:
        connection.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, amount INTEGER NOT NULL)")
        connection.executemany("INSERT INTO orders VALUES (?, ?)", ((i, i % 97) for i in range(1, ROWS + 1)))


def _records_in(bootstrap: str, topic: str) -> int:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "watermarks"})
    try:
        low, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
        return int(high - low)
    finally:
        consumer.close()


def _command(worker: Path, connector: Path) -> list[str]:
    return [sys.executable, "-m", "kopycat.cli", "run", str(worker), str(connector), "--no-progress"]


def test_a_kill_mid_copy_loses_no_row_and_the_rerun_repeats_exactly_what_the_killed_run_wrote(
        tmp_path: Path, worker: dict[str, str], bootstrap_servers: str, topic_name: str) -> None:
    database = tmp_path / "shop.db"
    _create_table(database)
    topic = f"{topic_name}.orders"
    create_topic(bootstrap_servers, topic)
    worker_file = _properties(tmp_path / "worker.properties", {
        **worker, "key.converter": "org.apache.kafka.connect.json.JsonConverter", "key.converter.schemas.enable":
        "false", "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter.schemas.enable": "false", "offset.flush.interval.ms": "200"})
    connector_file = _properties(tmp_path / "dlt.properties", {
        "name": f"{topic_name}-dlt", "connector.class": "kopycat.connectors.dlt.DltSourceConnector",
        "dlt.source": "dlt.sources.sql_database:sql_database", "dlt.args.credentials": f"sqlite:///{database}",
        "dlt.args.table_names": '["orders"]', "dlt.args.backend": "pyarrow", "dlt.args.chunk_size": "2000",
        "dlt.batch.max.rows": "2000", "dlt.incremental": "orders:id", "topic.prefix": f"{topic_name}."})

    log = (tmp_path / "killed.log").open("w")
    process = subprocess.Popen(_command(worker_file, connector_file), stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 300
    while _records_in(bootstrap_servers, topic) == 0:  # copying, however slow the machine
        assert process.poll() is None, (tmp_path / "killed.log").read_text()[-3000:]
        assert time.monotonic() < deadline, (tmp_path / "killed.log").read_text()[-3000:]
        time.sleep(0.02)
    process.send_signal(signal.SIGKILL)
    process.wait(30)
    written_by_killed = _records_in(bootstrap_servers, topic)
    assert 0 < written_by_killed < ROWS, f"the kill did not land mid-copy: {written_by_killed} of {ROWS}"

    rerun = subprocess.run(_command(worker_file, connector_file), capture_output=True, text=True, timeout=600)
    assert rerun.returncode == 0, rerun.stderr[-3000:]

    keys = [json.loads(message.key())["id"] for message in consume_records(bootstrap_servers, topic)]
    counts = Counter(keys)
    assert set(counts) == set(range(1, ROWS + 1))  # lost = 0
    duplicates = len(keys) - ROWS
    print(f"killed run wrote {written_by_killed} of {ROWS}; duplicates after the rerun: {duplicates}")
    assert duplicates == written_by_killed and max(counts.values()) == 2

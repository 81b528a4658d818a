"""A Singer target as a sink connector against the real broker: rows equal the topic, through kills.

target-jsonl (tests/support, built with singer-sdk) appends each stream to a JSONL file, fsyncs at
each STATE and echoes it. Bounded runs copy a topic of JSON-with-schema orders: every offset
lands once, values as the target reads them, a changed schema sends a new SCHEMA, and a second
run adds only the new records. A target exiting non-zero fails the run with its stderr and
commits nothing it did not echo. In lock-step (``singer.target.echo.timeout.ms``) the standalone
worker's target, or the worker itself, is killed (-9) mid-copy: a rerun loses nothing and writes
again at most one batch.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient

from kopycat.api import ConnectError
from kopycat.runtime.bounded_plan import plan_bounded_run
from kopycat.runtime.bounded_run import run_planned_task
from tests.support.kafka import committed_offsets, create_topic
from tests.support.singer_sink import produce_orders
from tests.support.standalone import start_worker, write_props

pytestmark = pytest.mark.timeout(900)

TARGET_SCRIPT = Path(__file__).parents[1] / "support" / "singer_jsonl_target.py"


def target_executable(directory: Path) -> Path:
    path = directory / "target-jsonl"
    path.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{TARGET_SCRIPT}" "$@"\n')
    path.chmod(0o755)
    return path


def written(out: Path, topic: str) -> list[dict[str, Any]]:
    path = out / f"{topic}.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def connector_props(tmp_path: Path, topic: str, **extra: str) -> dict[str, str]:
    out = tmp_path / "out"
    out.mkdir(exist_ok=True)
    return {"name": f"singer-{topic}", "connector.class": "kopycat.connectors.singer.SingerSinkConnector",
            "topics": topic, "singer.target.executable": str(target_executable(tmp_path)),
            "singer.target.config.directory": str(out), "singer.target.config.pid_file": str(tmp_path / "pid"),
            "key.converter": "org.apache.kafka.connect.json.JsonConverter",
            "value.converter": "org.apache.kafka.connect.json.JsonConverter", **extra}


def bounded_run(connector: dict[str, str], bootstrap: str) -> Any:
    worker = {"bootstrap.servers": bootstrap}
    [planned] = plan_bounded_run(connector, worker)
    return run_planned_task(connector, planned, worker)


def test_rows_equal_the_topic_and_a_second_run_writes_only_the_new_records(
        bootstrap_servers: str, topic_name: str, tmp_path: Path) -> None:
    create_topic(bootstrap_servers, topic_name, 2)
    produce_orders(bootstrap_servers, topic_name, range(0, 500))
    connector = connector_props(tmp_path, topic_name, **{"singer.batch.max.records": "64"})
    first = bounded_run(connector, bootstrap_servers)
    assert first.error is None
    rows = written(tmp_path / "out", topic_name)
    assert sorted(row["id"] for row in rows) == list(range(500))
    by_id = {row["id"]: row for row in rows}
    assert by_id[7] == {"id": 7, "customer": "c7", "amount": "0.07", "ts": "2026-11-01 00:00:07+00:00",
                        "_schema": ["amount", "customer", "id", "ts"]}
    assert committed_offsets(bootstrap_servers, f"connect-singer-{topic_name}", topic_name, 2) == {0: 250, 1: 250}

    produce_orders(bootstrap_servers, topic_name, range(500, 700), with_note=True)  # a new schema mid-topic
    second = bounded_run(connector, bootstrap_servers)
    assert second.error is None
    rows = written(tmp_path / "out", topic_name)
    ids = [row["id"] for row in rows]
    assert sorted(ids) == list(range(700)) and len(ids) == len(set(ids))
    new = [row for row in rows if row["id"] >= 500]
    assert {tuple(row["_schema"]) for row in new} == {("amount", "customer", "id", "note", "ts")}
    assert [row["note"] for row in sorted(new, key=lambda r: r["id"])[:2]] == ["note 500", None]
    assert committed_offsets(bootstrap_servers, f"connect-singer-{topic_name}", topic_name, 2) == {0: 350, 1: 350}


def test_a_target_exiting_non_zero_fails_the_run_with_its_stderr_and_commits_nothing_unechoed(
        bootstrap_servers: str, topic_name: str, tmp_path: Path) -> None:
    create_topic(bootstrap_servers, topic_name, 1)
    produce_orders(bootstrap_servers, topic_name, range(0, 50), partitions=1)
    connector = connector_props(tmp_path, topic_name, **{"singer.target.config.fail_after": "10"})
    with pytest.raises(ConnectError, match=r"(?s)exited.*the destination went away after 10 records"):
        bounded_run(connector, bootstrap_servers)
    assert written(tmp_path / "out", topic_name) == []
    assert committed_offsets(bootstrap_servers, f"connect-singer-{topic_name}", topic_name, 1)[0] < 0


def _wait_for(predicate: Any, what: str, log: Path, timeout_s: float = 240) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}: {log.read_text()[-3000:]}"
        time.sleep(0.05)


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}").exists() and "zombie" not in Path(f"/proc/{pid}/status").read_text()


def _group_empty(bootstrap: str, group: str) -> bool:
    """True once no member is left in ``group`` (a killed worker's leaves at its session timeout)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    [future] = admin.describe_consumer_groups([group]).values()
    return not future.result(timeout=30).members


@pytest.mark.parametrize("victim", ["target", "worker"])
def test_kill_9_in_lock_step_loses_nothing_and_repeats_at_most_one_batch(
        victim: str, bootstrap_servers: str, topic_name: str, tmp_path: Path) -> None:
    records, batch = 6000, 100
    create_topic(bootstrap_servers, topic_name, 1)
    produce_orders(bootstrap_servers, topic_name, range(records), partitions=1)
    out = tmp_path / "out"
    worker = write_props(tmp_path / "worker.properties", {
        "bootstrap.servers": bootstrap_servers, "offset.storage.file.filename": str(tmp_path / "offsets"),
        "consumer.session.timeout.ms": "6000"})  # the killed worker's member leaves the group soon
    connector = write_props(tmp_path / "connector.properties", connector_props(
        tmp_path, topic_name, **{"singer.batch.max.records": str(batch), "singer.target.echo.timeout.ms": "60000"}))
    log = tmp_path / "worker.log"
    process = start_worker(worker, connector, log)
    try:
        _wait_for(lambda: len(written(out, topic_name)) >= 10 * batch, "ten batches", log)
        target = int((tmp_path / "pid").read_text())
        if victim == "target":
            os.kill(target, signal.SIGKILL)
            _wait_for(lambda: "exited early" in log.read_text() or "stopped reading" in log.read_text(),
                      "the task to fail", log)
        else:
            process.send_signal(signal.SIGKILL)
            _wait_for(lambda: not _running(target), "the orphaned target to end at the end of its input", log)
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(60)
    before = written(out, topic_name)
    assert len(before) < records, "the kill came after the copy was done"
    committed = committed_offsets(bootstrap_servers, f"connect-singer-{topic_name}", topic_name, 1)[0]
    _wait_for(lambda: _group_empty(bootstrap_servers, f"connect-singer-{topic_name}"), "the group to be empty", log)
    assert len(before) - batch <= committed <= len(before)  # at most the batch persisted after the last commit

    assert bounded_run(connector_props(tmp_path, topic_name, **{"singer.batch.max.records": str(batch)}),
                       bootstrap_servers).error is None
    ids = [row["id"] for row in written(out, topic_name)]
    duplicates = len(ids) - len(set(ids))
    assert sorted(set(ids)) == list(range(records))
    assert duplicates == len(before) - committed <= batch
    print(f"singer sink kill -9 of the {victim}: {len(before)} persisted, {committed} committed, "
          f"{duplicates} written twice")

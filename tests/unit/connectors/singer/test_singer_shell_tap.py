"""SingerSourceTask with taps written as shell scripts: stopping a working tap, and a tap that misuses stdout."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from kopycat.api import BOUNDED_RUN_CONFIG, ConnectError, RunComplete
from kopycat.connectors.singer.source_task import SingerSourceTask
from tests.support.singer import TaskContext
from tests.support.source_items import records_of

SCHEMA = '{"type":"SCHEMA","stream":"s","schema":{"type":"object","properties":{"n":{"type":"integer"}}},' \
         '"key_properties":["n"]}'


def shell_tap(tmp_path: Path, body: str) -> dict[str, str]:
    tap = tmp_path / "tap-shell"
    tap.write_text(f"#!/bin/sh\n{body}\n")
    tap.chmod(0o755)
    return {"singer.tap.executable": str(tap), BOUNDED_RUN_CONFIG: "true"}


def started(props: dict[str, str]) -> SingerSourceTask:
    task = SingerSourceTask()
    task.initialize(TaskContext(props))
    task.start(props)
    return task


def test_stop_ends_a_working_tap_and_the_waiting_poll_returns_without_an_error(tmp_path: Path) -> None:
    task = started(shell_tap(tmp_path, f"echo '{SCHEMA}'\nexec sleep 60"))
    outcome: list[object] = []
    poller = threading.Thread(target=lambda: outcome.append(task.poll()))
    poller.start()
    time.sleep(1.5)
    begun = time.monotonic()
    task.stop()
    poller.join(15)
    assert not poller.is_alive() and outcome == [None]
    assert time.monotonic() - begun < 10


def test_records_after_the_last_state_carry_it_and_the_run_completes(tmp_path: Path) -> None:
    lines = [SCHEMA, '{"type":"RECORD","stream":"s","record":{"n":1}}', '{"type":"STATE","value":{"at":1}}',
             '{"type":"RECORD","stream":"s","record":{"n":2}}']
    task = started(shell_tap(tmp_path, "\n".join(f"echo '{line}'" for line in lines)))
    items = []
    deadline = time.monotonic() + 30
    try:
        with pytest.raises(RunComplete):  # record 1 may come in an earlier poll than record 2
            while time.monotonic() < deadline:
                items += records_of(task.poll() or [])
        assert [(r.value.get("n"), r.source_offset) for r in items] == [(1, {"state": '{"at":1}'}),
                                                                         (2, {"state": '{"at":1}'})]
    finally:
        task.stop()


def test_a_tap_that_prints_logs_to_stdout_fails_saying_where_logs_belong(tmp_path: Path) -> None:
    task = started(shell_tap(tmp_path, "echo 'INFO starting up'"))
    try:
        with pytest.raises(ConnectError, match="must log to stderr"):
            task.poll()
    finally:
        task.stop()

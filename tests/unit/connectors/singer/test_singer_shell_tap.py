"""SingerSourceTask with taps written as shell scripts: stopping a working tap, and a tap that misuses stdout."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from kopycat.api import BOUNDED_RUN_CONFIG, ConnectError, RunComplete, SourceRecordBatch
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


def test_a_stream_schema_whose_batch_went_as_records_skips_columns_and_a_new_schema_tries_again(
        tmp_path: Path) -> None:
    """The engine asks a batch for its records when its converters do not take the columns (a
    nested field): that stream schema's later records come as records, another schema's as a batch."""
    marker = tmp_path / "go"
    other = SCHEMA.replace('"stream":"s"', '"stream":"t"')
    first = [SCHEMA, *(f'{{"type":"RECORD","stream":"s","record":{{"n":{n}}}}}' for n in (1, 2)),
             '{"type":"STATE","value":{"at":2}}', '{"type":"RECORD","stream":"s","record":{"n":3}}']  # 3 releases 1, 2
    then = ['{"type":"RECORD","stream":"s","record":{"n":4}}', other,
            *(f'{{"type":"RECORD","stream":"t","record":{{"n":{n}}}}}' for n in (5, 6)),
            '{"type":"STATE","value":{"at":6}}']
    body = "\n".join([*(f"echo '{line}'" for line in first), f'while [ ! -e "{marker}" ]; do sleep 0.05; done',
                      *(f"echo '{line}'" for line in then)])
    task = started(shell_tap(tmp_path, body))
    deadline = time.monotonic() + 60
    try:
        polled: list[object] = []
        while not polled and time.monotonic() < deadline:
            polled = list(task.poll() or [])
        [batch] = polled
        assert isinstance(batch, SourceRecordBatch) and len(batch) == 2
        sent = [(r.topic, r.value.get("n")) for r in batch.records()]  # as the engine does on a refusal
        marker.touch()
        later: list[object] = []
        with pytest.raises(RunComplete):
            while time.monotonic() < deadline:
                later += task.poll() or []
        assert [type(item).__name__ for item in later] == ["SourceRecord", "SourceRecord", "SourceRecordBatch"]
        sent += [(r.topic, r.value.get("n")) for r in records_of(later)]
        assert sent == [("s", 1), ("s", 2), ("s", 3), ("s", 4), ("t", 5), ("t", 6)]
    finally:
        task.stop()


def test_a_state_orjson_refuses_is_read_by_json_and_a_batchs_keys_are_its_key_columns(tmp_path: Path) -> None:
    """An integer beyond 64 bits (orjson's limit) in a STATE still parses; the two records before it
    come as one batch whose key column is the value's ``n``."""
    big = "123456789012345678901234567890"
    lines = [SCHEMA, *(f'{{"type":"RECORD","stream":"s","record":{{"n":{n}}}}}' for n in (1, 2)),
             f'{{"type":"STATE","value":{{"big":{big}}}}}']
    task = started(shell_tap(tmp_path, "\n".join(f"echo '{line}'" for line in lines)))
    items: list[object] = []
    deadline = time.monotonic() + 30
    try:
        with pytest.raises(RunComplete):
            while time.monotonic() < deadline:
                items += task.poll() or []
    finally:
        task.stop()
    [batch] = [item for item in items if isinstance(item, SourceRecordBatch)]
    assert batch.keys.to_pylist() == [{"n": 1}, {"n": 2}]
    assert batch.source_offset == {"state": f'{{"big":{big}}}'}
    assert [(r.key.get("n"), r.value.get("n"), r.source_offset) for r in records_of(items)] == [
        (1, 1, None), (2, 2, {"state": f'{{"big":{big}}}'})]  # the STATE after them covers the last one

"""SingerSinkTask with a real target process and no broker: what it commits, rewinds and refuses.

target-jsonl (tests/support, singer-sdk) persists at each STATE and echoes it. In a bounded run
pre_commit ends the target's input and returns the offsets of its last echo; in lock-step a put
writes one batch, waits for its echo, asks for a commit and has the rest delivered again.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from kopycat.api import BOUNDED_RUN_CONFIG, ConnectError, DataError, Schema, SchemaBuilder, SinkRecord, Struct
from kopycat.api.records import TopicPartition
from kopycat.connectors.singer.sink_task import SingerSinkTask
from kopycat.runtime.sink_task_context import WorkerSinkTaskContext

TARGET_SCRIPT = Path(__file__).parents[1] / "support" / "singer_jsonl_target.py"
VALUE = SchemaBuilder.struct().field("id", Schema.INT64_SCHEMA).field("name", Schema.OPTIONAL_STRING_SCHEMA).build()
KEY = SchemaBuilder.struct().field("id", Schema.INT64_SCHEMA).build()
TP = TopicPartition("orders", 0)


def _script(directory: Path, name: str, body: str) -> Path:
    path = directory / name
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)
    return path


def _task(tmp_path: Path, **props: str) -> tuple[SingerSinkTask, WorkerSinkTaskContext, Path]:
    out = tmp_path / "out"
    out.mkdir(exist_ok=True)
    target = _script(tmp_path, "target-jsonl", f'exec "{sys.executable}" "{TARGET_SCRIPT}" "$@"')
    config = {"singer.target.executable": str(target), "singer.target.config.directory": str(out), **props}
    task, context = SingerSinkTask(), WorkerSinkTaskContext(config)
    task.initialize(context)
    task.start(config)
    return task, context, out / "orders.jsonl"


def _records(ids: range, *, tombstone_at: int | None = None) -> list[SinkRecord]:
    return [SinkRecord.of("orders", 0, KEY, Struct(KEY).put("id", n), VALUE,
                          None if n == tombstone_at else Struct(VALUE).put("id", n).put("name", f"n{n}"), n)
            for n in ids]


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_a_bounded_run_commits_what_the_target_echoed_at_the_end_of_its_input(tmp_path: Path) -> None:
    task, context, out = _task(tmp_path, **{BOUNDED_RUN_CONFIG: "true", "singer.batch.max.records": "64"})
    try:
        task.put(_records(range(0, 250), tombstone_at=100))
        assert task.pre_commit({TP: 250}) == {TP: 250}
        assert [row["id"] for row in _lines(out)] == [n for n in range(250) if n != 100]
        assert not context.commit_requested
        task.put(_records(range(250, 260)))  # a new target run, with its own SCHEMA
        assert task.pre_commit({TP: 260}) == {TP: 260}
        assert len(_lines(out)) == 259
    finally:
        task.stop()


def test_a_continuous_run_ends_the_input_of_a_target_that_echoes_only_at_its_end(tmp_path: Path) -> None:
    task, context, out = _task(tmp_path, **{"singer.target.config.persist_on_state": "false"})
    try:
        task.put(_records(range(0, 50)))
        assert task.pre_commit({TP: 50}) == {TP: 50}
        assert len(_lines(out)) == 50 and not context.commit_requested
        task.put(_records(range(50, 60)))
        assert task.pre_commit({TP: 60}) == {TP: 60}
        assert [row["id"] for row in _lines(out)] == list(range(60))
    finally:
        task.stop()


def test_lock_step_writes_one_batch_asks_for_its_commit_and_has_the_rest_read_again(tmp_path: Path) -> None:
    task, context, out = _task(tmp_path, **{"singer.batch.max.records": "100",
                                             "singer.target.echo.timeout.ms": "60000"})
    try:
        task.put(_records(range(0, 250)))
        assert [row["id"] for row in _lines(out)] == list(range(100))
        assert context.take_seeks() == {TP: 100}
        assert context.commit_requested
        assert task.pre_commit({TP: 250}) == {TP: 100}
        task.put(_records(range(100, 250)))
        assert len(_lines(out)) == 200 and context.take_seeks() == {TP: 200}
    finally:
        task.stop()


def test_a_value_without_a_struct_schema_is_an_error_naming_the_record_and_the_fix(tmp_path: Path) -> None:
    task, _, _ = _task(tmp_path)
    try:
        with pytest.raises(DataError, match=r"Topic orders offset 7: .*STRUCT schema, got STRING; use a converter"):
            task.put([SinkRecord.of("orders", 0, None, None, Schema.STRING_SCHEMA, "text", 7)])
    finally:
        task.stop()


def test_a_target_that_never_echoes_fails_lock_step_naming_the_key(tmp_path: Path) -> None:
    silent = _script(tmp_path, "target-silent", "while read -r line; do :; done")  # reads, never echoes
    task, _, _ = _task(tmp_path, **{"singer.target.executable": str(silent), "singer.target.echo.timeout.ms": "1000"})
    try:
        with pytest.raises(ConnectError, match=r"did not echo the state it was sent within 1 s; raise "
                                               r"singer.target.echo.timeout.ms, or set it to 0"):
            task.put(_records(range(3)))
    finally:
        task.stop()


def test_a_missing_executable_is_an_error_naming_the_key(tmp_path: Path) -> None:
    task, _, _ = _task(tmp_path, **{"singer.target.executable": str(tmp_path / "no-such-target")})
    try:
        with pytest.raises(ConnectError, match=r"Could not start the Singer target .*no-such-target.*check "
                                               r"singer.target.executable"):
            task.put(_records(range(1)))
    finally:
        task.stop()

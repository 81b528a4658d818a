"""FileStreamSourceConnector/Task: lines, positions and resumption as Kafka's connect-file source."""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Mapping
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kopycat.api.data import Schema
from kopycat.api.errors import ConfigError, ConnectError
from kopycat.api.records import SourceRecord
from kopycat.api.task import OffsetStorageReader, SourceTaskContext
from kopycat.connectors.files import tailed_file
from kopycat.connectors.files.filestream_source import (
    CONFIG,
    FileStreamSourceConnector,
    FileStreamSourceTask,
    owner_of,
)
from kopycat.storage.offset_backing_store import MemoryOffsetStore
from kopycat.storage.offset_codec import encode_key
from kopycat.storage.offset_storage_reader_writer import OffsetStorageReaderImpl, OffsetStorageWriter
from tests.support.source_items import poll_records, records_of

CONNECTOR = "file-source"


class Context(SourceTaskContext):
    """A task context over a real offset store."""

    def __init__(self, props: Mapping[str, str], store: MemoryOffsetStore) -> None:
        self._props = dict(props)
        self._reader = OffsetStorageReaderImpl(store, CONNECTOR)

    @property
    def configs(self) -> Mapping[str, str]:
        return self._props

    @property
    def offset_reader(self) -> OffsetStorageReader:
        return self._reader


class Harness:
    """Runs tasks against one memory offset store and commits what they returned."""

    def __init__(self) -> None:
        self.store = MemoryOffsetStore()
        self.writer = OffsetStorageWriter(self.store, CONNECTOR)
        self.tasks: list[FileStreamSourceTask] = []

    def start(self, **props: Any) -> FileStreamSourceTask:
        config = {"topic": "lines", "poll.interval.ms": "0", "file.discovery.interval.ms": "0",
                  **{key.replace("_", "."): str(value) for key, value in props.items()}}
        task = FileStreamSourceTask()
        task.initialize(Context(config, self.store))
        task.start(config)
        self.tasks.append(task)
        return task

    def commit(self, records: list[SourceRecord]) -> None:
        for record in records:
            self.writer.offset(record.source_partition, record.source_offset)
        assert self.writer.flush(5)

    def stored(self, path: str) -> dict[str, Any] | None:
        return OffsetStorageReaderImpl(self.store, CONNECTOR).offset({"filename": path})

    def close(self) -> None:
        for task in self.tasks:
            task.stop()


@pytest.fixture
def harness() -> Any:
    running = Harness()
    yield running
    running.close()


def drain(task: FileStreamSourceTask, polls: int = 50, batches: bool = False) -> list[Any]:
    """Poll until a poll returns nothing; every record (with ``batches`` every item as polled), in order."""
    polled: list[Any] = []
    for _ in range(polls):
        items = task.poll()
        if not items:
            return polled
        polled += items if batches else records_of(items)
    raise AssertionError(f"still reading after {polls} polls")


def lines_of(records: list[SourceRecord]) -> list[tuple[str, str, int]]:
    assert all(r.source_offset is not None and r.source_partition is not None for r in records)
    return [(r.source_partition["filename"], r.value, r.source_offset["position"])  # type: ignore[index]
            for r in records]


def reference_lines(data: bytes) -> list[tuple[str, int]]:
    """Kafka's extractLine, byte by byte: \\n, \\r\\n or \\r ends a line; a final \\r waits."""
    lines, start, i = [], 0, 0
    while i < len(data):
        byte = data[i]
        if byte == 0x0A or (byte == 0x0D and i + 1 < len(data)):
            end = i + 2 if data[i:i + 2] == b"\r\n" else i + 1
            lines.append((data[start:i].decode("utf-8", "replace"), end))
            start = i = end
        else:
            i += 1
    return lines


def test_lines_come_out_in_order_with_the_byte_position_after_each(
        harness: Harness, tmp_path: Path) -> None:
    path = tmp_path / "app.log"
    path.write_bytes(b"first\nsecond line\r\nthird\rz\xc3\xa9ro\n\nbad \xff byte\n")
    task = harness.start(file=path)
    records = drain(task)
    assert lines_of(records) == [
        (str(path), "first", 6), (str(path), "second line", 19), (str(path), "third", 25),
        (str(path), "z\u00e9ro", 31), (str(path), "", 32), (str(path), "bad \ufffd byte", 43)]
    record = records[0]
    assert (record.topic, record.key, record.key_schema) == ("lines", None, None)
    assert record.value_schema == Schema.STRING_SCHEMA
    assert record.timestamp is not None


def test_offsets_have_kafka_connect_shape_with_the_file_setting_verbatim(
        harness: Harness, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path("rel.log").write_text("a\n")
    records = drain(harness.start(file="rel.log"))
    assert records[0].source_partition == {"filename": "rel.log"}
    assert records[0].source_offset == {"position": 2}
    assert encode_key(CONNECTOR, records[0].source_partition) == b'["file-source",{"filename":"rel.log"}]'


def test_a_partial_last_line_is_held_back_until_its_newline_arrives(
        harness: Harness, tmp_path: Path) -> None:
    path = tmp_path / "app.log"
    path.write_bytes(b"one\ntw")
    task = harness.start(file=path)
    assert lines_of(drain(task)) == [(str(path), "one", 4)]
    with path.open("ab") as out:
        out.write(b"o\r")
    assert drain(task) == []  # a final \r may be the start of \r\n
    with path.open("ab") as out:
        out.write(b"\nthree\n")
    assert lines_of(drain(task)) == [(str(path), "two", 9), (str(path), "three", 15)]


def test_restart_resumes_right_after_the_last_committed_line(harness: Harness, tmp_path: Path) -> None:
    path = tmp_path / "app.log"
    path.write_text("".join(f"line {n}\n" for n in range(10)))
    first = harness.start(file=path, batch_size=4)
    batch = poll_records(first)
    assert batch is not None and [r.value for r in batch] == [f"line {n}" for n in range(4)]
    harness.commit(batch)
    first.poll()  # read but never committed: must come again
    first.stop()
    assert harness.stored(str(path)) == {"position": 28}
    second = harness.start(file=path, batch_size=4)
    assert [r.value for r in drain(second)] == [f"line {n}" for n in range(4, 10)]


def test_a_new_file_matching_the_glob_is_picked_up(harness: Harness, tmp_path: Path) -> None:
    (tmp_path / "a.log").write_text("a1\n")
    (tmp_path / "ignored.txt").write_text("x\n")
    task = harness.start(files=f"{tmp_path}/*.log")
    assert [r.value for r in drain(task)] == ["a1"]
    (tmp_path / "dir.log").mkdir()  # a directory matching the glob is not a file
    (tmp_path / "b.log").write_text("b1\nb2\n")
    records = drain(task)
    assert lines_of(records) == [(f"{tmp_path}/b.log", "b1", 3), (f"{tmp_path}/b.log", "b2", 6)]


def test_files_are_split_across_three_tasks_with_one_owner_each(
        harness: Harness, tmp_path: Path) -> None:
    for n in range(12):
        (tmp_path / f"f{n:02}.log").write_text(f"from {n}\n")
    connector = FileStreamSourceConnector()
    connector.start({"topic": "lines", "files": f"{tmp_path}/f0*.log, {tmp_path}/f1*.log",
                     "poll.interval.ms": "0"})
    configs = connector.task_configs(3)
    assert [(c["task.index"], c["task.count"]) for c in configs] == [("0", "3"), ("1", "3"), ("2", "3")]
    assert all(c["topic"] == "lines" for c in configs)
    read: dict[str, list[int]] = {}
    for index, config in enumerate(configs):
        task = FileStreamSourceTask()
        task.initialize(Context(config, harness.store))
        task.start(config)
        harness.tasks.append(task)
        for record in drain(task):
            read.setdefault(record.source_partition["filename"], []).append(index)  # type: ignore[index]
    assert sorted(read) == sorted(str(p) for p in tmp_path.glob("*.log"))
    assert all(owners == [owner_of(path, 3)] for path, owners in read.items())
    assert len({owners[0] for owners in read.values()}) > 1


def test_task_configs_plan_no_more_tasks_than_matching_files(tmp_path: Path) -> None:
    (tmp_path / "only.log").write_text("x\n")
    connector = FileStreamSourceConnector()
    connector.start({"topic": "t", "files": f"{tmp_path}/*.log"})
    assert [c["task.count"] for c in connector.task_configs(8)] == ["1"]
    single = FileStreamSourceConnector()
    single.start({"topic": "t", "file": str(tmp_path / "only.log")})
    assert single.task_configs(8) == [{"topic": "t", "file": str(tmp_path / "only.log")}]


def test_a_file_shorter_than_its_committed_offset_is_read_from_the_start(
        harness: Harness, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "app.log"
    path.write_text("old line one\nold line two\n")
    first = harness.start(file=path)
    harness.commit(drain(first))
    first.stop()
    path.write_text("new\n")
    with caplog.at_level(logging.WARNING):
        records = drain(harness.start(file=path))
    assert lines_of(records) == [(str(path), "new", 4)]
    assert "shorter than its committed position 26" in caplog.text


def test_a_file_truncated_while_read_is_read_again_from_the_start(
        harness: Harness, tmp_path: Path) -> None:
    path = tmp_path / "app.log"
    path.write_text("aaaa\nbbbb\n")
    task = harness.start(file=path)
    assert len(drain(task)) == 2
    with path.open("w") as out:  # copytruncate: same file, cut to 0, written again
        out.write("c\n")
    assert lines_of(drain(task)) == [(str(path), "c", 2)]


def test_a_rotated_file_is_read_to_its_end_before_the_new_one_from_the_start(
        harness: Harness, tmp_path: Path) -> None:
    path = tmp_path / "app.log"
    path.write_text("one\n")
    task = harness.start(file=path, file_discovery_interval_ms=3_600_000)
    assert [r.value for r in drain(task)] == ["one"]
    with path.open("a") as out:
        out.write("two\n")
    path.rename(tmp_path / "app.log.1")
    path.write_text("fresh\n")
    task._next_discovery = 0  # the next poll checks the files, as the interval would
    records = drain(task)
    assert lines_of(records) == [(str(path), "two", 8), (str(path), "fresh", 6)]


def test_batch_size_caps_each_poll_and_files_take_turns(harness: Harness, tmp_path: Path) -> None:
    for name in ("a", "b"):
        (tmp_path / f"{name}.log").write_text("".join(f"{name}{n}\n" for n in range(5)))
    task = harness.start(files=f"{tmp_path}/*.log", batch_size=3)
    batches = [poll_records(task) for _ in range(4)]
    assert [len(b or []) for b in batches] == [3, 3, 3, 1]
    values = [r.value for b in batches for r in b or []]
    assert sorted(values) == sorted(f"{x}{n}" for x in "ab" for n in range(5))
    assert {r.value[0] for r in batches[1] or []} == {"b"}  # the second poll starts at b
    for name in "ab":
        assert [v for v in values if v[0] == name] == [f"{name}{n}" for n in range(5)]


def test_a_missing_file_is_waited_for(harness: Harness, tmp_path: Path) -> None:
    path = tmp_path / "later.log"
    task = harness.start(file=path)
    assert task.poll() is None
    path.write_text("here\n")
    assert [r.value for r in drain(task)] == ["here"]


def test_stop_wakes_a_waiting_poll(harness: Harness, tmp_path: Path) -> None:
    path = tmp_path / "idle.log"
    path.write_text("")
    task = harness.start(file=path, poll_interval_ms=600_000)
    returned: list[object] = []
    poller = threading.Thread(target=lambda: returned.append(task.poll()))
    poller.start()
    task.stop()
    poller.join(timeout=30)
    assert not poller.is_alive() and returned == [None]


@settings(max_examples=60, deadline=None)
@given(data=st.binary(max_size=200).map(lambda b: b.replace(b"\x00", b"\n")),
       alphabet_bias=st.lists(st.sampled_from([b"\r", b"\n", b"\r\n", b"x", b"\xc3\xa9", b"\xe2"]),
                              max_size=60),
       chunk=st.integers(min_value=1, max_value=9))
def test_any_bytes_split_as_kafka_does_whatever_the_read_size(
        data: bytes, alphabet_bias: list[bytes], chunk: int, tmp_path_factory: pytest.TempPathFactory,
) -> None:
    content = data + b"".join(alphabet_bias)
    records = read_in_chunks(content, chunk, drain, tmp_path_factory)
    assert [(v, p) for _, v, p in lines_of(records)] == reference_lines(content)


def read_in_chunks(content: bytes, chunk: int, read: Any, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """``read`` (drain or drain_batches) of a file holding ``content``, read ``chunk`` bytes at a time,
    7 lines a poll at most."""
    path = tmp_path_factory.mktemp("prop") / "f.log"
    path.write_bytes(content)
    harness = Harness()
    original = tailed_file.READ_CHUNK_BYTES
    tailed_file.READ_CHUNK_BYTES = chunk
    try:
        return read(harness.start(file=path, batch_size=7), polls=10_000)
    finally:
        tailed_file.READ_CHUNK_BYTES = original
        harness.close()


@pytest.mark.parametrize(("props", "key", "words"), [
    ({"file": "x.log"}, "topic", "Missing required configuration"),
    ({"file": "x.log", "topic": ""}, "topic", "non-empty"),
    ({"file": "x.log", "files": "*.log", "topic": "t"}, "file", "both"),
    ({"topic": "t"}, "file", "Neither"),
    ({"file": "x.log", "topic": "t", "batch.size": "0"}, "batch.size", "at least 1"),
    ({"files": "a.log,,b.log", "topic": "t"}, "files", "empty entry"),
    ({"files": "*.log", "topic": "t", "task.index": "3", "task.count": "3"}, "task.index", "below"),
])
def test_config_errors_name_the_key(props: dict[str, str], key: str, words: str) -> None:
    with pytest.raises(ConfigError) as caught:
        FileStreamSourceConnector().start(props)
    assert caught.value.key == key and words in str(caught.value)
    if key == "file":
        assert "'file'" in str(caught.value) and "'files'" in str(caught.value)
    with pytest.raises(ConfigError):
        FileStreamSourceTask().start(props)


def test_validate_reports_a_file_and_files_clash_against_both_keys() -> None:
    results = {r.name: r for r in FileStreamSourceConnector().validate(
        {"file": "a.log", "files": "*.log", "topic": "t"})}
    assert results["file"].errors and results["files"].errors
    assert not results["topic"].errors
    assert "task.index" not in CONFIG.to_markdown()


def test_a_committed_offset_of_the_wrong_type_fails_the_task_naming_the_file(
        harness: Harness, tmp_path: Path) -> None:
    path = tmp_path / "app.log"
    path.write_text("x\n")
    harness.writer.offset({"filename": str(path)}, {"position": "12"})
    assert harness.writer.flush(5)
    with pytest.raises(ConnectError, match="app.log"):
        harness.start(file=path)


def test_alter_offsets_accepts_kafka_shapes_and_refuses_others() -> None:
    connector = FileStreamSourceConnector()
    props = {"file": "a.log", "topic": "t"}
    assert connector.alter_offsets(props, {'{"filename":"a.log"}': {"position": 3}})
    assert connector.alter_offsets(props, {"anything": None})
    with pytest.raises(ConfigError, match="position"):
        connector.alter_offsets(props, {'{"filename":"a.log"}': {"position": -1}})
    with pytest.raises(ConfigError, match="filename"):
        connector.alter_offsets(props, {'{"file":"a.log"}': {"position": 1}})


def test_the_chunked_reader_handles_lines_longer_than_a_read(
        harness: Harness, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tailed_file, "READ_CHUNK_BYTES", 64)
    path = tmp_path / "long.log"
    long_line = "y" * 1000
    path.write_text(f"short\n{long_line}\nend\n")
    records = drain(harness.start(file=path))
    assert lines_of(records) == [(str(path), "short", 6), (str(path), long_line, 1007),
                                 (str(path), "end", 1011)]
    assert os.path.getsize(path) == 1011


@settings(max_examples=60, deadline=None)
@given(data=st.binary(max_size=200).map(lambda b: b.replace(b"\x00", b"\n")),
       alphabet_bias=st.lists(st.sampled_from([b"\r", b"\n", b"\r\n", b"x", b"\xc3\xa9", b"\xe2", b"\xf0\x9f\x98\x80"]),
                              max_size=60),
       chunk=st.integers(min_value=1, max_value=9))
def test_batches_hold_the_lines_poll_returns_and_end_at_the_last_lines_position(
        data: bytes, alphabet_bias: list[bytes], chunk: int, tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """The columnar path reads what the record path reads: same texts, and each batch's offset is
    the position after its last line (so a commit of the batch is a commit of that line)."""
    content = data + b"".join(alphabet_bias)
    batches = read_in_chunks(content, chunk, partial(drain, batches=True), tmp_path_factory)
    expected = reference_lines(content)
    assert [line for batch in batches for line in batch.values.to_pylist()] == [line for line, _ in expected]
    ends, seen = [], 0
    for batch in batches:
        assert 0 < len(batch) <= 7 and batch.value_schema == Schema.STRING_SCHEMA
        assert batch.source_partition is not None and batch.topic == "lines"
        seen += len(batch)
        ends.append((batch.source_offset or {}).get("position"))
        assert ends[-1] == expected[seen - 1][1]


def test_batches_records_match_the_record_path(harness: Harness, tmp_path: Path) -> None:
    path = tmp_path / "app.log"
    path.write_bytes(b"first\nsecond line\r\nthird\rz\xc3\xa9ro\n\nbad \xff byte\n")
    batches = drain(harness.start(file=path), batches=True)
    records = [record for batch in batches for record in batch.records()]
    assert [(r.value, r.topic, r.value_schema, r.source_partition) for r in records] == [
        (value, "lines", Schema.STRING_SCHEMA, {"filename": str(path)})
        for value in ["first", "second line", "third", "z\u00e9ro", "", "bad \ufffd byte"]]
    assert records[-1].source_offset == {"position": 43} and records[0].timestamp is not None

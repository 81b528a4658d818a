"""FileStreamSinkConnector/Task: values appended one per line, as Kafka's connect-file sink."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from kopycat.api.data import Type
from kopycat.api.errors import ConfigError, ConnectError
from kopycat.api.record_batch import SinkRecordBatch
from kopycat.api.records import SinkRecord, TopicPartition
from kopycat.connectors.files.filestream_sink import FileStreamSinkConnector, FileStreamSinkTask
from kopycat.converters.string import StringConverter


def records(*values: Any) -> list[SinkRecord]:
    return [SinkRecord(topic="in", kafka_partition=0, kafka_offset=n, value=value)
            for n, value in enumerate(values)]


@pytest.fixture
def task(tmp_path: Path) -> Any:
    sink = FileStreamSinkTask()
    sink.start({"file": str(tmp_path / "out.txt"), "topics": "in"})
    yield sink
    sink.stop()


def test_put_then_flush_writes_exactly_the_values_one_line_each(task: FileStreamSinkTask,
                                                                 tmp_path: Path) -> None:
    task.put(records("plain", "z\u00e9ro", "", "with\ttab"))
    task.put([])
    task.put(records(None, 42, True, 1e10, [1, "a"], "bad \ud800 surrogate"))
    task.flush({TopicPartition("in", 0): 6})
    assert (tmp_path / "out.txt").read_bytes() == (
        "plain\nz\u00e9ro\n\nwith\ttab\nnull\n42\ntrue\n1.0E10\n[1, a]\nbad ? surrogate\n"
        .encode())


def test_flush_fsyncs_the_file_it_wrote(task: FileStreamSinkTask, tmp_path: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    synced: list[bytes] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        real_fsync(fd)
        synced.append((tmp_path / "out.txt").read_bytes())

    monkeypatch.setattr(os, "fsync", fsync)
    task.put(records("a", "b"))
    task.flush({})
    assert synced == [b"a\nb\n"]


def test_the_file_is_appended_to_across_restarts(tmp_path: Path) -> None:
    path = tmp_path / "out.txt"
    path.write_text("kept\n")
    for value in ("one", "two"):
        sink = FileStreamSinkTask()
        sink.start({"file": str(path)})
        sink.put(records(value))
        sink.stop()
    assert path.read_text() == "kept\none\ntwo\n"


def test_each_put_is_in_the_file_before_it_returns_so_a_killed_worker_keeps_it(tmp_path: Path) -> None:
    """No user-space buffer: SIGKILL after put() returns loses nothing of that batch (at-most-once loses
    only the batch in flight), and a batch of texts never reaches the file without its last newline."""
    path = tmp_path / "out.txt"
    sink = FileStreamSinkTask()
    sink.start({"file": str(path)})
    sink.put(records("one", "two"))
    assert path.read_bytes() == b"one\ntwo\n"
    texts = StringConverter().to_arrow_array("in", [b"three", b"four"])
    assert texts is not None
    sink.put_batch(SinkRecordBatch("in", 0, texts.schema, texts.value, [2, 3], [None] * 2))
    assert path.read_bytes() == b"one\ntwo\nthree\nfour\n"
    sink.stop()


def test_a_short_write_is_completed(task: FileStreamSinkTask, tmp_path: Path,
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """writev may write less than asked (a nearly full disk); the rest follows, in order."""
    real_writev = os.writev

    def short_writev(fd: int, pieces: list[bytes]) -> int:
        return real_writev(fd, [bytes(pieces[0])[:3]])

    monkeypatch.setattr(os, "writev", short_writev)
    task.put(records("abcdef", "gh"))
    assert (tmp_path / "out.txt").read_bytes() == b"abcdef\ngh\n"


def test_put_after_stop_fails_naming_the_file(task: FileStreamSinkTask) -> None:
    task.stop()
    with pytest.raises(ConnectError, match="out.txt"):
        task.put(records("late"))


def test_a_file_that_cannot_be_created_fails_start_naming_it(tmp_path: Path) -> None:
    with pytest.raises(ConnectError, match="no-such-dir"):
        FileStreamSinkTask().start({"file": str(tmp_path / "no-such-dir" / "out.txt")})


@pytest.mark.parametrize("props", [{"topics": "in"}, {"topics": "in", "file": "  "}])
def test_file_is_required_and_the_error_names_it(props: dict[str, str]) -> None:
    with pytest.raises(ConfigError) as caught:
        FileStreamSinkConnector().start(props)
    assert caught.value.key == "file"


def test_connector_plans_one_task_with_every_key_passed_through(tmp_path: Path) -> None:
    props = {"file": str(tmp_path / "out.txt"), "topics.regex": "in-.*", "name": "sink",
             "connector.class": "FileStreamSink"}
    connector = FileStreamSinkConnector()
    connector.start(props)
    assert connector.task_class() is FileStreamSinkTask
    assert connector.task_configs(5) == [props]
    assert list(connector.config().names()) == ["file"]
    assert connector.alter_offsets(props, {TopicPartition("in-1", 0): 10})


def test_a_batch_of_texts_writes_the_bytes_put_writes(tmp_path: Path) -> None:
    values = [b"plain", "z\u00e9ro \U0001F600".encode(), b"", b"with\ttab", b"last"]
    texts = StringConverter().to_arrow_array("in", values)
    assert texts is not None
    written = []
    for how in ("records", "batch"):
        sink = FileStreamSinkTask()
        sink.start({"file": str(tmp_path / f"{how}.txt")})
        assert sink.batch_value_types() == {Type.STRING}
        if how == "records":
            sink.put(records(*(v.decode() for v in values)))
        else:
            batch = SinkRecordBatch("in", 0, texts.schema, texts.value, list(range(5)), [None] * 5)
            sink.put_batch(batch.slice(0, 2))
            sink.put_batch(batch.slice(2, 5))
        sink.flush({})
        sink.stop()
        written.append((tmp_path / f"{how}.txt").read_bytes())
    assert written[0] == written[1] == b"plain\nz\xc3\xa9ro \xf0\x9f\x98\x80\n\nwith\ttab\nlast\n"


@pytest.mark.parametrize(("content", "kept"), [
    (b"", b""), (b"a\nb\n", b"a\nb\n"), (b"a\nb\nli", b"a\nb\n"), (b"torn", b""),
    (b"x" * 70_000 + b"\n" + b"y" * 70_000, b"x" * 70_000 + b"\n")])
def test_start_cuts_a_torn_last_line_a_killed_write_left(tmp_path: Path, content: bytes, kept: bytes) -> None:
    path = tmp_path / "out.txt"
    path.write_bytes(content)
    task = FileStreamSinkTask()
    task.start({"file": str(path)})
    task.put([SinkRecord(topic="in", kafka_partition=0, kafka_offset=0, value="next")])
    task.stop()
    assert path.read_bytes() == kept + b"next\n"

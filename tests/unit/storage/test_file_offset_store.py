"""FileOffsetStore: offsets survive restarts, and a crash mid-write never tears the file."""

from __future__ import annotations

import os
from pathlib import Path

import orjson
import pytest

from kopycat.api.errors import ConnectError
from kopycat.storage import FileOffsetStore, OffsetStorageReaderImpl, OffsetStorageWriter
from kopycat.storage.offset_codec import encode_key
from kopycat.storage.worker_storage_config import FILE_OFFSET_STORE_CONFIG


def test_offsets_survive_a_restart(tmp_path: Path) -> None:
    path = tmp_path / "offsets" / "standalone.offsets"
    with FileOffsetStore(path) as store:
        writer = OffsetStorageWriter(store, "files")
        writer.offset({"filename": "/var/log/a"}, {"position": 4096})
        writer.offset({"filename": "/var/log/b"}, {"position": 7})
        assert writer.flush(1)
    with FileOffsetStore(path) as again:
        reader = OffsetStorageReaderImpl(again, "files")
        assert reader.offsets([{"filename": "/var/log/a"}, {"filename": "/var/log/b"}]) == [
            ({"filename": "/var/log/a"}, {"position": 4096}), ({"filename": "/var/log/b"}, {"position": 7})]
        assert again.connector_partitions("files") == [{"filename": "/var/log/a"}, {"filename": "/var/log/b"}]


def test_a_missing_file_is_an_empty_store(tmp_path: Path) -> None:
    with FileOffsetStore(tmp_path / "none.offsets") as store:
        assert store.get([b'["c",{}]']) == {b'["c",{}]': None}


def test_the_file_holds_the_documented_format_with_the_kafka_bytes(tmp_path: Path) -> None:
    path = tmp_path / "o.offsets"
    with FileOffsetStore(path) as store:
        store.set({encode_key("files", {"filename": "/x"}): b'{"position":1}', b"\xff\x00": b"\x01"})
    document = orjson.loads(path.read_bytes())
    assert document == {"format": "kopycat.file-offsets", "version": 1, "offsets": [
        {"key": '["files",{"filename":"/x"}]', "value": '{"position":1}'},
        {"key_b64": "/wA=", "value": '\x01'}]}


def test_a_tombstone_removes_the_offset_from_the_file(tmp_path: Path) -> None:
    path = tmp_path / "o.offsets"
    key = encode_key("files", {"filename": "/x"})
    with FileOffsetStore(path) as store:
        store.set({key: b'{"position":1}'})
        store.set({key: None})
    assert orjson.loads(path.read_bytes())["offsets"] == []
    with FileOffsetStore(path) as again:
        assert again.get([key]) == {key: None}


def test_a_crash_during_the_rename_leaves_the_previous_file_intact(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "o.offsets"
    key = encode_key("files", {"filename": "/x"})
    store = FileOffsetStore(path)
    store.start()
    store.set({key: b'{"position":1}'}).result()
    before = path.read_bytes()

    def failing_replace(src: str, dst: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", failing_replace)
    errors: list[BaseException | None] = []
    future = store.set({key: b'{"position":2}'}, errors.append)
    with pytest.raises(ConnectError, match=r"o\.offsets: .*No space left"):
        future.result()
    assert isinstance(errors[0], ConnectError)
    monkeypatch.undo()
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["o.offsets"]  # no temp file left behind
    assert store.get([key]) == {key: b'{"position":1}'}  # memory did not run ahead of the file
    with FileOffsetStore(path) as again:
        assert again.get([key]) == {key: b'{"position":1}'}


def test_a_failed_write_is_retried_by_the_next_flush(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "o.offsets"
    store = FileOffsetStore(path)
    store.start()
    writer = OffsetStorageWriter(store, "files")
    writer.offset({"filename": "/x"}, {"position": 5})
    with monkeypatch.context() as patched:
        patched.setattr(os, "fsync", lambda fd: (_ for _ in ()).throw(OSError(5, "I/O error")))
        assert writer.flush(1) is False
    assert not path.exists()
    assert writer.flush(1) is True
    assert OffsetStorageReaderImpl(store, "files").offset({"filename": "/x"}) == {"position": 5}


def test_temp_files_left_by_a_crash_are_removed_on_start(tmp_path: Path) -> None:
    path = tmp_path / "o.offsets"
    stale = tmp_path / ".o.offsets.abc123.tmp"
    stale.write_bytes(b'{"half written')
    other = tmp_path / ".unrelated.tmp"
    other.write_bytes(b"x")
    with FileOffsetStore(path):
        pass
    assert not stale.exists()
    assert other.exists()


def test_a_corrupt_file_fails_start_naming_the_file_and_the_way_out(tmp_path: Path) -> None:
    path = tmp_path / "o.offsets"
    path.write_bytes(b"\xac\xed\x00\x05sr\x00\x11java.util.HashMap")  # Kafka's Java-serialized file
    with pytest.raises(ConnectError, match=r"o\.offsets cannot be read.*move it away"):
        FileOffsetStore(path).start()


def test_the_filename_key_is_required() -> None:
    with pytest.raises(ConnectError, match=r"offset\.storage\.file\.filename"):
        FILE_OFFSET_STORE_CONFIG.parse({})

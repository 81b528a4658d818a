"""FileOffsetStore: offsets survive restarts, and a crash mid-write never tears the file."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import orjson
import pytest

from kopycat.api.errors import ConnectError
from kopycat.storage import FileOffsetStore, OffsetStorageReaderImpl, OffsetStorageWriter
from kopycat.storage.java_serialization import load_byte_array_map
from kopycat.storage.offset_codec import encode_key
from kopycat.storage.worker_storage_config import FILE_OFFSET_STORE_CONFIG

FIXTURES = Path(__file__).parent / "fixtures"


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


def test_the_file_is_kafka_connects_java_serialized_map_of_the_offset_bytes(tmp_path: Path) -> None:
    path = tmp_path / "o.offsets"
    key = b'["files",{"filename":"/var/log/app.log"}]'
    with FileOffsetStore(path) as store:
        store.set({key: b'{"position":4096}'})
    assert path.read_bytes() == (FIXTURES / "kafka-one-offset.offsets").read_bytes()
    with FileOffsetStore(path) as store:
        store.set({b"\xff\x00": b"\x01"})
    assert dict(load_byte_array_map(path.read_bytes())) == {key: b'{"position":4096}', b"\xff\x00": b"\x01"}


def test_a_file_kafka_wrote_is_read_and_its_null_values_are_no_offset(tmp_path: Path) -> None:
    path = tmp_path / "connect.offsets"
    path.write_bytes((FIXTURES / "kafka-with-null-value.offsets").read_bytes())
    with FileOffsetStore(path) as store:
        reader = OffsetStorageReaderImpl(store, "files")
        assert reader.offsets([{"filename": "/x"}, {"filename": "/y"}]) == [
            ({"filename": "/x"}, {"position": 1}), ({"filename": "/y"}, None)]
        assert store.connector_partitions("files") == [{"filename": "/x"}]


def test_a_kopycat_json_file_is_read_and_the_next_write_converts_it(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "o.offsets"
    path.write_bytes(orjson.dumps({"format": "kopycat.file-offsets", "version": 1, "offsets": [
        {"key": '["files",{"filename":"/x"}]', "value": '{"position":1}'},
        {"key_b64": "/wA=", "value_b64": "AQ=="}]}))
    key = encode_key("files", {"filename": "/x"})
    with caplog.at_level(logging.INFO, "kopycat.storage.file_offset_store"), FileOffsetStore(path) as store:
        assert store.get([key, b"\xff\x00"]) == {key: b'{"position":1}', b"\xff\x00": b"\x01"}
        assert path.read_bytes().startswith(b"{")  # reading alone changes nothing
        store.set({key: b'{"position":2}'})
    assert "is a Kopycat JSON offsets file: the next offsets write converts it" in caplog.text
    assert dict(load_byte_array_map(path.read_bytes())) == {key: b'{"position":2}', b"\xff\x00": b"\x01"}


def test_an_empty_file_is_an_empty_store_as_in_kafka(tmp_path: Path) -> None:
    path = tmp_path / "o.offsets"
    path.touch()
    with FileOffsetStore(path) as store:
        assert store.get([b'["c",{}]']) == {b'["c",{}]': None}


def test_a_tombstone_removes_the_offset_from_the_file(tmp_path: Path) -> None:
    path = tmp_path / "o.offsets"
    key = encode_key("files", {"filename": "/x"})
    with FileOffsetStore(path) as store:
        store.set({key: b'{"position":1}'})
        store.set({key: None})
    assert load_byte_array_map(path.read_bytes()) == []
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


def test_a_truncated_kafka_file_fails_start_naming_the_file_and_a_way_out_that_keeps_offsets(
        tmp_path: Path) -> None:
    path = tmp_path / "o.offsets"
    path.write_bytes((FIXTURES / "kafka-one-offset.offsets").read_bytes()[:-20])
    with pytest.raises(ConnectError, match=r"o\.offsets is neither a Java-serialized HashMap.*nor Kopycat's "
                                           r"JSON offsets file: the stream ends .*truncated file.*Restore it "
                                           r"from a backup.*remove it only to copy everything again"):
        FileOffsetStore(path).start()


@pytest.mark.parametrize(("content", "found"), [
    (b"position=42\n", r"its content starts with b'position=42\\n'"),
    (b'{"format": "other"}', r"JSON whose format is 'other'"),
    (b'{"format": "kopycat.file-offsets", "version": 2, "offsets": []}', r"version 2"),
    (b"\xac\xed\x00\x05t\x00\x02hi", r"TC_STRING at byte 4 where a java\.util\.HashMap object"),
], ids=["text", "other json", "json version", "java string"])
def test_a_file_in_neither_format_names_what_was_found(tmp_path: Path, content: bytes, found: str) -> None:
    path = tmp_path / "o.offsets"
    path.write_bytes(content)
    with pytest.raises(ConnectError, match=rf"o\.offsets is neither .*: .*{found}.*Restore it from a backup"):
        FileOffsetStore(path).start()
    assert path.read_bytes() == content


def test_the_filename_key_is_required() -> None:
    with pytest.raises(ConnectError, match=r"offset\.storage\.file\.filename"):
        FILE_OFFSET_STORE_CONFIG.parse({})

"""`kopycat offsets get|reset` and `kopycat validate`: offsets files, exit codes, the checks a run makes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kopycat.cli import main
from kopycat.storage.file_offset_store import FileOffsetStore
from kopycat.storage.offset_storage_reader_writer import OffsetStorageWriter


def run_cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exit_info:
        main(args)
    out, err = capsys.readouterr()
    return int(exit_info.value.code or 0), out, err


def test_offsets_get_shows_kip_875_shape_and_reset_forgets_them(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    offsets = tmp_path / "connect.offsets"
    with FileOffsetStore(offsets) as store:
        writer = OffsetStorageWriter(store, "logs")
        writer.offset({"filename": "/var/log/a.log"}, {"position": 4096})
        writer.offset({"filename": "/var/log/b.log"}, {"position": 10})
        assert writer.flush(5)
    worker = tmp_path / "worker.properties"
    worker.write_text(f"offset.storage.file.filename={offsets}\n")
    code, out, _ = run_cli(["offsets", "get", "--connector", "logs", "--worker", str(worker)], capsys)
    assert code == 0
    assert sorted(json.loads(out)["offsets"], key=str) == sorted([
        {"partition": {"filename": "/var/log/a.log"}, "offset": {"position": 4096}},
        {"partition": {"filename": "/var/log/b.log"}, "offset": {"position": 10}}], key=str)
    code, out, _ = run_cli(["offsets", "reset", "--connector", "logs", "--worker", str(worker)], capsys)
    assert code == 0 and "2 source partitions" in out
    _, out, _ = run_cli(["offsets", "get", "--connector", "logs", "--worker", str(worker)], capsys)
    assert json.loads(out) == {"offsets": []}


def test_validate_exits_non_zero_listing_each_bad_key(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "c.properties"
    config.write_text("name=c\nconnector.class=FileStreamSource\nfile=/tmp/x\ntopic=t\ntasks.max=-2\n")
    code, out, _ = run_cli(["validate", str(config)], capsys)
    assert code == 1
    assert "tasks.max: Invalid value -2" in out and "1 error(s)" in out


def test_a_standalone_worker_without_an_offsets_file_says_which_key_to_set(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    worker, connector = tmp_path / "worker.properties", tmp_path / "c.properties"
    worker.write_text("bootstrap.servers=127.0.0.1:9\n")
    connector.write_text("name=c\nconnector.class=FileStreamSource\nfile=/tmp/x\ntopic=t\n")
    code, _, err = run_cli(["standalone", str(worker), str(connector)], capsys)
    assert code == 2 and "offset.storage.file.filename" in err


def test_validate_exits_1_for_an_unknown_connector_class_as_for_any_invalid_config(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "c.properties"
    config.write_text("name=c\nconnector.class=NoSuchConnector\n")
    code, _, err = run_cli(["validate", str(config)], capsys)
    assert code == 1 and "NoSuchConnector" in err and err.count("\n") == 1


def test_validate_refuses_a_topics_regex_that_a_run_would_refuse(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "c.properties"
    config.write_text("name=c\nconnector.class=FileStreamSink\nfile=/tmp/x\ntopics.regex=orders-(\n")
    code, out, _ = run_cli(["validate", str(config)], capsys)
    assert code == 1
    assert "topics.regex: Invalid value" in out and "not a valid regular expression" in out


@pytest.mark.parametrize(("line", "key", "problem"), [
    ("topics=orders,bad topic", "topics", "contains a character other than ASCII alphanumerics"),
    ("topics=orders,..", "topics", 'cannot be "." or ".."'),
    (f"topics={'t' * 250}", "topics", "can't be longer than 249 characters"),
    ("topics=orders\nerrors.tolerance=all\nerrors.deadletterqueue.topic.name=dead letters",
     "errors.deadletterqueue.topic.name", "contains a character other than ASCII alphanumerics"),
], ids=["space", "dots", "too-long", "dead-letter-topic"])
def test_validate_refuses_a_topic_name_kafka_would_refuse(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], line: str, key: str, problem: str) -> None:
    config = tmp_path / "c.properties"
    config.write_text(f"name=c\nconnector.class=FileStreamSink\nfile=/tmp/x\n{line}\n")
    code, out, _ = run_cli(["validate", str(config)], capsys)
    assert code == 1
    assert f"{key}: Invalid value" in out and problem in out


def test_validate_refuses_a_converter_setting_that_a_run_would_refuse(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "c.properties"
    config.write_text("name=c\nconnector.class=FileStreamSink\nfile=/tmp/x\ntopics=t\n"
                      "key.converter=org.apache.kafka.connect.json.JsonConverter\nkey.converter.schemas.enable=maybe\n")
    code, _, err = run_cli(["validate", str(config)], capsys)
    assert code == 1 and "schemas.enable" in err and "maybe" in err

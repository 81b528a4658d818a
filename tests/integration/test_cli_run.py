"""``kopycat run``: one scheduled-run's worth of copying from the command line, with a progress bar.

Real broker; the CLI runs as a user runs it (a child process). A file source copies what the file
holds, then only what was appended; a file sink then copies the topic up to the planned end with
a bar that reaches 100% of the planned records.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.kafka import consume_all

pytestmark = pytest.mark.integration


def _kopycat(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kopycat.cli", *args], capture_output=True, text=True, timeout=300)


def _write(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(f"{line}\n" for line in lines))
    return path


def test_run_copies_what_is_there_then_only_what_is_new_and_a_sink_shows_a_bar_to_its_planned_end(
        tmp_path: Path, bootstrap_servers: str, topic_name: str) -> None:
    source_file = _write(tmp_path / "in.txt", [f"line-{i}" for i in range(1000)])
    worker = _write(tmp_path / "worker.properties", [
        f"bootstrap.servers={bootstrap_servers}", f"offset.storage.file.filename={tmp_path / 'offsets'}",
        "key.converter=org.apache.kafka.connect.storage.StringConverter",
        "value.converter=org.apache.kafka.connect.storage.StringConverter"])
    source = _write(tmp_path / "source.properties", [
        f"name={topic_name}-source", "connector.class=FileStreamSource", f"file={source_file}", f"topic={topic_name}"])

    first = _kopycat("run", str(worker), str(source), "--no-progress")
    assert first.returncode == 0, first.stderr[-2000:]
    assert "task 0: 1,000 records" in first.stdout
    with source_file.open("a") as out:
        out.writelines(f"line-{i}\n" for i in range(1000, 1500))
    second = _kopycat("run", str(worker), str(source))
    assert second.returncode == 0 and "task 0: 500 records" in second.stdout, second.stdout + second.stderr[-2000:]
    assert [v.decode() for v in consume_all(bootstrap_servers, topic_name)] == [f"line-{i}" for i in range(1500)]
    assert "1,500 records" not in second.stderr and "500 records" in second.stderr.splitlines()[-1]  # no total: a count

    sink_file = tmp_path / "out.txt"
    sink = tmp_path / "sink.json"
    sink.write_text(json.dumps({"name": f"{topic_name}-sink", "config": {
        "connector.class": "FileStreamSink", "file": str(sink_file), "topics": topic_name}}))
    copied = _kopycat("run", str(worker), str(sink))
    assert copied.returncode == 0, copied.stderr[-2000:]
    assert sink_file.read_text().splitlines() == [f"line-{i}" for i in range(1500)]
    bar = copied.stderr.splitlines()[-1]
    assert bar.startswith("[" + "#" * 30 + "] 100%  1,500/1,500 records"), copied.stderr[-2000:]


def test_run_with_a_bad_connector_config_exits_2_naming_the_key(tmp_path: Path, bootstrap_servers: str) -> None:
    worker = _write(tmp_path / "worker.properties", [f"bootstrap.servers={bootstrap_servers}",
                                                     f"offset.storage.file.filename={tmp_path / 'offsets'}"])
    source = _write(tmp_path / "source.properties", ["name=bad", "connector.class=FileStreamSource",
                                                     "topic=t", "batch.size=many"])
    done = _kopycat("run", str(worker), str(source))
    assert done.returncode == 2 and "batch.size" in done.stderr and "many" in done.stderr, done.stderr[-2000:]

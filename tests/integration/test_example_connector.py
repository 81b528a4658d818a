"""The example connector in the docs works as a newcomer runs it: ``kopycat run`` on two .properties.

Real broker; the CLI runs as a child process, and the connector is named by its class path only.
The counter writes 1..count.to once, and a later run with a higher count.to continues from the
offset the first run stored: next numbers, none twice.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.kafka import consume_all

pytestmark = pytest.mark.integration

COUNTER_CLASS = "kopycat.examples.counter_source.CounterSourceConnector"


def _properties(path: Path, **props: str) -> Path:
    path.write_text("".join(f"{key}={value}\n" for key, value in props.items()))
    return path


def _kopycat_run(worker: Path, connector: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kopycat.cli", "run", str(worker), str(connector), "--no-progress"],
                          capture_output=True, text=True, timeout=300)


def test_example_counter_writes_each_number_once_and_the_next_run_resumes_from_its_stored_offset(
        tmp_path: Path, bootstrap_servers: str, topic_name: str) -> None:
    worker = _properties(tmp_path / "worker.properties", **{
        "bootstrap.servers": bootstrap_servers, "offset.storage.file.filename": str(tmp_path / "offsets"),
        "key.converter": "org.apache.kafka.connect.storage.StringConverter",
        "value.converter": "org.apache.kafka.connect.json.JsonConverter", "value.converter.schemas.enable": "false"})
    counter = {"name": f"{topic_name}-counter", "connector.class": COUNTER_CLASS, "topic": topic_name}

    first = _kopycat_run(worker, _properties(tmp_path / "counter.properties", **counter, **{"count.to": "250"}))
    assert first.returncode == 0, first.stderr[-2000:]
    assert "task 0: 250 records" in first.stdout, first.stdout
    assert [json.loads(v) for v in consume_all(bootstrap_servers, topic_name)] == list(range(1, 251))

    second = _kopycat_run(worker, _properties(tmp_path / "counter.properties", **counter, **{"count.to": "400"}))
    assert second.returncode == 0, second.stderr[-2000:]
    assert "task 0: 150 records" in second.stdout, second.stdout
    assert [json.loads(v) for v in consume_all(bootstrap_servers, topic_name)] == list(range(1, 401))

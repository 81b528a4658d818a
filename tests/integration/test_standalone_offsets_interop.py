"""Kafka's connect-standalone and ``kopycat standalone`` take turns on one offsets file.

Kafka's ``ConnectStandalone`` (from include/jars/connect-runtime's jars) copies the first lines
of a file with its FileStreamSource and stops; ``kopycat standalone`` starts on the same
``offset.storage.file.filename`` and copies only the lines added since; then Kafka's worker
starts again on the file Kopycat wrote and copies only the lines added after that. The topic
must hold every line exactly once, in order. Java's ``FileOffsetBackingStore`` itself (through
``tests/unit/storage/java/FileOffsetsOracle.java``) also reads a file Kopycat wrote.
"""

from __future__ import annotations

import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from kopycat.api.errors import ConnectError
from kopycat.dev.jars import ensure_jars
from kopycat.dev.kafka_broker import java_executable
from kopycat.dev.kafka_connect import LOG4J2_PROPERTIES, TEST_JVM_OPTIONS
from kopycat.dev.ports import free_port
from kopycat.storage.file_offset_store import FileOffsetStore, loads_offsets
from kopycat.storage.java_serialization import load_byte_array_map
from kopycat.storage.offset_codec import decode_value, encode_key
from tests.support.kafka import consume_all, create_topic
from tests.support.standalone import start_worker, write_props

pytestmark = pytest.mark.timeout(1200)  # three worker runs, two of them JVMs, on two busy cores

STRING_CONVERTER = "org.apache.kafka.connect.storage.StringConverter"
ORACLE = Path(__file__).parents[1] / "unit" / "storage" / "java" / "FileOffsetsOracle.java"
NAME = "file-lines"
STEP = 300


def line(i: int) -> bytes:
    return b"line %05d of the file both standalone workers read" % i


def append_lines(path: Path, start: int, count: int) -> int:
    """Append lines start..start+count-1; the file's size in bytes afterwards."""
    with path.open("ab") as handle:
        handle.writelines(line(i) + b"\n" for i in range(start, start + count))
    return path.stat().st_size


def committed_position(offsets_file: Path, input_file: Path) -> Callable[[], int | None]:
    """Reads the file's position for the input file; None while there is none or Java is mid-write.

    Kafka's ``save()`` truncates and rewrites the file in place, so a read can see half a file.
    """
    key = encode_key(NAME, {"filename": str(input_file)})

    def position() -> int | None:
        try:
            value = loads_offsets(offsets_file.read_bytes(), str(offsets_file)).get(key)
        except (FileNotFoundError, ConnectError):
            return None
        return None if value is None else int(decode_value(value)["position"])
    return position


def wait_for_position(position: Callable[[], int | None], expected: int, process: subprocess.Popen[bytes],
                      log: Path, timeout_s: float = 300.0) -> None:
    deadline = time.monotonic() + timeout_s
    while (seen := position()) != expected:
        assert process.poll() is None, f"the worker exited with {process.returncode}:\n{tail(log)}"
        assert time.monotonic() < deadline, f"committed position {seen}, not {expected}:\n{tail(log)}"
        time.sleep(0.5)


def tail(log: Path, lines: int = 40) -> str:
    return "\n".join(log.read_text(errors="replace").splitlines()[-lines:]) if log.exists() else "(no log)"


def start_connect_standalone(workdir: Path, worker: Path, connector: Path) -> subprocess.Popen[bytes]:
    """Kafka's ConnectStandalone, as bin/connect-standalone.sh runs it; its log in workdir/java.log."""
    log4j = workdir / "log4j2.properties"
    log4j.write_text(LOG4J2_PROPERTIES)
    with (workdir / "java.stdout").open("ab") as out:
        return subprocess.Popen(
            [java_executable(), *TEST_JVM_OPTIONS, "-Xmx256m", f"-Dlog4j2.configurationFile={log4j}",
             f"-Dkopycat.connect.log={workdir / 'java.log'}", "-cp", f"{ensure_jars('connect-runtime')}/*",
             "org.apache.kafka.connect.cli.ConnectStandalone", str(worker), str(connector)],
            stdout=out, stderr=subprocess.STDOUT)


def stop_worker(process: subprocess.Popen[bytes]) -> int:
    """SIGTERM (both workers then stop their tasks, which commit), SIGKILL after a minute; the exit code."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    return int(process.returncode)


def run_until(process: subprocess.Popen[bytes], position: Callable[[], int | None], expected: int,
              log: Path) -> None:
    """Wait until ``expected`` is committed, then stop the worker: it must exit cleanly."""
    try:
        wait_for_position(position, expected, process, log)
    finally:
        code = stop_worker(process)
    assert code in (0, 143), f"the worker exited with {code} on SIGTERM:\n{tail(log)}"


def test_kopycat_and_connect_standalone_resume_from_each_others_offsets_file(
        bootstrap_servers: str, topic_name: str, tmp_path: Path) -> None:
    topic = create_topic(bootstrap_servers, topic_name, 1)
    input_file, offsets_file = tmp_path / "input.txt", tmp_path / "connect.offsets"
    worker = write_props(tmp_path / "worker.properties", {
        "bootstrap.servers": bootstrap_servers, "offset.storage.file.filename": str(offsets_file),
        "offset.flush.interval.ms": "500", "key.converter": STRING_CONVERTER,
        "value.converter": STRING_CONVERTER, "listeners": f"http://127.0.0.1:{free_port()}",
        "plugin.discovery": "service_load"})
    connector = write_props(tmp_path / "connector.properties", {
        "name": NAME, "connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector",
        "tasks.max": "1", "file": str(input_file), "topic": topic})
    position = committed_position(offsets_file, input_file)

    first = append_lines(input_file, 0, STEP)
    run_until(start_connect_standalone(tmp_path, worker, connector), position, first, tmp_path / "java.log")
    java_file = offsets_file.read_bytes()
    assert consume_all(bootstrap_servers, topic) == [line(i) for i in range(STEP)]

    second = append_lines(input_file, STEP, STEP)
    kopycat_log = tmp_path / "kopycat.log"
    kopycat = start_worker(worker, connector, kopycat_log)
    kopycat_log.touch()
    run_until(kopycat, position, second, kopycat_log)
    assert consume_all(bootstrap_servers, topic) == [line(i) for i in range(2 * STEP)]
    kopycat_file = offsets_file.read_bytes()
    assert kopycat_file[:4] == java_file[:4] == b"\xac\xed\x00\x05"

    third = append_lines(input_file, 2 * STEP, STEP)
    run_until(start_connect_standalone(tmp_path, worker, connector), position, third, tmp_path / "java.log")
    values = consume_all(bootstrap_servers, topic)
    assert len(values) == 3 * STEP
    assert values == [line(i) for i in range(3 * STEP)]


def oracle(command: str, path: Path, stdin: str = "") -> str:
    result = subprocess.run(
        [java_executable(), *TEST_JVM_OPTIONS, "-cp", f"{ensure_jars('connect-runtime')}/*", str(ORACLE),
         command, str(path)], input=stdin, capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    return "\n".join(row for row in result.stdout.splitlines() if "\t" in row or row == "end")


def offset(position: int) -> bytes:
    return b'{"position":%d}' % position


def test_kafkas_file_offset_backing_store_reads_what_kopycat_wrote_and_the_reverse(tmp_path: Path) -> None:
    path = tmp_path / "connect.offsets"
    keys = [encode_key("files", {"filename": f"/data/{i}.txt"}) for i in range(20)]
    with FileOffsetStore(path) as store:
        store.set({key: offset(i) for i, key in enumerate(keys)})
        store.set({keys[0]: None})

    expected = sorted(f"{key.hex()}\t{offset(i).hex()}" for i, key in enumerate(keys) if i)
    assert oracle("read", path).splitlines() == [*expected, "partitions files\t19", "end"]

    updates = "".join(f"{key.hex()}\t{offset(i + 100).hex()}\n" for i, key in enumerate(keys[:3]))
    oracle("write", path, updates + f"{keys[5].hex()}\t-\n")
    assert load_byte_array_map(path.read_bytes()).count((keys[5], None)) == 1  # Kafka keeps a null value
    with FileOffsetStore(path) as again:
        assert again.get([keys[0], keys[1], keys[5], keys[6]]) == {
            keys[0]: offset(100), keys[1]: offset(101), keys[5]: None, keys[6]: offset(6)}
        assert len(again.connector_partitions("files")) == 19

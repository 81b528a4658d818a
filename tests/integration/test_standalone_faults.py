"""Kill -9 the standalone worker ten times while it copies a file; prove what the guarantees say.

Lines are fixed-width, so a committed byte position names a line. The topic has one partition
and the producer is idempotent, so each run of the worker appends a contiguous, ascending stretch
of lines starting where the last *committed* offset points. At-least-once: every line arrives,
and the only repeats are restarts from a committed position (the uncommitted window).
At-most-once: no line twice; what is lost ends where a restart begins. Exactly-once: a
read_committed consumer sees every line exactly once, in order.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path

import pytest

from kopycat.storage.file_offset_store import loads_offsets
from kopycat.storage.kafka_offset_store import KafkaOffsetStore
from kopycat.storage.offset_codec import decode_value, encode_key
from kopycat.storage.offset_storage_reader_writer import OffsetStorageReaderImpl
from tests.support.kafka import consume_all, create_topic
from tests.support.kills import kill_when
from tests.support.standalone import run_until, start_worker, write_props

pytestmark = pytest.mark.timeout(2400)  # ten restarts of a Python worker; slow on a loaded machine

LINES = 4_000_000  # enough that at least half of ten runs end mid-file: an unloaded run copies ~400k lines
WIDTH = len("line-0000000\n")
KILLS = 10


def write_input(path: Path) -> None:
    path.write_bytes(b"".join(b"line-%07d\n" % i for i in range(LINES)))


def kill_and_restart_ten_times(worker: Path, connector: Path, log: Path,
                               committed_line: Callable[[], int]) -> list[int]:
    """Kill -9 at random moments; the committed line after each kill (where the next run starts)."""
    rng = random.Random(20261122)
    starts: list[int] = []
    for _ in range(KILLS):
        before = committed_line()
        process = start_worker(worker, connector, log)
        # started and copying, however slow the machine
        kill_when(process, lambda b=before: committed_line() != b or b >= LINES, log, timeout_s=180,
                  waiting_for="a commit of this run", after_s=rng.uniform(0.0, 0.4))
        starts.append(committed_line())
    return starts


def finish(worker: Path, connector: Path, log: Path, committed_line: Callable[[], int]) -> None:
    """One last run to the end of the file, stopped cleanly."""
    run_until(worker, connector, log, committed_line, LINES, poll_s=0.5)


def check_runs(values: list[int], starts: set[int]) -> int:
    """Every line once at least; each repeat starts a new run at a committed position. Duplicates."""
    expected = 0
    for value in values:
        if value != expected:
            assert value <= expected, f"line {expected} was lost: the next line written is {value}"
            assert value in starts, f"a run restarted at line {value}, which was never committed {sorted(starts)}"
        expected = value + 1
    assert expected == LINES and set(values) == set(range(LINES))
    return len(values) - LINES


@pytest.fixture
def files(tmp_path: Path) -> Path:
    write_input(tmp_path / "input.txt")
    return tmp_path


def connector_file(tmp_path: Path, topic: str, **extra: str) -> Path:
    return write_props(tmp_path / "connector.properties", {
        "name": "faulty-file", "connector.class": "FileStreamSource", "file": str(tmp_path / "input.txt"),
        "topic": topic, "batch.size": "500", **extra})


def file_offsets_worker(files: Path, bootstrap_servers: str) -> tuple[Path, Callable[[], int]]:
    """worker.properties with offsets in a file, and the committed line read from that file."""
    offsets_file = files / "connect.offsets"
    worker = write_props(files / "worker.properties", {
        "bootstrap.servers": bootstrap_servers, "offset.storage.file.filename": str(offsets_file),
        "offset.flush.interval.ms": "300", "value.converter": "org.apache.kafka.connect.storage.StringConverter"})
    key = encode_key("faulty-file", {"filename": str(files / "input.txt")})

    def committed_line() -> int:
        # Parsed here, not through FileOffsetStore.start(): that deletes temp files, and could delete
        # the running worker's offsets write in progress before its rename.
        if not offsets_file.exists():
            return 0
        value = loads_offsets(offsets_file.read_bytes(), str(offsets_file)).get(key)
        return 0 if value is None else decode_value(value)["position"] // WIDTH
    return worker, committed_line


def test_at_least_once_loses_nothing_and_repeats_only_the_uncommitted_window(
        bootstrap_servers: str, topic_name: str, files: Path) -> None:
    create_topic(bootstrap_servers, topic_name, 1)
    worker, committed_line = file_offsets_worker(files, bootstrap_servers)
    connector = connector_file(files, topic_name)

    starts = kill_and_restart_ten_times(worker, connector, files / "worker.log", committed_line)
    finish(worker, connector, files / "worker.log", committed_line)
    values = [int(v[5:]) for v in consume_all(bootstrap_servers, topic_name) if v is not None]
    duplicates = check_runs(values, {0, *starts})
    assert sum(0 < start < LINES for start in starts) >= KILLS // 2, f"kills did not land mid-copy: {starts}"
    print(f"at-least-once: {len(values)} records for {LINES} lines, {duplicates} repeats, restarts at {starts}")


def test_at_most_once_repeats_nothing_and_loses_only_what_a_killed_run_had_in_flight(
        bootstrap_servers: str, topic_name: str, files: Path) -> None:
    create_topic(bootstrap_servers, topic_name, 1)
    worker, committed_line = file_offsets_worker(files, bootstrap_servers)
    connector = connector_file(files, topic_name, **{"delivery.guarantee": "at_most_once"})

    starts = kill_and_restart_ten_times(worker, connector, files / "worker.log", committed_line)
    finish(worker, connector, files / "worker.log", committed_line)
    values = [int(v[5:]) for v in consume_all(bootstrap_servers, topic_name) if v is not None]
    assert all(a < b for a, b in zip(values, values[1:], strict=False)), "a line was written twice or out of order"
    gaps = [(before, after) for before, after in zip([-1, *values], values, strict=False) if after != before + 1]
    # offsets are stored before their batch is produced: a kill loses the batches in flight, and
    # the next run starts at the stored position, so every gap ends where a killed run had committed
    assert all(after in starts for _, after in gaps), (gaps, starts)
    assert len(gaps) <= KILLS and values[-1] == LINES - 1
    assert sum(0 < start < LINES for start in starts) >= KILLS // 2, f"kills did not land mid-copy: {starts}"
    print(f"at-most-once: {len(values)} records for {LINES} lines, {LINES - len(values)} lost in "
          f"{len(gaps)} gaps, restarts at {starts}")


def test_exactly_once_shows_every_line_once_to_read_committed_consumers(
        bootstrap_servers: str, topic_name: str, files: Path) -> None:
    create_topic(bootstrap_servers, topic_name, 1)
    offsets_topic = f"offsets-{topic_name}"
    worker = write_props(files / "worker.properties", {
        "bootstrap.servers": bootstrap_servers, "exactly.once.source.support": "enabled",
        "group.id": f"eos-{topic_name}", "offset.storage.topic": offsets_topic,
        "offset.storage.replication.factor": "1", "offset.storage.partitions": "5",
        "value.converter": "org.apache.kafka.connect.storage.StringConverter"})
    # Transactions of 200 ms, not of one 500-line poll: with poll boundaries a transaction is open on the
    # broker only for its commit's round trip, and ten random kills could all miss it (CI saw 0 aborted)
    connector = connector_file(files, topic_name, **{"transaction.boundary": "interval",
                                                     "transaction.boundary.interval.ms": "200"})

    def committed_line() -> int:
        with KafkaOffsetStore(bootstrap_servers, topic=offsets_topic, replication_factor=1, partitions=5) as store:
            offset = OffsetStorageReaderImpl(store, "faulty-file").offset({"filename": str(files / "input.txt")})
        return 0 if offset is None else offset["position"] // WIDTH

    starts = kill_and_restart_ten_times(worker, connector, files / "worker.log", committed_line)
    finish(worker, connector, files / "worker.log", committed_line)
    committed = [int(v[5:]) for v in consume_all(bootstrap_servers, topic_name, committed_only=True) if v]
    everything = consume_all(bootstrap_servers, topic_name)
    aborted = len([v for v in everything if v]) - LINES
    assert committed == list(range(LINES))
    assert sum(0 < start < LINES for start in starts) >= KILLS // 2, f"kills did not land mid-copy: {starts}"
    assert aborted > 0, "no kill landed inside an open transaction: nothing was aborted, nothing proven"
    print(f"exactly-once: {len(committed)} committed records, {aborted} aborted copies "
          f"visible to read_uncommitted, restarts at {starts}")

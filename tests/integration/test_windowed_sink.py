"""Windowed (backfill) runs of the storage sink against a real broker: the window's directories are overwritten.

Two partitions hold records stamped over three hours (explicit producer timestamps, some out of
order within a partition, one hour-1 record stored among hour 2's). A normal bounded run exports
everything into hourly directories and commits the group; then hour 2 is damaged and the window
[hour 2, hour 3) is run: hour 2 again holds exactly its records, hours 1 and 3 keep their bytes,
the consumer group does not move, and a second run of the window writes the same names and bytes.
"""

from __future__ import annotations

import datetime as dt
import json
import random
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer

from kopycat.api.errors import ConfigError, ConnectError
from kopycat.api.window import TimeWindow
from kopycat.connectors.files.committed_files import parse_committed_name
from kopycat.connectors.files.file_sink import window_partitions
from kopycat.connectors.files.partitioners import partitioner_from_config
from kopycat.runtime.bounded_plan import plan_bounded_run
from kopycat.runtime.bounded_run import run_planned_task
from kopycat.runtime.bounds import RunSummary
from tests.support.kafka import committed_offsets, create_topic

pytestmark = pytest.mark.timeout(600)

HOUR = 3_600_000
H1 = int(dt.datetime(2026, 11, 20, 5, tzinfo=dt.UTC).timestamp() * 1000)
H2, H3 = H1 + HOUR, H1 + 2 * HOUR
PER_HOUR = 11           # records per hour and partition
HOURLY = {"partitioner.class": "TimeBasedPartitioner", "partition.duration.ms": str(HOUR),
          "path.format": "'year'=YYYY/'month'=MM/'day'=dd/'hour'=HH", "locale": "en-US", "timezone": "UTC",
          "timestamp.extractor": "Record"}


def stamps(partition: int) -> list[int]:
    """Produce-order timestamps of one partition: hours 1, 2, 3, shuffled within each hour, one
    hour-1 record stored among hour 2's (stamped outside the window, stored inside it) and one
    hour-2 record stored among hour 3's (stamped inside, stored after records stamped past it)."""
    rng = random.Random(partition)
    hours = []
    for start in (H1, H2, H3):
        minutes = [start + m * 60_000 for m in rng.sample(range(60), PER_HOUR)]
        hours.append(minutes)
    late = H1 + 59 * 60_000 + partition
    late_in_window = H2 + 30 * 60_000 + 1 + partition  # no other record of the hour has that millisecond
    return hours[0] + hours[1][:4] + [late] + hours[1][4:] + hours[2][:3] + [late_in_window] + hours[2][3:]


def produce_stamped(bootstrap: str, topic: str) -> dict[int, list[int]]:
    """Values ``{"p": partition, "seq": offset, "ts": stamp}`` keyed ``p-seq``; the stamps per partition."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    produced = {}
    for partition in (0, 1):
        produced[partition] = stamps(partition)
        for seq, stamp in enumerate(produced[partition]):
            producer.produce(topic, key=f"{partition}-{seq}".encode(), partition=partition, timestamp=stamp,
                             value=json.dumps({"p": partition, "seq": seq, "ts": stamp}).encode())
    assert producer.flush(30) == 0
    return produced


def connector_props(topic: str, store: Path, **extra: str) -> dict[str, str]:
    return {"name": f"files-{topic}", "connector.class": "io.confluent.connect.hdfs.HdfsSinkConnector",
            "topics": topic, "tasks.max": "1", "store.url": f"file://{store}", "format.class": "json",
            "flush.size": "4", "key.converter": "org.apache.kafka.connect.storage.StringConverter",
            "value.converter": "org.apache.kafka.connect.json.JsonConverter",
            "value.converter.schemas.enable": "false", **HOURLY, **extra}


def run_all(connector: dict[str, str], worker: dict[str, str], window: TimeWindow | None = None) -> list[RunSummary]:
    return [run_planned_task(connector, planned, worker, window=window)
            for planned in plan_bounded_run(connector, worker)]


def snapshot(store: Path) -> dict[str, bytes]:
    """Committed file path (relative to the store) -> bytes."""
    return {str(p.relative_to(store)): p.read_bytes() for p in sorted(store.rglob("*"))
            if p.is_file() and "+tmp" not in p.parts}


def hour_dir(topic: str, start_ms: int) -> str:
    return dt.datetime.fromtimestamp(start_ms / 1000, dt.UTC).strftime(
        f"topics/{topic}/year=%Y/month=%m/day=%d/hour=%H/")


def in_hour(files: dict[str, bytes], topic: str, start_ms: int) -> dict[str, bytes]:
    prefix = hour_dir(topic, start_ms)
    return {path: data for path, data in files.items() if path.startswith(prefix)}


def records_of(files: dict[str, bytes]) -> list[dict[str, Any]]:
    """Every value in the files; each file holds only its named partition and offsets, in order."""
    values = []
    for path, data in files.items():
        name = parse_committed_name(path.rsplit("/", 1)[-1])
        assert name is not None, path
        rows = [json.loads(line) for line in data.decode().splitlines()]
        seqs = [row["seq"] for row in rows]
        assert seqs == sorted(seqs) and name.start_offset == seqs[0] and name.end_offset == seqs[-1], path
        assert {row["p"] for row in rows} == {name.partition}, path
        values.extend(rows)
    return values


def expected_in(produced: dict[int, list[int]], start_ms: int) -> list[tuple[int, int]]:
    return sorted((p, seq) for p, ts in produced.items() for seq, stamp in enumerate(ts)
                  if start_ms <= stamp < start_ms + HOUR)


def keys_of(rows: list[dict[str, Any]]) -> list[tuple[int, int]]:
    return sorted((row["p"], row["seq"]) for row in rows)


@pytest.fixture
def exported(bootstrap_servers: str, topic_name: str, tmp_path: Path) -> tuple[dict[str, str], dict[str, str],
                                                                                dict[int, list[int]]]:
    """A topic of three stamped hours, exported in full by a normal bounded run (group committed)."""
    create_topic(bootstrap_servers, topic_name, 2)
    produced = produce_stamped(bootstrap_servers, topic_name)
    connector, worker = connector_props(topic_name, tmp_path / "store"), {"bootstrap.servers": bootstrap_servers}
    run_all(connector, worker)
    assert committed_offsets(bootstrap_servers, f"connect-{connector['name']}", topic_name, 2) == {
        p: len(produced[p]) for p in (0, 1)}
    return connector, worker, produced


def test_a_window_overwrites_exactly_its_hour_leaves_the_others_and_the_group_alone(
        bootstrap_servers: str, topic_name: str, tmp_path: Path, exported: Any) -> None:
    connector, worker, produced = exported
    store = tmp_path / "store"
    group = f"connect-{connector['name']}"
    before = snapshot(store)
    for start in (H1, H2, H3):  # the normal run: every hour holds exactly its records, several files each
        assert keys_of(records_of(in_hour(before, topic_name, start))) == expected_in(produced, start)
        assert len(in_hour(before, topic_name, start)) >= 4
    hour2 = sorted(in_hour(before, topic_name, H2))
    (store / hour2[0]).unlink()                                   # one file lost
    (store / hour2[-1]).write_bytes(b'{"p": 9, "seq": 0}\n')      # one file corrupted

    summaries = run_all(connector, worker, TimeWindow(H2, H3))

    after = snapshot(store)
    rows = records_of(in_hour(after, topic_name, H2))
    assert keys_of(rows) == expected_in(produced, H2)             # each hour-2 record once, nothing else
    assert all(H2 <= row["ts"] < H3 for row in rows)
    for start in (H1, H3):
        assert in_hour(after, topic_name, start) == in_hour(before, topic_name, start)
    assert committed_offsets(bootstrap_servers, group, topic_name, 2) == {p: len(produced[p]) for p in (0, 1)}
    assert sum(s.records for s in summaries) == 2 * (PER_HOUR + 1)  # the late hour-2 records too
    assert sum(s.filtered for s in summaries) == 2 * (PER_HOUR + 1)  # hour 3 and the late hour-1 records
    offsets = {k: v for s in summaries for k, v in s.offsets.items()}
    assert {v["partition"]: (v["before"], v["after"], v["committed"]) for v in offsets.values()} == {
        p: (PER_HOUR, len(produced[p]), len(produced[p])) for p in (0, 1)}  # to the live position, the end here

    run_all(connector, worker, TimeWindow(H2, H3))
    assert snapshot(store) == after                               # same names, same bytes
    assert committed_offsets(bootstrap_servers, group, topic_name, 2) == {p: len(produced[p]) for p in (0, 1)}


def test_a_window_stops_at_the_live_position_so_the_next_live_run_loses_nothing(
        bootstrap_servers: str, topic_name: str, tmp_path: Path, exported: Any) -> None:
    """Records arriving after the live run (late ones stamped inside the window among them) are the
    next live run's: a window copying them would commit past the live position, and the live run,
    resuming after the greatest committed offset, would skip the records between."""
    connector, worker, produced = exported
    store = tmp_path / "store"
    producer = Producer({"bootstrap.servers": bootstrap_servers, "linger.ms": 5})
    later = {p: [H3 + HOUR + 60_000 * m for m in range(3)] + [H2 + 45 * 60_000 + p] + [H3 + HOUR + 240_000]
             for p in (0, 1)}  # hour 4, then a late hour-2 record, then hour 4 again
    for partition, extra in later.items():
        for stamp in extra:
            seq = len(produced[partition])
            producer.produce(topic_name, key=f"{partition}-{seq}".encode(), partition=partition, timestamp=stamp,
                             value=json.dumps({"p": partition, "seq": seq, "ts": stamp}).encode())
            produced[partition].append(stamp)
    assert producer.flush(30) == 0
    live = {p: len(produced[p]) - len(later[p]) for p in (0, 1)}

    summaries = run_all(connector, worker, TimeWindow(H2, H3))
    offsets = {v["partition"]: v["after"] for s in summaries for v in s.offsets.values()}
    assert offsets == live                                           # read up to the live position only
    window_rows = records_of(in_hour(snapshot(store), topic_name, H2))
    assert keys_of(window_rows) == [(p, seq) for p, seq in expected_in(produced, H2) if seq < live[p]]

    run_all(connector, worker)                                       # the live run goes on from there
    rows = records_of(snapshot(store))
    assert keys_of(rows) == sorted((p, seq) for p in (0, 1) for seq in range(len(produced[p])))  # each once
    assert keys_of(records_of(in_hour(snapshot(store), topic_name, H2))) == expected_in(produced, H2)


@pytest.mark.parametrize(("extra", "window", "key", "fix"), [
    ({}, TimeWindow(H2 + HOUR // 2, H3), "kopycat.window.start.ms", "bucket boundaries"),
    ({}, TimeWindow(H2, H3 + 1), "kopycat.window.end.ms", "bucket boundaries"),
    ({"partitioner.class": "DefaultPartitioner"}, TimeWindow(H2, H3), "partitioner.class",
     "set partitioner.class=TimeBasedPartitioner"),
    ({"timestamp.extractor": "Wallclock"}, TimeWindow(H2, H3), "timestamp.extractor",
     "set timestamp.extractor=Record"),
], ids=["misaligned-start", "misaligned-end", "default-partitioner", "wallclock"])
def test_a_window_that_cannot_overwrite_whole_directories_fails_before_deleting_anything(
        bootstrap_servers: str, topic_name: str, tmp_path: Path, exported: Any, extra: dict[str, str],
        window: TimeWindow, key: str, fix: str) -> None:
    connector, worker, produced = exported
    store = tmp_path / "store"
    before = snapshot(store)
    with pytest.raises(ConfigError, match=fix) as raised:
        run_all({**connector, **extra}, worker, window)
    assert raised.value.key == key and key in str(raised.value)
    assert snapshot(store) == before
    assert committed_offsets(bootstrap_servers, f"connect-{connector['name']}", topic_name, 2) == {
        p: len(produced[p]) for p in (0, 1)}


def test_a_file_holding_offsets_before_the_window_is_never_deleted(
        bootstrap_servers: str, topic_name: str, tmp_path: Path, exported: Any) -> None:
    """Records Kafka no longer has (retention) cannot be re-copied: the partition's files stay."""
    connector, worker, _ = exported
    store = tmp_path / "store"
    directory = store / hour_dir(topic_name, H2)
    (directory / f"{topic_name}+0+0000000005+0000000005.json").write_bytes(b'{"p": 0, "seq": 5}\n')
    before = {path: data for path, data in in_hour(snapshot(store), topic_name, H2).items() if "+0+" in path}
    with pytest.raises(ConnectError, match=r"0000000005\.json hold\(s\) offsets before 11"):
        run_all(connector, worker, TimeWindow(H2, H3))
    after = {path: data for path, data in in_hour(snapshot(store), topic_name, H2).items() if "+0+" in path}
    assert after == before and len(before) >= 3


def test_daily_buckets_across_a_dst_change_each_count_once() -> None:
    partitioner = partitioner_from_config({**HOURLY, "partitioner.class": "DailyPartitioner",
                                           "timezone": "Europe/Berlin"})
    start = int(dt.datetime(2026, 10, 24, tzinfo=dt.timezone(dt.timedelta(hours=2))).timestamp() * 1000)
    end = int(dt.datetime(2026, 10, 27, tzinfo=dt.timezone(dt.timedelta(hours=1))).timestamp() * 1000)
    assert window_partitions(partitioner, TimeWindow(start, end), HOURLY) == [
        "year=2026/month=10/day=24", "year=2026/month=10/day=25", "year=2026/month=10/day=26"]


def test_a_path_format_coarser_than_the_bucket_is_refused() -> None:
    props = {**HOURLY, "path.format": "'year'=YYYY/'month'=MM/'day'=dd"}
    with pytest.raises(ConfigError, match="path.format") as raised:
        window_partitions(partitioner_from_config(props), TimeWindow(H2, H3), props)
    assert raised.value.key == "path.format"

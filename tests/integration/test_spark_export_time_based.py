"""Time-based and windowed (backfill) Spark exports against a real broker and local Spark (spark-submit).

Orders (Kafka Connect's JsonConverter wire format) over 2 partitions, stamped with explicit Kafka
timestamps around Berlin's midnights (the last and first millisecond of a day included) and out of
order within a partition, laid out by a DailyPartitioner in Europe/Berlin on the record time:

- a live export puts every offset exactly once in the directory the Python sink's
  TimeBasedPartitioner prints for its timestamp, names and rows equal to the Python storage
  sink's output for the same topic, and a run interrupted in the middle of a partition's round
  of files is rolled back and re-exported to the same files;
- a windowed export of one Berlin day rewrites exactly that day's directory with the records
  stamped in it up to each partition's live position (late ones included), leaves the other
  days' bytes and the consumer group alone, and the same window again gives the same names and
  rows, even from ranges running on past the live position; the next live run copies the
  records after the live position, each offset once;
- a window's plan ends each partition at its live position: after its committed files, else
  at the group's offset, else at the log start (the planned end under auto.offset.reset=latest).

Each spark-submit takes 30-50 s on 2 shared cores, so each test checks a lot.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as KafkaTopicPartition

from kopycat.api.errors import ConfigError
from kopycat.api.records import TopicPartition
from kopycat.api.window import TimeWindow
from kopycat.connectors.files.committed_files import TEMP_DIR, committed_name, parse_committed_name
from kopycat.connectors.files.partitioners import partitioner_from_config
from kopycat.connectors.files.spark_export import OffsetRange, ranges_to_json, run_spark_export
from kopycat.connectors.files.spark_plan import plan_spark_export
from kopycat.converters.json import JsonConverter
from kopycat.runtime.bounded_plan import plan_bounded_run
from kopycat.runtime.bounded_run import run_planned_task
from tests.support.kafka import committed_offsets, create_topic
from tests.support.orders import ORDER, order

pytestmark = [pytest.mark.integration, pytest.mark.timeout(3600)]

SPARK_TIMEOUT_S = 1500
PARTITIONS = 2
DAY = 86_400_000
MIDNIGHT = 1_795_215_600_000  # 2026-11-20T23:00:00Z: 2026-11-21 00:00 in Berlin (CET)
DAILY_BERLIN = {"partitioner.class": "io.confluent.connect.storage.partitioner.DailyPartitioner",
                "locale": "en-US", "timezone": "Europe/Berlin", "timestamp.extractor": "Record"}
PLACE = partitioner_from_config(DAILY_BERLIN)
Stamps = dict[int, list[int]]
"""Per partition, the Kafka timestamp of each offset."""


def stamps_around_midnights(seed: int, per_partition: int) -> Stamps:
    """Days 2026-11-20, 21 and 22 in Berlin, shuffled; each day's first and last ms, a late record or two."""
    rng = random.Random(seed)
    stamps: Stamps = {}
    for partition in range(PARTITIONS):
        edges = [MIDNIGHT - 1, MIDNIGHT, MIDNIGHT + DAY - 1, MIDNIGHT + DAY, MIDNIGHT - DAY + partition]
        spread = [rng.randrange(MIDNIGHT - DAY, MIDNIGHT + 2 * DAY) for _ in range(per_partition - len(edges) - 1)]
        late = MIDNIGHT + 3 * 3_600_000 + partition  # stamped on the 21st, stored after everything else
        stamps[partition] = edges[:2] + spread + edges[2:] + [late]
    return stamps


def order_id(partition: int, offset: int) -> int:
    return partition * 1_000_000 + offset


def produce_stamped(bootstrap: str, topic: str, stamps: Stamps, already: int = 0) -> dict[TopicPartition, int]:
    """Offset k of partition p holds order ``order_id(p, k)`` stamped ``stamps[p][k]``; the end offsets.

    ``already``: the offsets before it are in the topic (else the topic is created).
    """
    if not already:
        create_topic(bootstrap, topic, PARTITIONS)
    converter = JsonConverter()
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "enable.idempotence": True})
    for partition, times in stamps.items():
        values = converter.from_connect_data_batch(topic, ORDER, [order(order_id(partition, k))
                                                                  for k in range(already, len(times))])
        for value, stamp in zip(values, times[already:], strict=True):
            producer.produce(topic, value=value, partition=partition, timestamp=stamp)
    assert producer.flush(60) == 0
    return {TopicPartition(topic, p): len(times) for p, times in stamps.items()}


def sink_config(name: str, topic: str, store: Path, **extra: str) -> dict[str, str]:
    return {"name": name, "connector.class": "io.confluent.connect.s3.S3SinkConnector", "topics": topic,
            "tasks.max": "1", "store.url": f"file://{store}", "format.class": "parquet", "flush.size": "100000",
            "key.converter": "org.apache.kafka.connect.storage.StringConverter",
            "value.converter": "org.apache.kafka.connect.json.JsonConverter",
            "value.converter.schemas.enable": "true", **DAILY_BERLIN, **extra}


def export_with_python_sink(config: dict[str, str], bootstrap: str) -> None:
    worker = {"bootstrap.servers": bootstrap}
    for planned in plan_bounded_run(config, worker):
        run_planned_task(config, planned, worker)


def committed(topic_dir: Path) -> dict[str, list[dict[str, Any]]]:
    """Committed file (path below the topic's directory) -> its rows, checked against its name."""
    files = {}
    for path in sorted(topic_dir.rglob("*.parquet")):
        if TEMP_DIR in path.parts or path.name.startswith("."):
            continue
        name = parse_committed_name(path.name)
        assert name is not None, path
        rows = pq.read_table(path).to_pylist()
        offsets = [row["id"] - order_id(name.partition, 0) for row in rows]
        assert offsets == sorted(offsets), f"{path}: rows not in offset order"
        assert (offsets[0], offsets[-1]) == (name.start_offset, name.end_offset), f"{path}: other offsets"
        files[str(path.relative_to(topic_dir))] = rows
    return files


def placements(files: dict[str, list[dict[str, Any]]]) -> list[tuple[int, int, str]]:
    """(partition, offset, directory) of every row, sorted."""
    found = []
    for path, rows in files.items():
        directory, name = path.rsplit("/", 1)
        partition = parse_committed_name(name).partition  # type: ignore[union-attr]
        found += [(partition, row["id"] - order_id(partition, 0), directory) for row in rows]
    return sorted(found)


def expected_placements(stamps: Stamps, keep: TimeWindow | None = None, below: int | None = None
                        ) -> list[tuple[int, int, str]]:
    """Where the partitioner puts each offset (stamped in ``keep``, or below offset ``below``, when given)."""
    return sorted((p, k, PLACE.encode_timestamp(stamp)) for p, times in stamps.items() for k, stamp in enumerate(times)
                  if (keep is None and below is None) or (keep is not None and keep.contains(stamp))
                  or (below is not None and k < below))


def snapshot(topic_dir: Path) -> dict[str, bytes]:
    return {str(p.relative_to(topic_dir)): p.read_bytes() for p in sorted(topic_dir.rglob("*"))
            if p.is_file() and TEMP_DIR not in p.parts and not p.name.startswith(".")}


def test_a_time_based_export_places_every_offset_once_as_the_python_sink_does_and_resumes_after_a_crash(
        bootstrap_servers: str, topic_name: str, tmp_path: Path) -> None:
    stamps = stamps_around_midnights(seed=7, per_partition=400)
    ends = produce_stamped(bootstrap_servers, topic_name, stamps)
    config = sink_config(f"lake-{topic_name}", topic_name, tmp_path / "spark")
    job = plan_spark_export(config, {"bootstrap.servers": bootstrap_servers}, ends, master="local[2]")

    result = run_spark_export(job, timeout=SPARK_TIMEOUT_S)

    topic_dir = tmp_path / "spark" / "topics" / topic_name
    files = committed(topic_dir)
    assert placements(files) == expected_placements(stamps), "every offset once, in its partitioner's directory"
    assert {path.rsplit("/", 1)[0] for path in files} == {
        "year=2026/month=11/day=20", "year=2026/month=11/day=21", "year=2026/month=11/day=22"}
    assert len(files) == 3 * PARTITIONS, "one file per Kafka partition and directory"
    assert sorted(f.path.split(f"/{topic_name}/", 1)[1] for f in result.files) == sorted(files)
    assert committed_offsets(bootstrap_servers, f"connect-{config['name']}", topic_name, PARTITIONS) == {
        tp.partition: end for tp, end in ends.items()}
    python_config = sink_config(f"py-{topic_name}", topic_name, tmp_path / "python")
    export_with_python_sink(python_config, bootstrap_servers)
    assert committed(tmp_path / "python" / "topics" / topic_name) == files, "the Python sink's names and rows"

    # A run interrupted in partition 0's round: its first file renamed, the others not, the manifest left.
    round_0 = sorted((path for path in files if parse_committed_name(path.rsplit("/", 1)[1]).partition == 0),
                     key=lambda path: parse_committed_name(path.rsplit("/", 1)[1]).start_offset)  # type: ignore
    kept = parse_committed_name(round_0[0].rsplit("/", 1)[1])
    assert kept is not None and kept.end_offset > parse_committed_name(round_0[1].rsplit("/", 1)[1]).start_offset
    manifest = topic_dir / TEMP_DIR / f"{topic_name}+0.round.json"
    manifest.parent.mkdir(exist_ok=True)
    manifest.write_text(json.dumps({"files": [str(topic_dir / path) for path in round_0]}))
    for path in round_0[1:]:
        (topic_dir / path).unlink()

    again = run_spark_export(job, timeout=SPARK_TIMEOUT_S)

    assert committed(topic_dir) == files, "the round rolled back and written again, nothing lost or doubled"
    assert [(r.partition, r.start, r.end) for r in again.read] == [(0, 0, ends[TopicPartition(topic_name, 0)])]
    assert [r.partition for r in again.skipped] == [1]
    assert not manifest.exists()


def offsets_at(bootstrap: str, topic: str, timestamp_ms: int) -> dict[int, int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "offsets-at"})
    try:
        found = consumer.offsets_for_times([KafkaTopicPartition(topic, p, timestamp_ms) for p in range(PARTITIONS)],
                                           timeout=30)
        return {tp.partition: tp.offset for tp in found}
    finally:
        consumer.close()


def every_offset_once(files: dict[str, list[dict[str, Any]]], ends: dict[TopicPartition, int]) -> None:
    """Each offset of the topic is in exactly one row of the store: none missing, none doubled."""
    found = Counter((partition, offset) for partition, offset, _ in placements(files))
    wanted = {(tp.partition, k) for tp, end in ends.items() for k in range(end)}
    assert sorted(set(wanted) - set(found)) == [], "offsets missing from the store"
    assert sorted(key for key, n in found.items() if n > 1) == [], "offsets in the store twice"
    assert set(found) == wanted


def test_a_windowed_export_rewrites_exactly_its_day_up_to_the_live_position_and_leaves_the_rest_to_live_runs(
        bootstrap_servers: str, topic_name: str, tmp_path: Path) -> None:
    stamps = stamps_around_midnights(seed=11, per_partition=300)
    ends = produce_stamped(bootstrap_servers, topic_name, stamps)
    config = sink_config(f"lake-{topic_name}", topic_name, tmp_path / "lake", **{"flush.size": "40"})
    export_with_python_sink(config, bootstrap_servers)  # the live runs: every day, the group committed
    topic_dir = tmp_path / "lake" / "topics" / topic_name
    group = f"connect-{config['name']}"
    group_before = committed_offsets(bootstrap_servers, group, topic_name, PARTITIONS)
    live = 300  # every partition's live position: after its last committed file
    assert group_before == {tp.partition: end for tp, end in ends.items()} == {p: live for p in range(PARTITIONS)}
    for partition, times in stamps.items():  # late arrivals after the live position: on the 21st, the 23rd, the 21st
        times += [MIDNIGHT + 60_000 * (partition + 1), MIDNIGHT + 2 * DAY + partition, MIDNIGHT + DAY - 2]
    ends = produce_stamped(bootstrap_servers, topic_name, stamps, already=live)
    day_21 = "year=2026/month=11/day=21/"
    before = snapshot(topic_dir)
    damaged = next(path for path in before if path.startswith(day_21) and "+0+" in path)
    (topic_dir / damaged).unlink()
    worker = {"bootstrap.servers": bootstrap_servers}
    with pytest.raises(ConfigError, match=r"kopycat.window.start.ms: .*bucket boundaries"):
        plan_spark_export(config, worker, ends, master="local[2]", window=TimeWindow(MIDNIGHT + 1, MIDNIGHT + DAY))
    assert snapshot(topic_dir) == {p: b for p, b in before.items() if p != damaged}, "a refused window writes nothing"
    window = TimeWindow(MIDNIGHT, MIDNIGHT + DAY)

    result = run_spark_export(plan_spark_export(config, worker, ends, master="local[2]", window=window),
                              timeout=SPARK_TIMEOUT_S)

    after = snapshot(topic_dir)
    assert {p: b for p, b in after.items() if not p.startswith(day_21)} == {
        p: b for p, b in before.items() if not p.startswith(day_21)}, "other days keep their bytes"
    files = committed(topic_dir)
    in_window = {path: rows for path, rows in files.items() if path.startswith(day_21)}
    inside = expected_placements(stamps, keep=window)
    assert placements(in_window) == [(p, k, d) for p, k, d in inside if k < live], \
        "exactly the records stamped inside before the live position: the later ones are the live runs'"
    assert len(in_window) == PARTITIONS, "one file per partition: the Python sink's files of the day were replaced"
    every_offset_once(files, {tp: live for tp in ends})
    starts = offsets_at(bootstrap_servers, topic_name, window.start_ms)
    assert [(r.partition, r.start, r.end) for r in result.read] == [
        (tp.partition, starts[tp.partition], live) for tp in sorted(ends)], "read up to the live position"
    assert result.filtered == sum(1 for p, times in stamps.items() for k, stamp in enumerate(times)
                                  if starts[p] <= k < live and not window.contains(stamp))
    assert result.window == window and result.skipped == []
    assert committed_offsets(bootstrap_servers, group, topic_name, PARTITIONS) == group_before
    assert {tp.partition: o for tp, o in result.committed_offsets.items()} == group_before

    job = plan_spark_export(config, worker, ends, master="local[2]", window=window)
    args = list(job.application_args)  # the same window by hand, its ranges run on to the log end
    args[args.index("--ranges") + 1] = ranges_to_json(
        OffsetRange(topic_name, tp.partition, starts[tp.partition], end) for tp, end in ends.items())

    again = run_spark_export(replace(job, application_args=args), timeout=SPARK_TIMEOUT_S)

    assert again.read == result.read, "the job itself stops at the live position"
    assert committed(topic_dir) == files, "the same window again: the same names and rows"
    assert [f.path for f in again.files] == [f.path for f in result.files]
    assert {p: b for p, b in snapshot(topic_dir).items() if not p.startswith(day_21)} == {
        p: b for p, b in before.items() if not p.startswith(day_21)}
    assert committed_offsets(bootstrap_servers, group, topic_name, PARTITIONS) == group_before

    resumed = run_spark_export(plan_spark_export(config, worker, ends, master="local[2]"), timeout=SPARK_TIMEOUT_S)

    assert [(r.partition, r.start, r.end) for r in resumed.read] == [
        (tp.partition, live, end) for tp, end in sorted(ends.items())], "the live run resumes at the live position"
    files = committed(topic_dir)
    every_offset_once(files, ends)
    assert placements({p: rows for p, rows in files.items() if p.startswith(day_21)}) == inside, \
        "the late records stamped inside the window, added by the live run"
    assert placements(files) == expected_placements(stamps)
    assert committed_offsets(bootstrap_servers, group, topic_name, PARTITIONS) == {
        tp.partition: end for tp, end in ends.items()}


def commit_group(bootstrap: str, group: str, offsets: dict[TopicPartition, int]) -> None:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        consumer.commit(offsets=[KafkaTopicPartition(tp.topic, tp.partition, o) for tp, o in offsets.items()],
                        asynchronous=False)
    finally:
        consumer.close()


def test_a_windows_plan_ends_at_the_live_position_of_the_files_else_the_group_else_the_log_start(
        bootstrap_servers: str, topic_name: str, tmp_path: Path) -> None:
    stamps = {p: [MIDNIGHT + 1000 * k for k in range(50)] for p in range(PARTITIONS)}  # all on the 21st
    ends = produce_stamped(bootstrap_servers, topic_name, stamps)
    store = tmp_path / "lake"
    config = sink_config(f"lake-{topic_name}", topic_name, store)
    worker = {"bootstrap.servers": bootstrap_servers}
    window = TimeWindow(MIDNIGHT, MIDNIGHT + DAY)
    p0, p1 = (TopicPartition(topic_name, p) for p in range(PARTITIONS))

    def planned(props: dict[str, str]) -> dict[int, tuple[int, int]]:
        job = plan_spark_export(props, worker, ends, master="local[2]", window=window)
        return {r.partition: (r.start, r.end) for r in job.ranges}

    assert planned(config) == {0: (0, 0), 1: (0, 0)}, "no file, no group: a live run starts at the log start"
    assert planned({**config, "consumer.override.auto.offset.reset": "latest"}) == {0: (0, 50), 1: (0, 50)}, \
        "a live run from the log end never copies the past: the window takes it all"
    commit_group(bootstrap_servers, f"connect-{config['name']}", {p0: 30, p1: 20})
    assert planned(config) == {0: (0, 30), 1: (0, 20)}, "no file: the group's offset"
    directory = store / "topics" / topic_name / PLACE.encode_timestamp(MIDNIGHT)
    directory.mkdir(parents=True)
    (directory / committed_name(topic_name, 0, 0, 11, "parquet")).touch()
    (store / "topics" / topic_name / TEMP_DIR).mkdir()
    (store / "topics" / topic_name / TEMP_DIR / committed_name(topic_name, 1, 0, 44, "parquet")).touch()
    assert planned(config) == {0: (0, 12), 1: (0, 20)}, "after the committed files, whatever the group says"

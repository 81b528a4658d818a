"""The storage sink against a real broker: every offset exactly once across files, through kills.

90,000 JSON-with-schema records over 6 partitions go to Parquet through the standalone worker,
which is killed (-9) three times mid-copy; then a last run finishes. Reading every committed
file back with pyarrow must give each id exactly once, and each file's rows must be exactly the
offsets its name says. The same on S3 (moto) through a bounded run, for a smaller topic.
"""

from __future__ import annotations

import datetime as dt
import decimal
import random
from pathlib import Path

import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest
from confluent_kafka import Producer

from kopycat.api.data import Decimal, Schema, SchemaBuilder, Struct, Timestamp
from kopycat.api.records import TopicPartition
from kopycat.connectors.files.committed_files import next_offsets, parse_committed_name
from kopycat.converters.json import JsonConverter
from kopycat.dev.s3 import ACCESS_KEY, REGION, SECRET_KEY, LocalS3
from kopycat.runtime.bounded_plan import plan_bounded_run
from kopycat.runtime.bounded_run import run_planned_task
from tests.support.kafka import committed_offsets, create_topic
from tests.support.kills import kill_when
from tests.support.standalone import run_until, start_worker, write_props

pytestmark = pytest.mark.timeout(1800)

PARTITIONS = 6
ORDER = (SchemaBuilder.struct().name("order").field("id", Schema.INT64_SCHEMA)
         .field("customer", Schema.STRING_SCHEMA).field("amount", Decimal.schema(2))
         .field("ts", Timestamp.SCHEMA).field("note", Schema.OPTIONAL_STRING_SCHEMA).build())
BASE = dt.datetime(2026, 11, 1, tzinfo=dt.UTC)


def produce_orders(bootstrap: str, topic: str, count: int) -> None:
    """``count`` orders, id n to partition n % 6, in JsonConverter's wire format with schemas."""
    converter = JsonConverter()
    converter.configure({"schemas.enable": "true"}, is_key=False)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "batch.size": 1 << 20})
    for start in range(0, count, 10_000):
        ids = range(start, min(count, start + 10_000))
        values = [Struct(ORDER).put("id", n).put("customer", f"c{n % 97}").put("amount", decimal.Decimal(n) / 100)
                  .put("ts", BASE + dt.timedelta(seconds=n)) for n in ids]
        for n, encoded in zip(ids, converter.from_connect_data_batch(topic, ORDER, values), strict=True):
            producer.produce(topic, value=encoded, partition=n % PARTITIONS)
            if n % 1000 == 0:
                producer.poll(0)
    assert producer.flush(60) == 0


def read_back(filesystem: pafs.FileSystem, root: str) -> dict[str, list[int]]:
    """Committed file name -> ids in it; checks that each file holds exactly its named offsets."""
    found: dict[str, list[int]] = {}
    for info in filesystem.get_file_info(pafs.FileSelector(root, recursive=True, allow_not_found=True)):
        if info.type != pafs.FileType.File or "/+tmp/" in info.path:
            continue
        name = parse_committed_name(info.path.rsplit("/", 1)[-1])
        assert name is not None, f"an uncommitted name outside +tmp: {info.path}"
        ids = pq.read_table(info.path, filesystem=filesystem).column("id").to_pylist()
        # Offsets of partition p are ids p, p+6, ...: offset = id // 6, no gaps.
        assert [i // PARTITIONS for i in ids] == list(range(name.start_offset, name.end_offset + 1)), info.path
        assert {i % PARTITIONS for i in ids} == {name.partition}
        found[info.path] = ids
    return found


def committed_count(root: Path, topic: str) -> int:
    names = [p.name for p in root.rglob(f"{topic}+*") if "+tmp" not in p.parts]
    return sum(next_offsets(names).values())


def test_kills_mid_file_leave_every_offset_exactly_once_in_parquet(
        bootstrap_servers: str, topic_name: str, tmp_path: Path) -> None:
    records = 300_000  # three kills, each at most 0.3 s after a commit, land before the end on an unloaded run
    create_topic(bootstrap_servers, topic_name, PARTITIONS)
    produce_orders(bootstrap_servers, topic_name, records)
    store = tmp_path / "store"
    worker = write_props(tmp_path / "worker.properties", {
        "bootstrap.servers": bootstrap_servers, "offset.storage.file.filename": str(tmp_path / "offsets"),
        "offset.flush.interval.ms": "500",
        # A killed worker's two members stay in the group until their session ends, and a rebalance waits up to
        # max.poll.interval.ms for members to rejoin: CI once saw the last run wait ten minutes at the defaults
        "consumer.session.timeout.ms": "6000", "consumer.max.poll.interval.ms": "30000"})
    connector = write_props(tmp_path / "connector.properties", {
        "name": f"files-{topic_name}", "connector.class": "io.confluent.connect.hdfs.HdfsSinkConnector",
        "topics": topic_name, "tasks.max": "2", "store.url": f"file://{store}", "flush.size": "1501",
        "format.class": "parquet"})
    log = tmp_path / "worker.log"
    rng = random.Random(7)
    seen: list[int] = []
    for _ in range(3):
        before = committed_count(store, topic_name)
        process = start_worker(worker, connector, log)
        # a random moment after a file of this run: the columnar sink copies 90,000 records in about a second
        kill_when(process, lambda b=before: committed_count(store, topic_name) != b, log, timeout_s=240,
                  waiting_for="a file committed by this run", after_s=rng.uniform(0.0, 0.3))
        seen.append(committed_count(store, topic_name))
    # flush.size does not divide the partitions' 50,000 records: the tail needs the schedule or a
    # bounded run; here the last files are the multiples of 1501 the worker reaches.
    full = sum((records // PARTITIONS + (p < records % PARTITIONS)) // 1501 * 1501 for p in range(PARTITIONS))
    assert seen[-1] < full, f"the kills came after the copy was done: {seen}"
    run_until(worker, connector, log, lambda: committed_count(store, topic_name), full, poll_s=0.5)
    files = read_back(pafs.LocalFileSystem(), str(store))
    ids = sorted(i for file_ids in files.values() for i in file_ids)
    assert len(ids) == len(set(ids)) == full, f"{len(ids) - len(set(ids))} duplicates"
    assert all(name.rsplit("/", 2)[-2].startswith("partition=") for name in files)
    groups = committed_offsets(bootstrap_servers, f"connect-files-{topic_name}", topic_name, PARTITIONS)
    committed = next_offsets(path.rsplit("/", 1)[-1] for path in files)
    assert all(groups[p] <= committed.get(TopicPartition(topic_name, p), 0)
               for p in range(PARTITIONS)), (groups, committed)
    print(f"storage sink: {len(files)} files, {len(ids)} records, committed after each kill: {seen}")


def test_a_bounded_run_to_s3_writes_every_planned_offset_once_and_a_rerun_adds_nothing(
        bootstrap_servers: str, topic_name: str, s3_server: LocalS3, s3_bucket: str) -> None:
    records = 30_000
    create_topic(bootstrap_servers, topic_name, PARTITIONS)
    produce_orders(bootstrap_servers, topic_name, records)
    connector = {"name": f"s3-{topic_name}", "connector.class": "io.confluent.connect.s3.S3SinkConnector",
                 "topics": topic_name, "tasks.max": "2", "store.url": f"s3://{s3_bucket}/exports",
                 "s3.endpoint.url": s3_server.endpoint_url, "s3.region": REGION, "s3.part.size": str(5 << 20),
                 "aws.access.key.id": ACCESS_KEY, "aws.secret.access.key": SECRET_KEY, "flush.size": "4000"}
    worker = {"bootstrap.servers": bootstrap_servers}
    filesystem = pafs.S3FileSystem(access_key=ACCESS_KEY, secret_key=SECRET_KEY, region=REGION,
                                   endpoint_override=s3_server.endpoint_url.removeprefix("http://"),
                                   scheme="http")
    for _ in range(2):
        for planned in plan_bounded_run(connector, worker):
            summary = run_planned_task(connector, planned, worker)
            assert summary.error is None
    files = read_back(filesystem, f"{s3_bucket}/exports/topics/{topic_name}")
    ids = sorted(i for file_ids in files.values() for i in file_ids)
    assert ids == list(range(records))
    assert all(len(i) <= 4000 for i in files.values())
    client = s3_server.client()
    assert not [o["Key"] for o in client.list_objects_v2(Bucket=s3_bucket)["Contents"] if "/+tmp/" in o["Key"]]
    assert client.list_multipart_uploads(Bucket=s3_bucket).get("Uploads", []) == []
    groups = committed_offsets(bootstrap_servers, f"connect-s3-{topic_name}", topic_name, PARTITIONS)
    assert groups == {p: records // PARTITIONS for p in range(PARTITIONS)}

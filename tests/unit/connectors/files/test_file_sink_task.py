"""FileSinkTask on the local filesystem: committed names, rotation, recovery, formats, errors."""

from __future__ import annotations

import datetime as dt
import decimal
import json
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from kopycat.api.data import Decimal, Schema, SchemaBuilder, Struct, Timestamp
from kopycat.api.errors import ConfigError, ConnectError, DataError, RetriableError
from kopycat.api.records import SinkRecord, TopicPartition
from kopycat.connectors.files.committed_files import parse_committed_name
from kopycat.connectors.files.file_sink import FileSinkConnector, FileSinkTask
from kopycat.connectors.files.partition_writer import round_manifest_path
from kopycat.connectors.files.store import ArrowStore
from kopycat.connectors.files.store_factory import open_store
from kopycat.runtime.sink_task_context import WorkerSinkTaskContext

TP0, TP1 = TopicPartition("orders", 0), TopicPartition("orders", 1)
ORDER = (SchemaBuilder.struct().name("order").field("id", Schema.INT64_SCHEMA)
         .field("region", Schema.STRING_SCHEMA).field("amount", Decimal.schema(2))
         .field("ts", Timestamp.SCHEMA).field("note", Schema.OPTIONAL_STRING_SCHEMA).build())
ORDER_V2 = (SchemaBuilder.struct().name("order").version(2).field("id", Schema.INT64_SCHEMA)
            .field("region", Schema.STRING_SCHEMA).build())
BASE_MS = 1_795_000_000_000


def order(n: int, region: str = "eu") -> Struct:
    return (Struct(ORDER).put("id", n).put("region", region).put("amount", decimal.Decimal(n) / 100)
            .put("ts", dt.datetime.fromtimestamp((BASE_MS + n * 1000) / 1000, dt.UTC)))


def record(offset: int, value: Any, partition: int = 0, schema: Schema | None = ORDER,
           timestamp: int | None = None) -> SinkRecord:
    return SinkRecord(topic="orders", kafka_partition=partition, key_schema=None, key=None,
                      value_schema=schema, value=value, kafka_offset=offset,
                      timestamp=BASE_MS + offset * 1000 if timestamp is None else timestamp)


def start(tmp_path: Path, partitions: Sequence[TopicPartition] = (TP0,), background: bool = False, **props: Any
          ) -> tuple[FileSinkTask, WorkerSinkTaskContext]:
    config = {"name": "files", "topics": "orders", "store.url": f"file://{tmp_path}/store",
              **{k.replace("_", "."): str(v) for k, v in props.items()}}
    task = FileSinkTask(background_commits=background)  # in put() unless asked: the tests read the store after it
    context = WorkerSinkTaskContext(config)
    task.initialize(context)
    task.start(config)
    task.open(list(partitions))
    return task, context


def committed(tmp_path: Path, extension: str = "parquet") -> list[str]:
    root = tmp_path / "store"
    return sorted(str(p.relative_to(root)) for p in root.rglob(f"*.{extension}") if "+tmp" not in p.parts)


def ids(tmp_path: Path) -> list[int]:
    root = tmp_path / "store"
    files = [p for p in root.rglob("*.parquet") if "+tmp" not in p.parts]
    return sorted(i for p in files for i in pq.read_table(p).column("id").to_pylist())


def test_flush_size_commits_files_named_by_their_first_and_last_offsets(tmp_path: Path) -> None:
    task, _ = start(tmp_path, flush_size=3)
    task.put([record(n, order(n)) for n in range(7)])
    assert committed(tmp_path) == ["topics/orders/partition=0/orders+0+0000000000+0000000002.parquet",
                                   "topics/orders/partition=0/orders+0+0000000003+0000000005.parquet"]
    assert task.pre_commit({TP0: 7}) == {TP0: 6}  # offset 6 is in the open file
    assert ids(tmp_path) == list(range(6))


def test_parquet_rows_keep_the_connect_types(tmp_path: Path) -> None:
    task, _ = start(tmp_path, flush_size=2)
    task.put([record(0, order(0)), record(1, order(1).put("note", "hi"))])
    table = pq.read_table(tmp_path / "store" / committed(tmp_path)[0])
    assert str(table.schema.field("amount").type) == "decimal128(38, 2)"
    assert str(table.schema.field("ts").type) == "timestamp[ms, tz=UTC]"
    assert table.to_pylist()[1] == {"id": 1, "region": "eu", "amount": decimal.Decimal("0.01"),
                                    "ts": dt.datetime.fromtimestamp((BASE_MS + 1000) / 1000, dt.UTC),
                                    "note": "hi"}


def test_a_bounded_run_commits_its_open_files_at_every_pre_commit(tmp_path: Path) -> None:
    task, _ = start(tmp_path, **{"kopycat.run.bounded": "true"})
    task.put([record(n, order(n)) for n in range(5)])
    assert committed(tmp_path) == []
    assert task.pre_commit({TP0: 5}) == {TP0: 5}
    assert committed(tmp_path) == ["topics/orders/partition=0/orders+0+0000000000+0000000004.parquet"]


@pytest.fixture
def held_moves(monkeypatch: pytest.MonkeyPatch) -> threading.Event:
    """Moves into committed names wait until the event is set (a slow store)."""
    release = threading.Event()
    move = ArrowStore.move

    def held_move(self: ArrowStore, source: str, destination: str) -> None:
        assert release.wait(10), "the test never released the store"
        move(self, source, destination)
    monkeypatch.setattr(ArrowStore, "move", held_move)
    return release


def test_a_round_being_committed_in_the_background_is_not_reported_safe_until_it_is(
        tmp_path: Path, held_moves: threading.Event) -> None:
    task, _ = start(tmp_path, background=True, flush_size=4)
    task.put([record(n, order(n)) for n in range(6)])  # 0..3 handed to the committer thread; 4, 5 open
    assert task.pre_commit({TP0: 6}) == {TP0: 0}
    assert committed(tmp_path) == []
    held_moves.set()
    task.wait_for_commits()
    assert task.pre_commit({TP0: 6}) == {TP0: 4}
    assert committed(tmp_path) == ["topics/orders/partition=0/orders+0+0000000000+0000000003.parquet"]
    task.stop()


def test_a_background_commit_failing_retriably_is_retried_and_writes_each_offset_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    failures = [RetriableError("store throttled")]
    move = ArrowStore.move

    def flaky_move(self: ArrowStore, source: str, destination: str) -> None:
        if failures:
            raise failures.pop()
        move(self, source, destination)
    monkeypatch.setattr(ArrowStore, "move", flaky_move)
    task, _ = start(tmp_path, background=True, flush_size=4)
    task.put([record(n, order(n)) for n in range(9)])
    task.wait_for_commits()
    assert failures == []
    assert ids(tmp_path) == list(range(8))
    assert task.pre_commit({TP0: 9}) == {TP0: 8}
    task.stop()


def test_a_background_commit_failing_for_good_fails_the_task_and_keeps_its_offsets_unsafe(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    release = threading.Event()  # held, so put() returns before the failure and wait_for_commits reports it

    def broken_move(self: ArrowStore, source: str, destination: str) -> None:
        assert release.wait(10), "the test never released the store"
        raise PermissionError(f"cannot write {destination}")
    monkeypatch.setattr(ArrowStore, "move", broken_move)
    task, _ = start(tmp_path, background=True, flush_size=4)
    task.put([record(n, order(n)) for n in range(6)])
    release.set()
    with pytest.raises(ConnectError, match=r"orders-0 from offset 0 failed: PermissionError.*restart copies it again"):
        task.wait_for_commits()
    assert task.pre_commit({TP0: 6}) == {TP0: 0}
    with pytest.raises(ConnectError, match="failed at offset 0"):
        task.put([record(6, order(6))])
    task.stop()


def test_restart_seeks_past_the_committed_files_and_drops_what_was_open(tmp_path: Path) -> None:
    task, _ = start(tmp_path, flush_size=4)
    task.put([record(n, order(n)) for n in range(10)])  # 0..3, 4..7 committed; 8, 9 open
    task.stop()  # a crash: the open file is lost, never half-committed
    again, context = start(tmp_path, flush_size=4)
    assert context.take_seeks() == {TP0: 8}
    again.put([record(n, order(n)) for n in range(6, 12)])  # a redelivery overlapping the committed range
    assert ids(tmp_path) == list(range(12))
    assert len(ids(tmp_path)) == len(set(ids(tmp_path)))


def test_a_round_cut_short_by_a_crash_is_rolled_back_on_open(tmp_path: Path) -> None:
    task, _ = start(tmp_path, flush_size=4, partitioner_class="FieldPartitioner", partition_field_name="region")
    task.put([record(n, order(n, "eu" if n % 2 else "us")) for n in range(8)])
    files = committed(tmp_path)
    assert len(files) == 4 and ids(tmp_path) == list(range(8))
    # Fake the crash: the manifest of the second round is still there, one of its files moved.
    store = open_store({"store.url": f"file://{tmp_path}/store"})
    second = [f for f in files if parse_committed_name(Path(f).name).start_offset >= 4]  # type: ignore[union-attr]
    manifest = round_manifest_path(store, "topics", TP0)
    store.write_bytes(manifest, json.dumps({"files": [store.path(f) for f in second]}).encode())
    (tmp_path / "store" / second[1]).unlink()
    again, context = start(tmp_path, flush_size=4, partitioner_class="FieldPartitioner",
                           partition_field_name="region")
    assert context.take_seeks() == {TP0: 4}
    assert ids(tmp_path) == [0, 1, 2, 3] and not store.exists(manifest)
    again.put([record(n, order(n, "eu" if n % 2 else "us")) for n in range(4, 8)])
    assert ids(tmp_path) == list(range(8))


def test_stale_temporary_files_of_the_partition_are_deleted_on_open(tmp_path: Path) -> None:
    temp = tmp_path / "store" / "topics" / "orders" / "+tmp"
    temp.mkdir(parents=True)
    (temp / "orders+0+deadbeef.parquet").write_bytes(b"half")
    (temp / "orders+1+cafe.parquet").write_bytes(b"other partition")
    start(tmp_path)
    assert sorted(p.name for p in temp.iterdir()) == ["orders+1+cafe.parquet"]


def test_a_schema_change_rolls_a_new_file(tmp_path: Path) -> None:
    task, _ = start(tmp_path, flush_size=100)
    v2 = Struct(ORDER_V2).put("id", 2).put("region", "eu")
    task.put([record(0, order(0)), record(1, order(1)), record(2, v2, schema=ORDER_V2), record(3, order(3))])
    assert committed(tmp_path) == ["topics/orders/partition=0/orders+0+0000000000+0000000001.parquet",
                                   "topics/orders/partition=0/orders+0+0000000002+0000000002.parquet"]
    assert task.pre_commit({TP0: 4}) == {TP0: 3}


def test_rotate_interval_cuts_files_by_record_time(tmp_path: Path) -> None:
    task, _ = start(tmp_path, rotate_interval_ms=3000)  # records are 1 s apart
    task.put([record(n, order(n)) for n in range(7)])
    assert committed(tmp_path) == ["topics/orders/partition=0/orders+0+0000000000+0000000002.parquet",
                                   "topics/orders/partition=0/orders+0+0000000003+0000000005.parquet"]


def test_rotate_schedule_commits_when_the_wall_clock_passes_a_boundary(tmp_path: Path) -> None:
    task, _ = start(tmp_path, rotate_schedule_interval_ms=1, timezone="UTC")
    task.put([record(0, order(0))])
    task.put([])  # a poll that brought nothing, a millisecond later or more
    import time
    time.sleep(0.01)
    task.put([])
    assert committed(tmp_path) == ["topics/orders/partition=0/orders+0+0000000000+0000000000.parquet"]


def test_partitions_get_their_own_files(tmp_path: Path) -> None:
    task, _ = start(tmp_path, partitions=(TP0, TP1), flush_size=2)
    task.put([record(0, order(0)), record(0, order(100), partition=1), record(1, order(1)),
              record(1, order(101), partition=1)])
    assert committed(tmp_path) == ["topics/orders/partition=0/orders+0+0000000000+0000000001.parquet",
                                   "topics/orders/partition=1/orders+1+0000000000+0000000001.parquet"]


def test_json_lines_are_values_without_schemas(tmp_path: Path) -> None:
    task, _ = start(tmp_path, flush_size=2, format_class="json")
    task.put([record(0, order(0)), record(1, order(1)), record(2, {"id": 2, "free": True}, schema=None),
              record(3, {"id": 3}, schema=None)])
    files = committed(tmp_path, "json")  # the schema change (to none) rolled a file, as Confluent's does
    assert [Path(f).name for f in files] == ["orders+0+0000000000+0000000001.json",
                                             "orders+0+0000000002+0000000003.json"]
    lines = [line for f in files for line in (tmp_path / "store" / f).read_bytes().splitlines()]
    assert json.loads(lines[0])["id"] == 0 and json.loads(lines[0])["amount"] == "AA=="
    assert json.loads(lines[1])["amount"] == "AQ=="
    assert [json.loads(line) for line in lines[2:]] == [{"id": 2, "free": True}, {"id": 3}]


def test_a_tombstone_fails_by_default_naming_the_record_and_the_fix(tmp_path: Path) -> None:
    task, _ = start(tmp_path)
    with pytest.raises(DataError, match=r"orders-0 offset 1 .*behavior.on.null.values=ignore"):
        task.put([record(0, order(0)), record(1, None, schema=None)])


def test_ignored_tombstones_still_advance_the_committable_offset(tmp_path: Path) -> None:
    task, _ = start(tmp_path, flush_size=1, behavior_on_null_values="ignore")
    task.put([record(0, order(0)), record(1, None, schema=None), record(2, None, schema=None)])
    assert task.pre_commit({TP0: 3}) == {TP0: 3}


def test_parquet_refuses_schemaless_values_with_the_fix(tmp_path: Path) -> None:
    task, _ = start(tmp_path)
    with pytest.raises(DataError, match="schemas.enable=true"):
        task.put([record(0, {"id": 1}, schema=None)])


@pytest.mark.parametrize(("props", "message"), [
    ({"store.url": "ftp://host/x"}, r"'ftp://host/x' for configuration store.url: .*file://, hdfs:// or s3://"),
    ({"store.url": "relative/dir"}, r"store.url: needs an absolute path"),
    ({"format.class": "orc"}, r"'orc' for configuration format.class"),
    ({"flush.size": "0"}, r"flush.size"),
    ({"schema.compatibility": "SIDEWAYS"},
     r"Invalid value SIDEWAYS for configuration schema.compatibility: .*NONE, BACKWARD, FORWARD, FULL"),
    ({"rotate.schedule.interval.ms": "60000", "timezone": ""}, r"timezone"),
])
def test_bad_configs_name_the_key_the_value_and_the_fix(tmp_path: Path, props: dict[str, str],
                                                       message: str) -> None:
    config = {"name": "files", "topics": "orders", "store.url": f"file://{tmp_path}", **props}
    with pytest.raises(ConfigError, match=message):
        FileSinkConnector().start(config)


def test_time_based_paths_follow_the_record_time_in_the_configured_zone(tmp_path: Path) -> None:
    # BASE_MS is 2026-11-18T11:06:40Z: 12h in Berlin, 06h in New York.
    hourly = {"partitioner_class": "HourlyPartitioner", "timestamp_extractor": "Record", "locale": "en",
              "flush_size": 2}
    task, _ = start(tmp_path, timezone="Europe/Berlin", **hourly)
    task.put([record(0, order(0)), record(1, order(1))])
    task, _ = start(tmp_path, partitions=(TP1,), timezone="America/New_York", **hourly)
    task.put([record(0, order(10), partition=1), record(1, order(11), partition=1)])
    assert committed(tmp_path) == [
        "topics/orders/year=2026/month=11/day=18/hour=06/orders+1+0000000000+0000000001.parquet",
        "topics/orders/year=2026/month=11/day=18/hour=12/orders+0+0000000000+0000000001.parquet"]

"""The columnar sink path against a real broker: batches where they apply, records elsewhere, same results.

A task that accepts batches gets ``put_batch`` for runs of plain JsonConverter envelopes and
``put`` for the runs holding a message the columnar path leaves alone (headers, a tombstone), in
offset order, each offset once. The storage sink writes the same files, name for name and row for
row, whether its records come as columns or (with a transform, which turns columns off) as records.
"""

from __future__ import annotations

import datetime as dt
import sys
import uuid
from collections import defaultdict
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from confluent_kafka import Producer

from kopycat.api.arrow_values import to_arrow_batch
from kopycat.api.data import Schema, SchemaBuilder, Struct, Timestamp
from kopycat.api.errors import ConnectError
from kopycat.api.record_batch import SinkRecordBatch
from kopycat.api.records import TopicPartition
from kopycat.api.task import SinkTask
from kopycat.connectors.files.committed_files import TEMP_DIR
from kopycat.connectors.files.file_sink import FileSinkTask
from kopycat.converters.json import JsonConverter
from kopycat.interpreter_settings import COPY_SWITCH_INTERVAL_S
from kopycat.runtime.bounded_plan import plan_bounded_run
from kopycat.runtime.bounded_run import run_planned_task
from kopycat.runtime.bounds import Bounds
from kopycat.runtime.run_range import PlannedEnds
from kopycat.runtime.sink_runner import SinkTaskRunner
from kopycat.runtime.task_factory import build_sink_runner
from kopycat.runtime.task_parts import TaskId
from tests.support.collecting import (
    BATCH_CALLS,
    CONTEXT_ACTIONS,
    PAUSED_PUTS,
    SWITCH_INTERVALS,
    CollectingBatchSinkTask,
    CommittingThenFailingBatchSinkTask,
    PausingBatchSinkTask,
    RewindingOnceBatchSinkTask,
)
from tests.support.kafka import committed_offsets, create_topic

JSON_WITH_SCHEMAS = {"key.converter": "org.apache.kafka.connect.json.JsonConverter",
                     "value.converter": "org.apache.kafka.connect.json.JsonConverter",
                     "value.converter.schemas.enable": "true"}
READING = (SchemaBuilder.struct().name("test.Reading").version(1).field("id", Schema.INT64_SCHEMA)
           .field("sensor", Schema.STRING_SCHEMA).field("value", Schema.FLOAT64_SCHEMA)
           .field("at", Timestamp.SCHEMA).build())
READING_V2 = (SchemaBuilder.struct().name("test.Reading").version(2).field("id", Schema.INT64_SCHEMA)
              .field("sensor", Schema.STRING_SCHEMA).field("value", Schema.FLOAT64_SCHEMA)
              .field("at", Timestamp.SCHEMA).field("unit", Schema.OPTIONAL_STRING_SCHEMA).build())
BASE = dt.datetime(2026, 11, 24, tzinfo=dt.UTC)
HEADERS = [("trace", b"1")]
STAMP_MS = 1_795_000_000_000


def reading(n: int, schema: Schema = READING) -> Struct:
    struct = Struct(schema).put("id", n).put("sensor", f"s{n % 13}").put("value", n / 8).put(
        "at", BASE + dt.timedelta(seconds=n))
    return struct.put("unit", "C") if schema is READING_V2 else struct


def encoded(structs: list[Struct]) -> list[bytes | None]:
    converter = JsonConverter()
    converter.configure({"schemas.enable": "true"}, is_key=False)
    return [converter.from_connect_data("t", s.schema, s) for s in structs]


Message = tuple[bytes | None, list[tuple[str, bytes]] | None]


def produce_messages(bootstrap: str, topic: str, partitions: dict[int, list[Message]]) -> None:
    """Each partition's messages in order, message i stamped STAMP_MS + partition * 10,000 + i."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for partition, messages in partitions.items():
        for index, (value, headers) in enumerate(messages):
            producer.produce(topic, value=value, key=None, partition=partition, headers=headers,
                             timestamp=STAMP_MS + partition * 10_000 + index)
    assert producer.flush(30) == 0


def plain(structs: list[Struct]) -> list[Message]:
    return [(value, None) for value in encoded(structs)]


# ------------------------------------------------------------------ the runner


def batch_runner(bootstrap: str, topic: str, ends: dict[TopicPartition, int],
                 task_class: type[SinkTask]) -> tuple[dict[str, str], SinkTaskRunner]:
    """A bounded runner of ``task_class`` (a CollectingBatchSinkTask) over ``topic`` to ``ends``, the one
    task assigned all their partitions; its props too."""
    props = {"name": f"batches-{uuid.uuid4().hex[:8]}", "topics": topic,
             "connector.class": "tests.support.collecting.CollectingBatchSinkConnector", **JSON_WITH_SCHEMAS}
    worker = {"bootstrap.servers": bootstrap, "offset.flush.interval.ms": "500"}
    return props, build_sink_runner(TaskId(props["name"], 0), task_class, props, props, worker,
                                    Bounds(end_offsets=ends), assignment=list(ends))


def test_a_task_accepting_batches_gets_columns_and_the_runs_with_odd_messages_as_records(
        bootstrap_servers: str, topic_name: str) -> None:
    topic = create_topic(bootstrap_servers, topic_name, 2)
    with_headers = (encoded([reading(300)])[0], HEADERS)
    messages = {0: [*plain([reading(n) for n in range(300)]), with_headers,
                    *plain([reading(n) for n in range(301, 500)])],
                1: [*plain([reading(n) for n in range(1000, 1100)]), (None, None),
                    *plain([reading(n) for n in range(1101, 1200)])]}
    produce_messages(bootstrap_servers, topic, messages)
    ends = {TopicPartition(topic, 0): 500, TopicPartition(topic, 1): 200}
    props, runner = batch_runner(bootstrap_servers, topic, ends, CollectingBatchSinkTask)
    summary = runner.run()

    got: dict[int, list[tuple[int, int | None, str]]] = defaultdict(list)  # partition -> (offset, id, path)
    for call in BATCH_CALLS[props["name"]]:
        if isinstance(call, SinkRecordBatch):
            ids = call.values.field("id").to_pylist()
            expected = to_arrow_batch(READING, [reading(n) for n in ids])
            assert pa.RecordBatch.from_struct_array(call.values).equals(expected), "columns must be the record path's"
            assert call.value_schema == READING
            stamps = [STAMP_MS + call.kafka_partition * 10_000 + offset for offset in call.offsets]
            assert list(call.timestamps) == stamps and list(call.slice(1, 3).timestamps) == stamps[1:3]
            got[call.kafka_partition] += [(o, n, "batch") for o, n in zip(call.offsets, ids, strict=True)]
        else:
            odd = [r for r in call if r.value is None or r.headers]
            assert odd, f"put() got a run with no message the columnar path leaves alone: {call[0].kafka_offset}.."
            for record in call:
                got[record.kafka_partition].append(
                    (record.kafka_offset, None if record.value is None else record.value.get("id"), "records"))
    assert [o for o, _, _ in got[0]] == list(range(500)) and [o for o, _, _ in got[1]] == list(range(200))
    assert [n for _, n, _ in got[0]] == list(range(500))
    assert [n for _, n, _ in got[1]] == [*range(1000, 1100), None, *range(1101, 1200)]
    assert got[0][300][2] == "records" and got[1][100][2] == "records"
    assert sum(path == "batch" for entries in got.values() for _, _, path in entries) >= 350
    assert summary.records == 700
    assert committed_offsets(bootstrap_servers, f"connect-{props['name']}", topic, 2) == {0: 500, 1: 200}


def test_a_task_pausing_and_rewinding_partitions_while_batches_are_converted_ahead_loses_nothing(
        bootstrap_servers: str, topic_name: str) -> None:
    """Later batches are consumed while batch k converts: what the task pauses or seeks after batch k
    must still hold for them (their early-fetched records are read again later)."""
    topic = create_topic(bootstrap_servers, topic_name, 2)
    produce_messages(bootstrap_servers, topic, {0: plain([reading(n) for n in range(1000)]),
                                                1: plain([reading(n) for n in range(1000, 2000)])})
    ends = {TopicPartition(topic, 0): 1000, TopicPartition(topic, 1): 1000}
    props, runner = batch_runner(bootstrap_servers, topic, ends, PausingBatchSinkTask)
    runner.batch_size = 100  # many batches, so the pause, the rewind and the resume fall mid-run
    switch_interval = sys.getswitchinterval()
    summary = runner.run()

    offsets: dict[int, list[int]] = defaultdict(list)
    for call in BATCH_CALLS[props["name"]]:
        assert isinstance(call, SinkRecordBatch)
        offsets[call.kafka_partition] += call.offsets
    actions = CONTEXT_ACTIONS[props["name"]]
    rewound_partition, rewound_after = actions["rewound"]
    for partition in (0, 1):  # every offset once and in order, but the rewound partition's, read again from 0
        again = [*range(rewound_after + 1)] if partition == rewound_partition else []
        assert offsets[partition] == [*again, *range(1000)], f"partition {partition}"
    assert actions["paused"][1] < 999, "the pause must fall before its partition's end"
    assert PAUSED_PUTS[props["name"]] == [], "no batch of a partition while the task had it paused"
    assert summary.records == 2000 + rewound_after + 1
    assert committed_offsets(bootstrap_servers, f"connect-{props['name']}", topic, 2) == {0: 1000, 1: 1000}
    # two threads share the GIL while it runs (kopycat.interpreter_settings); the process gets its own back
    assert SWITCH_INTERVALS[props["name"]] == max(switch_interval, COPY_SWITCH_INTERVAL_S)
    assert sys.getswitchinterval() == switch_interval



def test_a_rewind_after_a_batch_drops_the_batch_accepted_ahead_that_ended_the_partition(
        bootstrap_servers: str, topic_name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Batch 2 took the partition to its planned end before batch 1 was put; the task then rewinds to 0.

    Batch 2 is dropped, and the partition is open again: read from 0 to its end once more, and the
    group committed at its end only after every record was put again.
    """
    topic = create_topic(bootstrap_servers, topic_name, 1)
    produce_messages(bootstrap_servers, topic, {0: plain([reading(n) for n in range(200)])})
    tp = TopicPartition(topic, 0)
    props, runner = batch_runner(bootstrap_servers, topic, {tp: 200}, RewindingOnceBatchSinkTask)
    puts_at_end: list[int] = []  # batches put when the partition reached its end, each time
    finish = PlannedEnds._finish
    monkeypatch.setattr(PlannedEnds, "_finish", lambda self, consumer, tp, end: (
        puts_at_end.append(len(BATCH_CALLS[props["name"]])), finish(self, consumer, tp, end)))
    runner.batch_size = 100  # batch 1: offsets 0-99; batch 2: 100-199, the end, accepted while 1 converts
    summary = runner.run()

    offsets = [offset for call in BATCH_CALLS[props["name"]] if isinstance(call, SinkRecordBatch)
               for offset in call.offsets]
    # batch 2 ended the partition before batch 1 was put; read again, it ended it once more
    assert puts_at_end == [0, 1]
    assert offsets == [*range(100), *range(200)]
    assert summary.records == 300
    assert committed_offsets(bootstrap_servers, f"connect-{props['name']}", topic, 1) == {0: 200}



def test_a_commit_between_batches_stops_at_the_last_batch_put_though_the_next_reached_the_end(
        bootstrap_servers: str, topic_name: str) -> None:
    """Batch 2 took the partition to its planned end before batch 1 was put and committed: the commit
    covers batch 1 only, so the failed batch 2 is read again by the next run."""
    topic = create_topic(bootstrap_servers, topic_name, 1)
    produce_messages(bootstrap_servers, topic, {0: plain([reading(n) for n in range(200)])})
    props, runner = batch_runner(bootstrap_servers, topic, {TopicPartition(topic, 0): 200},
                                 CommittingThenFailingBatchSinkTask)
    runner.batch_size = 100  # batch 1: offsets 0-99; batch 2: 100-199, the end, accepted while 1 converts
    with pytest.raises(ConnectError, match="refused the batch"):
        runner.run()

    [put] = BATCH_CALLS[props["name"]]
    assert isinstance(put, SinkRecordBatch) and put.offsets == [*range(100)]
    assert committed_offsets(bootstrap_servers, f"connect-{props['name']}", topic, 1) == {0: 100}


# ------------------------------------------------------------------ the storage sink


NO_OP_TRANSFORM = {"transforms": "keep", "transforms.keep.type": "org.apache.kafka.connect.transforms.Filter",
                   "transforms.keep.predicate": "never", "predicates": "never",
                   "predicates.never.type": "org.apache.kafka.connect.transforms.predicates.TopicNameMatches",
                   "predicates.never.pattern": "no-topic-is-called-this"}


def export(bootstrap: str, topic: str, store: Path, extra: dict[str, str]) -> int:
    """A bounded storage sink run of the whole topic into ``store``; the records it copied."""
    props = {"name": f"files-{uuid.uuid4().hex[:8]}", "connector.class": "kopycat.connectors.files.FileSinkConnector",
             "topics": topic, "tasks.max": "1", "store.url": store.as_uri(), "format.class": "parquet",
             "flush.size": "500", "behavior.on.null.values": "ignore", **JSON_WITH_SCHEMAS, **extra}
    worker = {"bootstrap.servers": bootstrap}
    [planned] = plan_bounded_run(props, worker)
    summary = run_planned_task(props, planned, worker)
    assert summary.error is None, summary.error
    return summary.records


@pytest.fixture
def columnar_rows(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The size of each batch FileSinkTask.put_batch gets, in order (a spy around the real method)."""
    rows: list[int] = []
    put_batch = FileSinkTask.put_batch

    def counting_put_batch(self: FileSinkTask, batch: SinkRecordBatch) -> None:
        rows.append(len(batch))
        put_batch(self, batch)
    monkeypatch.setattr(FileSinkTask, "put_batch", counting_put_batch)
    return rows


def committed_tables(store: Path) -> dict[str, pa.Table]:
    return {str(path.relative_to(store)): pq.read_table(path) for path in sorted(store.rglob("*.parquet"))
            if TEMP_DIR not in path.parts}


def same_files(columns: Path, records: Path) -> dict[str, pa.Table]:
    """The committed files under ``columns``, after asserting ``records`` has the same names and tables."""
    from_columns, from_records = committed_tables(columns), committed_tables(records)
    assert list(from_columns) == list(from_records)
    for name, table in from_columns.items():
        assert table.equals(from_records[name], check_metadata=True), name
    return from_columns


def test_the_storage_sink_writes_the_same_files_from_columns_as_from_records(
        bootstrap_servers: str, topic_name: str, tmp_path: Path, columnar_rows: list[int]) -> None:
    topic = create_topic(bootstrap_servers, topic_name, 2)
    messages = {0: [*plain([reading(n) for n in range(700)]), (encoded([reading(700)])[0], HEADERS),
                    *plain([reading(n) for n in range(701, 1200)]), (None, None),
                    *plain([reading(n, READING_V2) for n in range(1201, 1500)])],
                1: plain([reading(n) for n in range(5000, 5900)])}
    produce_messages(bootstrap_servers, topic, messages)
    as_columns = export(bootstrap_servers, topic, tmp_path / "columns", {})
    assert sum(columnar_rows) >= 2000, "the storage sink must take most records as columns"
    columnar_total, columnar_rows[:] = sum(columnar_rows), []
    as_records = export(bootstrap_servers, topic, tmp_path / "records", NO_OP_TRANSFORM)
    assert columnar_rows == [], "a transform must turn the columnar path off"

    assert as_columns == as_records == 2400
    from_columns = same_files(tmp_path / "columns", tmp_path / "records")
    # flush.size 500 and the schema change at offset 1201 cut partition 0; the tombstone is skipped
    assert [name.rsplit("/", 1)[1] for name in from_columns if "partition=0" in name] == [
        f"{topic}+0+0000000000+0000000499.parquet", f"{topic}+0+0000000500+0000000999.parquet",
        f"{topic}+0+0000001000+0000001199.parquet", f"{topic}+0+0000001201+0000001499.parquet"]
    ids = [n for table in from_columns.values() for n in table.column("id").to_pylist()]
    assert sorted(ids) == [*range(1200), *range(1201, 1500), *range(5000, 5900)]
    assert columnar_total < 2400  # the runs holding the headers and the tombstone went as records


HOURLY = {"partitioner.class": "HourlyPartitioner", "timezone": "Europe/Berlin", "locale": "en-US",
          "timestamp.extractor": "Record"}


def test_time_based_directories_hold_the_same_files_from_columns_as_from_records(
        bootstrap_servers: str, topic_name: str, tmp_path: Path, columnar_rows: list[int]) -> None:
    topic = create_topic(bootstrap_servers, topic_name, 2)
    producer = Producer({"bootstrap.servers": bootstrap_servers, "linger.ms": 5})
    for n, value in enumerate(encoded([reading(n) for n in range(4000)])):
        stamp = STAMP_MS + n * 9_000 - (1_800_000 if n % 97 == 0 else 0)  # ~10 hours, some stamped late
        producer.produce(topic, value=value, partition=n % 2, timestamp=stamp)
    assert producer.flush(30) == 0
    assert export(bootstrap_servers, topic, tmp_path / "columns", HOURLY) == 4000
    assert sum(columnar_rows) == 4000
    assert export(bootstrap_servers, topic, tmp_path / "records", {**HOURLY, **NO_OP_TRANSFORM}) == 4000
    from_columns = same_files(tmp_path / "columns", tmp_path / "records")
    assert len({name.rsplit("/", 1)[0] for name in from_columns}) >= 10  # hour directories
    assert sorted(n for t in from_columns.values() for n in t.column("id").to_pylist()) == list(range(4000))

"""Kafka Connect (the real Java worker) and Kopycat take turns on one file and one offsets topic, and
write the same bytes through the same single message transforms and converters.

Each side's FileStreamSource must resume exactly where the other stopped: Kopycat reads the
offsets Kafka Connect committed, and Kafka Connect finds the offset records Kopycat wrote
(same key bytes, same partition of the offsets topic). Both write values with StringConverter,
so the records either side produces are byte for byte the same.
"""

from __future__ import annotations

import datetime as dt
import json
import struct
import time
import uuid
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from confluent_kafka import Consumer, TopicPartition

from kopycat.api.records import SourceRecord
from kopycat.dev.kafka_connect import LocalKafkaConnect
from kopycat.plugins import connector_class
from kopycat.runtime.bounds import Bounds, RunSummary, StopReason
from kopycat.runtime.task_factory import build_source_runner
from kopycat.runtime.task_parts import TaskId
from kopycat.storage.kafka_offset_store import KafkaOffsetStore
from kopycat.transforms import TimestampConverter
from tests.support.kafka import create_topic

STRING_CONVERTER = "org.apache.kafka.connect.storage.StringConverter"
KAFKA_FILE_SOURCE = "org.apache.kafka.connect.file.FileStreamSourceConnector"
HALF = 500

# The first test also starts a broker and a Connect worker (two JVMs): up to ~6 min measured on
# two busy cores, too close to the suite's 600 s per test.
pytestmark = pytest.mark.timeout(1200)


class Message(NamedTuple):
    partition: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...]


def line(i: int) -> str:
    return f"line {i:04d} of the file both workers read"


def append_lines(path: Path, start: int, count: int) -> int:
    """Append lines start..start+count-1 and return the file's size in bytes (ASCII: = chars)."""
    with path.open("a", encoding="ascii") as handle:
        handle.writelines(f"{line(i)}\n" for i in range(start, start + count))
    return path.stat().st_size


def connector_props(path: Path, topic: str) -> dict[str, str]:
    """One config both workers accept: Kafka's class name resolves to Kopycat's connector."""
    return {"connector.class": KAFKA_FILE_SOURCE, "tasks.max": "1", "file": str(path),
            "topic": topic, "key.converter": STRING_CONVERTER, "value.converter": STRING_CONVERTER}


def offset_key(name: str, path: Path) -> bytes:
    """The offsets-topic key Kafka Connect writes: compact JSON ``["<connector>",{partition}]``."""
    return json.dumps([name, {"filename": str(path)}], separators=(",", ":")).encode()


def run_kopycat(connect: LocalKafkaConnect, name: str, props: dict[str, str]) -> RunSummary:
    """Plan and run Kopycat's FileStreamSource once, to caught up, on the worker's offsets topic."""
    props = {**props, "name": name}
    connector = connector_class(props["connector.class"])()
    connector.start(props)
    [task_props] = connector.task_configs(1)
    worker = {"bootstrap.servers": connect.bootstrap_servers, "offset.flush.interval.ms": "1000"}
    try:
        with KafkaOffsetStore(connect.bootstrap_servers, topic=connect.offsets_topic,
                              replication_factor=1) as store:
            runner = build_source_runner(TaskId(name, 0), connector.task_class(), task_props, props,
                                         worker, store, Bounds.caught_up(3_000))
            return runner.run()
    finally:
        connector.stop()


def java_position(connect: LocalKafkaConnect, name: str, path: Path) -> int | None:
    """The position Kafka Connect's REST API reports for the file, or None if it has none."""
    for entry in connect.get_offsets(name):
        if entry["partition"] == {"filename": str(path)}:
            return int(entry["offset"]["position"])
    return None


def wait_for_java_position(connect: LocalKafkaConnect, name: str, path: Path, position: int,
                           timeout_s: float = 120.0) -> None:
    deadline = time.monotonic() + timeout_s
    seen = None
    while time.monotonic() < deadline:
        seen = java_position(connect, name, path)
        if seen == position:
            return
        time.sleep(1.0)
    raise AssertionError(f"Kafka Connect's committed position for {path} is {seen}, not {position}, "
                         f"after {timeout_s:.0f}s:\n{connect.log_tail(30)}")


def stop_and_delete(connect: LocalKafkaConnect, name: str) -> None:
    """Stop the Java connector (its task commits its last offsets), then delete it."""
    connect.stop_connector(name)
    connect.wait_for_connector_state(name, "STOPPED", timeout_s=120)
    connect.delete_connector(name)


def read_topic(bootstrap: str, topic: str) -> list[Message]:
    """Every record of ``topic``, partition by partition, in offset order, read to the end."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"check-{uuid.uuid4().hex}",
                         "enable.auto.commit": False, "enable.partition.eof": True})
    try:
        partitions = consumer.list_topics(topic, timeout=30).topics[topic].partitions
        consumer.assign([TopicPartition(topic, p, 0) for p in partitions])
        left, messages = set(partitions), []
        while left:
            message = consumer.poll(10)
            assert message is not None, f"timed out reading {topic}"
            if message.error():
                left.discard(message.partition())
                continue
            messages.append(Message(message.partition(), message.key(), message.value(),
                                    tuple(message.headers() or ())))
        return messages
    finally:
        consumer.close()


def offset_records(connect: LocalKafkaConnect, name: str) -> list[Message]:
    """The raw offsets-topic records of connector ``name``, whoever wrote them."""
    def connector_of(key: bytes | None) -> Any:
        return json.loads(key)[0] if key else None

    return [m for m in read_topic(connect.bootstrap_servers, connect.offsets_topic)
            if connector_of(m.key) == name]


def assert_every_line_once_in_order(messages: list[Message]) -> None:
    """1000 records, one per line in file order, each exactly the line's bytes, no key, no headers."""
    assert [m.value for m in messages] == [line(i).encode() for i in range(2 * HALF)]
    assert {(m.partition, m.key, m.headers) for m in messages} == {(0, None, ())}


def test_kopycat_copies_only_the_lines_added_after_kafka_connect_stopped(
        kafka_connect: LocalKafkaConnect, bootstrap_servers: str, topic_name: str,
        tmp_path: Path) -> None:
    topic = create_topic(bootstrap_servers, topic_name, 1)
    name = f"java-then-kopycat-{uuid.uuid4().hex[:8]}"
    path = tmp_path / "input.txt"
    first_size = append_lines(path, 0, HALF)

    kafka_connect.create_connector(name, connector_props(path, topic))
    kafka_connect.wait_for_task_state(name, "RUNNING", timeout_s=120)
    wait_for_java_position(kafka_connect, name, path, first_size)
    stop_and_delete(kafka_connect, name)
    java_offsets = offset_records(kafka_connect, name)
    full_size = append_lines(path, HALF, HALF)
    summary = run_kopycat(kafka_connect, name, connector_props(path, topic))

    assert summary.stop_reason is StopReason.CAUGHT_UP and summary.records == HALF
    assert summary.offsets[json.dumps({"filename": str(path)}, separators=(",", ":"))] == {
        "partition": {"filename": str(path)},
        "before": {"position": first_size}, "after": {"position": full_size}}
    assert_every_line_once_in_order(read_topic(bootstrap_servers, topic))
    ours = offset_records(kafka_connect, name)[len(java_offsets):]
    assert java_offsets and ours
    assert {(m.partition, m.key) for m in java_offsets + ours} == {
        (java_offsets[0].partition, offset_key(name, path))}
    assert java_offsets[-1].value == f'{{"position":{first_size}}}'.encode()
    assert ours[-1].value == f'{{"position":{full_size}}}'.encode()


def test_kafka_connect_copies_only_the_lines_added_after_kopycat_stopped(
        kafka_connect: LocalKafkaConnect, bootstrap_servers: str, topic_name: str,
        tmp_path: Path) -> None:
    topic = create_topic(bootstrap_servers, topic_name, 1)
    name = f"kopycat-then-java-{uuid.uuid4().hex[:8]}"
    path = tmp_path / "input.txt"
    first_size = append_lines(path, 0, HALF)

    summary = run_kopycat(kafka_connect, name, connector_props(path, topic))
    ours = offset_records(kafka_connect, name)
    kafka_connect.create_connector(name, connector_props(path, topic), initial_state="STOPPED")
    kafka_connect.wait_for_connector_state(name, "STOPPED", timeout_s=120)
    seen_by_java = kafka_connect.get_offsets(name)
    full_size = append_lines(path, HALF, HALF)
    kafka_connect.resume_connector(name)
    kafka_connect.wait_for_task_state(name, "RUNNING", timeout_s=120)
    wait_for_java_position(kafka_connect, name, path, full_size)
    stop_and_delete(kafka_connect, name)

    assert summary.stop_reason is StopReason.CAUGHT_UP and summary.records == HALF
    assert seen_by_java == [{"partition": {"filename": str(path)},
                             "offset": {"position": first_size}}]
    assert_every_line_once_in_order(read_topic(bootstrap_servers, topic))
    java_offsets = offset_records(kafka_connect, name)[len(ours):]
    assert ours and java_offsets
    assert {(m.partition, m.key) for m in ours + java_offsets} == {
        (ours[0].partition, offset_key(name, path))}
    assert ours[-1].value == f'{{"position":{first_size}}}'.encode()
    assert java_offsets[-1].value == f'{{"position":{full_size}}}'.encode()


SMT_PROPS: dict[str, str] = {
    "value.converter": "org.apache.kafka.connect.json.JsonConverter",
    "header.converter": "org.apache.kafka.connect.storage.SimpleHeaderConverter",
    "transforms": "hoist,meta,copy,count,when,drop",
    "transforms.hoist.type": "org.apache.kafka.connect.transforms.HoistField$Value",
    "transforms.hoist.field": "line",
    "transforms.meta.type": "org.apache.kafka.connect.transforms.SetSchemaMetadata$Value",
    "transforms.meta.schema.name": "kopycat.Line",
    "transforms.meta.schema.version": "3",
    "transforms.copy.type": "org.apache.kafka.connect.transforms.HeaderFrom$Value",
    "transforms.copy.fields": "line",
    "transforms.copy.headers": "copied",
    "transforms.copy.operation": "copy",
    "transforms.count.type": "org.apache.kafka.connect.transforms.InsertHeader",
    "transforms.count.header": "count",
    "transforms.count.value.literal": "42",
    "transforms.when.type": "org.apache.kafka.connect.transforms.InsertHeader",
    "transforms.when.header": "when",
    "transforms.when.value.literal": "2019-08-23T14:34:54.346Z",
    "transforms.drop.type": "org.apache.kafka.connect.transforms.DropHeaders",
    "transforms.drop.headers": "absent",
}


def test_kafkas_smts_and_simple_header_converter_write_the_same_bytes_in_both_workers(
        kafka_connect: LocalKafkaConnect, bootstrap_servers: str, topic_name: str,
        tmp_path: Path) -> None:
    """One FileStreamSource config with HoistField, SetSchemaMetadata, HeaderFrom, InsertHeader and
    DropHeaders, JsonConverter values and SimpleHeaderConverter headers: each worker writes its own
    topic, and the records (values and header bytes) are identical."""
    java_topic = create_topic(bootstrap_servers, f"{topic_name}-java", 1)
    our_topic = create_topic(bootstrap_servers, f"{topic_name}-kopycat", 1)
    path = tmp_path / "input.txt"
    size = append_lines(path, 0, 20)
    java_name, our_name = f"smt-java-{uuid.uuid4().hex[:8]}", f"smt-kopycat-{uuid.uuid4().hex[:8]}"

    kafka_connect.create_connector(java_name, {**connector_props(path, java_topic), **SMT_PROPS})
    kafka_connect.wait_for_task_state(java_name, "RUNNING", timeout_s=120)
    wait_for_java_position(kafka_connect, java_name, path, size)
    stop_and_delete(kafka_connect, java_name)
    summary = run_kopycat(kafka_connect, our_name, {**connector_props(path, our_topic), **SMT_PROPS})

    theirs, ours = read_topic(bootstrap_servers, java_topic), read_topic(bootstrap_servers, our_topic)
    assert summary.records == 20 and len(theirs) == 20
    assert ours == theirs
    assert theirs[0].headers == (("copied", line(0).encode()), ("count", b"42"),
                                 ("when", b"2019-08-23T14:34:54.346Z"))
    assert json.loads(theirs[0].value)["schema"]["name"] == "kopycat.Line"


def timestamp_line(i: int) -> str:
    return f"2024-{i % 12 + 1:02d}-{i % 28 + 1:02d} {i % 24:02d}:15:{i % 60:02d}"


_TS: dict[str, str] = {"transforms.ts.type": "org.apache.kafka.connect.transforms.TimestampConverter$Value",
                       "transforms.ts.format": "yyyy-MM-dd HH:mm:ss"}
CONVERTER_CASES: dict[str, dict[str, str]] = {
    "unix_seconds_as_long": {
        **_TS, "transforms": "ts", "transforms.ts.target.type": "unix", "transforms.ts.unix.precision": "seconds",
        "value.converter": "org.apache.kafka.connect.converters.LongConverter"},
    "timestamp_flattened_as_json": {
        **_TS, "transforms": "ts,inner,outer,flat", "transforms.ts.target.type": "Timestamp",
        "transforms.inner.type": "org.apache.kafka.connect.transforms.HoistField$Value",
        "transforms.inner.field": "at",
        "transforms.outer.type": "org.apache.kafka.connect.transforms.HoistField$Value",
        "transforms.outer.field": "event",
        "transforms.flat.type": "org.apache.kafka.connect.transforms.Flatten$Value",
        "transforms.flat.delimiter": "_",
        "value.converter": "org.apache.kafka.connect.json.JsonConverter"},
    "millis_as_double_with_array_header": {
        **_TS, "transforms": "ts,cast,tag", "transforms.ts.target.type": "unix",
        "transforms.cast.type": "org.apache.kafka.connect.transforms.Cast$Value", "transforms.cast.spec": "float64",
        "transforms.tag.type": "org.apache.kafka.connect.transforms.InsertHeader",
        "transforms.tag.header": "tags", "transforms.tag.value.literal": '[1, 2.5, {"k": true}]',
        "value.converter": "org.apache.kafka.connect.converters.DoubleConverter",
        "header.converter": "org.apache.kafka.connect.storage.SimpleHeaderConverter"},
    "unix_cast_to_int16_as_short": {
        **_TS, "transforms": "ts,cast", "transforms.ts.target.type": "unix",
        "transforms.cast.type": "org.apache.kafka.connect.transforms.Cast$Value", "transforms.cast.spec": "int16",
        "value.converter": "org.apache.kafka.connect.converters.ShortConverter"},
    "unix_cast_to_int32_as_integer": {
        **_TS, "transforms": "ts,cast", "transforms.ts.target.type": "unix",
        "transforms.cast.type": "org.apache.kafka.connect.transforms.Cast$Value", "transforms.cast.spec": "int32",
        "value.converter": "org.apache.kafka.connect.converters.IntegerConverter"},
    "unix_cast_to_float32_as_float": {
        **_TS, "transforms": "ts,cast", "transforms.ts.target.type": "unix",
        "transforms.cast.type": "org.apache.kafka.connect.transforms.Cast$Value", "transforms.cast.spec": "float32",
        "value.converter": "org.apache.kafka.connect.converters.FloatConverter"},
    "unix_cast_to_boolean_as_boolean": {
        **_TS, "transforms": "ts,cast", "transforms.ts.target.type": "unix",
        "transforms.cast.type": "org.apache.kafka.connect.transforms.Cast$Value", "transforms.cast.spec": "boolean",
        "value.converter": "org.apache.kafka.connect.converters.BooleanConverter"},
}


@pytest.mark.parametrize("case", list(CONVERTER_CASES))
def test_timestamp_converter_flatten_and_primitive_converters_write_the_same_bytes_in_both_workers(
        kafka_connect: LocalKafkaConnect, bootstrap_servers: str, topic_name: str, tmp_path: Path,
        case: str) -> None:
    """Lines of timestamps through TimestampConverter (SimpleDateFormat parsing), Flatten and Kafka's
    primitive converters: Kafka Connect's records and Kopycat's are byte for byte the same."""
    java_topic = create_topic(bootstrap_servers, f"{topic_name}-java", 1)
    our_topic = create_topic(bootstrap_servers, f"{topic_name}-kopycat", 1)
    path = tmp_path / "input.txt"
    path.write_text("".join(f"{timestamp_line(i)}\n" for i in range(40)), encoding="ascii")
    java_name, our_name = f"ts-java-{uuid.uuid4().hex[:8]}", f"ts-kopycat-{uuid.uuid4().hex[:8]}"
    props = CONVERTER_CASES[case]

    kafka_connect.create_connector(java_name, {**connector_props(path, java_topic), **props})
    kafka_connect.wait_for_task_state(java_name, "RUNNING", timeout_s=120)
    wait_for_java_position(kafka_connect, java_name, path, path.stat().st_size)
    stop_and_delete(kafka_connect, java_name)
    summary = run_kopycat(kafka_connect, our_name, {**connector_props(path, our_topic), **props})

    theirs, ours = read_topic(bootstrap_servers, java_topic), read_topic(bootstrap_servers, our_topic)
    assert summary.records == 40 and len(theirs) == 40
    assert ours == theirs
    first = dt.datetime(2024, 1, 1, 0, 15, 0, tzinfo=dt.UTC)
    if case == "unix_seconds_as_long":
        assert theirs[0].value == struct.pack(">q", int(first.timestamp()))
    if case == "millis_as_double_with_array_header":
        assert theirs[0].value == struct.pack(">d", first.timestamp() * 1000)
        assert theirs[0].headers == (("tags", b'[1,2.5,{"k":true}]'),)  # mixed kinds: no widening


OUTPUT_PATTERN = "EEEE, MMMM d, yyyy h:mm:ss.SSS a zzzz Z X 'day' D u G"
INPUT_PATTERNS = ["EEE, d MMM yyyy hh:mm:ss a z", "yyyyMMddHHmmssSSS", "dd/MM/yy HH:mm",
                  "yyyy-MM-dd'T'HH:mm:ss.SSSXXX", "D 'of' yyyy, k:mm"]


@pytest.mark.parametrize("pattern", INPUT_PATTERNS)
def test_timestamp_converter_reads_and_writes_simple_date_format_patterns_as_kafka_connect_does(
        kafka_connect: LocalKafkaConnect, bootstrap_servers: str, topic_name: str, tmp_path: Path,
        pattern: str) -> None:
    """Lines written in ``pattern`` are parsed (string -> unix) and rewritten in a pattern using
    every supported letter (unix -> string): Kafka Connect's values and Kopycat's are the same text."""
    writer = TimestampConverter.Value()
    writer.configure({"target.type": "string", "format": pattern})
    instants = [1_700_000_000_123 + i * 7_777_777_777 for i in range(30)]  # 2023 to 2030, all hours
    lines = [writer.apply(SourceRecord(topic="lines", value=ms)).value for ms in instants]
    java_topic = create_topic(bootstrap_servers, f"{topic_name}-java", 1)
    our_topic = create_topic(bootstrap_servers, f"{topic_name}-kopycat", 1)
    path = tmp_path / "input.txt"
    path.write_text("".join(f"{text}\n" for text in lines), encoding="ascii")
    props = {"transforms": "parse,write", "value.converter": STRING_CONVERTER,
             "transforms.parse.type": "org.apache.kafka.connect.transforms.TimestampConverter$Value",
             "transforms.parse.target.type": "unix", "transforms.parse.format": pattern,
             "transforms.write.type": "org.apache.kafka.connect.transforms.TimestampConverter$Value",
             "transforms.write.target.type": "string", "transforms.write.format": OUTPUT_PATTERN}
    java_name, our_name = f"sdf-java-{uuid.uuid4().hex[:8]}", f"sdf-kopycat-{uuid.uuid4().hex[:8]}"

    kafka_connect.create_connector(java_name, {**connector_props(path, java_topic), **props})
    kafka_connect.wait_for_task_state(java_name, "RUNNING", timeout_s=120)
    wait_for_java_position(kafka_connect, java_name, path, path.stat().st_size)
    stop_and_delete(kafka_connect, java_name)
    summary = run_kopycat(kafka_connect, our_name, {**connector_props(path, our_topic), **props})

    theirs, ours = read_topic(bootstrap_servers, java_topic), read_topic(bootstrap_servers, our_topic)
    assert summary.records == 30 and len(theirs) == 30
    assert [m.value for m in ours] == [m.value for m in theirs]
    assert ours == theirs

"""The FileStreamSource under the source runner on a real broker: every line once, offsets as byte
positions, and the idempotent producer connected before the first record (connect_idempotent)."""

from __future__ import annotations

from pathlib import Path

from confluent_kafka import Producer

from kopycat.connectors.files.filestream_source import FileStreamSourceConnector
from kopycat.idempotent_producer import connect_idempotent
from kopycat.kafka import SOURCE_PRODUCER_DEFAULTS, SOURCE_PRODUCER_FORCED
from kopycat.runtime.bounds import Bounds, StopReason
from kopycat.runtime.task_factory import build_source_runner
from kopycat.runtime.task_parts import TaskId
from kopycat.storage.offset_backing_store import MemoryOffsetStore
from tests.support.kafka import consume_all, create_topic

STRING_CONVERTER = "org.apache.kafka.connect.storage.StringConverter"


def test_every_line_arrives_once_and_the_offset_is_the_files_byte_length(
        bootstrap_servers: str, topic_name: str, tmp_path: Path) -> None:
    topic = create_topic(bootstrap_servers, topic_name)
    lines = [f"{i:06d} {'x' * (i % 37)}" for i in range(20_000)]
    path = tmp_path / "input.txt"
    path.write_text("".join(f"{line}\n" for line in lines))
    props = {"name": f"file-{topic}", "connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector",
             "file": str(path), "topic": topic,
             "batch.size": "700", "key.converter": STRING_CONVERTER, "value.converter": STRING_CONVERTER}
    connector = FileStreamSourceConnector()
    connector.start(props)
    [task_props] = connector.task_configs(1)
    runner = build_source_runner(TaskId(props["name"], 0), connector.task_class(), task_props, props,
                                 {"bootstrap.servers": bootstrap_servers}, MemoryOffsetStore(),
                                 Bounds(max_records=len(lines)))
    summary = runner.run()
    assert summary.stop_reason is StopReason.MAX_RECORDS
    assert summary.records == len(lines)
    assert [v.decode() for v in consume_all(bootstrap_servers, topic) if v is not None] == lines
    [entry] = summary.offsets.values()
    assert entry["partition"] == {"filename": str(path)}
    assert entry["after"] == {"position": path.stat().st_size}


def test_after_connect_idempotent_a_broker_known_by_its_id_answers_and_records_arrive(
        bootstrap_servers: str, topic_name: str) -> None:
    topic = create_topic(bootstrap_servers, topic_name)
    producer = Producer({"bootstrap.servers": bootstrap_servers, **SOURCE_PRODUCER_DEFAULTS,
                         **SOURCE_PRODUCER_FORCED})
    connect_idempotent(producer, "Task connect-0")
    assert producer.list_topics(timeout=30).orig_broker_id >= 0  # no longer the bootstrap connection (-1)
    for i in range(100):
        producer.produce(topic, f"{i}".encode())
    assert producer.flush(60) == 0
    assert consume_all(bootstrap_servers, topic) == [f"{i}".encode() for i in range(100)]

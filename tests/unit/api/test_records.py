"""Records, connectors and tasks: the SPI's contracts that the engine relies on."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

import pytest

from kopycat.api.config import ConfigDef, ConfigType, Importance
from kopycat.api.connector import SourceConnector
from kopycat.api.data import Schema
from kopycat.api.records import (
    Headers,
    SinkRecord,
    SourceRecord,
    TimestampType,
    TopicPartition,
)
from kopycat.api.task import SinkTask, SourceTask


def test_new_record_replaces_fields_and_keeps_source_partition_and_offset() -> None:
    record = SourceRecord(topic="orders", value={"id": 1}, source_partition={"table": "t"},
                          source_offset={"incrementing": 7}, timestamp=1000)

    moved = record.new_record(topic="orders-v2", value_schema=Schema.STRING_SCHEMA, value="x")

    assert (moved.topic, moved.value, moved.value_schema) == ("orders-v2", "x", Schema.STRING_SCHEMA)
    assert moved.source_partition == {"table": "t"}
    assert moved.source_offset == {"incrementing": 7}
    assert moved.timestamp == 1000
    assert record.topic == "orders"


def test_records_are_immutable() -> None:
    record = SourceRecord(topic="t", value=1)

    with pytest.raises(dataclasses.FrozenInstanceError):
        record.topic = "u"  # type: ignore[misc]


def test_of_builds_the_same_record_positionally_in_kafkas_constructor_order() -> None:
    headers = Headers([("trace", b"1")])
    fast = SourceRecord.of({"table": "t"}, {"id": 7}, "orders", 2, Schema.STRING_SCHEMA, "k",
                           Schema.INT64_SCHEMA, 42, 1000, headers)
    assert fast == SourceRecord(source_partition={"table": "t"}, source_offset={"id": 7}, topic="orders",
                                kafka_partition=2, key_schema=Schema.STRING_SCHEMA, key="k",
                                value_schema=Schema.INT64_SCHEMA, value=42, timestamp=1000, headers=headers)
    bare = SourceRecord.of(None, None, "orders", None, None, None, None, None)
    assert bare == SourceRecord(topic="orders") and len(bare.headers) == 0
    assert bare.headers is not SourceRecord.of(None, None, "t", None, None, None, None, None).headers
    with pytest.raises(dataclasses.FrozenInstanceError):
        fast.value = 43  # type: ignore[misc]

def test_sink_record_of_builds_the_same_record_and_keeps_the_original_coordinates() -> None:
    headers = Headers([("trace", b"1")])
    fast = SinkRecord.of("orders", 2, Schema.STRING_SCHEMA, "k", Schema.INT64_SCHEMA, 42, 17, 1000,
                         TimestampType.CREATE_TIME, headers)
    assert fast == SinkRecord(topic="orders", kafka_partition=2, key_schema=Schema.STRING_SCHEMA, key="k",
                              value_schema=Schema.INT64_SCHEMA, value=42, kafka_offset=17, timestamp=1000,
                              timestamp_type=TimestampType.CREATE_TIME, headers=headers)
    assert (fast.original_topic, fast.original_kafka_partition, fast.original_kafka_offset) == ("orders", 2, 17)
    renamed = fast.new_record(topic="renamed")
    assert renamed.topic_partition == TopicPartition("orders", 2) and renamed.original_kafka_offset == 17
    bare = SinkRecord.of("t", 0, None, None, None, None, 5)
    assert bare == SinkRecord(topic="t", kafka_partition=0, kafka_offset=5) and len(bare.headers) == 0
    assert bare.timestamp_type is TimestampType.NO_TIMESTAMP_TYPE
    assert bare.headers is not SinkRecord.of("t", 0, None, None, None, None, 5).headers


def test_new_record_copies_headers_so_the_original_keeps_its_own() -> None:
    record = SourceRecord(topic="t", headers=Headers([("a", b"1")]))

    changed = record.new_record()
    changed.headers.add("b", b"2")

    assert [h.key for h in record.headers] == ["a"]
    assert [h.key for h in changed.headers] == ["a", "b"]


def test_sink_record_keeps_its_kafka_position_through_renames() -> None:
    record = SinkRecord(topic="orders", kafka_partition=3, kafka_offset=42, value=b"v")

    renamed = record.new_record(topic="archive.orders", kafka_partition=0)

    assert renamed.topic == "archive.orders"
    assert renamed.topic_partition == TopicPartition("orders", 3)
    assert renamed.original_kafka_offset == 42


def test_headers_keep_order_and_repeats() -> None:
    headers = Headers().add("k", 1).add("other", 2).add("k", 3)

    assert [h.value for h in headers.all_with_name("k")] == [1, 3]
    assert headers.last_with_name("k").value == 3
    assert headers.last_with_name("missing") is None
    assert len(headers.remove("k")) == 1


class _LinesConnector(SourceConnector):
    CONFIG = ConfigDef().define("files", ConfigType.LIST, importance=Importance.HIGH,
                                doc="Files to read.")

    def start(self, props: Mapping[str, str]) -> None:
        self.files = self.CONFIG.parse(props)["files"]

    def task_class(self) -> type[SourceTask]:
        return _LinesTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        groups = [self.files[i::max_tasks] for i in range(min(max_tasks, len(self.files)))]
        return [{"files": ",".join(group)} for group in groups]

    def stop(self) -> None:
        pass

    def config(self) -> ConfigDef:
        return self.CONFIG


class _LinesTask(SourceTask):
    def start(self, props: Mapping[str, str]) -> None:
        pass

    def poll(self) -> list[SourceRecord] | None:
        return None

    def stop(self) -> None:
        pass


def test_a_minimal_connector_plans_and_validates_through_its_config_def() -> None:
    connector = _LinesConnector()
    connector.start({"files": "a,b,c"})

    assert connector.task_configs(2) == [{"files": "a,c"}, {"files": "b"}]
    errors = {v.name: v.errors for v in connector.validate({})}
    assert errors["files"] and "files" in errors["files"][0]


def test_sink_task_pre_commit_flushes_and_commits_everything_by_default() -> None:
    flushed: list[Mapping[TopicPartition, int]] = []

    class Sink(SinkTask):
        def start(self, props: Mapping[str, str]) -> None: ...
        def put(self, records: Sequence[SinkRecord]) -> None: ...
        def stop(self) -> None: ...
        def flush(self, current_offsets: Mapping[TopicPartition, int]) -> None:
            flushed.append(dict(current_offsets))

    offsets = {TopicPartition("t", 0): 10}

    assert Sink().pre_commit(offsets) == offsets
    assert flushed == [offsets]


def test_connector_used_before_initialize_says_so() -> None:
    with pytest.raises(RuntimeError, match="before initialize"):
        _ = _LinesConnector().context

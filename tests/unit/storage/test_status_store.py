"""The status topic's records must be Kafka Connect's, both ways, and replay as Kafka replays them.

Golden bytes were captured from Kafka 4.1.1's ``JsonConverter`` (schemas.enable=false, JDK 17)
with ``java/ConfigStatusOracle.java`` (``goldens``), which serializes Structs of
``KafkaStatusBackingStore``'s 4.1.1 schema (and the 3.x one, without ``version``) as that class
does; the integration tests re-check them when a JVM and the jars are present.
"""

from __future__ import annotations

import logging

import pytest

from kopycat.api.errors import ConfigError, ConnectError, DataError
from kopycat.storage.connector_status import (
    ConnectorStatus,
    State,
    TaskStatus,
    TopicStatus,
    decode_status,
    decode_topic_status,
    encode_status,
    encode_topic_status,
    status_key,
    topic_status_key,
)
from kopycat.storage.status_backing_store import KafkaStatusBackingStore, MemoryStatusBackingStore, StatusTable

STATUS_RUNNING = (b'{"state":"RUNNING","trace":null,"worker_id":"127.0.0.1:8083","generation":0,'
                  b'"version":null}')
TRACE = "org.apache.kafka.connect.errors.ConnectException: boom\n\tat X.y(X.java:1)\n"
STATUS_FAILED = (b'{"state":"FAILED","trace":"org.apache.kafka.connect.errors.ConnectException: boom\\n\\tat '
                 b'X.y(X.java:1)\\n","worker_id":"10.0.0.7:8083","generation":7,"version":"4.1.1"}')
STATUS_UNASSIGNED_3X = b'{"state":"UNASSIGNED","trace":null,"worker_id":"10.0.0.7:8083","generation":3}'
TOPIC_STATUS = b'{"topic":{"name":"orders","connector":"jdbc-source","task":2,"discoverTimestamp":1795000000123}}'
WORKER = "10.0.0.7:8083"


def _replay(*records: tuple[str, bytes | None]) -> StatusTable:
    table = StatusTable("connect-status")
    for key, value in records:
        table.apply(key.encode(), value)
    return table


def _task(task: int, state: State = State.RUNNING, generation: int = 0) -> TaskStatus:
    return TaskStatus("my-conn", task, state, None, WORKER, generation)


# ------------------------------------------------------------------ golden bytes (Kafka 4.1.1)

def test_a_status_value_is_kafka_connects_bytes_with_null_trace_and_version() -> None:
    status = ConnectorStatus("c", State.RUNNING, None, "127.0.0.1:8083")
    assert encode_status(status) == STATUS_RUNNING


def test_a_failed_task_status_carries_its_trace_and_plugin_version() -> None:
    status = TaskStatus("c", 0, State.FAILED, TRACE, WORKER, generation=7, version="4.1.1")
    assert encode_status(status) == STATUS_FAILED


def test_a_destroyed_status_is_a_tombstone() -> None:
    assert encode_status(ConnectorStatus("c", State.DESTROYED, None, WORKER)) is None
    assert encode_status(_task(0, State.DESTROYED)) is None


def test_record_keys_are_kafka_connects() -> None:
    assert status_key(ConnectorStatus("my-conn", State.RUNNING, None, WORKER)) == "status-connector-my-conn"
    assert status_key(_task(3)) == "status-task-my-conn-3"


def test_kafka_connect_statuses_decode_also_from_workers_before_4_1_without_version() -> None:
    assert decode_status(STATUS_FAILED) == (State.FAILED, TRACE, WORKER, 7, "4.1.1")
    assert decode_status(STATUS_RUNNING) == (State.RUNNING, None, "127.0.0.1:8083", 0, None)
    assert decode_status(STATUS_UNASSIGNED_3X) == (State.UNASSIGNED, None, WORKER, 3, None)


@pytest.mark.parametrize("value", [
    b'{"state":"SLEEPING","trace":null,"worker_id":"w","generation":0}',
    b'{"state":"RUNNING","trace":null,"worker_id":"w","generation":1.0}',
    b'{"state":"RUNNING","trace":null,"generation":0}',
    b'{"state":"RUNNING","trace":1,"worker_id":"w","generation":0}',
    b'["RUNNING"]', b"not json",
], ids=["unknown state", "float generation", "no worker", "trace not text", "not an object", "not json"])
def test_malformed_status_values_are_refused(value: bytes) -> None:
    with pytest.raises(DataError):
        decode_status(value)


# ------------------------------------------------------------------ replaying Kafka Connect's records

def test_statuses_written_by_kafka_connect_are_read_per_connector_and_task() -> None:
    table = _replay(("status-connector-my-conn", STATUS_RUNNING), ("status-task-my-conn-1", STATUS_FAILED),
                    ("status-task-my-conn-0", STATUS_UNASSIGNED_3X))
    assert table.get_connector("my-conn") == ConnectorStatus("my-conn", State.RUNNING, None, "127.0.0.1:8083")
    assert table.get_all_tasks("my-conn") == [
        TaskStatus("my-conn", 0, State.UNASSIGNED, None, WORKER, 3),
        TaskStatus("my-conn", 1, State.FAILED, TRACE, WORKER, 7, "4.1.1")]
    assert table.get_task("my-conn", 1) == table.get_all_tasks("my-conn")[1]
    assert table.connectors() == {"my-conn"}


def test_a_connector_tombstone_removes_its_tasks_and_a_task_tombstone_one_task() -> None:
    table = _replay(("status-connector-a", STATUS_RUNNING), ("status-task-a-0", STATUS_RUNNING),
                    ("status-task-a-1", STATUS_RUNNING), ("status-connector-b", STATUS_RUNNING),
                    ("status-task-b-0", STATUS_RUNNING), ("status-task-b-1", STATUS_RUNNING),
                    ("status-connector-a", None), ("status-task-b-0", None))
    assert table.connectors() == {"b"}
    assert table.get_all_tasks("a") == []
    assert [status.task for status in table.get_all_tasks("b")] == [1]


def test_a_late_unassigned_task_status_does_not_hide_a_newer_running_one() -> None:
    running = encode_status(_task(0, State.RUNNING, generation=5))
    table = _replay(("status-task-my-conn-0", running),
                    ("status-task-my-conn-0", encode_status(_task(0, State.UNASSIGNED, generation=5))))
    assert table.get_task("my-conn", 0) == _task(0, State.RUNNING, 5)
    table.apply(b"status-task-my-conn-0", encode_status(_task(0, State.UNASSIGNED, generation=6)))
    assert table.get_task("my-conn", 0) == _task(0, State.UNASSIGNED, 6)


def test_connector_names_with_dashes_survive_the_task_key() -> None:
    table = _replay(("status-task-a-b--c-12", STATUS_RUNNING))
    assert table.get_task("a-b--c", 12) is not None


def test_bad_records_are_skipped(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG, logger="kopycat.storage.status_backing_store"):
        table = _replay(("status-connector-a", b"not json"), ("status-task-a-x", STATUS_RUNNING),
                        ("status-connector-", STATUS_RUNNING), ("status-topic-orders:connector-a",
                                                                b'{"topic":{"name":"orders"}}'),
                        ("status-topic-orders", TOPIC_STATUS), ("elsewhere", STATUS_RUNNING))
    assert table.connectors() == set() and table.get_all_tasks("a") == [] and table.get_all_topics("a") == []
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(errors) == 6 and any("status-connector-a" in e for e in errors)
    assert any("status-topic-orders:connector-a" in e and "'task'" in e for e in errors)


# ------------------------------------------------------------------ topic tracking (KIP-558)

def test_a_topic_status_is_kafka_connects_bytes_and_key() -> None:
    status = TopicStatus("orders", "jdbc-source", 2, 1795000000123)
    assert encode_topic_status(status) == TOPIC_STATUS  # Kafka 4.1.1's serializeTopicStatus
    assert decode_topic_status(TOPIC_STATUS) == status
    assert topic_status_key("jdbc-source", "orders") == "status-topic-orders:connector-jdbc-source"


def test_topic_statuses_replay_per_connector_and_a_tombstone_resets_one_topic() -> None:
    other = encode_topic_status(TopicStatus("a.b-c", "my:conn", 0, 5))
    table = _replay(("status-topic-orders:connector-jdbc-source", TOPIC_STATUS),
                    ("status-topic-a.b-c:connector-my:conn", other),
                    ("status-topic-users:connector-jdbc-source",
                     encode_topic_status(TopicStatus("users", "jdbc-source", 0, 7))),
                    ("status-topic-orders:connector-jdbc-source", None))
    assert table.get_all_topics("jdbc-source") == [TopicStatus("users", "jdbc-source", 0, 7)]
    assert table.get_all_topics("my:conn") == [TopicStatus("a.b-c", "my:conn", 0, 5)]  # the first ':' splits


def test_memory_store_tracks_and_resets_topics() -> None:
    with MemoryStatusBackingStore() as store:
        store.put_topic(TopicStatus("t2", "c", 1, 2))
        store.put_topic(TopicStatus("t1", "c", 0, 1))
        assert [s.topic for s in store.get_all_topics("c")] == ["t1", "t2"]
        store.delete_topic("c", "t1")
        assert [s.topic for s in store.get_all_topics("c")] == ["t2"] and store.get_all_topics("x") == []


# ------------------------------------------------------------------ the memory store

def test_memory_store_keeps_the_latest_status_of_each_connector_and_task() -> None:
    with MemoryStatusBackingStore() as store:
        store.put(ConnectorStatus("my-conn", State.UNASSIGNED, None, WORKER))
        store.put(ConnectorStatus("my-conn", State.RUNNING, None, WORKER))
        for task in (2, 0, 1):
            assert store.put(_task(task)).result(0) is None
        store.flush()
        assert store.get_connector("my-conn") == ConnectorStatus("my-conn", State.RUNNING, None, WORKER)
        assert [status.task for status in store.get_all_tasks("my-conn")] == [0, 1, 2]
        assert store.connectors() == {"my-conn"}
        assert store.get_task("my-conn", 7) is None and store.get_connector("other") is None


def test_memory_store_destroys_a_connector_status_without_its_tasks_as_kafka_does() -> None:
    store = MemoryStatusBackingStore()
    store.put(ConnectorStatus("my-conn", State.RUNNING, None, WORKER))
    store.put(_task(0))
    store.put(_task(1))
    store.put(ConnectorStatus("my-conn", State.DESTROYED, None, WORKER))
    store.put(_task(1, State.DESTROYED))
    assert store.connectors() == set()
    assert store.get_all_tasks("my-conn") == [_task(0)]


# ------------------------------------------------------------------ worker configuration

def test_kafka_store_from_worker_properties_uses_kafka_connects_keys_and_defaults() -> None:
    store = KafkaStatusBackingStore.from_config({"bootstrap.servers": "127.0.0.1:1"})
    assert (store.topic, store.topic_log.partitions, store.topic_log.replication_factor) == (
        "connect-status", 5, 3)
    store = KafkaStatusBackingStore.from_config({
        "bootstrap.servers": "127.0.0.1:1", "status.storage.topic": "st", "status.storage.partitions": "-1",
        "status.storage.replication.factor": "1"})
    assert (store.topic, store.topic_log.partitions, store.topic_log.replication_factor) == ("st", -1, 1)


def test_kafka_store_from_worker_properties_refuses_bad_values() -> None:
    with pytest.raises(ConfigError, match="status.storage.partitions"):
        KafkaStatusBackingStore.from_config({"bootstrap.servers": "b:1", "status.storage.partitions": "0"})
    with pytest.raises(ConnectError, match="bootstrap.servers"):
        KafkaStatusBackingStore.from_config({"status.storage.topic": "st"})


def test_a_status_put_on_a_store_not_started_fails_its_future() -> None:
    store = KafkaStatusBackingStore("127.0.0.1:1")
    with pytest.raises(ConnectError, match="not started"):
        store.put(_task(0)).result(1)
    store.flush()

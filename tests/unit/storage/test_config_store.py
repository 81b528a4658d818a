"""The config topic's records must be Kafka Connect's, both ways, and replay as Kafka replays them.

Golden bytes were captured from Kafka 4.1.1's ``JsonConverter`` (schemas.enable=false, JDK 17)
with ``java/ConfigStatusOracle.java`` (``goldens``), which serializes Structs of
``KafkaConfigBackingStore``'s schemas as that class does; the integration tests re-check them
when a JVM and the jars are present.
"""

from __future__ import annotations

import logging

import pytest

from kopycat.api.errors import ConfigError, ConnectError, DataError, NotFoundError
from kopycat.storage.config_backing_store import (
    ClusterConfigState,
    ConfigTable,
    KafkaConfigBackingStore,
    MemoryConfigBackingStore,
    TargetState,
    commit_key,
    connector_key,
    encode_connector_config,
    encode_target_state,
    encode_tasks_commit,
    target_state_key,
    task_key,
)
from kopycat.storage.internal_topic_codec import parse_task_id

CONNECTOR_PROPS = {
    "connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector", "tasks.max": "1",
    "file": "/tmp/in.txt", "topic": "lines", "name": "local-file-source",
}
CONNECTOR_CONFIG = (b'{"properties":{"connector.class":'
                    b'"org.apache.kafka.connect.file.FileStreamSourceConnector","tasks.max":"1",'
                    b'"file":"/tmp/in.txt","topic":"lines","name":"local-file-source"}}')
CONNECTOR_CONFIG_TEXT = (b'{"properties":{"name":"caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac '
                         b'\\uD83D\\uDE00 \\"q\\" \\\\ / \\t\\n\\u0001","unset":null}}')
TASK_PROPS = {"task.class": "org.apache.kafka.connect.file.FileStreamSourceTask", "file": "/tmp/in.txt",
              "topic": "lines", "batch.size": "2000"}
TASK_CONFIG = (b'{"properties":{"task.class":"org.apache.kafka.connect.file.FileStreamSourceTask",'
               b'"file":"/tmp/in.txt","topic":"lines","batch.size":"2000"}}')
COMMIT_3 = b'{"tasks":3}'
COMMIT_0 = b'{"tasks":0}'
TARGET_STARTED = b'{"state":"STARTED","state.v2":"STARTED"}'
TARGET_PAUSED = b'{"state":"PAUSED","state.v2":"PAUSED"}'
TARGET_STOPPED = b'{"state":"PAUSED","state.v2":"STOPPED"}'
TARGET_PAUSED_V0 = b'{"state":"PAUSED"}'  # written by workers older than 3.5


def _replay(*records: tuple[str, bytes | None]) -> ConfigTable:
    table = ConfigTable("connect-configs")
    for key, value in records:
        table.apply(key.encode(), value)
    return table


def _task(n: int) -> dict[str, str]:
    return {"task.class": "T", "n": str(n)}


# ------------------------------------------------------------------ golden bytes (Kafka 4.1.1)

def test_connector_config_value_is_kafka_connects_bytes_in_the_callers_key_order() -> None:
    assert encode_connector_config(CONNECTOR_PROPS) == CONNECTOR_CONFIG
    text = {"name": "caf\u00e9 \u65e5\u672c \U0001F600 \"q\" \\ / \t\n\x01", "unset": None}
    assert encode_connector_config(text) == CONNECTOR_CONFIG_TEXT


def test_task_config_and_commit_values_are_kafka_connects_bytes() -> None:
    assert encode_connector_config(TASK_PROPS) == TASK_CONFIG
    assert encode_tasks_commit(3) == COMMIT_3
    assert encode_tasks_commit(0) == COMMIT_0


def test_target_states_keep_paused_in_state_for_older_workers_and_the_real_one_in_state_v2() -> None:
    assert encode_target_state(TargetState.STARTED) == TARGET_STARTED
    assert encode_target_state(TargetState.PAUSED) == TARGET_PAUSED
    assert encode_target_state(TargetState.STOPPED) == TARGET_STOPPED


def test_record_keys_are_kafka_connects() -> None:
    assert connector_key("my-conn") == "connector-my-conn"
    assert task_key("my-conn", 2) == "task-my-conn-2"
    assert commit_key("my-conn") == "commit-my-conn"
    assert target_state_key("my-conn") == "target-state-my-conn"


def test_property_values_that_are_not_strings_are_refused() -> None:
    with pytest.raises(DataError):
        encode_connector_config({"tasks.max": 1})  # type: ignore[dict-item]


def test_task_keys_split_on_dashes_as_javas_string_split() -> None:
    assert parse_task_id("task-my-conn-3", 1) == ("my-conn", 3)
    assert parse_task_id("task-a--b-0", 1) == ("a--b", 0)
    assert parse_task_id("task-a-1-", 1) == ("a", 1)  # Java drops trailing empty parts
    assert parse_task_id("task-a-+7", 1) == ("a", 7)  # Integer.parseInt accepts a plus sign
    assert parse_task_id("task-a", 1) is None
    assert parse_task_id("task-a-x", 1) is None
    assert parse_task_id("task-a-2147483648", 1) is None  # beyond Java's int
    assert parse_task_id("status-task-my-conn-12", 2) == ("my-conn", 12)


# ------------------------------------------------------------------ replaying Kafka Connect's records

def test_a_connector_written_by_kafka_connect_is_read_started_with_its_properties_in_order() -> None:
    state = _replay(("connector-local-file-source", CONNECTOR_CONFIG)).snapshot()
    assert list(state.connector_configs["local-file-source"].items()) == list(CONNECTOR_PROPS.items())
    assert state.target_states == {"local-file-source": TargetState.STARTED}
    assert state.task_configs == {}
    assert state.contains("local-file-source")


def test_a_null_property_value_is_kept() -> None:
    state = _replay(("connector-c", CONNECTOR_CONFIG_TEXT)).snapshot()
    assert state.connector_configs["c"]["unset"] is None


def test_task_configs_are_invisible_until_the_commit_record_counts_them() -> None:
    table = _replay(("connector-c", CONNECTOR_CONFIG), ("task-c-0", TASK_CONFIG),
                    ("task-c-1", encode_connector_config(_task(1))))
    assert "c" not in table.snapshot().task_configs
    table.apply(b"commit-c", b'{"tasks":2}')
    assert table.snapshot().task_configs == {"c": [TASK_PROPS, _task(1)]}


def test_a_commit_missing_task_configs_makes_the_connector_inconsistent_until_a_complete_commit() -> None:
    # What compaction leaves of [task-c-0, task-c-1, commit-c(2), task-c-1', commit-c(2)]: lost task-c-0.
    table = _replay(("connector-c", CONNECTOR_CONFIG), ("task-c-1", TASK_CONFIG),
                    ("commit-c", b'{"tasks":2}'))
    state = table.snapshot()
    assert state.inconsistent == {"c"} and "c" not in state.task_configs
    for key, value in (("task-c-0", encode_connector_config(_task(0))), ("task-c-1", TASK_CONFIG),
                       ("commit-c", b'{"tasks":2}')):
        table.apply(key.encode(), value)
    state = table.snapshot()
    assert state.inconsistent == frozenset() and state.task_configs == {"c": [_task(0), TASK_PROPS]}


def test_fewer_tasks_committed_hide_the_older_task_configs() -> None:
    table = _replay(("connector-c", CONNECTOR_CONFIG), ("task-c-0", TASK_CONFIG), ("task-c-1", TASK_CONFIG),
                    ("commit-c", b'{"tasks":2}'), ("task-c-0", encode_connector_config(_task(0))),
                    ("commit-c", b'{"tasks":1}'))
    assert table.snapshot().task_configs == {"c": [_task(0)]}


def test_zero_committed_tasks_are_an_empty_list() -> None:
    table = _replay(("connector-c", CONNECTOR_CONFIG), ("commit-c", COMMIT_0))
    assert table.snapshot().task_configs == {"c": []}


def test_state_v2_wins_over_the_older_state_field() -> None:
    table = _replay(("connector-c", CONNECTOR_CONFIG), ("target-state-c", TARGET_STOPPED))
    assert table.snapshot().target_states == {"c": TargetState.STOPPED}


def test_a_target_state_written_by_an_older_worker_is_read_from_state() -> None:
    table = _replay(("target-state-c", TARGET_PAUSED_V0), ("connector-c", CONNECTOR_CONFIG))
    assert table.snapshot().target_states == {"c": TargetState.PAUSED}


def test_tombstones_remove_the_connector_its_task_configs_and_target_state() -> None:
    table = _replay(("target-state-c", TARGET_PAUSED), ("connector-c", CONNECTOR_CONFIG),
                    ("task-c-0", TASK_CONFIG), ("commit-c", b'{"tasks":1}'),
                    ("connector-c", None), ("target-state-c", None))
    assert table.snapshot() == ClusterConfigState()
    table.apply(b"commit-c", b'{"tasks":1}')  # a commit left behind by compaction is ignored
    assert table.snapshot() == ClusterConfigState()


def test_a_target_state_tombstone_leaves_an_existing_connector_started() -> None:
    table = _replay(("connector-c", CONNECTOR_CONFIG), ("target-state-c", TARGET_PAUSED),
                    ("target-state-c", None))
    assert table.snapshot().target_states == {"c": TargetState.STARTED}


def test_bad_records_are_logged_and_skipped(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.ERROR, logger="kopycat.storage.config_backing_store"):
        table = _replay(("connector-c", CONNECTOR_CONFIG), ("connector-d", b"not json"),
                        ("connector-e", b'{"properties":{"a":1}}'), ("target-state-c", b'{"state":"FOO"}'),
                        ("task-c-x", TASK_CONFIG), ("commit-c", b'{"tasks":"1"}'), ("bogus-c", b"{}"),
                        ("session-key", b'{"key":"a","algorithm":"HmacSHA256","creation-timestamp":1}'))
    state = table.snapshot()
    assert list(state.connector_configs) == ["c"] and state.target_states == {"c": TargetState.STARTED}
    assert state.task_configs == {}
    messages = "\n".join(caplog.messages)
    for expected in ("connector-d", "'e'", "FOO", "task-c-x", "commit for connector 'c'", "bogus-c"):
        assert expected in messages
    assert "session-key" not in messages  # a record Kopycat does not use is skipped quietly


def test_snapshots_are_copies() -> None:
    table = _replay(("connector-c", CONNECTOR_CONFIG))
    table.snapshot().connector_configs["c"]["tasks.max"] = "9"
    assert table.snapshot().connector_configs["c"]["tasks.max"] == "1"


# ------------------------------------------------------------------ the memory store

def test_memory_store_keeps_configs_task_configs_and_target_states() -> None:
    with MemoryConfigBackingStore() as store:
        store.put_connector_config("c", CONNECTOR_PROPS)
        store.put_task_configs("c", [_task(0), _task(1)])
        store.put_target_state("c", TargetState.PAUSED)
        assert store.contains("c") and not store.contains("d")
        assert store.snapshot() == ClusterConfigState(
            connector_configs={"c": CONNECTOR_PROPS}, task_configs={"c": [_task(0), _task(1)]},
            target_states={"c": TargetState.PAUSED})


def test_a_new_connector_starts_in_the_state_given_and_an_update_keeps_its_state() -> None:
    store = MemoryConfigBackingStore()
    store.put_connector_config("c", CONNECTOR_PROPS, TargetState.STOPPED)
    store.put_connector_config("c", {**CONNECTOR_PROPS, "tasks.max": "2"})
    state = store.snapshot()
    assert state.target_states == {"c": TargetState.STOPPED}
    assert state.connector_configs["c"]["tasks.max"] == "2"
    store.put_connector_config("d", CONNECTOR_PROPS)
    assert store.snapshot().target_states["d"] is TargetState.STARTED


def test_removing_a_connector_removes_everything_of_it() -> None:
    store = MemoryConfigBackingStore()
    store.put_connector_config("c", CONNECTOR_PROPS, TargetState.PAUSED)
    store.put_task_configs("c", [_task(0)])
    store.remove_connector_config("c")
    assert store.snapshot() == ClusterConfigState()


def test_task_configs_and_target_states_of_an_unknown_connector_are_refused() -> None:
    store = MemoryConfigBackingStore()
    with pytest.raises(NotFoundError, match="'ghost'.*put its configuration first"):
        store.put_task_configs("ghost", [_task(0)])
    with pytest.raises(NotFoundError, match="'ghost'"):
        store.put_target_state("ghost", TargetState.PAUSED)


def test_a_bad_config_writes_nothing() -> None:
    store = MemoryConfigBackingStore()
    store.put_connector_config("c", CONNECTOR_PROPS)
    with pytest.raises(DataError):
        store.put_task_configs("c", [_task(0), {"n": 1}])  # type: ignore[dict-item]
    assert store.snapshot().task_configs == {}


# ------------------------------------------------------------------ worker configuration

def test_kafka_store_from_worker_properties_uses_kafka_connects_keys_and_defaults() -> None:
    store = KafkaConfigBackingStore.from_config({"bootstrap.servers": "127.0.0.1:1"})
    assert (store.topic, store.topic_log.partitions, store.topic_log.replication_factor) == (
        "connect-configs", 1, 3)
    store = KafkaConfigBackingStore.from_config({
        "bootstrap.servers": "127.0.0.1:1", "config.storage.topic": "cfg",
        "config.storage.replication.factor": "-1"})
    assert (store.topic, store.topic_log.replication_factor) == ("cfg", -1)


def test_kafka_store_from_worker_properties_refuses_bad_values() -> None:
    with pytest.raises(ConfigError, match="config.storage.replication.factor"):
        KafkaConfigBackingStore.from_config({"bootstrap.servers": "b:1",
                                             "config.storage.replication.factor": "0"})
    with pytest.raises(ConnectError, match="bootstrap.servers"):
        KafkaConfigBackingStore.from_config({})

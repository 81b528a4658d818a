"""KafkaConfigBackingStore and KafkaStatusBackingStore on a real Apache Kafka broker, and their
bytes checked against Kafka Connect's own JsonConverter.

Interop is checked at the byte level: records are read back with a plain consumer and written
with a plain producer exactly as a Kafka Connect worker writes them (UTF-8 keys, Java-partitioned).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

from kopycat.api.errors import ConfigError
from kopycat.dev.jars import ensure_jars
from kopycat.storage.config_backing_store import (
    ClusterConfigState,
    KafkaConfigBackingStore,
    TargetState,
    encode_connector_config,
    encode_target_state,
    encode_tasks_commit,
)
from kopycat.storage.connector_status import (
    ConnectorStatus,
    State,
    TaskStatus,
    TopicStatus,
    encode_status,
    encode_topic_status,
    status_key,
)
from kopycat.storage.offset_codec import default_partition
from kopycat.storage.status_backing_store import KafkaStatusBackingStore
from tests.support.kafka import consume_records

ORACLE = Path(__file__).parents[1] / "unit" / "storage" / "java" / "ConfigStatusOracle.java"
PROPS = {"connector.class": "FileStreamSource", "tasks.max": "2", "file": "/tmp/in.txt", "topic": "lines"}
WORKER = "10.0.0.7:8083"


def _task(n: int) -> dict[str, str]:
    return {"task.class": "FileStreamSourceTask", "file": "/tmp/in.txt", "n": str(n)}


@pytest.fixture
def config_store(bootstrap_servers: str, topic_name: str) -> Iterator[KafkaConfigBackingStore]:
    with KafkaConfigBackingStore(bootstrap_servers, topic=topic_name, replication_factor=1) as started:
        assert isinstance(started, KafkaConfigBackingStore)
        yield started


@pytest.fixture
def status_store(bootstrap_servers: str, topic_name: str) -> Iterator[KafkaStatusBackingStore]:
    with KafkaStatusBackingStore(bootstrap_servers, topic=topic_name, replication_factor=1) as started:
        assert isinstance(started, KafkaStatusBackingStore)
        yield started


def _topic_shape(bootstrap: str, topic: str) -> tuple[str, int]:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic)
    policy = admin.describe_configs([resource])[resource].result(30)["cleanup.policy"].value
    return policy, len(admin.list_topics(topic, timeout=30).topics[topic].partitions)


def _create_topic(bootstrap: str, topic: str, partitions: int, policy: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    new = NewTopic(topic, num_partitions=partitions, replication_factor=1, config={"cleanup.policy": policy})
    admin.create_topics([new])[topic].result(30)


# ------------------------------------------------------------------ config topic

def test_config_topic_is_created_compacted_with_one_partition(
        config_store: KafkaConfigBackingStore, bootstrap_servers: str, topic_name: str) -> None:
    assert _topic_shape(bootstrap_servers, topic_name) == ("compact", 1)


def test_a_second_store_started_fresh_reads_the_same_snapshot(
        config_store: KafkaConfigBackingStore, bootstrap_servers: str, topic_name: str) -> None:
    config_store.put_connector_config("c", PROPS, TargetState.PAUSED)
    config_store.put_task_configs("c", [_task(0), _task(1)])
    config_store.put_connector_config("stopped", PROPS, TargetState.STOPPED)
    config_store.put_task_configs("stopped", [])
    config_store.put_connector_config("gone", PROPS)
    config_store.put_task_configs("gone", [_task(0)])
    config_store.remove_connector_config("gone")
    config_store.put_target_state("c", TargetState.STARTED)
    expected = ClusterConfigState(
        connector_configs={"c": PROPS, "stopped": PROPS},
        task_configs={"c": [_task(0), _task(1)], "stopped": []},
        target_states={"c": TargetState.STARTED, "stopped": TargetState.STOPPED})
    assert config_store.snapshot() == expected
    with KafkaConfigBackingStore(bootstrap_servers, topic=topic_name, replication_factor=1) as fresh:
        assert fresh.snapshot() == expected
        assert fresh.contains("c") and not fresh.contains("gone")


def test_the_config_topic_holds_kafka_connects_records_in_write_order(
        config_store: KafkaConfigBackingStore, bootstrap_servers: str, topic_name: str) -> None:
    config_store.put_connector_config("c", PROPS, TargetState.STOPPED)
    config_store.put_task_configs("c", [_task(0), _task(1)])
    config_store.remove_connector_config("c")
    records = [(m.key(), m.value()) for m in consume_records(bootstrap_servers, topic_name, committed_only=True)]
    assert records == [
        (b"target-state-c", b'{"state":"PAUSED","state.v2":"STOPPED"}'),
        (b"connector-c", (b'{"properties":{"connector.class":"FileStreamSource","tasks.max":"2",'
                          b'"file":"/tmp/in.txt","topic":"lines"}}')),
        (b"task-c-0", encode_connector_config(_task(0))),
        (b"task-c-1", encode_connector_config(_task(1))),
        (b"commit-c", b'{"tasks":2}'),
        (b"connector-c", None),
        (b"target-state-c", None),
    ]


def test_records_written_as_a_kafka_connect_worker_writes_them_are_read(bootstrap_servers: str,
                                                                        topic_name: str) -> None:
    _create_topic(bootstrap_servers, topic_name, 1, "compact")
    producer = Producer({"bootstrap.servers": bootstrap_servers, "acks": "all"})
    for key, value in [("connector-jdbc", encode_connector_config(PROPS)),
                       ("task-jdbc-0", encode_connector_config(_task(0))), ("commit-jdbc", b'{"tasks":1}'),
                       ("target-state-jdbc", b'{"state":"PAUSED"}'),  # a worker older than 3.5
                       ("session-key", b'{"key":"AAAA","algorithm":"HmacSHA256","creation-timestamp":1}')]:
        producer.produce(topic_name, key=key.encode(), value=value)
    assert producer.flush(30) == 0
    with KafkaConfigBackingStore(bootstrap_servers, topic=topic_name, replication_factor=1) as store:
        assert store.snapshot() == ClusterConfigState(
            connector_configs={"jdbc": PROPS}, task_configs={"jdbc": [_task(0)]},
            target_states={"jdbc": TargetState.PAUSED})


def test_a_config_topic_with_more_than_one_partition_is_refused(bootstrap_servers: str,
                                                                topic_name: str) -> None:
    _create_topic(bootstrap_servers, topic_name, 2, "compact")
    store = KafkaConfigBackingStore(bootstrap_servers, topic=topic_name, replication_factor=1)
    with pytest.raises(ConfigError, match="'config.storage.topic'.*single partition.*found 2 partitions"):
        store.start()


def test_a_config_topic_that_is_not_compacted_is_refused_naming_the_config_key(
        bootstrap_servers: str, topic_name: str) -> None:
    _create_topic(bootstrap_servers, topic_name, 1, "delete")
    store = KafkaConfigBackingStore(bootstrap_servers, topic=topic_name, replication_factor=1)
    with pytest.raises(ConfigError, match="'config.storage.topic'.*connector configurations") as raised:
        store.start()
    assert raised.value.key == "config.storage.topic"


# ------------------------------------------------------------------ status topic

def test_statuses_round_trip_and_a_fresh_store_reads_them(status_store: KafkaStatusBackingStore,
                                                         bootstrap_servers: str, topic_name: str) -> None:
    connector = ConnectorStatus("c", State.RUNNING, None, WORKER, version="1.2.0")
    tasks = [TaskStatus("c", 0, State.RUNNING, None, WORKER),
             TaskStatus("c", 1, State.FAILED, "java.lang.Exception: boom\n\tat X.y(X.java:1)", WORKER, 3)]
    written: list[ConnectorStatus | TaskStatus] = [
        connector, *tasks, ConnectorStatus("d", State.RUNNING, None, WORKER),
        ConnectorStatus("d", State.DESTROYED, None, WORKER)]
    for status in written:
        status_store.put(status)
    status_store.flush()
    with KafkaStatusBackingStore(bootstrap_servers, topic=topic_name, replication_factor=1) as fresh:
        for store in (status_store, fresh):
            assert store.get_connector("c") == connector
            assert store.get_all_tasks("c") == tasks
            assert store.get_task("c", 1) == tasks[1]
            assert store.connectors() == {"c"}


def test_status_topic_is_compacted_and_keys_land_on_the_murmur2_partition(
        status_store: KafkaStatusBackingStore, bootstrap_servers: str, topic_name: str) -> None:
    statuses: list[ConnectorStatus | TaskStatus] = [
        TaskStatus(f"conn-{n % 7}", n, State.RUNNING, None, WORKER) for n in range(40)]
    statuses += [ConnectorStatus(f"conn-{n}", State.PAUSED, None, WORKER) for n in range(7)]
    for status in statuses:
        status_store.put(status)
    status_store.flush()
    assert _topic_shape(bootstrap_servers, topic_name) == ("compact", 5) and status_store.num_partitions == 5
    records = consume_records(bootstrap_servers, topic_name, committed_only=True)
    assert sorted(m.key() or b"" for m in records) == sorted(status_key(s).encode() for s in statuses)
    for message in records:
        key = message.key()
        assert key is not None and message.partition() == default_partition(key, 5), key


# ------------------------------------------------------------------ Kafka Connect's own converter

@pytest.fixture(scope="module")
def java_answers() -> dict[str, list[str]]:
    """Runs java/ConfigStatusOracle.java once: goldens, Java's typed reading of our bytes, and the
    Java producer's partition of status keys. Needs a JDK and the `connect` jar set."""
    ours = [encode_status(TaskStatus("c", 0, State.FAILED, "t", WORKER, 2, "1.0")),
            encode_status(ConnectorStatus("c", State.RUNNING, None, WORKER)), encode_tasks_commit(2),
            encode_target_state(TargetState.STOPPED), encode_connector_config({"a": "b", "n": None})]
    keys = [f"status-task-conn-{n}".encode() for n in range(50)] + [b"status-connector-\xc3\xa9"]
    commands = ["goldens"] + [f"read\t{value.hex()}" for value in ours if value is not None]
    commands += [f"partition\t{key.hex()}\t5" for key in keys]
    result = subprocess.run(["java", "-cp", os.pathsep.join([f"{ensure_jars('connect')}/*"]), str(ORACLE)],
                            input="\n".join(commands) + "\n", capture_output=True, text=True, timeout=600,
                            check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    lines = result.stdout.splitlines()
    end = lines.index("end")
    reads = lines[end + 1:end + 1 + len(ours)]
    partitions = [(key, int(line)) for key, line in zip(keys, lines[end + 1 + len(ours):], strict=True)]
    return {"goldens": lines[:end], "reads": reads, "partitions": partitions}  # type: ignore[dict-item]


def test_golden_bytes_are_what_kafka_connect_writes(java_answers: dict) -> None:
    lines = java_answers["goldens"]
    java = {name: bytes.fromhex(data) for name, data in (line.split("\t") for line in lines)}
    assert java == {
        "connector_config": encode_connector_config({
            "connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector", "tasks.max": "1",
            "file": "/tmp/in.txt", "topic": "lines", "name": "local-file-source"}),
        "connector_config_text": encode_connector_config(
            {"name": "caf\u00e9 \u65e5\u672c \U0001F600 \"q\" \\ / \t\n\x01", "unset": None}),
        "task_config": encode_connector_config({
            "task.class": "org.apache.kafka.connect.file.FileStreamSourceTask", "file": "/tmp/in.txt",
            "topic": "lines", "batch.size": "2000"}),
        "commit_3": encode_tasks_commit(3), "commit_0": encode_tasks_commit(0),
        "target_started": encode_target_state(TargetState.STARTED),
        "target_paused": encode_target_state(TargetState.PAUSED),
        "target_stopped": encode_target_state(TargetState.STOPPED),
        "target_paused_v0": b'{"state":"PAUSED"}',
        "status_running": encode_status(ConnectorStatus("c", State.RUNNING, None, "127.0.0.1:8083")),
        "status_failed": encode_status(TaskStatus(
            "c", 0, State.FAILED,
            "org.apache.kafka.connect.errors.ConnectException: boom\n\tat X.y(X.java:1)\n", WORKER, 7,
            "4.1.1")),
        "status_unassigned_3x": (b'{"state":"UNASSIGNED","trace":null,"worker_id":"10.0.0.7:8083",'
                                 b'"generation":3}'),
        "topic_status": encode_topic_status(TopicStatus("orders", "jdbc-source", 2, 1795000000123)),
    }


def test_kafka_connect_reads_our_values_with_the_types_its_stores_cast_to(java_answers: dict) -> None:
    # KafkaStatusBackingStore casts generation to Long and the rest to String; the config store
    # takes tasks as Integer or Long and properties as a Map of Strings.
    assert java_answers["reads"] == [
        "{generation=L:2, state=S:FAILED, trace=S:t, version=S:1.0, worker_id=S:10.0.0.7:8083}",
        "{generation=L:0, state=S:RUNNING, trace=null, version=null, worker_id=S:10.0.0.7:8083}",
        "{tasks=L:2}",
        "{state=S:PAUSED, state.v2=S:STOPPED}",
        "{properties={a=S:b, n=null}}",
    ]


def test_status_keys_go_where_the_java_producer_puts_them(java_answers: dict) -> None:
    for key, java_partition in java_answers["partitions"]:
        assert default_partition(key, 5) == java_partition, key

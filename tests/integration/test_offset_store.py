"""KafkaOffsetStore on a real Apache Kafka broker, and the Java ports checked against Java.

Interop is checked at the byte level: records are read back with a plain consumer and written
with a plain producer exactly as a Kafka Connect worker writes them (Java-partitioned JSON).
"""

from __future__ import annotations

import os
import random
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Producer, TopicPartition
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic

from kopycat.api.errors import ConfigError
from kopycat.dev.jars import ensure_jars
from kopycat.dev.kafka_broker import LocalKafkaBroker
from kopycat.storage import KafkaOffsetStore, OffsetStorageReaderImpl, OffsetStorageWriter
from kopycat.storage.offset_codec import (
    default_partition,
    encode_key,
    encode_value,
    java_hash_map_order,
    java_string_hash,
    murmur2,
)
from tests.support.kafka import consume_records

ORACLE = Path(__file__).parents[1] / "unit" / "storage" / "java" / "OffsetOracle.java"


@pytest.fixture
def store(bootstrap_servers: str, topic_name: str) -> Iterator[KafkaOffsetStore]:
    with KafkaOffsetStore(bootstrap_servers, topic=topic_name, replication_factor=1) as started:
        yield started


def _java_producer(bootstrap: str, **extra: object) -> Producer:
    """A plain producer placing keys as the Java client does."""
    return Producer({"bootstrap.servers": bootstrap, "partitioner": "murmur2_random", "acks": "all", **extra})


def test_offsets_topic_is_created_compacted_with_25_partitions(store: KafkaOffsetStore,
                                                               bootstrap_servers: str, topic_name: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap_servers})
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic_name)
    config = admin.describe_configs([resource])[resource].result(30)
    assert config["cleanup.policy"].value == "compact"
    metadata = admin.list_topics(topic_name, timeout=30).topics[topic_name]
    assert len(metadata.partitions) == 25 == store.num_partitions
    assert {len(p.replicas) for p in metadata.partitions.values()} == {1}


def test_written_offsets_land_on_the_java_partitioners_partition(store: KafkaOffsetStore,
                                                                 bootstrap_servers: str, topic_name: str) -> None:
    partitions = [{"table": f"db.public.t{i}", "protocol": "1"} for i in range(40)]
    writer = OffsetStorageWriter(store, "jdbc-source")
    for i, partition in enumerate(partitions):
        writer.offset(partition, {"incrementing": i, "timestamp": 1714521600000 + i, "timestamp_nanos": 0})
    assert writer.flush(timeout_s=30)
    records = consume_records(bootstrap_servers, topic_name, committed_only=True)
    assert len(records) == 40
    placements = {record.key(): record.partition() for record in records}
    expected = {encode_key("jdbc-source", p): (murmur2(encode_key("jdbc-source", p)) & 0x7FFFFFFF) % 25
                for p in partitions}
    assert placements == expected
    assert len(set(placements.values())) > 10  # spread over the partitions, not all on one
    golden = b'["jdbc-source",{"protocol":"1","table":"db.public.t0"}]'
    assert golden in placements
    assert {r.key(): r.value() for r in records}[golden] == (
        b'{"timestamp_nanos":0,"incrementing":0,"timestamp":1714521600000}')


def test_a_topic_written_in_kafka_connects_format_is_read_back(bootstrap_servers: str, topic_name: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap_servers})
    admin.create_topics([NewTopic(topic_name, 25, 1, config={"cleanup.policy": "compact"})])[topic_name].result(30)
    jdbc = b'["jdbc-orders",{"protocol":"1","table":"db.public.orders"}]'
    mirror = b'["mm2",{"cluster":"a","partition":0,"topic":"t"}]'
    file_a = b'["local-file-source",{"filename":"/x"}]'
    file_b = b'["local-file-source",{"filename":"/y"}]'
    linked = b'["other",{"table":"t","protocol":"1"}]'  # a LinkedHashMap order, not HashMap's
    producer = _java_producer(bootstrap_servers)
    for key, value in [
        (jdbc, b'{"timestamp_nanos":0,"incrementing":1,"timestamp":1}'),
        (mirror, b'{"offset":41}'),
        (file_a, b'{"position":10}'),
        (file_b, b'{"position":99}'),
        (jdbc, b'{"timestamp_nanos":123000000,"incrementing":4711,"timestamp":1714521600000}'),  # later wins
        (file_b, None),  # tombstone: deleted
        (mirror, b'{"offset":42}'),
        (linked, b'{"n":3}'),
    ]:
        producer.produce(topic_name, key=key, value=value)
    assert producer.flush(30) == 0
    records = consume_records(bootstrap_servers, topic_name, committed_only=True)
    assert {r.partition() for r in records if r.key() == jdbc} == {1}

    with KafkaOffsetStore(bootstrap_servers, topic=topic_name, replication_factor=1) as store:
        assert OffsetStorageReaderImpl(store, "jdbc-orders").offset(
            {"table": "db.public.orders", "protocol": "1"}) == {
                "incrementing": 4711, "timestamp": 1714521600000, "timestamp_nanos": 123000000}
        assert OffsetStorageReaderImpl(store, "mm2").offset(
            {"topic": "t", "partition": 0, "cluster": "a"}) == {"offset": 42}
        files = OffsetStorageReaderImpl(store, "local-file-source")
        assert files.offsets([{"filename": "/x"}, {"filename": "/y"}]) == [
            ({"filename": "/x"}, {"position": 10}), ({"filename": "/y"}, None)]
        assert store.connector_partitions("local-file-source") == [{"filename": "/x"}]
        assert OffsetStorageReaderImpl(store, "other").offset({"protocol": "1", "table": "t"}) == {"n": 3}


def test_get_reads_to_the_end_so_offsets_written_elsewhere_are_seen(
        store: KafkaOffsetStore, bootstrap_servers: str, topic_name: str) -> None:
    key = encode_key("src", {"filename": "/x"})
    assert store.get([key]) == {key: None}
    producer = _java_producer(bootstrap_servers)
    producer.produce(topic_name, key=key, value=b'{"position":5}')
    assert producer.flush(30) == 0
    with KafkaOffsetStore(bootstrap_servers, topic=topic_name, read_to_end_on_get=False) as lazy:
        producer.produce(topic_name, key=key, value=b'{"position":6}')
        assert producer.flush(30) == 0
        assert lazy.get([key]) == {key: b'{"position":5}'}  # as of its start
        lazy.read_to_end()
        assert lazy.get([key]) == {key: b'{"position":6}'}
    assert store.get([key]) == {key: b'{"position":6}'}


def test_offsets_survive_a_restart_of_the_store(bootstrap_servers: str, topic_name: str) -> None:
    with KafkaOffsetStore(bootstrap_servers, topic=topic_name, replication_factor=1) as first:
        writer = OffsetStorageWriter(first, "src")
        writer.offset({"filename": "/x"}, {"position": 1})
        assert writer.flush(30)
        writer.offset({"filename": "/x"}, {"position": 2})
        writer.offset({"filename": "/y"}, {"position": 3})
        assert writer.flush(30)
        writer.offset({"filename": "/y"}, None)
        assert writer.flush(30)
    with KafkaOffsetStore(bootstrap_servers, topic=topic_name, replication_factor=1) as second:
        reader = OffsetStorageReaderImpl(second, "src")
        assert reader.offsets([{"filename": "/x"}, {"filename": "/y"}]) == [
            ({"filename": "/x"}, {"position": 2}), ({"filename": "/y"}, None)]


def test_a_store_starts_from_each_partitions_log_start_when_records_were_deleted(
        bootstrap_servers: str, topic_name: str) -> None:
    """The reader is assigned each partition's earliest offset (not a logical one): a partition whose
    head was deleted is read from its log start, and one deleted to its end counts as read."""
    admin = AdminClient({"bootstrap.servers": bootstrap_servers})
    # Kafka refuses DeleteRecords on a compacted topic: delete first, then make it the compacted topic a store takes.
    admin.create_topics([NewTopic(topic_name, 2, 1, config={"cleanup.policy": "delete"})])[topic_name].result(30)
    producer = _java_producer(bootstrap_servers)
    for partition, position in ((0, 1), (0, 2), (0, 3), (1, 4), (1, 5)):
        producer.produce(topic_name, key=encode_key("src", {"p": partition}), value=encode_value({"at": position}),
                         partition=partition)
    assert producer.flush(30) == 0
    deleted = admin.delete_records([TopicPartition(topic_name, 0, 2), TopicPartition(topic_name, 1, 2)])
    assert sorted(f.result(30).low_watermark for f in deleted.values()) == [2, 2]  # log starts: 2 of 3, 2 of 2
    compacted = ConfigResource("topic", topic_name, incremental_configs=[
        ConfigEntry("cleanup.policy", "compact", incremental_operation=AlterConfigOpType.SET)])
    admin.incremental_alter_configs([compacted])[compacted].result(30)
    with KafkaOffsetStore(bootstrap_servers, topic=topic_name, replication_factor=1) as store:
        reader = OffsetStorageReaderImpl(store, "src")
        assert reader.offsets([{"p": 0}, {"p": 1}]) == [({"p": 0}, {"at": 3}), ({"p": 1}, None)]
        assert len(store.table) == 1


def test_an_existing_topic_that_is_not_compacted_is_refused(bootstrap_servers: str, topic_name: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap_servers})
    admin.create_topics([NewTopic(topic_name, 3, 1, config={"cleanup.policy": "delete"})])[topic_name].result(30)
    store = KafkaOffsetStore(bootstrap_servers, topic=topic_name, replication_factor=1)
    with pytest.raises(ConfigError) as failure:
        store.start()
    message = str(failure.value)
    assert f"Topic '{topic_name}'" in message
    assert "'offset.storage.topic'" in message
    assert "currently has 'cleanup.policy=delete'" in message
    assert f"--entity-name {topic_name} --add-config cleanup.policy=compact" in message
    assert failure.value.key == "offset.storage.topic"


def test_replication_factor_minus_one_uses_the_broker_default(bootstrap_servers: str, topic_name: str) -> None:
    with KafkaOffsetStore(bootstrap_servers, topic=topic_name, partitions=3, replication_factor=-1) as store:
        assert store.num_partitions == 3


def test_transactional_offsets_are_read_committed(store: KafkaOffsetStore, bootstrap_servers: str,
                                                  topic_name: str) -> None:
    committed = {encode_key("eos", {"f": "a"}): encode_value({"position": 10})}
    aborted = {encode_key("eos", {"f": "a"}): encode_value({"position": 20}),
               encode_key("eos", {"f": "b"}): encode_value({"position": 1})}
    producer = Producer({"bootstrap.servers": bootstrap_servers, "transactional.id": f"eos-{uuid.uuid4().hex}"})
    producer.init_transactions(30)
    for values, commit in [(committed, True), (aborted, False)]:
        producer.begin_transaction()
        for record in store.offset_records(values):
            assert record.topic == topic_name
            assert record.partition == default_partition(record.key, 25)
            producer.produce(record.topic, key=record.key, value=record.value, partition=record.partition)
        producer.flush(30)  # in the log before the commit or abort (an abort drops queued records)
        if commit:
            producer.commit_transaction(30)
        else:
            producer.abort_transaction(30)
    # The aborted records are in the log: only read_committed keeps them out.
    uncommitted = consume_records(bootstrap_servers, topic_name)
    assert sorted(r.value() for r in uncommitted) == [b'{"position":10}', b'{"position":1}', b'{"position":20}']
    # commit_transaction returns before the markers are written; until then the last stable
    # offset hides the transaction. (An engine resuming exactly-once runs init_transactions
    # first, which waits for its previous transaction to complete.)
    reader = OffsetStorageReaderImpl(store, "eos")
    deadline = time.monotonic() + 60
    while reader.offset({"f": "a"}) is None and time.monotonic() < deadline:
        time.sleep(0.2)
    assert reader.offsets([{"f": "a"}, {"f": "b"}]) == [({"f": "a"}, {"position": 10}), ({"f": "b"}, None)]
    store.record_committed(committed)
    with KafkaOffsetStore(bootstrap_servers, topic=topic_name) as fresh:  # its first read ends on the markers
        assert OffsetStorageReaderImpl(fresh, "eos").offsets([{"f": "a"}, {"f": "b"}]) == [
            ({"f": "a"}, {"position": 10}), ({"f": "b"}, None)]


# ------------------------------------------------------------------ the Java ports against Java

def _random_key(rng: random.Random) -> str:
    alphabet = "abcdefghijklmnopqrstuvwxyz_.0123456789ABCDEFGHIJ\u00e9\u65e5\U0001F600"
    if rng.random() < 0.2:  # "Aa" and "BB" share a hashCode: colliding keys
        return "".join(rng.choice(["Aa", "BB"]) for _ in range(rng.randint(1, 4)))
    return "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 12)))


@pytest.fixture(scope="module")
def java_oracle(kafka_broker: LocalKafkaBroker) -> Iterator[object]:
    """Runs java/OffsetOracle.java once with all questions.

    The class path is the `connect` jar set (include/jars/connect/pom.xml): connect-json's
    JsonConverter, connect-api, and kafka-clients (Utils.murmur2) with the slf4j-api it loads.
    """
    classpath = [f"{ensure_jars('connect')}/*"]
    rng = random.Random(20261101)
    key_sets = []
    for _ in range(300):
        keys = list(dict.fromkeys(_random_key(rng) for _ in range(rng.randint(1, 40))))
        key_sets.append((keys, rng.choice([None, None, 0, 1, 3, 4, 12, 13, 33])))
    words = [_random_key(rng) for _ in range(200)]
    blobs = [rng.randbytes(rng.randint(0, 40)) for _ in range(200)]
    commands = [f"order\t{'-' if cap is None else cap}\t" + "\t".join(k.encode().hex() for k in keys)
                for keys, cap in key_sets]
    commands += [f"hash\t{w.encode().hex()}" for w in words] + [f"murmur\t{b.hex()}" for b in blobs]
    commands.append("goldens")
    result = subprocess.run(["java", "-cp", os.pathsep.join(classpath), str(ORACLE)],
                            input="\n".join(commands) + "\n", capture_output=True, text=True, timeout=600,
                            check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    answers = iter(result.stdout.splitlines())
    yield {
        "orders": [(keys, cap, [bytes.fromhex(k).decode() for k in next(answers).split("\t")])
                   for keys, cap in key_sets],
        "hashes": [(w, int(next(answers))) for w in words],
        "murmurs": [(b, int(next(answers))) for b in blobs],
        "goldens": list(answers),
    }


def test_hash_map_order_string_hash_and_murmur2_agree_with_java(java_oracle: dict) -> None:
    for keys, cap, java in java_oracle["orders"]:
        assert java_hash_map_order(keys, cap) == java, (keys, cap)
    for word, java_hash in java_oracle["hashes"]:
        assert java_string_hash(word) == java_hash, word
    for blob, java_murmur in java_oracle["murmurs"]:
        assert murmur2(blob) == java_murmur, blob.hex()


def test_golden_bytes_are_what_kafka_connects_json_converter_writes(java_oracle: dict) -> None:
    lines = java_oracle["goldens"]
    assert lines[0] != "unavailable", "connect-json is missing from the connect jar set"
    java = {name: bytes.fromhex(data) for name, data in (line.split("\t") for line in lines if "\t" in line)}
    text = "caf\u00e9 \u65e5\u672c \U0001F600 \"q\" \\ / \t\n\x01\x1f\x7f\u2028"
    assert java == {
        "jdbc_key": encode_key("jdbc-orders", {"table": "db.public.orders", "protocol": "1"}),
        "jdbc_value": encode_value({"incrementing": 4711, "timestamp": 1714521600000,
                                    "timestamp_nanos": 123000000}),
        "mirror_key": encode_key("mm2", {"topic": "t", "partition": 0, "cluster": "a"}),
        "mirror_value": encode_value({"offset": 42}),
        "file_key": encode_key("local-file-source", {"filename": "/x"}),
        "file_value": encode_value({"position": 1234}),
        "text_key": encode_key("conn\u00e9", {"name": text}),
        "numbers_value": encode_value({"d": 1.0e10, "e": 0.001, "f": 1.5, "g": -0.0, "h": 123456789012, "i": True,
                                       "j": None, "k": b"\x01\x02\x03", "l": 1.0e-4, "m": 100.0}),
        "null_partition_key": encode_key("c", None),
        "empty_partition_key": encode_key("c", {}),
    }

"""KafkaOffsetStore's configuration: Kafka Connect's keys and defaults, forced client settings.

Its behaviour against a broker is tested in tests/integration/test_offset_store.py.
"""

from __future__ import annotations

import logging

import pytest

from kopycat.api.errors import ConfigError, ConnectError
from kopycat.storage import KafkaOffsetStore


def test_defaults_are_kafka_connects() -> None:
    store = KafkaOffsetStore.from_config({"bootstrap.servers": "127.0.0.1:9"})
    assert (store.topic, store.topic_log.partitions, store.topic_log.replication_factor) == (
        "connect-offsets", 25, 3)


def test_worker_properties_are_parsed_and_minus_one_means_broker_default() -> None:
    store = KafkaOffsetStore.from_config({
        "bootstrap.servers": "127.0.0.1:9", "offset.storage.topic": "my-offsets",
        "offset.storage.partitions": "-1", "offset.storage.replication.factor": "-1"})
    assert (store.topic, store.topic_log.partitions, store.topic_log.replication_factor) == (
        "my-offsets", -1, -1)


@pytest.mark.parametrize(("key", "value"), [("offset.storage.partitions", "0"),
                                            ("offset.storage.replication.factor", "-2"),
                                            ("offset.storage.topic", " ")])
def test_bad_values_are_refused_naming_the_key(key: str, value: str) -> None:
    with pytest.raises(ConfigError, match=key):
        KafkaOffsetStore.from_config({"bootstrap.servers": "127.0.0.1:9", key: value})


def test_bootstrap_servers_is_required() -> None:
    with pytest.raises(ConnectError, match=r"bootstrap\.servers"):
        KafkaOffsetStore.from_config({})


def test_settings_the_topic_format_depends_on_are_forced(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        store = KafkaOffsetStore("127.0.0.1:9",
                                 producer_config={"partitioner": "consistent_random", "linger.ms": 1},
                                 consumer_config={"isolation.level": "read_uncommitted"})
    assert store.topic_log.producer_config["partitioner"] == "murmur2_random"
    assert store.topic_log.producer_config["linger.ms"] == 1
    assert store.topic_log.producer_config["acks"] == "all"
    assert store.topic_log.producer_config["enable.idempotence"] is True
    assert store.topic_log.consumer_config["isolation.level"] == "read_committed"
    assert store.topic_log.consumer_config["fetch.queue.backoff.ms"] == 10
    assert "partitioner=consistent_random" in caplog.text
    assert "isolation.level=read_uncommitted" in caplog.text


def test_a_store_that_is_not_started_says_so() -> None:
    store = KafkaOffsetStore("127.0.0.1:9")
    errors: list[BaseException | None] = []
    with pytest.raises(ConnectError, match="not started"):
        store.set({b"k": b"v"}, errors.append).result()
    assert isinstance(errors[0], ConnectError)
    with pytest.raises(ConnectError, match="not started"):
        store.get([b"k"])
    with pytest.raises(ConnectError, match="not started"):
        store.offset_records({b"k": b"v"})

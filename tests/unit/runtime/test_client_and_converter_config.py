"""Kafka client configs and converters built from worker and connector properties."""

from __future__ import annotations

import logging

import pytest

from kopycat.converters import JsonConverter, StringConverter
from kopycat.kafka import SOURCE_PRODUCER_FORCED, client_config
from kopycat.runtime.task_factory import sink_consumer_config
from kopycat.runtime.task_parts import TaskId
from kopycat.runtime.worker_config import converters_for


def test_worker_prefixes_then_connector_overrides_then_forced_settings(caplog: pytest.LogCaptureFixture) -> None:
    worker = {"bootstrap.servers": "a:1,b:2", "producer.linger.ms": "20", "producer.acks": "1",
              "producer.key.serializer": "org.apache.kafka.common.serialization.ByteArraySerializer",
              "producer.max.request.size": "2000000", "consumer.fetch.min.bytes": "9"}
    connector = {"producer.override.linger.ms": "50"}
    with caplog.at_level(logging.WARNING):
        config = client_config(worker, connector, "producer", defaults={"linger.ms": 5},
                               forced=SOURCE_PRODUCER_FORCED)
    assert config == {"bootstrap.servers": "a:1,b:2", "linger.ms": "50", "acks": "all",
                      "message.max.bytes": "2000000", "enable.idempotence": True,
                      "partitioner": "murmur2_random"}
    assert "acks=1" in caplog.text


def test_a_connector_converter_replaces_the_workers_with_its_own_settings() -> None:
    worker = {"value.converter": "org.apache.kafka.connect.json.JsonConverter",
              "value.converter.schemas.enable": "false"}
    key, value, _ = converters_for(worker, {})
    assert isinstance(key, JsonConverter) and isinstance(value, JsonConverter)
    assert value.schemas_enabled is False and key.schemas_enabled is True
    _, value, _ = converters_for(worker, {"value.converter": "StringConverter"})
    assert isinstance(value, StringConverter)


def test_sink_consumers_fetch_4_mib_per_partition_unless_the_worker_or_connector_says_otherwise() -> None:
    task = TaskId("orders-sink", 0)
    default = sink_consumer_config(task, {"bootstrap.servers": "k:9092"}, {})
    worker = sink_consumer_config(task, {"bootstrap.servers": "k:9092",
                                         "consumer.max.partition.fetch.bytes": "1048576"}, {})
    connector = sink_consumer_config(task, {"bootstrap.servers": "k:9092"},
                                     {"consumer.override.max.partition.fetch.bytes": "2097152"})

    assert default["max.partition.fetch.bytes"] == 4 * 1024 * 1024
    assert str(worker["max.partition.fetch.bytes"]) == "1048576"
    assert str(connector["max.partition.fetch.bytes"]) == "2097152"
    assert default["group.id"] == "connect-orders-sink" and default["fetch.queue.backoff.ms"] == 10

"""The mirror source's settings: MM2's keys, the Kafka source proposal's aliases, errors, clients."""

from __future__ import annotations

from typing import Any

import pytest

from kopycat.api.errors import ConfigError
from kopycat.connectors.mirror.replication_policy import (
    DefaultReplicationPolicy,
    IdentityReplicationPolicy,
    PrefixReplicationPolicy,
)
from kopycat.connectors.mirror.source_config import (
    MirrorSettings,
    decode_topic_partitions,
    encode_topic_partitions,
)
from kopycat.runtime.task_factory import with_converter_defaults


def settings(**props: Any) -> MirrorSettings:
    base = {"name": "m", "source.cluster.alias": "us", "target.cluster.alias": "eu",
            "source.cluster.bootstrap.servers": "src:9092"}
    return MirrorSettings.parse({**base, **{k.replace("__", "."): str(v) for k, v in props.items()}})


def test_mm2_defaults_are_kept() -> None:
    s = settings()
    assert s["topics"] == [".*"]
    assert s["topics.exclude"] == [r".*[\-\.]internal", r".*\.replica", "__.*"]
    assert s["offset.lag.max"] == 100 and s["consumer.auto.offset.reset"] == "earliest"
    assert s["include.message.headers"] is True and s["sync.topic.configs.enabled"] is True
    assert isinstance(s.policy, DefaultReplicationPolicy) and not isinstance(s.policy, IdentityReplicationPolicy)
    assert s.offset_syncs_topic == "mm2-offset-syncs.eu.internal" and s.offset_syncs_at_source
    assert s.group_id == "kopycat-mirror-m"


def test_offset_syncs_on_the_target_are_named_after_the_source_as_in_mm2() -> None:
    s = settings(**{"offset-syncs.topic.location": "target", "target.cluster.bootstrap.servers": "tgt:9092"})
    assert s.offset_syncs_topic == "mm2-offset-syncs.us.internal"
    assert s.offset_syncs_producer_config()["bootstrap.servers"] == "tgt:9092"  # type: ignore[index]


def test_proposal_keys_are_aliases_of_mm2_keys() -> None:
    s = MirrorSettings.parse({
        "name": "m", "source.bootstrap.servers": "src:9092", "source.topic.whitelist": "orders, audit.*",
        "source.auto.offset.reset": "latest", "source.max.poll.records": "2000",
        "topic.list.timeout.ms": "5000", "topic.list.poll.interval.ms": "120000",
        "poll.loop.timeout.ms": "250", "source.enable.auto.commit": "false", "source.group.id": "lag-watch",
        "destination.topics.prefix": "dc1.", "reconfigure.tasks.on.leader.change": "true",
        "max.shutdown.wait.ms": "100", "include.message.headers": "false"})
    assert s.source_bootstrap == "src:9092" and s["topics"] == ["orders", "audit.*"]
    assert s["consumer.auto.offset.reset"] == "latest" and s["consumer.max.poll.records"] == 2000
    assert s["admin.timeout.ms"] == 5000 and s["refresh.topics.interval.seconds"] == 120
    assert s["consumer.poll.timeout.ms"] == 250 and s["source.group.offsets.commit.enabled"] is False
    assert s.group_id == "lag-watch" and s["include.message.headers"] is False
    assert isinstance(s.policy, PrefixReplicationPolicy)
    assert s.policy.format_remote_topic("source", "orders") == "dc1.orders"


def test_a_proposal_config_without_a_prefix_keeps_topic_names() -> None:
    s = MirrorSettings.parse({"name": "m", "source.bootstrap.servers": "s:1", "source.topic.whitelist": "a"})
    assert s.policy.format_remote_topic(s.source_alias, "a") == "a"


def test_an_alias_and_its_key_that_disagree_are_refused_naming_both() -> None:
    with pytest.raises(ConfigError, match=r"source.topic.whitelist='a' and topics=.*keep one") as caught:
        settings(topics="b", **{"source.topic.whitelist": "a"})
    assert caught.value.key == "source.topic.whitelist"


def test_a_missing_source_bootstrap_names_the_key_and_an_example() -> None:
    with pytest.raises(ConfigError, match=r"source.cluster.bootstrap.servers \(or source.bootstrap.servers\) "
                                          r"is missing.*broker1:9092"):
        MirrorSettings.parse({"name": "m"})


@pytest.mark.parametrize(("key", "value", "problem"), [
    ("consumer.auto.offset.reset", "oldest", "consumer.auto.offset.reset"),
    ("topics", "orders, (unclosed", "not a valid regular expression list"),
    ("offset.lag.max", "-5", "offset.lag.max"),
    ("replication.policy.class", "no.such.Policy", "replication.policy.class"),
    ("topic.list.poll.interval.ms", "soon", "must be a number of milliseconds"),
], ids=lambda v: str(v))
def test_bad_values_name_the_key_and_value(key: str, value: str, problem: str) -> None:
    with pytest.raises(ConfigError, match=problem) as caught:
        settings(**{key: value})
    assert value.split(",")[0] in str(caught.value) or caught.value.key == key


def test_prefix_and_policy_class_together_are_refused() -> None:
    with pytest.raises(ConfigError, match="keep one"):
        settings(**{"destination.topics.prefix": "x.", "replication.policy.class": "IdentityReplicationPolicy"})


def test_same_alias_for_both_clusters_is_refused() -> None:
    with pytest.raises(ConfigError, match="different aliases"):
        settings(**{"target.cluster.alias": "us"})


def test_source_consumer_settings_follow_the_prefix_precedence() -> None:
    s = settings(**{"source.cluster.security.protocol": "SSL", "source.fetch.min.bytes": "10",
                    "consumer.fetch.min.bytes": "20", "source.consumer.fetch.min.bytes": "30",
                    "consumer.key.deserializer": "org.apache.kafka.common.serialization.ByteArrayDeserializer",
                    "consumer.enable.auto.commit": "true", "consumer.override.linger.ms": "5"})
    config = s.source_consumer_config()
    assert config["security.protocol"] == "SSL" and config["fetch.min.bytes"] == "30"
    assert config["bootstrap.servers"] == "src:9092" and config["group.id"] == "kopycat-mirror-m"
    assert config["enable.auto.commit"] is False and config["auto.offset.reset"] == "earliest"
    assert "key.deserializer" not in config and "override.linger.ms" not in config
    assert "poll.timeout.ms" not in config and "max.poll.records" not in config  # connector keys stay out
    assert config["client.id"] == "us->eu|m|replication-consumer"


def test_admin_settings_take_the_admin_prefixes_and_the_target_needs_its_bootstrap() -> None:
    s = settings(**{"source.admin.request.timeout.ms": "900", "source.security.protocol": "SASL_SSL"})
    assert s.source_admin_config()["request.timeout.ms"] == "900"
    assert s.source_admin_config()["security.protocol"] == "SASL_SSL"
    assert s.target_admin_config() is None
    assert settings(**{"target.cluster.bootstrap.servers": "t:1"}).target_admin_config()["bootstrap.servers"] == "t:1"  # type: ignore[index]


def test_task_partitions_round_trip_mm2s_topic_dash_partition_form() -> None:
    partitions = [("orders", 0), ("my-topic", 11), ("a.b-c", 2)]
    assert encode_topic_partitions(partitions) == "orders-0,my-topic-11,a.b-c-2"
    assert decode_topic_partitions("orders-0,my-topic-11,a.b-c-2") == partitions
    with pytest.raises(ConfigError, match="task.assigned.partitions"):
        decode_topic_partitions("orders")


def test_the_connector_defaults_its_converters_to_byte_arrays_unless_set() -> None:
    props = with_converter_defaults({"connector.class": "MirrorSourceConnector",
                                     "value.converter": "org.apache.kafka.connect.json.JsonConverter"})
    assert props["key.converter"] == props["header.converter"] == \
        "org.apache.kafka.connect.converters.ByteArrayConverter"
    assert props["value.converter"] == "org.apache.kafka.connect.json.JsonConverter"
    assert with_converter_defaults({"connector.class": "FileStreamSource"}) == {"connector.class": "FileStreamSource"}

"""How far a connector whose input is Kafka is behind its input topics: the lag a sensor waits on.

Two kinds of connector read Kafka, and each keeps its position where Kafka Connect keeps it:

- sink connectors: the consumer group ``connect-<name>`` (Kafka's ``SinkUtils.consumerGroupId``;
  the sink runner forces that ``group.id``, so a ``consumer.override.group.id`` is ignored with a
  warning there and here alike), committed offsets = the next offset to copy;
- ``MirrorSourceConnector``: the source offsets it stores in the worker's offsets topic
  (``connect-offsets``), ``{"cluster", "partition", "topic"}`` -> ``{"offset": n}``, where ``n`` is the
  last record copied (MM2's shape), so the next offset to copy is ``n + 1``.

Both are read with :func:`kopycat.runtime.offsets_admin.get_offsets` (what ``GET
/connectors/{name}/offsets`` answers), then set against the input topics' offsets in one batch:
one ``list_offsets`` round for the earliest and one for the end offsets of every partition. Like
``kafka-consumer-groups --describe``, a partition's lag is ``end - committed`` where ``end`` is the
end the connector's consumer can read to: the high watermark, or the last stable offset when
that consumer reads ``read_committed`` (librdkafka's default for sinks). A partition with no
committed offset counts its whole retained range ``end - earliest`` as lag, and a committed offset
below the earliest (records deleted since) counts from the earliest, since that is where the
consumer restarts. Input topics are the sink's ``topics`` plus every topic ``topics.regex`` matches
(whole name, internal topics left out, as Kafka's consumer does), or the source cluster's topics
the mirror's topic filter replicates.

Other source connectors (JDBC, files...) read no Kafka topic, so they have no lag to measure:
:func:`lag_input_kind` refuses them with a ConfigError naming their class.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

from confluent_kafka import IsolationLevel
from confluent_kafka.admin import AdminClient

from kopycat.api.connector import SinkConnector
from kopycat.api.errors import ConfigError
from kopycat.kafka import client_config, consumer_group_id
from kopycat.plugins import connector_class
from kopycat.runtime.config_transformer import resolve_connector_config, resolve_worker_config
from kopycat.runtime.connector_config import (
    CONNECTOR_CLASS_CONFIG,
    NAME_CONFIG,
    TOPICS_CONFIG,
    TOPICS_REGEX_CONFIG,
    sink_topics,
)
from kopycat.runtime.offsets_admin import (
    KAFKA_OFFSET_KEY,
    KAFKA_PARTITION_KEY,
    KAFKA_TOPIC_KEY,
    get_offsets,
)
from kopycat.runtime.topic_offsets import earliest_and_end_offsets, isolation_of, partition_counts

__all__ = ["ConnectorLag", "LagInput", "PartitionLag", "connector_lag", "lag_input_kind"]

log = logging.getLogger(__name__)

LagInput = Literal["sink", "mirror"]
"""Where a connector's input position lives: a sink's consumer group, or the mirror's source offsets."""

MIRROR_SOURCE_CLASS: Final = "org.apache.kafka.connect.mirror.MirrorSourceConnector"


@dataclass(frozen=True)
class PartitionLag:
    """One input partition: the next offset the connector copies (None: none stored), the end, the lag."""

    topic: str
    partition: int
    committed: int | None
    end: int
    lag: int

    def to_dict(self) -> dict[str, Any]:
        return {"topic": self.topic, "partition": self.partition, "committed": self.committed,
                "end": self.end, "lag": self.lag}


@dataclass(frozen=True)
class ConnectorLag:
    """A connector's lag per input partition (sorted by topic, partition) and in total."""

    connector: str
    kind: LagInput
    partitions: tuple[PartitionLag, ...]

    @property
    def total(self) -> int:
        return sum(p.lag for p in self.partitions)

    @property
    def topics(self) -> dict[str, int]:
        """Lag per input topic (a topic with every partition caught up shows 0)."""
        out: dict[str, int] = {}
        for p in self.partitions:
            out[p.topic] = out.get(p.topic, 0) + p.lag
        return out

    def rows(self) -> list[dict[str, Any]]:
        """``{topic, partition, committed, end, lag}`` per partition, as ``kafka-consumer-groups`` lists them."""
        return [p.to_dict() for p in self.partitions]

    def summary(self, max_topics: int = 500) -> dict[str, Any]:
        """``{"total_lag", "topics"}``: small JSON for XCom and trigger events.

        With more than ``max_topics`` input topics only the most lagging are listed, and
        ``topics_left_off`` says how many were left out (the total still counts them all).
        """
        topics = self.topics
        out: dict[str, Any] = {"total_lag": self.total, "topics": topics}
        if len(topics) > max_topics:
            kept = sorted(topics.items(), key=lambda item: (-item[1], item[0]))[:max_topics]
            out["topics"] = dict(sorted(kept))
            out["topics_left_off"] = len(topics) - max_topics
        return out


def lag_input_kind(config: Mapping[str, Any]) -> LagInput:
    """``sink`` or ``mirror`` for a connector whose input is Kafka; ConfigError for any other."""
    from kopycat.connectors.mirror.source_connector import MirrorSourceConnector

    name = config.get(CONNECTOR_CLASS_CONFIG)
    if not name:
        raise ConfigError(f"{CONNECTOR_CLASS_CONFIG} is missing from the connector config of "
                          f"{config.get(NAME_CONFIG, '?')}: lag is measured for sink connectors and "
                          f"{MIRROR_SOURCE_CLASS}", key=CONNECTOR_CLASS_CONFIG)
    cls = connector_class(name)
    if issubclass(cls, SinkConnector):
        return "sink"
    if issubclass(cls, MirrorSourceConnector):
        return "mirror"
    raise ConfigError(
        f"Connector {config.get(NAME_CONFIG, '?')} ({CONNECTOR_CLASS_CONFIG}={name}) is a source connector that "
        f"does not read Kafka, so it has no consumer lag to measure. Lag is measured for connectors whose input "
        f"is Kafka: sink connectors (e.g. FileSinkConnector, JdbcSinkConnector, S3SinkConnector) and "
        f"{MIRROR_SOURCE_CLASS}; to wait for a source connector, wait for its copy task instead",
        key=CONNECTOR_CLASS_CONFIG)


def connector_lag(config: Mapping[str, Any], worker_props: Mapping[str, Any]) -> ConnectorLag:
    """The lag of the connector ``config`` describes, on the cluster ``worker_props`` name.

    Raises ConfigError for a connector whose input is not Kafka (or a config without a name or
    input topics), ConnectError when a cluster does not answer. Config placeholders (a mirror's
    ``source.cluster.sasl.jaas.config=${file:...}``) are resolved for the clients made here.
    """
    worker_props = resolve_worker_config(worker_props)
    [props] = resolve_connector_config(worker_props, {str(k): str(v) for k, v in config.items() if v is not None})
    name = props.get(NAME_CONFIG, "").strip()
    if not name:
        raise ConfigError(f"{NAME_CONFIG} is missing: the connector's name says where its offsets are "
                          f"(consumer group connect-<name> or the offsets topic)", key=NAME_CONFIG)
    kind = lag_input_kind(props)
    if kind == "sink":
        return _sink_lag(name, props, worker_props)
    return _mirror_lag(name, props, worker_props)


# ------------------------------------------------------------------------ sinks

def _sink_lag(name: str, props: Mapping[str, str], worker_props: Mapping[str, Any]) -> ConnectorLag:
    committed = {}
    for entry in get_offsets(name, worker_props, sink=True, group=consumer_group_id(name, props))["offsets"]:
        partition = entry["partition"]
        committed[(partition[KAFKA_TOPIC_KEY], partition[KAFKA_PARTITION_KEY])] = entry["offset"][KAFKA_OFFSET_KEY]
    admin = AdminClient(client_config(worker_props, props, "admin"))
    counts = partition_counts(admin, f"the Kafka cluster at {worker_props.get('bootstrap.servers')}")
    topics = _sink_topics(name, props, counts)
    consumer = client_config(worker_props, props, "consumer")
    rows = _partition_lags(admin, {t: counts[t] for t in topics}, committed, isolation_of(consumer))
    return ConnectorLag(name, "sink", rows)


def _sink_topics(name: str, props: Mapping[str, str], counts: Mapping[str, int]) -> list[str]:
    """The sink's ``topics`` that exist, plus the existing topics ``topics.regex`` matches."""
    listed = [t.strip() for t in props.get(TOPICS_CONFIG, "").split(",") if t.strip()]
    pattern = props.get(TOPICS_REGEX_CONFIG, "").strip()
    if not listed and not pattern:
        raise ConfigError(f"Sink connector {name} has neither {TOPICS_CONFIG} nor {TOPICS_REGEX_CONFIG}: "
                          f"set one to name the topics it copies", key=TOPICS_CONFIG)
    topics = sink_topics(props, counts)
    missing = [t for t in topics if t not in counts]
    if missing:
        log.warning("Sink connector %s: topic(s) %s do not exist (yet); they count no lag", name,
                    ", ".join(missing))
    return [t for t in topics if t in counts]


# ------------------------------------------------------------------------ mirror source

def _mirror_lag(name: str, props: Mapping[str, str], worker_props: Mapping[str, Any]) -> ConnectorLag:
    from kopycat.connectors.mirror.source_config import MirrorSettings

    settings = MirrorSettings.parse(props)
    committed = {}
    for entry in get_offsets(name, worker_props, sink=False)["offsets"]:
        partition, offset = entry["partition"], entry["offset"]
        if partition.get("cluster") == settings.source_alias and isinstance(offset.get("offset"), int):
            committed[(partition.get("topic"), partition.get("partition"))] = offset["offset"] + 1
    admin = AdminClient(settings.source_admin_config("lag-source-admin"))
    counts = partition_counts(admin, f"the source cluster {settings.source_alias} at {settings.source_bootstrap}")
    wanted = {t: n for t, n in sorted(counts.items()) if settings.topic_filter.should_replicate(t)}
    rows = _partition_lags(admin, wanted, committed, isolation_of(settings.source_consumer_config()))
    return ConnectorLag(name, "mirror", rows)


# ------------------------------------------------------------------------ offsets, batched

def _partition_lags(admin: AdminClient, counts: Mapping[str, int], committed: Mapping[tuple[Any, Any], int],
                    isolation: IsolationLevel) -> tuple[PartitionLag, ...]:
    keys = [(topic, p) for topic, n in counts.items() for p in range(n)]
    earliest, ends = earliest_and_end_offsets(admin, keys, isolation)
    rows = []
    for key in sorted(keys):
        start, end, next_offset = earliest[key], ends[key], committed.get(key)
        from_offset = start if next_offset is None else max(next_offset, start)
        rows.append(PartitionLag(key[0], key[1], next_offset, end, max(0, end - from_offset)))
    return tuple(rows)

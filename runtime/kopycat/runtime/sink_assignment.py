"""Which task of a bounded sink run copies which topic-partitions, and up to where.

Kafka Connect's sink tasks share their partitions through the consumer group (``WorkerSinkTask``
subscribes; the group coordinator assigns and rebalances), which suits runs that never end. A
bounded run copies what is there when it starts, so its partitions are snapshotted then and dealt
over the tasks once: each task is assigned its own (no group join, no rebalance between the
tasks, the consumer knows its partitions from the first request) and, for planned end offsets,
the ends of its partitions only. The Airflow plan (:mod:`kopycat.runtime.bounded_plan`, one
mapped task per share) and the worker's bounded runs (``Kopycat.run_once``) split alike, through
:func:`split_partitions`; unbounded runs keep subscribing, as Kafka Connect does.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from confluent_kafka.admin import AdminClient

from kopycat.api.records import TopicPartition
from kopycat.kafka import client_config
from kopycat.runtime.bounds import Bounds
from kopycat.runtime.config_transformer import resolve_connector_config, resolve_worker_config
from kopycat.runtime.connector_config import sink_topics
from kopycat.runtime.topic_offsets import end_offsets, isolation_of, partition_counts
from kopycat.storage.topic_admin import check_topic_visible

__all__ = ["SinkShare", "input_end_offsets", "input_partitions", "split_bounded_run", "split_partitions"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SinkShare:
    """One task's part of a bounded sink run: the partitions it is assigned and the bounds it runs to
    (planned end offsets narrowed to its partitions)."""

    partitions: tuple[TopicPartition, ...]
    bounds: Bounds


def split_partitions(partitions: Iterable[TopicPartition], tasks: int) -> list[list[TopicPartition]]:
    """The partitions, sorted, dealt round-robin over ``tasks`` tasks (task i gets ``sorted[i::count]``).

    One list per task that gets any: a task beyond the partition count would copy nothing, so there
    are at most as many lists as partitions (none for no partition).
    """
    ordered = sorted(partitions)
    count = min(tasks, len(ordered))
    return [ordered[index::count] for index in range(count)]


def split_bounded_run(connector_props: Mapping[str, Any], worker_props: Mapping[str, Any], bounds: Bounds,
                      tasks: int) -> list[SinkShare]:
    """Each task's share of a bounded run of a sink with ``tasks`` task configs (configs as given: their
    placeholders are resolved here).

    Planned end offsets give the partitions and each share keeps its partitions' ends; other bounds
    (caught up, a window, budgets) get the sink's input partitions as they are now.
    """
    if bounds.end_offsets is not None:
        ends = bounds.end_offsets
        return [SinkShare(tuple(mine), dataclasses.replace(bounds, end_offsets={tp: ends[tp] for tp in mine}))
                for mine in split_partitions(ends, tasks)]
    worker_props = resolve_worker_config(worker_props)
    [connector_props] = resolve_connector_config(worker_props, connector_props)
    return [SinkShare(tuple(mine), bounds)
            for mine in split_partitions(input_partitions(connector_props, worker_props), tasks)]


def input_partitions(connector_props: Mapping[str, Any], worker_props: Mapping[str, Any]) -> list[TopicPartition]:
    """The partitions of the sink's topics (``topics``, or those ``topics.regex`` matches) now; configs resolved."""
    return _partitions(*_admin(connector_props, worker_props), connector_props, worker_props)


def input_end_offsets(connector_props: Mapping[str, Any], worker_props: Mapping[str, Any]
                      ) -> dict[TopicPartition, int]:
    """Each input partition's end as the sink's consumer can read it (the last stable offset for
    read_committed), all partitions in one ListOffsets round; configs resolved."""
    admin, secured = _admin(connector_props, worker_props)
    partitions = _partitions(admin, secured, connector_props, worker_props)
    isolation = isolation_of(client_config(worker_props, connector_props, "consumer"))
    return {TopicPartition(topic, partition): end
            for (topic, partition), end in end_offsets(admin, partitions, isolation).items()}


def _admin(connector_props: Mapping[str, Any], worker_props: Mapping[str, Any]) -> tuple[AdminClient, bool]:
    """An admin client with the sink's client settings, and whether it talks to a secured cluster."""
    admin_config = client_config(worker_props, connector_props, "admin")
    secured = str(admin_config.get("security.protocol", "PLAINTEXT")).upper() != "PLAINTEXT"
    return AdminClient(admin_config), secured


def _partitions(admin: AdminClient, secured: bool, connector_props: Mapping[str, Any],
                worker_props: Mapping[str, Any]) -> list[TopicPartition]:
    """The input topics' partitions; a listed topic that does not exist (yet) has none, unless a secured
    cluster hides it from this principal (then the error says which ACL is missing)."""
    counts = partition_counts(admin, f"the Kafka cluster at {worker_props.get('bootstrap.servers')}")
    partitions = []
    for topic in sink_topics(connector_props, counts):
        if topic not in counts:
            if secured:
                check_topic_visible(admin, topic, "Read")
            log.warning("Topic %s does not exist (yet): nothing to copy from it", topic)
            continue
        partitions += [TopicPartition(topic, partition) for partition in range(counts[topic])]
    if not partitions:
        log.warning("Connector %s: no partitions to copy (topics missing or empty selection)",
                    connector_props.get("name"))
    return partitions

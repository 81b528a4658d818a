"""Emit checkpoints for consumer groups of the source cluster: Kafka's ``MirrorCheckpointTask``.

Each pass lists every assigned group's committed offsets on the source, keeps the partitions of
topics this mirror replicates (``topics``/``topics.exclude``, as MM2's ``DefaultTopicFilter``),
translates each offset with the :class:`~.offset_sync_store.OffsetSyncStore` and returns a
:class:`~.checkpoint.Checkpoint` record per partition whose checkpoint is new, an upstream rewind
or a downstream advance (``checkpointIsMoreRecent``). Topics are renamed as MM2's
``renameTopicPartition`` does: ``orders`` -> ``<source alias>.orders``, and a topic that came
from the target (``<target alias>.orders``) back to ``orders``.

With ``sync.group.offsets.enabled`` the translated offsets are also committed to the same group
on the target (``syncGroupOffset``): a group unknown there gets them all; an EMPTY group (no
active member) only where they move its offset forward; a group with members is left alone
(MM2 tries and fails with UnknownMemberId). A bounded run (:mod:`kopycat.api.bounded`) makes one
pass, syncs, and then returns empty batches so the run ends; a continuous run passes every
``emit.checkpoints.interval.seconds`` and syncs every ``sync.group.offsets.interval.seconds``.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping

from confluent_kafka import (
    ConsumerGroupState,
    ConsumerGroupTopicPartitions,
    KafkaError,
    KafkaException,
)
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import AdminClient

from kopycat import group_offsets
from kopycat.api.bounded import is_bounded_run
from kopycat.api.data import Schema
from kopycat.api.errors import ConnectError
from kopycat.api.records import SourceRecord
from kopycat.api.task import SourceTask
from kopycat.connectors.mirror.checkpoint import (
    Checkpoint,
    CheckpointStore,
    encode_checkpoint_key,
    encode_checkpoint_value,
)
from kopycat.connectors.mirror.checkpoint_config import (
    EMIT_CHECKPOINTS_INTERVAL_SECONDS,
    SYNC_GROUP_OFFSETS_ENABLED,
    SYNC_GROUP_OFFSETS_INTERVAL_SECONDS,
    CheckpointSettings,
)
from kopycat.connectors.mirror.offset_sync_store import OffsetSyncStore, TopicReader
from kopycat.connectors.mirror.source_config import CONSUMER_POLL_TIMEOUT_MS

__all__ = ["MirrorCheckpointTask", "list_group_offsets"]

log = logging.getLogger(__name__)

_Offsets = dict[tuple[str, int], tuple[int, str]]  # (topic, partition) -> (offset, metadata)


def list_group_offsets(admin: AdminClient, group: str, cluster: str, timeout_s: float) -> _Offsets:
    """A group's committed offsets on a cluster (``listConsumerGroupOffsets``); none are skipped."""
    try:
        result = group_offsets.list_group_offsets(admin, group, timeout_s)
    except KafkaException as exc:
        raise ConnectError(f"Could not list the offsets of consumer group {group} on the {cluster} cluster: "
                           f"{exc.args[0].str()}") from None
    return {(tp.topic, tp.partition): (tp.offset, tp.metadata or "") for tp in result.topic_partitions or []
            if tp.error is None and tp.offset >= 0}


class MirrorCheckpointTask(SourceTask):
    """Translates its groups' offsets into checkpoint records; may sync them to the target."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._bounded = False
        self._passed = False
        self._store: OffsetSyncStore | None = None
        self._checkpoints = CheckpointStore(set())
        self._next_emit = 0.0
        self._next_sync = 0.0

    def start(self, props: Mapping[str, str]) -> None:
        settings = self._settings = CheckpointSettings.parse(props)
        mirror = settings.mirror
        self._bounded = is_bounded_run(props)
        self._groups = settings.task_groups
        self._topic = settings.checkpoints_topic
        self._poll_timeout_s = mirror[CONSUMER_POLL_TIMEOUT_MS] / 1000
        self._source_admin = AdminClient(mirror.source_admin_config("checkpoint-source-admin"))
        self._target_admin = AdminClient(mirror.target_admin_config("checkpoint-target-admin") or {})
        self._checkpoints = CheckpointStore(set(self._groups))
        consumer, cluster = settings.offset_syncs_consumer_config()
        self._store = OffsetSyncStore(TopicReader(consumer, mirror.offset_syncs_topic, cluster,
                                                  settings.admin_timeout_s))
        self._stopping.clear()
        self._passed = False
        log.info("%s checkpointing %d consumer groups %s->%s%s: %s", mirror.name, len(self._groups),
                 mirror.source_alias, mirror.target_alias, " (bounded)" if self._bounded else "",
                 ", ".join(self._groups))

    def poll(self) -> list[SourceRecord] | None:
        if self._bounded and self._passed:
            self._stopping.wait(0.1)  # one pass done: the runner's idle clock ends the run
            return []
        if not self._bounded:
            wait_s = self._next_emit - time.monotonic()
            if wait_s > 0:  # not due: return within consumer.poll.timeout.ms so the task can stop
                self._stopping.wait(min(wait_s, self._poll_timeout_s))
                return None
        with self._lock:
            if self._stopping.is_set() or self._store is None:
                return None
            records = self._pass(self._store)
        return records if records or self._bounded else None

    def _pass(self, store: OffsetSyncStore) -> list[SourceRecord]:
        """Load the stores (first pass) or catch up, emit checkpoints, sync groups when due."""
        settings = self._settings
        if not self._checkpoints.initialized:
            reader = TopicReader(settings.target_consumer_config("checkpoints-target-consumer"), self._topic,
                                 "target", settings.admin_timeout_s)
            store.start(not self._checkpoints.load(reader))
        else:
            store.update()
        timestamp = int(time.time() * 1000)
        records = [self._record(c, timestamp) for group in self._groups for c in self._checkpoints_for(store, group)]
        self._passed = True
        now = time.monotonic()
        self._next_emit = now + settings[EMIT_CHECKPOINTS_INTERVAL_SECONDS]
        if settings[SYNC_GROUP_OFFSETS_ENABLED] and (self._bounded or now >= self._next_sync):
            self._next_sync = now + settings[SYNC_GROUP_OFFSETS_INTERVAL_SECONDS]
            self.sync_group_offsets()
        return records

    def _checkpoints_for(self, store: OffsetSyncStore, group: str) -> list[Checkpoint]:
        """``sourceRecordsForGroup``/``checkpointsForGroup``: new checkpoints of one group."""
        mirror = self._settings.mirror
        try:
            upstream = list_group_offsets(self._source_admin, group, "source", self._settings.admin_timeout_s)
        except ConnectError as exc:
            log.error("%s; no checkpoints for it this pass", exc)
            return []
        found: dict[tuple[str, int], Checkpoint] = {}
        for (topic, partition), (offset, metadata) in sorted(upstream.items()):
            if not mirror.topic_filter.matches(topic):
                continue
            downstream = store.translate_downstream(group, topic, partition, offset)
            if downstream is None or downstream < 0:
                continue
            checkpoint = Checkpoint(group, self.rename_topic(topic), partition, offset, downstream, metadata)
            if self._checkpoints.is_more_recent(checkpoint):
                found[(checkpoint.topic, partition)] = checkpoint
        self._checkpoints.update(group, found)
        return list(found.values())

    def rename_topic(self, topic: str) -> str:
        """``renameTopicPartition``: the name the source topic has on the target."""
        mirror = self._settings.mirror
        if mirror.policy.topic_source(topic) == mirror.target_alias:
            return mirror.policy.original_topic(topic)
        return mirror.policy.format_remote_topic(mirror.source_alias, topic)

    def _record(self, checkpoint: Checkpoint, timestamp: int) -> SourceRecord:
        """``checkpointRecord``: bytes to partition 0 of the checkpoints topic."""
        return SourceRecord(source_partition=checkpoint.connect_partition(), source_offset={"offset": 0},
                            topic=self._topic, kafka_partition=0, key_schema=Schema.BYTES_SCHEMA,
                            key=encode_checkpoint_key(checkpoint), value_schema=Schema.BYTES_SCHEMA,
                            value=encode_checkpoint_value(checkpoint), timestamp=timestamp)

    def sync_group_offsets(self) -> dict[str, _Offsets]:
        """``refreshIdleConsumerGroupOffset`` + ``syncGroupOffset``: what was committed, per group."""
        synced = {}
        for group, converted in self._checkpoints.converted_upstream_offsets().items():
            target = self._target_offsets(group)
            if target is None:
                continue
            wanted = {tp: om for tp, om in converted.items() if tp not in target or target[tp][0] < om[0]}
            if wanted and self._alter_target_offsets(group, wanted):
                synced[group] = wanted
        return synced

    def _target_offsets(self, group: str) -> _Offsets | None:
        """The group's offsets on the target: empty when unknown there, None when it has members."""
        timeout_s = self._settings.admin_timeout_s
        try:
            state = self._target_admin.describe_consumer_groups([group], request_timeout=timeout_s)[group].result(
                timeout_s).state
        except KafkaException as exc:
            if exc.args[0].code() != KafkaError.GROUP_ID_NOT_FOUND:
                log.error("Could not describe consumer group %s on the target cluster, not syncing its offsets: %s",
                          group, exc.args[0].str())
                return None
            state = ConsumerGroupState.DEAD
        if state == ConsumerGroupState.DEAD:
            return {}  # new on the target: every translated offset is synced
        if state != ConsumerGroupState.EMPTY:
            log.info("Not syncing offsets of consumer group %s: it has active members on the target cluster (%s)",
                     group, state.name)
            return None
        try:
            return list_group_offsets(self._target_admin, group, "target", timeout_s)
        except ConnectError as exc:
            log.error("%s; not syncing its offsets", exc)
            return None

    def _alter_target_offsets(self, group: str, offsets: _Offsets) -> bool:
        partitions = [KafkaTopicPartition(topic, partition, offset, metadata)
                      for (topic, partition), (offset, metadata) in sorted(offsets.items())]
        timeout_s = self._settings.admin_timeout_s
        try:
            self._target_admin.alter_consumer_group_offsets([ConsumerGroupTopicPartitions(group, partitions)],
                                                            request_timeout=timeout_s)[group].result(timeout_s)
        except KafkaException as exc:
            error: KafkaError = exc.args[0]
            if error.code() == KafkaError.UNKNOWN_MEMBER_ID:
                log.warning("Unable to sync offsets for consumer group %s: consumers are likely using it on the "
                            "target cluster", group)
            else:
                log.error("Unable to sync offsets for consumer group %s on the target cluster: %s", group, error.str())
            return False
        log.debug("Synced %d offsets of consumer group %s to the target cluster", len(offsets), group)
        return True

    def stop(self) -> None:
        self._stopping.set()
        with self._lock:  # a running pass finishes first: its clients are not closed under it
            store, self._store = self._store, None
        if store is not None:
            store.close()

"""Copy assigned topic-partitions from the source cluster: MirrorMaker 2's ``MirrorSourceTask``.

As Kafka's task: the consumer is *assigned* its partitions (no group membership) and resumes from
the Connect offsets: a stored ``{"offset": n}`` is the offset of the last record copied, so the
task seeks to ``n + 1`` (``initializeConsumer``); a partition with no stored offset starts at
``consumer.auto.offset.reset``. Each record keeps its key and value bytes, headers (byte for
byte), timestamp and partition number; its topic is renamed by the replication policy. Source
partition ``{"cluster": alias, "partition": p, "topic": t}``, offset ``{"offset": n}``: MM2's
shapes, so Kafka Connect's MM2 can take over from these offsets (and back).

Acknowledged records feed the offset syncs (:mod:`.offset_sync`), and at each offset commit the
copied offsets are committed to a consumer group on the source cluster for lag monitoring (the
Kafka source proposal's behaviour); they are never read back.

Bounded runs (:mod:`kopycat.api.bounded`): the task snapshots each partition's end offset (high
watermark) at start, copies up to it, pauses the partition, and once all are there raises
``RunComplete``, so the run ends caught up with a known range, at once.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any, Final

from confluent_kafka import (
    OFFSET_BEGINNING,
    OFFSET_END,
    Consumer,
    KafkaError,
    KafkaException,
    TopicPartition,
)

from kopycat.api.bounded import RunComplete, is_bounded_run
from kopycat.api.data import Schema
from kopycat.api.errors import ConfigError, ConnectError
from kopycat.api.records import Header, Headers, RecordMetadata, SourceRecord
from kopycat.api.task import SourceTask
from kopycat.connectors.mirror.offset_sync import OffsetSyncWriter
from kopycat.connectors.mirror.source_config import (
    ADMIN_TIMEOUT_MS,
    CONSUMER_AUTO_OFFSET_RESET,
    CONSUMER_MAX_POLL_RECORDS,
    CONSUMER_POLL_TIMEOUT_MS,
    EMIT_OFFSET_SYNCS_ENABLED,
    INCLUDE_MESSAGE_HEADERS,
    MAX_SHUTDOWN_WAIT_MS,
    OFFSET_LAG_MAX,
    SOURCE_GROUP_COMMIT_ENABLED,
    TASK_TOPIC_PARTITIONS_CONFIG,
    MirrorSettings,
    decode_topic_partitions,
)
from kopycat.consumer_assignment import assign_with_metadata

__all__ = ["MirrorSourceTask", "wrap_partition"]

log = logging.getLogger(__name__)

_NO_END: Final = 2**63
_BYTES: Final = Schema.OPTIONAL_BYTES_SCHEMA
_HEADER_BYTES: Final = Schema.BYTES_SCHEMA  # ConnectHeaders.addBytes


def wrap_partition(topic: str, partition: int, cluster: str) -> dict[str, Any]:
    """``MirrorUtils.wrapPartition``: the source partition of one topic-partition."""
    return {"cluster": cluster, "partition": partition, "topic": topic}


class _Partition:
    """What the hot loop needs about one assigned partition, looked up once per record."""

    __slots__ = ("end", "remote", "source_partition")

    def __init__(self, source_partition: dict[str, Any], remote: str, end: int) -> None:
        self.source_partition = source_partition
        self.remote = remote
        self.end = end


class MirrorSourceTask(SourceTask):
    """Consumes its assigned partitions in batches and returns them as byte records."""

    def __init__(self) -> None:
        self._consumer: Consumer | None = None
        self._writer: OffsetSyncWriter | None = None
        self._parts: dict[tuple[str, int], _Partition] = {}
        self._done: set[tuple[str, int]] = set()
        self._acked: dict[tuple[str, int], int] = {}
        self._committed: dict[tuple[str, int], int] = {}
        self._access = threading.Lock()
        self._stopping = False
        self._bounded = False

    def start(self, props: Mapping[str, str]) -> None:
        settings = self._settings = MirrorSettings.parse(props)
        self._bounded = is_bounded_run(props)
        self._batch = settings[CONSUMER_MAX_POLL_RECORDS]
        self._poll_timeout_s = settings[CONSUMER_POLL_TIMEOUT_MS] / 1000
        self._headers = settings[INCLUDE_MESSAGE_HEADERS]
        self._commit_group = settings[SOURCE_GROUP_COMMIT_ENABLED]
        partitions = decode_topic_partitions(settings[TASK_TOPIC_PARTITIONS_CONFIG])
        self._consumer = self._new_consumer(settings)
        starts = self._start_offsets(partitions)
        ends = self._end_offsets(partitions, starts) if self._bounded else {}
        for topic, partition in partitions:
            self._parts[(topic, partition)] = _Partition(
                wrap_partition(topic, partition, settings.source_alias),
                settings.policy.format_remote_topic(settings.source_alias, topic),
                ends.get((topic, partition), _NO_END))
        assigned = [TopicPartition(t, p, starts[(t, p)]) for t, p in partitions if (t, p) not in self._done]
        assign_with_metadata(self._consumer, assigned, settings[ADMIN_TIMEOUT_MS] / 1000)
        producer = settings.offset_syncs_producer_config()
        if settings[EMIT_OFFSET_SYNCS_ENABLED] and producer is not None:
            self._writer = OffsetSyncWriter(producer, settings.offset_syncs_topic, settings[OFFSET_LAG_MAX])
        log.info("%s replicating %d topic-partitions %s->%s%s: %s", settings.name, len(partitions),
                 settings.source_alias, settings.target_alias, " (bounded)" if self._bounded else "",
                 settings[TASK_TOPIC_PARTITIONS_CONFIG])

    def _new_consumer(self, settings: MirrorSettings) -> Consumer:
        config = settings.source_consumer_config()
        if self._bounded:
            config["enable.partition.eof"] = True  # tells a bounded run where a partition ends
        try:
            return Consumer(config)
        except KafkaException as exc:
            raise ConfigError(f"The source consumer refused its settings: {exc.args[0].str()}. Client settings "
                              f"come from the source.cluster.*, source.*, consumer.* and source.consumer.* keys; "
                              f"use librdkafka's names and remove Java-only ones") from None

    def _start_offsets(self, partitions: list[tuple[str, int]]) -> dict[tuple[str, int], int]:
        """Stored offset + 1 where one is stored (MM2's ``loadOffset``), else the reset policy.

        The reset is explicit (beginning/end): librdkafka's "invalid" start offset would read the
        source group's committed offsets, which are for lag monitoring only.
        """
        alias, reset = self._settings.source_alias, self._settings[CONSUMER_AUTO_OFFSET_RESET].lower()
        stored = self.context.offset_reader.offsets([wrap_partition(t, p, alias) for t, p in partitions])
        starts, fresh = {}, []
        for (topic, partition), (_, offset) in zip(partitions, stored, strict=True):
            value = None if offset is None else offset.get("offset")
            if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
                starts[(topic, partition)] = value + 1
            else:
                starts[(topic, partition)] = OFFSET_END if reset == "latest" else OFFSET_BEGINNING
                fresh.append(f"{topic}-{partition}")
        if fresh and reset == "none":
            raise ConnectError(f"No stored offset for source partitions {', '.join(fresh)} and "
                               f"{CONSUMER_AUTO_OFFSET_RESET}=none: set it to earliest or latest, or store "
                               f"offsets for them with `kopycat offsets`")
        log.info("Starting with %d previously uncommitted partitions", len(fresh))
        return starts

    def _end_offsets(self, partitions: list[tuple[str, int]], starts: dict[tuple[str, int], int]
                     ) -> dict[tuple[str, int], int]:
        """High watermarks now; partitions already there are done before the first poll."""
        consumer, timeout_s = self._consumer, self._settings[ADMIN_TIMEOUT_MS] / 1000
        assert consumer is not None
        latest = self._settings[CONSUMER_AUTO_OFFSET_RESET].lower() == "latest"
        ends = {}
        for topic, partition in partitions:
            try:
                low, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=timeout_s,
                                                           cached=False)
            except KafkaException as exc:
                raise ConnectError(f"Could not read the end offset of source partition {topic}-{partition} on "
                                   f"{self._settings.source_bootstrap}: {exc.args[0].str()}") from None
            start = starts[(topic, partition)]
            position = start if start >= 0 else (high if latest else low)
            ends[(topic, partition)] = high
            if position >= high:
                self._done.add((topic, partition))
        return ends

    def poll(self) -> list[SourceRecord] | None:
        if not self._access.acquire(blocking=False):
            return None
        try:
            if self._stopping or self._consumer is None:
                return None
            if self._bounded and len(self._done) == len(self._parts):
                raise RunComplete
            if self._bounded:
                return self._poll_bounded(self._consumer)
            return self._records(self._consumer.consume(num_messages=self._batch, timeout=self._poll_timeout_s))
        finally:
            self._access.release()

    def _poll_bounded(self, consumer: Consumer) -> list[SourceRecord]:
        """Wait for records until every partition reached its end: an empty batch would make the
        runner's idle clock end the run early (fetches may lag, e.g. right after assignment).
        Gives up after ``admin.timeout.ms`` without records, with a warning."""
        deadline = time.monotonic() + self._settings[ADMIN_TIMEOUT_MS] / 1000
        while True:
            records = self._records(consumer.consume(num_messages=self._batch, timeout=self._poll_timeout_s))
            if records or self._stopping or len(self._done) == len(self._parts):
                return records
            if time.monotonic() > deadline:
                log.warning("%s: no records from %s for %.0f s although %d partitions are short of their planned "
                            "end; ending this run", self._settings.name, self._settings.source_bootstrap,
                            self._settings[ADMIN_TIMEOUT_MS] / 1000, len(self._parts) - len(self._done))
                return records

    def _records(self, messages: list[Any]) -> list[SourceRecord]:
        """The batch as SourceRecords: the one per-record loop of the task."""
        parts, headers_on, out, new_record = self._parts, self._headers, [], SourceRecord.of
        finished: list[tuple[str, int]] = []
        for message in messages:
            if message.error() is not None:
                self._on_error(message)
                continue
            topic, partition, offset = message.topic(), message.partition(), message.offset()
            part = parts[(topic, partition)]
            if offset >= part.end:  # a bounded run past its planned end: left for the next run
                finished.append((topic, partition))
                continue
            kind, timestamp = message.timestamp()
            raw = message.headers() if headers_on else None
            out.append(new_record(
                part.source_partition, {"offset": offset}, part.remote, partition, _BYTES, message.key(), _BYTES,
                message.value(), timestamp if kind else None,
                Headers([Header(k, v, _HEADER_BYTES) for k, v in raw]) if raw else None))
            if offset + 1 >= part.end:
                finished.append((topic, partition))
        if finished:
            self._finish(finished)
        return out

    def _on_error(self, message: Any) -> None:
        error: KafkaError = message.error()
        key = (message.topic(), message.partition())
        if error.code() == KafkaError._PARTITION_EOF:
            part = self._parts.get(key)
            if part is not None and message.offset() >= part.end:
                self._finish([key])
            return
        if error.fatal() or error.code() == KafkaError._AUTO_OFFSET_RESET:
            raise ConnectError(f"Consuming source partition {key[0]}-{key[1]} failed: {error.str()}. With "
                               f"{CONSUMER_AUTO_OFFSET_RESET}=none an offset out of range is not reset; set it "
                               f"to earliest or latest, or store offsets with `kopycat offsets`")
        log.warning("Consuming from %s failed, retrying: %s", self._settings.source_bootstrap, error.str())

    def _finish(self, partitions: list[tuple[str, int]]) -> None:
        new = [key for key in dict.fromkeys(partitions) if key not in self._done]
        if not new:
            return
        self._done.update(new)
        assert self._consumer is not None
        self._consumer.pause([TopicPartition(t, p) for t, p in new])
        if len(self._done) == len(self._parts):
            log.info("%s: every partition reached its planned end offset", self._settings.name)

    def commit_records(self, records: Sequence[SourceRecord], metadata: Sequence[RecordMetadata | None]) -> None:
        """Queue offset syncs for the copied records (``MirrorSourceTask.commitRecord``), a partition at a time.

        Each partition's acknowledgements keep their order; grouping them first lets the sync
        writer run its per-record decisions in one tight loop per partition.
        """
        if self._stopping:
            return
        runs: dict[int, tuple[dict[str, Any], list[int], list[int]]] = {}
        for record, where in zip(records, metadata, strict=True):
            if where is None:
                continue
            partition = record.source_partition
            run = runs.get(id(partition))
            if run is None:
                run = runs[id(partition)] = (partition, [], [])  # type: ignore[assignment]
            run[1].append(record.source_offset["offset"])  # type: ignore[index]
            run[2].append(where.offset)
        writer = self._writer
        for partition, upstreams, downstreams in runs.values():
            key = (partition["topic"], partition["partition"])
            self._acked[key] = upstreams[-1]
            if writer is not None:
                writer.queue_acknowledged(key, upstreams, downstreams)

    def commit(self) -> None:
        """Send delayed offset syncs, then commit the copied offsets to the source group."""
        if self._writer is not None:
            self._writer.promote_delayed()
            self._writer.fire_pending()
        if self._commit_group:
            self._commit_source_group()

    def _commit_source_group(self) -> None:
        changed = {k: v for k, v in self._acked.items() if self._committed.get(k) != v}
        if not changed or self._consumer is None:
            return
        with self._access:
            if self._stopping:
                return
            try:
                self._consumer.commit(offsets=[TopicPartition(t, p, o + 1) for (t, p), o in changed.items()],
                                      asynchronous=False)
            except KafkaException as exc:
                log.warning("Could not commit the copied offsets to the source group %s (lag monitoring only): "
                            "%s", self._settings.group_id, exc.args[0].str())
                return
        self._committed.update(changed)

    def stop(self) -> None:
        self._stopping = True
        with self._access:  # a running poll() finishes first: the consumer is not thread-safe to close
            consumer, self._consumer = self._consumer, None
            writer, self._writer = self._writer, None
        if writer is not None:
            writer.close(self._settings[MAX_SHUTDOWN_WAIT_MS] / 1000)
        if consumer is not None:
            consumer.close()

"""Offset translation for checkpoints: Kafka's ``OffsetSyncStore`` (connect/mirror), as of Kafka 3.7+.

The store reads the offset-syncs topic (``mm2-offset-syncs.<alias>.internal``, partition 0,
written by :class:`~kopycat.connectors.mirror.offset_sync.OffsetSyncWriter`) from its start to
its end, and keeps up to 64 syncs per source topic-partition, spaced roughly exponentially
backwards from the newest (the invariants A-D of Kafka's class, KAFKA-14666 and KAFKA-15906).

``translate_downstream`` follows Kafka 3.5+ semantics (KAFKA-12468, KAFKA-14666), which never
skip a record on the target:

    no sync for the partition, or the initial read unfinished   -> None (no checkpoint)
    every kept sync is above the upstream offset                 -> -1 (too old to translate)
    a sync at exactly the upstream offset                        -> its downstream offset
    the nearest sync below the upstream offset                   -> its downstream offset + 1

So a consumer restarting on the target from a translated offset may re-read a few records,
but never misses one. Followed: ``OffsetSyncStore`` of Kafka trunk (4.0, Oct 2024).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from typing import Any, Final

from confluent_kafka import (
    OFFSET_BEGINNING,
    Consumer,
    KafkaError,
    KafkaException,
    Message,
    TopicPartition,
)

from kopycat.api.errors import ConnectError, DataError
from kopycat.connectors.mirror.offset_sync import OffsetSync, decode_offset_sync
from kopycat.consumer_assignment import assign_with_metadata

__all__ = ["SYNCS_PER_PARTITION", "OffsetSyncStore", "TopicReader"]

log = logging.getLogger(__name__)

SYNCS_PER_PARTITION: Final = 64  # one sync per bit of an offset (Long.SIZE)
_LONG_MASK: Final = (1 << 64) - 1


def _java_long(value: int) -> int:
    """``value`` wrapped to a Java long, as Kafka's overflowing ``1L << 63`` arithmetic is."""
    value &= _LONG_MASK
    return value - (1 << 64) if value >= 1 << 63 else value


def _invariant_b(i_sync: OffsetSync, j_sync: OffsetSync, i: int, j: int) -> bool:
    bound = _java_long(j_sync.upstream_offset + (1 << j) - (1 << i))
    return i_sync is j_sync or bound < 0 or i_sync.upstream_offset <= bound


def _invariant_c(i_sync: OffsetSync, j_sync: OffsetSync, i: int) -> bool:
    bound = _java_long(j_sync.upstream_offset + (1 << max(i - 2, 0)))
    return i_sync is j_sync or (bound >= 0 and i_sync.upstream_offset >= bound)


class TopicReader:
    """Reads one partition of a topic from its start, then on each call up to its current end.

    Kafka's ``KafkaBasedLog.readToEnd`` without the background thread: the end is the high
    watermark when the call starts. A missing topic reads as empty. One thread at a time.
    """

    def __init__(self, consumer_config: Mapping[str, Any], topic: str, cluster: str, timeout_s: float,
                 partition: int = 0) -> None:
        self.topic = topic
        self.cluster = cluster
        self.timeout_s = timeout_s
        self._partition = TopicPartition(topic, partition)
        self._next: int | None = None
        config = {**consumer_config, "enable.partition.eof": True, "enable.auto.commit": False,
                  "enable.auto.offset.store": False, "isolation.level": "read_committed"}
        self._consumer = Consumer(config)

    def read_to_end(self, handle: Callable[[Message], None]) -> int:
        """Hand every new record to ``handle``; how many there were."""
        end = self._end_offset()
        if end is None or (self._next is not None and self._next >= end):
            return 0
        if self._next is None:
            assign_with_metadata(self._consumer, [TopicPartition(self.topic, self._partition.partition,
                                                                 OFFSET_BEGINNING)], self.timeout_s)
            self._next = 0
        deadline, count = time.monotonic() + self.timeout_s, 0
        while self._next < end:
            if time.monotonic() > deadline:
                raise ConnectError(f"Reading topic {self.topic} on the {self.cluster} cluster to its end offset "
                                   f"{end} took over {self.timeout_s:.0f} s (at offset {self._next}); check the "
                                   f"cluster's health, or raise admin.timeout.ms")
            for message in self._consumer.consume(num_messages=1000, timeout=0.5):
                error = message.error()
                if error is None:
                    handle(message)
                    count += 1
                    self._next = message.offset() + 1
                elif error.code() == KafkaError._PARTITION_EOF:
                    self._next = max(self._next, message.offset())
                else:
                    log.warning("Reading %s on the %s cluster: %s", self.topic, self.cluster, error.str())
        return count

    def _end_offset(self) -> int | None:
        """The high watermark now; None when the topic does not exist (yet)."""
        try:
            _, high = self._consumer.get_watermark_offsets(self._partition, timeout=self.timeout_s, cached=False)
        except KafkaException as exc:
            error: KafkaError = exc.args[0]
            if error.code() in (KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._UNKNOWN_PARTITION,
                                KafkaError._UNKNOWN_TOPIC):
                log.warning("Topic %s does not exist on the %s cluster; reading it as empty", self.topic, self.cluster)
                return None
            raise ConnectError(f"Could not read the end offset of {self.topic}-{self._partition.partition} on the "
                               f"{self.cluster} cluster: {error.str()}") from None
        return int(high)

    def close(self) -> None:
        self._consumer.close()


class OffsetSyncStore:
    """Offset syncs by source topic-partition and their translation (Kafka's ``OffsetSyncStore``).

    Feed it with :meth:`start` (the initial read to the end) and :meth:`update` (later syncs);
    tests and callers without a topic call :meth:`handle` directly. One thread at a time.
    """

    def __init__(self, reader: TopicReader | None = None) -> None:
        self._reader = reader
        self._syncs: dict[tuple[str, int], list[OffsetSync]] = {}
        self.initialization_must_read_to_end = True
        self.read_to_end = False

    def start(self, initialization_must_read_to_end: bool) -> None:
        """Read every sync so far; before this, nothing is translated.

        With ``initialization_must_read_to_end`` (the previous checkpoints could not be read),
        only the last sync per partition is kept from the initial read, so no checkpoint can go
        below one an earlier generation of the store may have emitted.
        """
        self.initialization_must_read_to_end = initialization_must_read_to_end
        self.update()
        self.read_to_end = True

    def update(self) -> None:
        """Apply the syncs written since the last read."""
        if self._reader is not None:
            count = self._reader.read_to_end(self._handle_message)
            log.debug("Read %d offset syncs from %s", count, self._reader.topic)

    def _handle_message(self, message: Message) -> None:
        key, value = message.key(), message.value()
        if key is None or value is None:
            return
        try:
            self.handle(decode_offset_sync(key, value))
        except DataError as exc:
            log.warning("Ignoring a record of %s at offset %s: %s", message.topic(), message.offset(), exc)

    def handle(self, sync: OffsetSync) -> None:
        """``handleRecord``: one sync read from the topic, in topic order."""
        key = (sync.topic, sync.partition)
        syncs = self._syncs.get(key)
        if syncs is None:
            self._syncs[key] = [sync] * SYNCS_PER_PARTITION
            return
        updated = list(syncs)  # the update reads the original while it writes the copy
        self._update_sync_array(updated, syncs, sync)
        self._syncs[key] = updated

    def translate_downstream(self, group: str, topic: str, partition: int, upstream_offset: int) -> int | None:
        """The target offset a consumer at ``upstream_offset`` may resume from without skipping.

        None when it cannot be translated yet (no sync, initial read unfinished); -1 when the
        upstream offset is older than every kept sync.
        """
        if not self.read_to_end:
            log.debug("translateDownstream(%s,%s-%s,%s): skipped (initial read of offset syncs in progress)",
                      group, topic, partition, upstream_offset)
            return None
        syncs = self._syncs.get((topic, partition))
        if syncs is None:
            log.debug("translateDownstream(%s,%s-%s,%s): skipped (no offset sync)", group, topic, partition,
                      upstream_offset)
            return None
        sync = next((s for s in syncs if s.upstream_offset <= upstream_offset), syncs[-1])
        if sync.upstream_offset > upstream_offset:
            log.debug("translateDownstream(%s,%s-%s,%s): skipped (%s is ahead of the group)", group, topic,
                      partition, upstream_offset, sync)
            return -1
        step = 0 if sync.upstream_offset == upstream_offset else 1
        return sync.downstream_offset + step

    def syncs(self, topic: str, partition: int) -> list[OffsetSync]:
        """The 64 kept syncs of a partition, newest first (for tests and diagnostics)."""
        return list(self._syncs.get((topic, partition), ()))

    def _update_sync_array(self, syncs: list[OffsetSync], original: list[OffsetSync], sync: OffsetSync) -> None:
        """``updateSyncArray``: keep invariants A-D with the new sync at index 0."""
        only_load_last = not self.read_to_end and self.initialization_must_read_to_end
        if only_load_last or sync.upstream_offset < syncs[0].upstream_offset:  # or an upstream rewind
            syncs[:] = [sync] * SYNCS_PER_PARTITION
            return
        replacement, replacement_index = sync, 0
        syncs[0] = replacement
        for current in range(1, SYNCS_PER_PARTITION):
            previous = current - 1
            while True:  # choose a value from the old array as the replacement, if one fits
                old = original[replacement_index]
                is_recent = _invariant_b(syncs[previous], old, previous, current)
                separated_from_previous = _invariant_c(syncs[previous], old, previous)
                following = current + 1
                separated_from_next = following >= SYNCS_PER_PARTITION or _invariant_c(old, syncs[following], current)
                after = replacement_index + 1
                duplicate = after < SYNCS_PER_PARTITION and old is original[after]
                promote = is_recent and separated_from_previous and separated_from_next
                if promote:
                    replacement = old
                skip_old = duplicate or not separated_from_previous
                if promote or skip_old:
                    replacement_index += 1
                if not (replacement_index < current and skip_old):
                    break
            if _invariant_b(syncs[previous], syncs[current], previous, current):
                break  # holds here, so for every later index too
            syncs[current] = replacement

    def close(self) -> None:
        if self._reader is not None:
            self._reader.close()

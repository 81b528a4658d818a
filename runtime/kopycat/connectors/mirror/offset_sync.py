"""MirrorMaker 2's offset syncs: which target offset a source offset was copied to.

The records are those of Kafka's ``OffsetSync``, written with Kafka's protocol ``Schema``
types, so MM2's ``MirrorCheckpointConnector`` (and ``OffsetSyncStore``) can read ours:

    key   = STRING topic (int16 length, UTF-8) + INT32 partition      (the *source* topic-partition)
    value = INT64 upstreamOffset + INT64 offset (downstream)          (big-endian)

When to write one follows ``OffsetSyncWriter`` and its ``PartitionState``: a sync is sent at
once when the partition has none yet this run, when the translated offset would lag by
``offset.lag.max`` or more, when the source skipped an offset (compaction, transactions) or
the target went backwards; otherwise it waits for the next ``commit()`` (so a quiet topic is
not left with stale syncs). At most 10 syncs are in flight; the rest wait, newest per partition.
"""

from __future__ import annotations

import logging
import struct
import time
from collections.abc import Mapping, Sequence
from typing import Any, Final, NamedTuple

from confluent_kafka import KafkaError, Message, Producer

from kopycat.api.errors import DataError

__all__ = ["OffsetSync", "OffsetSyncWriter", "PartitionState", "decode_offset_sync", "encode_key",
           "encode_value"]

log = logging.getLogger(__name__)

MAX_OUTSTANDING_OFFSET_SYNCS: Final = 10
_INT32: Final = struct.Struct(">i")
_TWO_INT64: Final = struct.Struct(">qq")
_INT16: Final = struct.Struct(">h")


class OffsetSync(NamedTuple):
    """Source ``topic``/``partition`` at ``upstream_offset`` was written at ``downstream_offset``."""

    topic: str
    partition: int
    upstream_offset: int
    downstream_offset: int


def encode_key(topic: str, partition: int) -> bytes:
    """``OffsetSync.recordKey()``: Kafka's STRING (int16 length + UTF-8) then INT32."""
    data = topic.encode()
    if len(data) > 0x7FFF:
        raise DataError(f"Topic name of {len(data)} bytes is too long for an offset sync (32767 at most)")
    return _INT16.pack(len(data)) + data + _INT32.pack(partition)


def encode_value(upstream_offset: int, downstream_offset: int) -> bytes:
    """``OffsetSync.recordValue()``: two big-endian INT64s, upstream first."""
    return _TWO_INT64.pack(upstream_offset, downstream_offset)


def decode_offset_sync(key: bytes, value: bytes) -> OffsetSync:
    """``OffsetSync.deserializeRecord``; DataError when the bytes are not an offset sync."""
    try:
        (length,) = _INT16.unpack_from(key, 0)
        topic = key[2:2 + length].decode()
        (partition,) = _INT32.unpack_from(key, 2 + length)
        upstream, downstream = _TWO_INT64.unpack(value)
    except (struct.error, UnicodeDecodeError) as exc:
        raise DataError(f"Not an MM2 offset sync record (key {key[:60]!r}, value {value[:40]!r}): {exc}") from None
    return OffsetSync(topic, partition, upstream, downstream)


class PartitionState:
    """When one source partition needs a sync (Kafka's ``OffsetSyncWriter.PartitionState``)."""

    __slots__ = ("last_sync_downstream", "max_offset_lag", "previous_downstream", "previous_upstream",
                 "should_sync")

    def __init__(self, max_offset_lag: int) -> None:
        self.previous_upstream = -1
        self.previous_downstream = -1
        self.last_sync_downstream = -1
        self.max_offset_lag = max_offset_lag
        self.should_sync = False

    def update(self, upstream: int, downstream: int) -> bool:
        """Record a copied offset; True when a sync should be sent now."""
        if (self.last_sync_downstream == -1  # no sync yet in this task's lifetime
                # translateDownstream lands one past the last sync, hence the + 1
                or downstream - (self.last_sync_downstream + 1) >= self.max_offset_lag
                or upstream - self.previous_upstream != 1  # a skipped upstream offset
                or downstream < self.previous_downstream):  # a truncated downstream topic
            self.last_sync_downstream = downstream
            self.should_sync = True
        self.previous_upstream = upstream
        self.previous_downstream = downstream
        return self.should_sync

    def reset(self) -> None:
        self.should_sync = False


class OffsetSyncWriter:
    """Queues and produces offset syncs to partition 0 of the offset-syncs topic.

    Called from the task's engine thread only (``commit_record`` and ``commit``); the producer's
    delivery reports are served by :meth:`fire_pending` with ``poll(0)``. A delayed sync is
    always its partition's latest copied offset, which the partition's :class:`PartitionState`
    holds already: ``delayed`` maps the partitions that have one (in Kafka's LinkedHashMap
    order) to their state, so the per-record path allocates nothing.
    """

    def __init__(self, producer_config: Mapping[str, Any], topic: str, max_offset_lag: int) -> None:
        self.topic = topic
        self.max_offset_lag = max_offset_lag
        self.states: dict[tuple[str, int], PartitionState] = {}
        self.delayed: dict[tuple[str, int], PartitionState] = {}
        self.pending: dict[tuple[str, int], OffsetSync] = {}
        self.outstanding = 0
        # Kafka 4's producer default (librdkafka's too), unless the config sets one: with 0, every
        # sync woke the sender thread at once and the task's thread lost ~130 us per sync to it.
        self._producer = Producer({"linger.ms": 5, **producer_config})

    def maybe_queue(self, key: tuple[str, int], upstream: int, downstream: int) -> bool:
        """``maybeQueueOffsetSyncs`` for source topic-partition ``key``: send soon when the state
        says so, else at the next commit.

        True when a sync became pending, so the caller fires (and polls the producer) only then,
        not for every acknowledged record.
        """
        state = self.states.get(key)
        if state is None:
            state = self.states[key] = PartitionState(self.max_offset_lag)
        if state.update(upstream, downstream):
            self.delayed.pop(key, None)
            self.pending[key] = OffsetSync(key[0], key[1], upstream, downstream)
            state.reset()
            return True
        self.delayed[key] = state
        return False

    def queue_acknowledged(self, key: tuple[str, int], upstreams: Sequence[int], downstreams: Sequence[int]) -> None:
        """:meth:`maybe_queue` for each of one partition's acknowledged records, in order, firing
        every due sync at once (as MM2's ``commitRecord`` does).

        The same decisions record by record, with the partition's state in locals for the run:
        the per-record path is a few comparisons instead of two method calls.
        """
        state = self.states.get(key)
        if state is None:
            state = self.states[key] = PartitionState(self.max_offset_lag)
        lag, last_sync = self.max_offset_lag, state.last_sync_downstream
        previous_up, previous_down = state.previous_upstream, state.previous_downstream
        last_due = False
        for upstream, downstream in zip(upstreams, downstreams, strict=True):
            last_due = (last_sync == -1 or downstream - (last_sync + 1) >= lag
                        or upstream - previous_up != 1 or downstream < previous_down)
            if last_due:  # rare: about once per offset.lag.max records
                last_sync = state.last_sync_downstream = downstream
                state.previous_upstream, state.previous_downstream = upstream, downstream
                self.delayed.pop(key, None)
                self.pending[key] = OffsetSync(key[0], key[1], upstream, downstream)
                self.fire_pending()
            previous_up, previous_down = upstream, downstream
        state.previous_upstream, state.previous_downstream = previous_up, previous_down
        if upstreams and not last_due:
            self.delayed[key] = state

    def promote_delayed(self) -> None:
        """``promoteDelayedOffsetSyncs``: every delayed sync becomes pending (at each commit)."""
        for key, state in self.delayed.items():
            self.pending[key] = OffsetSync(key[0], key[1], state.previous_upstream, state.previous_downstream)
        self.delayed.clear()

    def fire_pending(self) -> None:
        """``firePendingOffsetSyncs``: produce pending syncs while fewer than 10 are in flight."""
        producer = self._producer
        producer.poll(0)
        while self.pending and self.outstanding < MAX_OUTSTANDING_OFFSET_SYNCS:
            key = next(iter(self.pending))
            sync = self.pending.pop(key)
            self.outstanding += 1
            producer.produce(self.topic, key=encode_key(sync.topic, sync.partition),
                             value=encode_value(sync.upstream_offset, sync.downstream_offset),
                             partition=0, on_delivery=self._delivered)

    def _delivered(self, error: KafkaError | None, message: Message) -> None:
        self.outstanding -= 1
        if error is not None:
            log.error("Failure sending offset sync to %s: %s", self.topic, error.str())

    def close(self, timeout_s: float = 5.0) -> None:
        """Send what is pending, then wait for the acknowledgements, for up to ``timeout_s`` in all.

        MM2 leaves syncs beyond the ten in flight to its next periodic commit; a bounded run has
        no next commit, so they are sent here, or a partition whose first syncs waited behind a slow
        first connection (a TLS/SASL login) would have none until the next run.
        """
        deadline = time.monotonic() + timeout_s
        while self.pending and time.monotonic() < deadline:
            self._producer.poll(0.05)  # serves delivery reports, freeing room in flight
            self.fire_pending()
        left = self._producer.flush(max(0.0, deadline - time.monotonic()))
        if left:
            log.warning("%d offset syncs to %s were not acknowledged before closing", left, self.topic)

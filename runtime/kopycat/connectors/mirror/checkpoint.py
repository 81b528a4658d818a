"""MirrorMaker 2's checkpoints: a consumer group's source offset and where to resume on the target.

The records are those of Kafka's ``Checkpoint`` (connect/mirror-client), written with Kafka's
protocol ``Schema`` types (big-endian; STRING = int16 length + UTF-8, never null), so MM2's
``MirrorClient.remoteConsumerOffsets`` and ``RemoteClusterUtils.translateOffsets`` read ours:

    key   = STRING consumerGroupId + STRING topic + INT32 partition     (topic as named on the target)
    value = INT16 version (0) + INT64 upstreamOffset + INT64 offset (downstream) + STRING metadata

One record per group and partition goes to partition 0 of ``<source alias>.checkpoints.internal``
on the target, with source partition ``{"group", "topic", "partition"}`` and offset
``{"offset": 0}`` (``Checkpoint.connectPartition`` and ``MirrorUtils.wrapOffset(0)``).
:class:`CheckpointStore` holds the last checkpoint per group and partition, read back from that
topic when a task starts (Kafka's ``CheckpointStore``), so checkpoints never move backwards.
"""

from __future__ import annotations

import logging
import struct
from typing import Any, Final, NamedTuple

from confluent_kafka import Message

from kopycat.api.errors import ConnectError, DataError
from kopycat.connectors.mirror.offset_sync_store import TopicReader

__all__ = ["CHECKPOINT_VERSION", "Checkpoint", "CheckpointStore", "decode_checkpoint", "decode_string",
           "encode_checkpoint_key", "encode_checkpoint_value", "encode_string"]

log = logging.getLogger(__name__)

CHECKPOINT_VERSION: Final = 0
_INT16: Final = struct.Struct(">h")
_INT32: Final = struct.Struct(">i")
_VALUE_V0: Final = struct.Struct(">hqq")  # version, upstreamOffset, offset


def encode_string(text: str, field: str) -> bytes:
    """Kafka's protocol ``Type.STRING``: int16 byte length, then UTF-8; DataError past 32767 bytes."""
    data = text.encode()
    if len(data) > 0x7FFF:
        raise DataError(f"{field} of {len(data)} bytes is too long for an MM2 record (32767 bytes at most): "
                        f"{text[:60]!r}...")
    return _INT16.pack(len(data)) + data


def decode_string(data: bytes, position: int) -> tuple[str, int]:
    """A protocol STRING at ``position``; the text and the position after it."""
    (length,) = _INT16.unpack_from(data, position)
    start = position + 2
    if length < 0 or start + length > len(data):
        raise struct.error(f"string length {length} at byte {position} runs past the record's {len(data)} bytes")
    return data[start:start + length].decode(), start + length


class Checkpoint(NamedTuple):
    """``group`` at ``upstream_offset`` of a source partition resumes at ``downstream_offset`` of
    ``topic``/``partition`` on the target (Kafka's ``Checkpoint``)."""

    group: str
    topic: str
    partition: int
    upstream_offset: int
    downstream_offset: int
    metadata: str = ""

    def connect_partition(self) -> dict[str, Any]:
        """``Checkpoint.connectPartition``: the source partition of the checkpoint record."""
        return {"group": self.group, "topic": self.topic, "partition": self.partition}


def encode_checkpoint_key(checkpoint: Checkpoint) -> bytes:
    """``Checkpoint.recordKey()``: STRING group, STRING topic, INT32 partition."""
    return (encode_string(checkpoint.group, "Consumer group id") + encode_string(checkpoint.topic, "Topic name")
            + _INT32.pack(checkpoint.partition))


def encode_checkpoint_value(checkpoint: Checkpoint) -> bytes:
    """``Checkpoint.recordValue()``: INT16 version 0, INT64 upstream, INT64 downstream, STRING metadata."""
    return (_VALUE_V0.pack(CHECKPOINT_VERSION, checkpoint.upstream_offset, checkpoint.downstream_offset)
            + encode_string(checkpoint.metadata, "Offset metadata"))


def decode_checkpoint(key: bytes, value: bytes) -> Checkpoint:
    """``Checkpoint.deserializeRecord``; DataError when the bytes are not a version 0 checkpoint."""
    try:
        group, position = decode_string(key, 0)
        topic, position = decode_string(key, position)
        (partition,) = _INT32.unpack_from(key, position)
        version, upstream, downstream = _VALUE_V0.unpack_from(value, 0)
        if version != CHECKPOINT_VERSION:
            raise struct.error(f"version {version}, but only version 0 exists")
        metadata, _ = decode_string(value, _VALUE_V0.size)
    except (struct.error, UnicodeDecodeError) as exc:
        raise DataError(f"Not an MM2 checkpoint record (key {key[:60]!r}, value {value[:60]!r}): {exc}") from None
    return Checkpoint(group, topic, partition, upstream, downstream, metadata)


class CheckpointStore:
    """The last checkpoint per group and target partition (Kafka's ``CheckpointStore``).

    :meth:`load` reads the checkpoints topic once, keeping the task's groups; afterwards the
    task :meth:`update`\\ s it with what it emits. ``load`` answers whether the read succeeded:
    if not, the offset sync store keeps only the newest syncs of its initial read.
    """

    def __init__(self, groups: set[str]) -> None:
        self.groups = set(groups)
        self.checkpoints: dict[str, dict[tuple[str, int], Checkpoint]] = {}
        self.initialized = False

    def load(self, reader: TopicReader | None) -> bool:
        """Read the checkpoints topic to its end (then the reader is closed); True on success."""
        found: dict[str, dict[tuple[str, int], Checkpoint]] = {}
        ok = True
        if reader is not None:
            try:
                reader.read_to_end(lambda message: self._read(message, found))
            except (ConnectError, RuntimeError) as exc:
                log.info("Could not load the checkpoints topic %s (checkpoints emitted before this task started "
                         "are not known, so translation may degrade): %s", reader.topic, exc)
                found, ok = {}, False
            finally:
                reader.close()
        self.checkpoints = found
        self.initialized = True
        return ok

    def _read(self, message: Message, found: dict[str, dict[tuple[str, int], Checkpoint]]) -> None:
        key, value = message.key(), message.value()
        if key is None or value is None:
            return
        try:
            checkpoint = decode_checkpoint(key, value)
        except DataError as exc:
            log.warning("Ignored an invalid checkpoint record at offset %s: %s", message.offset(), exc)
            return
        if checkpoint.group in self.groups:
            found.setdefault(checkpoint.group, {})[(checkpoint.topic, checkpoint.partition)] = checkpoint

    def update(self, group: str, checkpoints: dict[tuple[str, int], Checkpoint]) -> None:
        self.checkpoints.setdefault(group, {}).update(checkpoints)

    def get(self, group: str) -> dict[tuple[str, int], Checkpoint] | None:
        return self.checkpoints.get(group)

    def is_more_recent(self, checkpoint: Checkpoint) -> bool:
        """``checkpointIsMoreRecent``: new, an upstream rewind, or a downstream advance."""
        last = (self.checkpoints.get(checkpoint.group) or {}).get((checkpoint.topic, checkpoint.partition))
        if last is None or checkpoint.upstream_offset < last.upstream_offset:
            return True
        return checkpoint.downstream_offset > last.downstream_offset

    def converted_upstream_offsets(self) -> dict[str, dict[tuple[str, int], tuple[int, str]]]:
        """``computeConvertedUpstreamOffset``: per group, target partition -> (offset, metadata)."""
        return {group: {tp: (c.downstream_offset, c.metadata) for tp, c in by_partition.items()}
                for group, by_partition in self.checkpoints.items()}

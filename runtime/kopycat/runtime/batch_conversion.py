"""Consumed messages to SinkRecordBatches: the columnar path of the sink runner.

Beyond Kafka Connect (DESIGN.md §2, columnar fast path). When the task takes batches of some
value types (:meth:`SinkTask.batch_value_types`) and no transform is configured, the runner splits each consumed
batch into runs of one topic partition and offers each run to the value converter's
:meth:`~kopycat.api.converter.Converter.to_arrow_array`. A run it decodes to one of those
types becomes one :class:`~kopycat.api.record_batch.SinkRecordBatch`; any other run (headers, a
key the key converter rejects, a value the converter will not decode as columns, another type)
goes through
:class:`~kopycat.runtime.message_conversion.MessageConverter` and ``put`` as records, in order, so
error handling, the dead letter queue and the results are the record path's own.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Sequence
from dataclasses import replace
from itertools import chain
from typing import overload

from confluent_kafka import Message

from kopycat.api.data import Type
from kopycat.api.record_batch import SinkRecordBatch
from kopycat.runtime.task_parts import TaskParts

__all__ = ["KafkaOffsets", "KafkaTimestamps", "Piece", "RecordBatchConverter"]


class KafkaTimestamps(Sequence[int | None]):
    """Messages' timestamps in ms (None: the message has none), read from the messages when asked for.

    Most batch writers never look at them, and confluent-kafka builds a (type, ms) tuple per
    message on each read, so mapping them up front would cost every batch for the few that use them.
    """

    __slots__ = ("_messages",)

    def __init__(self, messages: Sequence[Message]) -> None:
        self._messages = messages

    def __len__(self) -> int:
        return len(self._messages)

    def __iter__(self) -> Iterator[int | None]:
        return (timestamp if kind else None for kind, timestamp in map(Message.timestamp, self._messages))

    @overload
    def __getitem__(self, index: int) -> int | None: ...

    @overload
    def __getitem__(self, index: slice) -> KafkaTimestamps: ...

    def __getitem__(self, index: int | slice) -> int | None | KafkaTimestamps:
        if isinstance(index, slice):
            return KafkaTimestamps(self._messages[index])
        kind, timestamp = self._messages[index].timestamp()
        return timestamp if kind else None


class KafkaOffsets(Sequence[int]):
    """Messages' offsets, read from the messages when asked for; equal to any sequence of the same ints.

    Batch writers read a batch's first and last offsets, or bisect for a few: listing them all up
    front made an int object per message (16 ns of the file sink's ~140 ns of conversion each).
    """

    __slots__ = ("_messages",)

    def __init__(self, messages: Sequence[Message]) -> None:
        self._messages = messages

    def __len__(self) -> int:
        return len(self._messages)

    def __iter__(self) -> Iterator[int]:
        return map(Message.offset, self._messages)

    @overload
    def __getitem__(self, index: int) -> int: ...

    @overload
    def __getitem__(self, index: slice) -> KafkaOffsets: ...

    def __getitem__(self, index: int | slice) -> int | KafkaOffsets:
        if isinstance(index, slice):
            return KafkaOffsets(self._messages[index])
        return self._messages[index].offset()

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Sequence) and not isinstance(other, str | bytes):
            return list(self) == list(other)
        return NotImplemented

    def __repr__(self) -> str:
        return f"KafkaOffsets({list(self)})"


Piece = tuple[Sequence[Message], SinkRecordBatch | None]
"""Consecutive messages of one run, and their batch (None: they go through the record path)."""


def _joined_records(pieces: list[Piece]) -> list[Piece]:
    """Neighbouring record pieces as one, so the record path gets one put() for them."""
    joined: list[Piece] = []
    for piece in pieces:
        if joined and joined[-1][1] is None and piece[1] is None:
            joined[-1] = ([*joined[-1][0], *piece[0]], None)
        else:
            joined.append(piece)
    return joined


def _split(batch: SinkRecordBatch, runs: Sequence[Sequence[Message]]) -> list[Piece]:
    """``batch`` (the runs' records, in order) cut back into one batch per run and its partition."""
    pieces: list[Piece] = []
    start = 0
    for run in runs:
        stop = start + len(run)
        pieces.append((run, replace(batch.slice(start, stop), kafka_partition=run[0].partition())))
        start = stop
    return pieces


class RecordBatchConverter:
    """One topic partition's messages to SinkRecordBatches with ``parts``' converters, where they can be."""

    def __init__(self, parts: TaskParts, types: Collection[Type]) -> None:
        self.parts = parts
        self.types = frozenset(types)
        self._record_topics: set[str] = set()
        """Topics whose values decoded to a type the task does not take: not decoded as columns again."""

    def convert_runs(self, runs: Sequence[Sequence[Message]],
                     messages: Sequence[Message] | None = None) -> list[Piece]:
        """Runs of one topic partition each, in order, as pieces.

        Plain runs of one topic are decoded in one converter call and the columns sliced per run:
        a consumed batch interleaves partitions in runs of a few hundred records, and each
        converter call has a fixed cost (a JSON reader call, a few array operations per column)
        that a whole batch spreads over thousands of records. ``messages``,
        when given, are the runs' messages in order, already joined by the caller.
        """
        if len(runs) > 1 and all(run[0].topic() == runs[0][0].topic() for run in runs):
            if messages is None:
                messages = list(chain.from_iterable(runs))
            values = list(map(Message.value, messages))
            if None not in values and not any(map(Message.headers, messages)):
                whole = self._batch(messages, values)
                if whole is not None:
                    return _split(whole, runs)
        return [piece for run in runs for piece in self.convert(run)]

    def convert(self, messages: Sequence[Message]) -> list[Piece]:
        """The run in order as pieces: batches, and the messages that must be records.

        A message with headers or a null value (a tombstone) is cut out of the run as a record,
        so one such message does not send its neighbours down the record path too.
        """
        values = list(map(Message.value, messages))
        if None not in values and not any(map(Message.headers, messages)):
            return [(messages, self._batch(messages, values))]
        headers = list(map(Message.headers, messages))
        pieces: list[Piece] = []
        start = 0  # the first message in no piece yet
        for index in [i for i, (value, header) in enumerate(zip(values, headers, strict=True))
                      if value is None or header]:
            if index > start:
                pieces.append((messages[start:index], self._batch(messages[start:index], values[start:index])))
            pieces.append((messages[index:index + 1], None))
            start = index + 1
        if start < len(messages):
            pieces.append((messages[start:], self._batch(messages[start:], values[start:])))
        return _joined_records(pieces)

    def _batch(self, messages: Sequence[Message], values: list[bytes | None]) -> SinkRecordBatch | None:
        """The messages (no headers, no null value) as one batch; None when the converters cannot."""
        first = messages[0]
        topic = first.topic()
        if topic in self._record_topics:
            return None
        keys = list(map(Message.key, messages))
        if keys.count(None) != len(keys) and not self._keys_convert(topic, keys):
            return None
        decoded = self.parts.value_converter.to_arrow_array(topic, values)
        if decoded is None:
            return None
        if decoded.schema.type not in self.types:  # a topic's values keep their type: stop trying
            self._record_topics.add(topic)
            return None
        return SinkRecordBatch(topic, first.partition(), decoded.schema, decoded.value,
                               KafkaOffsets(messages), KafkaTimestamps(messages))

    def _keys_convert(self, topic: str, keys: list[bytes | None]) -> bool:
        """Keys are converted, as on the record path, though a batch does not keep them: a bad key fails there."""
        try:
            self.parts.key_converter.to_connect_data_batch(topic, keys)
        except Exception:  # noqa: BLE001 - the record path reports it under errors.tolerance
            return False
        return True

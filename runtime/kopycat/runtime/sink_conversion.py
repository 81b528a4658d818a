"""A consumed batch to what a SinkTask takes: columns where it takes them, else records.

Kafka Connect's ``WorkerSinkTask.convertMessages`` and ``convertAndTransformRecord``, with
Kopycat's columnar path (DESIGN.md §2): a task that takes batches of some value types
(:meth:`SinkTask.batch_value_types`), with no transform configured, gets
:class:`~kopycat.api.record_batch.SinkRecordBatch` es from
:class:`~kopycat.runtime.batch_conversion.RecordBatchConverter`; everything else goes through
:class:`~kopycat.runtime.message_conversion.MessageConverter` and the transforms as records.
Either way a batch becomes a list of :data:`~kopycat.runtime.batch_conversion.Piece` s, in
order: a piece with a batch goes to ``put_batch``, one without to :meth:`SinkConversion.records`
and ``put``.

Thread-safety: :meth:`SinkConversion.convert` may run on a helper thread while the runner's
thread consumes (the converters' batch decode is, see ``Converter.to_arrow_array``);
:meth:`SinkConversion.records` runs on the runner's thread, at put, so its errors, skips and
dead letter queue records come in the order of the puts.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from functools import partial
from itertools import chain
from typing import NamedTuple

from confluent_kafka import Message

from kopycat.api.data import Type
from kopycat.api.records import SinkRecord, TopicPartition
from kopycat.runtime.batch_conversion import Piece, RecordBatchConverter
from kopycat.runtime.bounds import RunSummary
from kopycat.runtime.errors import ConsumedRecord, ProcessingContext, Stage
from kopycat.runtime.message_conversion import MessageConverter
from kopycat.runtime.task_parts import TaskParts

__all__ = ["ConvertedBatch", "Inside", "SinkConversion"]

Inside = Callable[[list[Sequence[Message]], Sequence[Message]], tuple[Sequence[Message], list[Sequence[Message]]]]
"""Which of a batch's messages (and runs of one partition) are to be put (see ``RunRange.inside``)."""


class ConvertedBatch(NamedTuple):
    """One accepted batch, ready to put.

    Its runs of one partition, its messages and their bytes (keys and values; counted while
    converting, off the consuming thread when helpers convert), those inside the run's range, the
    pieces to put, and the partitions read to their planned end once it was accepted (a later
    batch's accept must not move the runner's positions past records not yet put).
    """

    runs: list[Sequence[Message]]
    messages: Sequence[Message]
    size: int
    inside: Sequence[Message]
    pieces: list[Piece]
    finished: frozenset[TopicPartition]


class SinkConversion:
    """Converts with ``parts``' converters and transforms; skips and filters count in ``summary``."""

    def __init__(self, parts: TaskParts, summary: RunSummary, batch_types: Collection[Type], inside: Inside) -> None:
        self.parts = parts
        self.summary = summary
        self.inside = inside
        self._records = MessageConverter(parts, summary)
        self._columns = RecordBatchConverter(parts, batch_types) if batch_types and not len(parts.transforms) else None

    @property
    def decodes_off_the_gil(self) -> bool:
        """Whether batches convert to columns mostly outside the GIL (their conversion is then worth a
        helper thread: see ``Converter.arrow_decode_off_the_gil``)."""
        return self._columns is not None and self.parts.value_converter.arrow_decode_off_the_gil

    def convert(self, runs: list[Sequence[Message]], finished: frozenset[TopicPartition]) -> ConvertedBatch:
        """A batch (runs of one partition) as pieces: decoded to columns where it can be; the
        record path converts at put (:meth:`records`)."""
        messages = runs[0] if len(runs) == 1 else list(chain.from_iterable(runs))
        # len(message) is its value's length (0 for none): no value object per message
        size = sum(map(len, messages)) + sum(map(len, filter(None, map(Message.key, messages))))
        inside, inside_runs = self.inside(runs, messages)
        pieces: list[Piece] = [(inside, None)] if self._columns is None else self._columns.convert_runs(inside_runs,
                                                                                                     inside)
        return ConvertedBatch(runs, messages, size, inside, pieces, finished)

    def records(self, messages: Sequence[Message]) -> list[SinkRecord]:
        """The record path: the messages converted and transformed (those a transform drops count as filtered)."""
        records = self._records.convert(messages) if messages else []
        outgoing = self._transform(records)
        self.summary.filtered += len(records) - len(outgoing)
        return outgoing

    def _transform(self, records: list[SinkRecord]) -> list[SinkRecord]:
        chain = self.parts.transforms
        if not len(chain) or not records:
            return records
        try:
            return chain.apply_batch(records)
        except Exception:  # noqa: BLE001 - find the bad record(s) one by one, with error handling
            out = []
            for record in records:
                result = self.parts.retry.execute(lambda r=record: (chain.apply(r),), Stage.TRANSFORMATION,
                                                  type(chain), partial(_context_of, record))
                if result is None:
                    self.summary.skipped += 1
                elif result[0] is not None:
                    out.append(result[0])
            return out


def _context_of(record: SinkRecord) -> ProcessingContext:
    return ProcessingContext(consumer_record=ConsumedRecord(
        record.original_topic or record.topic, record.original_kafka_partition or 0,
        record.original_kafka_offset or 0))

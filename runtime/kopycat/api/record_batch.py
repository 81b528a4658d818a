"""SinkRecordBatch and SourceRecordBatch: consecutive records as Arrow columns.

Beyond Kafka Connect (DESIGN.md §2, columnar fast path). Python objects per record cap a sink's
throughput, so a sink task that writes columns (Parquet, Arrow, a bulk loader) can take its
records as one Arrow array of values instead: :meth:`SinkTask.put_batch
<kopycat.api.task.SinkTask.put_batch>`, for the value types it names in :meth:`SinkTask.batch_value_types
<kopycat.api.task.SinkTask.batch_value_types>`. The engine builds a batch only when its value converter
decodes the bytes to an Arrow array directly (:meth:`Converter.to_arrow_array
<kopycat.api.converter.Converter.to_arrow_array>`), no transform is configured and the messages
carry no headers; otherwise the task gets ``put(records)`` as always.

A batch holds what a columnar writer needs: the value schema and the values, row i being the
record at ``offsets[i]``, and each record's Kafka timestamp. Keys were converted (a bad key still
fails or is tolerated as on the record path) but are not kept, nor are headers: a task that needs
them takes no batches.

On the source side the same holds the other way round: a source task may return
:class:`SourceRecordBatch` items from ``poll()`` among its records, and the engine encodes each
a column at a time when the run allows, or sends it as records, in order either way.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kopycat.api.data import Schema
from kopycat.api.records import SourceRecord, TopicPartition

__all__ = ["SinkRecordBatch", "SourceRecordBatch"]


@dataclass(frozen=True, slots=True)
class SinkRecordBatch:
    """Records ``offsets[0]..offsets[-1]`` (ascending, gaps allowed) of one topic partition, as columns.

    ``values`` is a ``pyarrow.Array`` of :func:`kopycat.api.arrow.to_arrow_type` of ``value_schema``
    (a ``StructArray`` for a STRUCT: ``pyarrow.RecordBatch.from_struct_array`` makes it a batch);
    no value is null.
    ``timestamps[i]`` is record i's Kafka timestamp in ms (None when it has none).
    """

    topic: str
    kafka_partition: int
    value_schema: Schema
    values: Any  # pyarrow.Array; typed loosely so the SPI does not need pyarrow at import
    offsets: Sequence[int]
    timestamps: Sequence[int | None]

    def __len__(self) -> int:
        return len(self.offsets)

    @property
    def topic_partition(self) -> TopicPartition:
        return TopicPartition(self.topic, self.kafka_partition)

    def slice(self, start: int, stop: int) -> SinkRecordBatch:
        """Records ``start..stop-1`` of this batch (positions, not offsets); zero-copy for the values."""
        return SinkRecordBatch(self.topic, self.kafka_partition, self.value_schema,
                               self.values.slice(start, stop - start), self.offsets[start:stop],
                               self.timestamps[start:stop])


@dataclass(frozen=True, slots=True)
class SourceRecordBatch:
    """Consecutive records of one source partition for one topic, as Arrow columns.

    The source-side half of the columnar fast path (DESIGN.md §2): a task that reads columns
    (a database result, a file's lines) returns these from :meth:`SourceTask.poll
    <kopycat.api.task.SourceTask.poll>`, alone or between records, and the engine encodes them a
    column at a time (:meth:`Converter.from_arrow_array <kopycat.api.converter.Converter.from_arrow_array>`),
    with no Python object per record. When the run needs records one by one (a transform,
    acknowledgements, exactly-once) or a converter cannot encode the columns, the engine sends
    :meth:`records` instead, in the same place among the task's other items.

    ``values`` is a ``pyarrow.Array`` of :func:`kopycat.api.arrow.to_arrow_type` of ``value_schema``
    (a ``StructArray`` for a STRUCT), row i being record i's value; ``keys`` likewise for
    ``key_schema``, or None for records without keys. ``source_offset`` is the offset of the
    *last* record: the engine commits a batch as a whole, so a crash re-sends at most the
    batches since the last commit, as the record path re-sends its records. ``timestamp`` (ms)
    stamps every record; None lets the producer stamp them.

    ``record_factory``, when given, builds the task's own records for these rows, in order: each
    with its row's own source offset (the last one ``source_offset``), values as the task's record
    path makes them. It must describe the same rows (the same bytes once converted); the engine
    calls it only for :meth:`records`, so the columnar path does not pay for it. Without it the
    records are read back from the columns, each carrying ``source_offset``.
    """

    source_partition: Mapping[str, Any] | None
    source_offset: Mapping[str, Any] | None
    topic: str
    value_schema: Schema
    values: Any  # pyarrow.Array; typed loosely so the SPI does not need pyarrow at import
    key_schema: Schema | None = None
    keys: Any = None
    kafka_partition: int | None = None
    timestamp: int | None = None
    record_factory: Callable[[], Sequence[SourceRecord]] | None = None

    def __len__(self) -> int:
        return len(self.values)

    def records(self) -> list[SourceRecord]:
        """The same records one by one, for the record path (a converter without columns, a
        transform): the ``record_factory``'s, else values as
        :func:`kopycat.api.arrow_values.from_arrow_array` reads them, each carrying the batch's offset."""
        if self.record_factory is not None:
            return list(self.record_factory())
        from kopycat.api.arrow_values import from_arrow_array  # pyarrow only where batches are used

        values = from_arrow_array(self.value_schema, self.values)
        keys = [None] * len(values) if self.keys is None else from_arrow_array(self.key_schema, self.keys)
        new = SourceRecord.of
        return [new(self.source_partition, self.source_offset, self.topic, self.kafka_partition,
                    self.key_schema, key, self.value_schema, value, self.timestamp)
                for key, value in zip(keys, values, strict=True)]

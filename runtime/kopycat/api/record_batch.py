"""SinkRecordBatch: consecutive records of one topic partition as Arrow columns.

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
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kopycat.api.data import Schema
from kopycat.api.records import TopicPartition

__all__ = ["SinkRecordBatch"]


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

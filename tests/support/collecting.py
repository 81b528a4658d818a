"""A sink connector that keeps what put() received, per connector name, for tests to inspect.

Options (connector props): ``retriable.failures`` makes the first N put() calls raise
RetriableError; ``fail.on.put`` makes put() call N (from 1) raise a non-retriable error;
``seek.to`` seeks every opened partition to that offset in open().
"""

from __future__ import annotations

import sys
from collections import defaultdict
from collections.abc import Collection, Mapping, Sequence

from kopycat.api import (
    ConfigDef,
    RetriableError,
    SinkConnector,
    SinkRecord,
    SinkRecordBatch,
    SinkTask,
    TopicPartition,
)
from kopycat.api.config import ConfigType
from kopycat.api.data import Type

PUT_CALLS: dict[str, list[tuple[list[SinkRecord], bool]]] = defaultdict(list)
"""connector name -> (batch, whether put() accepted it) for every call, in order."""


class CollectingSinkConnector(SinkConnector):
    def start(self, props: Mapping[str, str]) -> None:
        self.props = dict(props)

    def task_class(self) -> type[SinkTask]:
        return CollectingSinkTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self.props) for _ in range(max_tasks)]

    def stop(self) -> None:
        pass

    def config(self) -> ConfigDef:
        return (ConfigDef()
                .define("retriable.failures", ConfigType.INT, 0)
                .define("fail.on.put", ConfigType.INT, 0)
                .define("seek.to", ConfigType.LONG, None))


class CollectingSinkTask(SinkTask):
    def start(self, props: Mapping[str, str]) -> None:
        values = CollectingSinkConnector().config().parse(props)
        self.name = props["name"]
        self.failures_left = values["retriable.failures"]
        self.fail_on_put = values["fail.on.put"]
        self.puts = 0
        self.seek_to = values["seek.to"]

    def open(self, partitions: Collection[TopicPartition]) -> None:
        if self.seek_to is not None:
            self.context.offset({tp: self.seek_to for tp in partitions})

    def put(self, records: Sequence[SinkRecord]) -> None:
        self.puts += 1
        if self.puts == self.fail_on_put:
            PUT_CALLS[self.name].append((list(records), False))
            raise ValueError("the destination refused the batch")
        if self.failures_left:
            self.failures_left -= 1
            PUT_CALLS[self.name].append((list(records), False))
            raise RetriableError("destination busy")
        PUT_CALLS[self.name].append((list(records), True))

    def stop(self) -> None:
        pass


def delivered(name: str) -> list[SinkRecord]:
    """Records of the put() calls that succeeded, in order."""
    return [record for batch, ok in PUT_CALLS[name] if ok for record in batch]


BATCH_CALLS: dict[str, list[SinkRecordBatch | list[SinkRecord]]] = defaultdict(list)
"""connector name -> what each put_batch() (a batch) or put() (a list of records) call got, in order."""


class CollectingBatchSinkConnector(CollectingSinkConnector):
    """Like CollectingSinkConnector, but its task accepts batches of columns."""

    def task_class(self) -> type[SinkTask]:
        return CollectingBatchSinkTask


class CollectingBatchSinkTask(CollectingSinkTask):
    def batch_value_types(self) -> frozenset[Type]:
        return frozenset({Type.STRUCT})

    def put_batch(self, batch: SinkRecordBatch) -> None:
        BATCH_CALLS[self.name].append(batch)

    def put(self, records: Sequence[SinkRecord]) -> None:
        BATCH_CALLS[self.name].append(list(records))


PAUSE_AT, RESUME_AT, REWIND_AT = 3, 6, 8
"""The put_batch calls (from 1) after which PausingBatchSinkTask pauses the batch's partition, resumes
it, and seeks the batch's partition back to offset 0."""
CONTEXT_ACTIONS: dict[str, dict[str, tuple[int, int]]] = defaultdict(dict)
"""connector name -> "paused"/"rewound" -> (partition, the last offset put before the action)."""
PAUSED_PUTS: dict[str, list[tuple[int, int]]] = defaultdict(list)
"""connector name -> (partition, first offset) of every batch put while its partition was paused."""
SWITCH_INTERVALS: dict[str, float] = {}
"""connector name -> the GIL switch interval during PausingBatchSinkTask's first put_batch."""


class PausingBatchSinkTask(CollectingBatchSinkTask):
    """A batch task that pauses, resumes and rewinds partitions between batches, as a task may."""

    def start(self, props: Mapping[str, str]) -> None:
        super().start(props)
        self.paused: TopicPartition | None = None
        self.batches = 0

    def put_batch(self, batch: SinkRecordBatch) -> None:
        tp = TopicPartition(batch.topic, batch.kafka_partition)
        if tp == self.paused:
            PAUSED_PUTS[self.name].append((batch.kafka_partition, batch.offsets[0]))
        super().put_batch(batch)
        self.batches += 1
        SWITCH_INTERVALS.setdefault(self.name, sys.getswitchinterval())
        if self.batches == PAUSE_AT:
            self.context.pause(tp)
            self.paused = tp
            CONTEXT_ACTIONS[self.name]["paused"] = (batch.kafka_partition, batch.offsets[-1])
        elif self.batches == RESUME_AT and self.paused is not None:
            self.context.resume(self.paused)
            self.paused = None
        if self.batches == REWIND_AT:
            self.context.offset({tp: 0})
            CONTEXT_ACTIONS[self.name]["rewound"] = (batch.kafka_partition, batch.offsets[-1])


class RewindingOnceBatchSinkTask(CollectingBatchSinkTask):
    """A batch task that seeks the first batch's partition back to offset 0 after that batch, once."""

    def start(self, props: Mapping[str, str]) -> None:
        super().start(props)
        self.rewound = False

    def put_batch(self, batch: SinkRecordBatch) -> None:
        super().put_batch(batch)
        if not self.rewound:
            self.rewound = True
            self.context.offset({TopicPartition(batch.topic, batch.kafka_partition): 0})


class CommittingThenFailingBatchSinkTask(CollectingBatchSinkTask):
    """A batch task that asks for a commit after its first batch and refuses its second."""

    def put_batch(self, batch: SinkRecordBatch) -> None:
        if BATCH_CALLS[self.name]:
            raise ValueError("the destination refused the batch")
        super().put_batch(batch)
        self.context.request_commit()

"""Where a sink run stops in each partition: the planned end offsets and the messages before them.

A bounded sink run (an Airflow copy task, ``kopycat run``) reads each assigned partition up to an
end planned before it started: the offsets the plan snapshot, or the first offset stamped at or
after a data interval's end (Kafka's ``offsetsForTimes``), or, for a backfill window, the log end.
:class:`PlannedEnds` keeps those ends, takes the consumed messages before them (a partition is
paused once its end is reached) and says when every partition is done. A run without ends (the
continuous worker) takes every message.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Collection, Sequence
from itertools import repeat
from operator import is_not

from confluent_kafka import Consumer, KafkaError, Message
from confluent_kafka import TopicPartition as KafkaTopicPartition

from kopycat.api.errors import ConnectError
from kopycat.api.records import TopicPartition
from kopycat.runtime.batch_conversion import partition_runs
from kopycat.runtime.bounds import Bounds

__all__ = ["PlannedEnds", "offsets_at"]


def offsets_at(consumer: Consumer, partitions: Sequence[TopicPartition], timestamp_ms: int, timeout_s: float,
               owner: str) -> dict[TopicPartition, int]:
    """Per partition, the first offset stamped at/after ``timestamp_ms``, else the high watermark."""
    asked = [KafkaTopicPartition(tp.topic, tp.partition, timestamp_ms) for tp in partitions]
    offsets: dict[TopicPartition, int] = {}
    for found in consumer.offsets_for_times(asked, timeout=timeout_s):
        tp = TopicPartition(found.topic, found.partition)
        if found.error is not None:
            raise ConnectError(f"Task {owner} could not find the offset of time {timestamp_ms} in "
                               f"{tp.topic}-{tp.partition}: {found.error}")
        if found.offset < 0:  # no record at or after that time (yet): the high watermark
            found.offset = consumer.get_watermark_offsets(KafkaTopicPartition(tp.topic, tp.partition),
                                                          timeout=timeout_s)[1]
        offsets[tp] = found.offset
    return offsets


class PlannedEnds:
    """The end of each partition a run reads to, and which partitions got there (or to their log end)."""

    def __init__(self, bounds: Bounds, owner: str, timeout_s: float, one_topic: bool = False) -> None:
        self.bounds = bounds
        self.owner = owner
        self.timeout_s = timeout_s
        self.one_topic = one_topic
        """The consumer reads partitions of one topic only (see :func:`partition_runs`)."""
        self.ends: dict[TopicPartition, int] = {}
        self.finished: set[TopicPartition] = set()
        """Partitions read to their planned end (paused)."""
        self.at_log_end: set[TopicPartition] = set()
        """Partitions whose last message read was the end of their log (an end-of-partition event)."""

    def resolve(self, consumer: Consumer, partitions: Sequence[TopicPartition]) -> None:
        """The planned end of each newly assigned partition: given, or found from the window."""
        bounds = self.bounds
        if bounds.end_offsets is not None:
            for tp in partitions:
                self.ends[tp] = bounds.end_offsets.get(tp, 0)
        elif bounds.windowed:  # late records stamped inside the window may sit anywhere after its start
            self.ends.update(self._log_ends(consumer, partitions))
        elif bounds.window_end_ms is not None:
            self.ends.update(offsets_at(consumer, partitions, bounds.window_end_ms, self.timeout_s, self.owner))

    def _log_ends(self, consumer: Consumer, partitions: Sequence[TopicPartition]) -> dict[TopicPartition, int]:
        """Where each partition ends now, as this consumer can read it (LSO under read_committed)."""
        return {tp: consumer.get_watermark_offsets(KafkaTopicPartition(tp.topic, tp.partition),
                                                   timeout=self.timeout_s, cached=False)[1]
                for tp in partitions}

    def all_reached(self) -> bool:
        """Every partition with a planned end was read to it (False for a run without ends)."""
        return bool(self.ends) and all(tp in self.finished for tp in self.ends)

    def accept(self, consumer: Consumer, messages: list[Message]) -> list[Sequence[Message]]:
        """Data messages before their partition's end, as runs of one partition; partitions at their end
        are paused.

        The partition's bookkeeping is done once per run of one partition, not per message, and a
        batch without end-of-partition events takes whole runs (this is on the hot path).
        """
        if any(map(is_not, map(Message.error, messages), repeat(None))):  # (KafkaError == None raises)
            return partition_runs(self._accept_with_events(consumer, messages), self.one_topic)
        accepted: list[Sequence[Message]] = []
        for run in partition_runs(messages, self.one_topic):
            last = run[-1]
            tp = TopicPartition(last.topic(), last.partition())
            self.at_log_end.discard(tp)  # in consumption order: a later end event re-adds it
            end = self.ends.get(tp)
            if end is not None and last.offset() >= end - 1:  # the message before the end closes the range
                run = run[:bisect_left(list(map(Message.offset, run)), end)]
                self._finish(consumer, tp, end)
            if run:
                accepted.append(run)
        return accepted

    def _accept_with_events(self, consumer: Consumer, messages: list[Message]) -> list[Message]:
        """:meth:`accept` for a batch holding end-of-partition events (or errors), message by message."""
        accepted: list[Message] = []
        run_key: tuple[str, int] | None = None
        end: int | None = None
        tp = TopicPartition("", 0)
        for message in messages:
            error = message.error()
            if error is not None:
                if error.code() != KafkaError._PARTITION_EOF:
                    raise ConnectError(f"Task {self.owner} failed to consume from topic '{message.topic()}' "
                                       f"partition {message.partition()}: {error.str()}")
                self._reached_log_end(consumer, message)
                run_key = None  # a message after the end event starts a new run
                continue
            key = (message.topic(), message.partition())
            if key != run_key:
                run_key, tp = key, TopicPartition(*key)
                self.at_log_end.discard(tp)  # in consumption order: a later end event re-adds it
                end = self.ends.get(tp)
            if end is not None and message.offset() >= end:
                self._finish(consumer, tp, end)
                continue
            accepted.append(message)
            if end is not None and message.offset() == end - 1:
                self._finish(consumer, tp, end)
        return accepted

    def _reached_log_end(self, consumer: Consumer, message: Message) -> None:
        """At the end of a partition's log: done if that is at or past the planned end.

        The end-of-partition event gives the offset after the last *readable* position, so a
        range ending in transaction markers (which never arrive as messages) still completes.
        """
        tp = TopicPartition(message.topic(), message.partition())
        self.at_log_end.add(tp)
        end = self.ends.get(tp)
        if end is not None and message.offset() >= end:
            self._finish(consumer, tp, end)

    def read_again(self, consumer: Consumer, partitions: Collection[TopicPartition],
                   finished_before: Collection[TopicPartition], paused: Collection[TopicPartition]) -> None:
        """Partitions whose fetched records the runner dropped unput and seeked back to: those the
        dropped records took to their planned end (finished since ``finished_before``) are not
        finished, and are resumed unless the task paused them; none but the still finished ones is
        at its log end."""
        reopened = [tp for tp in partitions if tp in self.finished and tp not in finished_before]
        self.finished.difference_update(reopened)
        self.at_log_end.difference_update([tp for tp in partitions if tp not in self.finished])
        resumed = [KafkaTopicPartition(tp.topic, tp.partition) for tp in reopened if tp not in paused]
        if resumed:
            consumer.resume(resumed)

    def _finish(self, consumer: Consumer, tp: TopicPartition, end: int) -> None:
        """Everything before ``end`` was consumed: pause the partition; ``end`` is committed."""
        if tp in self.finished:
            return
        self.finished.add(tp)
        consumer.pause([KafkaTopicPartition(tp.topic, tp.partition)])

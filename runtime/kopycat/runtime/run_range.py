"""The range a sink run reads: where each partition starts, where it ends, which messages count.

Follows the positioning half of Kafka Connect's ``WorkerSinkTask`` (the committed offsets, the
seeks ``SinkTaskContext.offset`` asks for in ``open``), plus Kopycat's bounded runs (DESIGN.md §4):

- :class:`RunRange`: a live run, from the consumer group's committed offset (or where ``open``
  seeks) to the planned end (:class:`PlannedEnds`: the plan's end offsets, or the first offset
  stamped at/after a data interval's end); it commits the group and takes every message;
- :class:`BackfillWindow`: a windowed run (an Airflow backfill), which leaves the group alone.

A consumed batch is accepted as runs of one partition (:func:`partition_runs`), the unit both the
planned ends and the conversions work on.
"""

from __future__ import annotations

import logging
from bisect import bisect_left
from collections.abc import Collection, Mapping, Sequence
from itertools import compress, pairwise
from operator import ne
from typing import Any

from confluent_kafka import Consumer, KafkaError, Message
from confluent_kafka import TopicPartition as KafkaTopicPartition

from kopycat.api.errors import ConnectError
from kopycat.api.records import TopicPartition
from kopycat.runtime.bounds import Bounds

__all__ = ["BackfillWindow", "PlannedEnds", "RunRange", "offsets_at", "partition_runs", "run_range"]

log = logging.getLogger(__name__)


def partition_runs(messages: Sequence[Message], one_topic: bool = False, *,
                   one_partition: bool = False) -> list[Sequence[Message]]:
    """Consecutive messages of one topic partition (a consumed batch holds long runs of each).

    Found with C-level maps and compares, not a Python step per message: this is on the hot path.
    ``one_topic``: the consumer reads a single topic (an assignment of one topic's partitions), so
    the topics need no pass of their own; ``one_partition``: it reads a single partition (an
    assignment of one), so the batch is one run (``messages`` are data messages: no error event
    without a partition among them).
    """
    count = len(messages)
    if not count:
        return []
    if one_partition:
        return [messages]
    keys: list[Any] = list(map(Message.partition, messages))
    if not one_topic:
        topics = list(map(Message.topic, messages))
        if topics.count(topics[0]) != count:
            keys = list(zip(topics, keys, strict=True))
    if keys.count(keys[0]) == count:  # a batch from one of several partitions: no cuts to find
        return [messages]
    cuts = [0, *compress(range(1, count), map(ne, keys[1:], keys[:-1])), count]
    return [messages[start:stop] for start, stop in pairwise(cuts)]


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
    """The end of each partition a run reads to, and which partitions got there (or to their log end).

    The ends are planned before the run starts: the offsets the plan snapshot, or the first offset
    stamped at or after a data interval's end (Kafka's ``offsetsForTimes``), or, for a backfill
    window, the log end. :meth:`accept` takes the consumed messages before them (a partition is
    paused once its end is reached). A run without ends (the continuous worker) takes every message.
    """

    def __init__(self, bounds: Bounds, owner: str, timeout_s: float, one_topic: bool = False, *,
                 one_partition: bool = False) -> None:
        self.bounds = bounds
        self.owner = owner
        self.timeout_s = timeout_s
        self.one_topic = one_topic
        """The consumer reads partitions of one topic only (see :func:`partition_runs`)."""
        self.one_partition = one_partition
        """The consumer reads one partition only (see :func:`partition_runs`)."""
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
        if any(map(Message.error, messages)):  # None, or a KafkaError (always true)
            return partition_runs(self._accept_with_events(consumer, messages), self.one_topic,
                                  one_partition=self.one_partition)
        accepted: list[Sequence[Message]] = []
        for run in partition_runs(messages, self.one_topic, one_partition=self.one_partition):
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


class RunRange:
    """A live run's range: each partition from the group's committed offset, or from where the task's
    ``open`` seeks (a sink keeping its offsets in its destination), to its planned end, if any.

    Every consumed message is inside; the consumer group is committed. The runner asks, per
    partition it is given: where to start (:meth:`open`), which of ``open``'s seeks place the
    consumer (:meth:`placing`), which messages to put (:meth:`inside`) and what to report
    (:meth:`report`).
    """

    commits_group = True
    """Whether the run commits the consumer group (and calls ``pre_commit`` every interval)."""

    def __init__(self, bounds: Bounds, owner: str, timeout_s: float, one_topic: bool = False, *,
                 one_partition: bool = False) -> None:
        self.bounds = bounds
        self.owner = owner
        self.timeout_s = timeout_s
        self.ends = PlannedEnds(bounds, owner, timeout_s, one_topic, one_partition=one_partition)
        self.before: dict[TopicPartition, int | None] = {}
        """Where each partition started, for the report."""

    def open(self, consumer: Consumer, partitions: Sequence[TopicPartition],
             committed: Mapping[TopicPartition, int | None]) -> dict[TopicPartition, int | None]:
        """Newly assigned partitions: where each starts (None: the consumer's reset policy), and their ends."""
        starts = self.starts(consumer, partitions, committed)
        for tp in partitions:
            self.before.setdefault(tp, starts.get(tp))
        self.ends.resolve(consumer, partitions)
        return starts

    def starts(self, consumer: Consumer, partitions: Sequence[TopicPartition],
               committed: Mapping[TopicPartition, int | None]) -> dict[TopicPartition, int | None]:
        """Where each partition starts: the group's committed offset."""
        return dict(committed)

    def placing(self, partitions: Sequence[TopicPartition],
                seeks: Mapping[TopicPartition, int]) -> dict[TopicPartition, int]:
        """The seeks ``open`` asked for that place the consumer: all of them."""
        return dict(seeks)

    def inside(self, runs: list[Sequence[Message]],
               messages: Sequence[Message]) -> tuple[Sequence[Message], list[Sequence[Message]]]:
        """The messages to put, and their runs of one partition: all of them."""
        return messages, runs

    def report(self, tp: TopicPartition, current: int, committed: int | None) -> dict[str, Any]:
        """A partition's line in the run summary: where it started and what the group holds now."""
        return {"topic": tp.topic, "partition": tp.partition, "before": self.before.get(tp), "after": committed}


class BackfillWindow(RunRange):
    """A windowed run's range (``Bounds.window_start_ms``: an Airflow backfill of ``[start, end)``).

    A windowed run copies, per partition, every record stamped inside the window that the live runs
    have already passed. It reads from the first record stamped at/after ``start``
    (``offsets_for_times``: no earlier record is stamped that late) to the partition's *live
    position*, where a live run resumes: the seek ``open`` asks for (a sink keeping its offsets in
    its destination, as the storage sink does with its committed files), else the group's committed
    offset, else the log start (a live run copies everything), unless ``auto.offset.reset=latest``
    (a live run never copies the past, so the window reads to its planned end, the log end).
    Timestamps need not grow with offsets, so a record stamped inside the window may be stored
    after records stamped past its end; reading on to the live position is what makes the copy
    exact. What comes later is the live runs' to copy (into the same time directories): copying it
    here would pass what the live runs hold, and a storage sink, whose recovery resumes after its
    greatest committed offset, would skip the gap.

    Only the records stamped inside the window are put; the others count as ``filtered``. The
    consumer group is read only to report it and never committed, and a seek asked for in ``open``
    only marks the live position (the window placed the consumer). ``pre_commit`` is still called,
    at the end (and when the task requests a commit) rather than every ``offset.flush.interval.ms``,
    so the task writes what it holds at the same points each time.
    """

    commits_group = False

    def __init__(self, bounds: Bounds, owner: str, timeout_s: float, one_topic: bool = False, *,
                 one_partition: bool = False, live_starts_at_log_end: bool = False) -> None:
        super().__init__(bounds, owner, timeout_s, one_topic, one_partition=one_partition)
        self.live_starts_at_log_end = live_starts_at_log_end
        """``auto.offset.reset=latest``: a live run without committed offsets starts at the log end."""
        self.group_offsets: dict[TopicPartition, int | None] = {}
        """The group's committed offsets, untouched: reported, and the live positions' fallback."""

    def starts(self, consumer: Consumer, partitions: Sequence[TopicPartition],
               committed: Mapping[TopicPartition, int | None]) -> dict[TopicPartition, int | None]:
        """Where each partition starts: its first record stamped at/after the window's start."""
        for tp in partitions:
            self.group_offsets.setdefault(tp, committed.get(tp))
        assert self.bounds.window_start_ms is not None
        return dict(offsets_at(consumer, partitions, self.bounds.window_start_ms, self.timeout_s, self.owner))

    def placing(self, partitions: Sequence[TopicPartition],
                seeks: Mapping[TopicPartition, int]) -> dict[TopicPartition, int]:
        """None: the window placed the consumer; ``open``'s seeks end each partition at its live position."""
        ends = self.ends.ends
        for tp in partitions:
            live = seeks.get(tp, self.group_offsets.get(tp))
            if live is None and self.live_starts_at_log_end:
                continue  # a live run would start at the log end: the whole window is this run's
            end = ends.get(tp)
            cap = live if live is not None else 0
            if end is None or cap < end:
                ends[tp] = cap
                log.info("Task %s: windowed run of %s-%d stops at the live position %d", self.owner, tp.topic,
                         tp.partition, cap)
        return {}

    def inside(self, runs: list[Sequence[Message]],
               messages: Sequence[Message]) -> tuple[Sequence[Message], list[Sequence[Message]]]:
        """The messages stamped inside ``[window_start_ms, window_end_ms)``; unstamped ones are outside."""
        start, end = self.bounds.window_start_ms, self.bounds.window_end_ms
        assert start is not None and end is not None
        inside = []
        for message in messages:
            timestamp_type, timestamp = message.timestamp()
            if timestamp_type and start <= timestamp < end:
                inside.append(message)
        return inside, partition_runs(inside, self.ends.one_topic, one_partition=self.ends.one_partition)

    def report(self, tp: TopicPartition, current: int, committed: int | None) -> dict[str, Any]:
        """The range copied (before/after) and the group's untouched offset."""
        return {"topic": tp.topic, "partition": tp.partition, "before": self.before.get(tp), "after": current,
                "committed": self.group_offsets.get(tp)}


def run_range(bounds: Bounds, owner: str, timeout_s: float, *, one_topic: bool,
              live_starts_at_log_end: bool, one_partition: bool = False) -> RunRange:
    """The range of a run with ``bounds``: a backfill window when they have a window start."""
    if bounds.windowed:
        return BackfillWindow(bounds, owner, timeout_s, one_topic, one_partition=one_partition,
                              live_starts_at_log_end=live_starts_at_log_end)
    return RunRange(bounds, owner, timeout_s, one_topic, one_partition=one_partition)

"""The accepted batches a sink run holds between accepting and putting them, converting meanwhile.

Beyond Kafka Connect, whose ``WorkerSinkTask`` converts and puts each batch before polling the
next. Consuming (Python objects per message) and the columnar decode (mostly a JSON parse that
releases the GIL) can share two cores instead of taking turns on one: an assigned run whose task
takes batches, decoded mostly outside the GIL (``Converter.arrow_decode_off_the_gil``), keeps up to
:data:`BATCHES_AHEAD` accepted batches converting on :data:`CONVERTING_THREADS` helper threads while
its thread consumes the next. A decode under the GIL (StringConverter's join of the bytes) would
only take turns with the consuming thread: 4M 100-byte lines to a file copied in 2.14-2.23 s with
two helpers, 2.01-2.09 s without, for the same CPU. Every other run has depth 0: each batch is
converted and put before the next is consumed, as in Kafka, which a subscribed run needs (a
rebalance inside ``consume`` commits what was put, and may revoke a partition whose records would
otherwise wait to be put).

Thread-safety: all methods are called from the runner's thread; only the conversions run on the
helper threads.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Collection, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from itertools import chain
from typing import Final, NamedTuple

from confluent_kafka import Consumer, Message
from confluent_kafka import TopicPartition as KafkaTopicPartition

from kopycat.api.records import TopicPartition
from kopycat.interpreter_settings import longer_switch_interval
from kopycat.runtime.run_range import PlannedEnds
from kopycat.runtime.sink_conversion import ConvertedBatch

__all__ = ["BATCHES_AHEAD", "CONVERTING_THREADS", "ConvertingAhead"]

BATCHES_AHEAD: Final = 2
"""Accepted batches that convert or wait to be put while the next is consumed: with one, the
consuming thread waited whenever a decode ran long."""
CONVERTING_THREADS: Final = BATCHES_AHEAD
"""Helper threads converting those batches, one each: the JSON parse releases the GIL, so two
threads parse two batches at once while the run's thread waits on the older one."""

Convert = Callable[[list[Sequence[Message]], frozenset[TopicPartition]], ConvertedBatch]


class _Ahead(NamedTuple):
    """An accepted batch (its runs of one partition) and its conversion, running or done."""

    runs: list[Sequence[Message]]
    converted: Future[ConvertedBatch]


class ConvertingAhead:
    """Accepted batches, oldest first, each converting (on a helper thread) or converted.

    ``depth`` batches may wait while the next is consumed (0: none, each is put at once). Batches
    are put in order on the runner's thread; a converted batch that no stop condition lets the run
    put is dropped: its offsets never reached the runner's positions, so no commit passes them.
    """

    def __init__(self, consumer: Consumer, ends: PlannedEnds, convert: Convert, depth: int, name: str) -> None:
        self.consumer = consumer
        self.ends = ends
        self.convert = convert
        self.depth = depth
        self.name = name
        self._pending: deque[_Ahead] = deque()
        self._threads: ThreadPoolExecutor | None = None

    @contextmanager
    def running(self) -> Iterator[None]:
        """While the run's loop runs: the helper threads, and the longer GIL switch interval they need
        (three threads take turns on the GIL: see :mod:`kopycat.interpreter_settings`)."""
        if not self.depth:
            yield
            return
        with (ThreadPoolExecutor(CONVERTING_THREADS, thread_name_prefix=f"{self.name}-convert") as threads,
              longer_switch_interval()):
            self._threads = threads
            try:
                yield
            finally:
                self._threads = None

    def empty(self) -> bool:
        return not self._pending

    def add(self, runs: list[Sequence[Message]], finished: frozenset[TopicPartition]) -> None:
        """Start converting an accepted batch; ``finished``: the partitions at their planned end once it was."""
        if self._threads is None:
            converted: Future[ConvertedBatch] = Future()
            converted.set_result(self.convert(runs, finished))
        else:
            converted = self._threads.submit(self.convert, runs, finished)
        self._pending.append(_Ahead(runs, converted))

    def due(self, more: bool) -> ConvertedBatch | None:
        """The oldest batch, converted, when its turn to be put came: ``depth`` batches wait, or
        nothing ``more`` was consumed (the run is at its ends or idle)."""
        if self._pending and (len(self._pending) >= self.depth or not more):
            return self._pending.popleft().converted.result()
        return None

    def drop_fetched_too_early(self, messages: list[Message], seeked: Collection[TopicPartition],
                               finished_at_put: frozenset[TopicPartition], paused: Collection[TopicPartition]) -> None:
        """Drop the batches accepted before the task's last put changed its seeks or pauses, and the
        batch just consumed (``messages``: the caller accepts none of it).

        They were fetched from where the task may no longer want to read, so each partition they
        held records of is read again from the first of those (the task's own seek in ``seeked``
        wins), as Kafka's consumer keeps a paused partition's fetched records for after its resume.
        A partition that one of them took to its planned end is open again
        (:meth:`PlannedEnds.read_again`).
        """
        dropped = [message for ahead in self._pending for run in ahead.runs for message in run]
        self._pending.clear()  # a conversion still running is left to finish unread
        first: dict[TopicPartition, int] = {}
        for message in chain(dropped, messages):  # in consumption order: the first one read wins
            if message.error() is None:
                first.setdefault(TopicPartition(message.topic(), message.partition()), message.offset())
        for tp, offset in first.items():
            if tp not in seeked:
                self.consumer.seek(KafkaTopicPartition(tp.topic, tp.partition, offset))
        self.ends.read_again(self.consumer, first.keys(), finished_at_put, paused)

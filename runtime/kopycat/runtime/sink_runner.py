"""Runs one SinkTask: consume -> convert -> transforms -> put -> flush/pre_commit -> commit.

Follows Kafka Connect's ``WorkerSinkTask``. Offsets live in the consumer group
``connect-<connector>`` (Kafka's name), so a Kafka Connect cluster and Kopycat see the same
progress. The group is committed only with what ``pre_commit`` returns: at-least-once, and
exactly-once for sinks that keep offsets in their destination (they return nothing and seek
with ``context.offset`` in ``open``).

Two ways to get partitions:

- *subscribed* (``topics``/``topics.regex``, standalone and continuous runs): the group assigns
  them; revoked partitions are committed and closed first, as Kafka's rebalance listener does;
- *assigned* (bounded Airflow runs): the plan gives the partitions and their end offsets; the
  run starts at the group's committed offsets and stops when every partition reached its end.

A *windowed* run (``Bounds.window_start_ms``, an Airflow backfill of ``[start, end)``) copies, per
partition, every record stamped inside the window that the live runs have already passed: it reads
from the first record stamped at/after ``start`` (``offsets_for_times``: no earlier record is
stamped that late) to the partition's *live position*, where a live run resumes (the seek ``open``
asks for, as a sink keeping its offsets in its destination does, else the group's committed
offset), keeping only the records stamped inside the window. Timestamps need not grow with
offsets, so a record stamped inside the window may be stored after records stamped past its end;
reading on to the live position is what makes the copy exact. What comes later is the live runs'
to copy (into the same time directories): a storage sink must never hold a file past its live
position, as its recovery resumes after its greatest committed offset and would skip the gap.
Records stamped outside the window are counted as ``filtered``. The consumer group is never
committed and a seek asked for in ``open`` only marks the live position (the window placed the consumer);
``pre_commit`` is still called, at the end (and when the task requests a commit) rather than
every ``offset.flush.interval.ms``, so the task writes what it holds at the same points each time.

A ``RetriableError`` from ``put`` pauses fetching and hands the *same* batch to ``put`` again
after ``context.timeout`` (or a backoff), as Kafka does; any other error fails the task with the
batch's topic, partitions and offsets in the message. Bad records in conversion and
transformation follow ``errors.tolerance`` (dead letter queue included).

Thread-safety: ``run`` executes on one thread; ``stop`` may be called from any other. An assigned
run whose task takes batches converts the batches it accepted (up to ``BATCHES_AHEAD``) on
``CONVERTING_THREADS`` helper threads while ``run``'s thread consumes the next (the task itself is
only ever called from ``run``'s thread; converters are, see ``Converter.to_arrow_array``).
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Callable, Collection, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from functools import partial
from itertools import chain
from typing import Any, Final, NamedTuple

from confluent_kafka import OFFSET_INVALID, Consumer, KafkaException, Message
from confluent_kafka import TopicPartition as KafkaTopicPartition

from kopycat.api.errors import ConnectError, RetriableError
from kopycat.api.record_batch import SinkRecordBatch
from kopycat.api.records import SinkRecord, TopicPartition
from kopycat.api.task import SinkTask
from kopycat.consumer_assignment import assign_with_metadata
from kopycat.interpreter_settings import longer_switch_interval
from kopycat.group_offsets import consumer_committed
from kopycat.kafka import resets_to_latest
from kopycat.runtime.batch_conversion import Piece, RecordBatchConverter, partition_runs
from kopycat.runtime.bounds import Bounds, StopReason, StopWatch
from kopycat.runtime.planned_ends import PlannedEnds, offsets_at
from kopycat.runtime.errors import ProcessingContext, Stage
from kopycat.runtime.message_conversion import MessageConverter
from kopycat.runtime.sink_task_context import WorkerSinkTaskContext
from kopycat.runtime.task_parts import TaskId, TaskParts
from kopycat.runtime.worker_task import WorkerTask

__all__ = ["SinkTaskRunner"]

log = logging.getLogger(__name__)

_RETRY_BACKOFF_S = 1.0


BATCHES_AHEAD: Final = 2
"""Accepted batches that convert or wait to be put while the next is consumed (see
:meth:`SinkTaskRunner._loop_converting_ahead`)."""
CONVERTING_THREADS: Final = BATCHES_AHEAD
"""Helper threads converting those batches, one each: alternated 1M-record file-sink runs took
4.70 s with two against 5.01 s with one (medians of 8, two faster in all 8 pairs); the JSON parse
releases the GIL, so two batches parse at once while the run's thread waits on the older one."""


class _Converted(NamedTuple):
    """One consumed batch, ready to put: its runs of one partition, its messages and their bytes
    (keys and values; counted while converting, off the consuming thread when helpers convert), those
    inside the window (all of them outside windowed runs), the columnar pieces (None: the record
    path) and the partitions read to their planned end once it was accepted (a later batch's
    accept must not move ``current`` past records not yet put)."""

    runs: list[Sequence[Message]]
    messages: Sequence[Message]
    size: int
    inside: Sequence[Message]
    pieces: list[Piece] | None
    finished: frozenset[TopicPartition]


class _Ahead(NamedTuple):
    """An accepted batch (its runs of one partition) and its conversion, running or done."""

    runs: list[Sequence[Message]]
    converted: Future[_Converted]


class SinkTaskRunner(WorkerTask):
    """Drives one :class:`SinkTask` until stopped, failed or a :class:`Bounds` condition holds."""

    def __init__(self, task_id: TaskId, task: SinkTask, task_props: Mapping[str, str], parts: TaskParts,
                 *, consumer_config: Mapping[str, Any], topics: Sequence[str] = (), topics_regex: str = "",
                 assignment: Collection[TopicPartition] | None = None, batch_size: int = 5_000,
                 offset_commit_interval_ms: int = 60_000, offset_commit_timeout_ms: int = 5_000,
                 bounds: Bounds | None = None, at_most_once: bool = False) -> None:
        super().__init__(task_id, bounds)
        self.at_most_once = at_most_once
        self.task = task
        self.task_props = dict(task_props)
        self.parts = parts
        self.consumer_config = dict(consumer_config)
        if bounds is not None and bounds.bounded:
            # ranges may end in transaction markers; "caught up" means every partition reached its end
            self.consumer_config["enable.partition.eof"] = True
        self.subscription = [f"^{topics_regex}$"] if topics_regex else list(topics)
        self.fixed_assignment = None if assignment is None else [TopicPartition(*tp) for tp in assignment]
        self.batch_size = batch_size
        self.commit_interval_s = offset_commit_interval_ms / 1000
        self.commit_timeout_s = offset_commit_timeout_ms / 1000
        self._converter = MessageConverter(parts, self.summary)
        self._batches: RecordBatchConverter | None = None  # the columnar path, when the task takes it
        self.context = WorkerSinkTaskContext(self.task_props)
        self.current: dict[TopicPartition, int] = {}      # next offset after what put() got
        self.committed: dict[TopicPartition, int] = {}
        self._before: dict[TopicPartition, int | None] = {}
        self._consumer: Consumer | None = None
        self._task_started = False
        one_topic = self.fixed_assignment is not None and len({tp.topic for tp in self.fixed_assignment}) == 1
        self.ends = PlannedEnds(self.bounds, str(task_id), self.commit_timeout_s * 6, one_topic)
        self._group_offsets: dict[TopicPartition, int | None] = {}  # a windowed run's untouched group offsets

    # ------------------------------------------------------------------ lifecycle (WorkerTask hooks)

    def stop(self) -> None:
        """End the run at the next batch boundary (any thread)."""
        super().stop()
        self.parts.retry.stop()

    def final_offset_commit(self, failed: bool) -> None:
        """The last pre_commit and group commit; after a failure nothing is committed, as in Kafka."""
        if not failed:
            self._commit(final=True)

    def initialize_and_start(self) -> None:
        self.task.initialize(self.context)
        self.task.start(self.task_props)
        self._task_started = True
        types = self.task.batch_value_types()
        if types and not len(self.parts.transforms):
            self._batches = RecordBatchConverter(self.parts, types)
        self._consumer = Consumer(self.consumer_config)
        if self.fixed_assignment is None:
            if not self.subscription:
                raise ConnectError(f"Task {self.id} has no topics to consume: set topics or topics.regex")
            self._consumer.subscribe(self.subscription, on_assign=self._on_assign, on_revoke=self._on_revoke,
                                     on_lost=self._on_revoke)
        else:
            self._assign(self.fixed_assignment)
        log.info("Task %s started (%s)", self.id, type(self.task).__name__)

    def close(self) -> None:
        consumer, self._consumer = self._consumer, None
        if self._task_started:
            try:
                if self.context.assigned:
                    self.task.close(set(self.context.assigned))
            finally:
                self._task_started = False
                self.task.stop()
        if consumer is not None:
            consumer.close()
        self.parts.close()

    # ------------------------------------------------------------------ partitions

    def _assign(self, partitions: Sequence[TopicPartition]) -> None:
        consumer = self._consumer
        assert consumer is not None
        opened = self._opened(partitions, self._start_offsets(partitions))
        assign_with_metadata(consumer, opened, self.commit_timeout_s * 6)

    def _on_assign(self, consumer: Consumer, partitions: list[KafkaTopicPartition]) -> None:
        tps = [TopicPartition(p.topic, p.partition) for p in partitions]
        consumer.assign(self._opened(tps, self._start_offsets(tps)))

    def _start_offsets(self, partitions: Sequence[TopicPartition]) -> dict[TopicPartition, int | None]:
        """Where each partition starts: the group's committed offset, or a window's first offset.

        A windowed run reads the committed offsets only to report them (they do not move).
        """
        committed = self._committed([KafkaTopicPartition(tp.topic, tp.partition) for tp in partitions])
        starts = {TopicPartition(c.topic, c.partition): (c.offset if c.offset >= 0 else None) for c in committed}
        if not self.bounds.windowed:
            return starts
        for tp in partitions:
            self._group_offsets.setdefault(tp, starts.get(tp))
        assert self.bounds.window_start_ms is not None
        return offsets_at(self._consumer, partitions, self.bounds.window_start_ms,  # type: ignore[arg-type]
                          self.commit_timeout_s * 6, str(self.id))

    def _committed(self, partitions: list[KafkaTopicPartition]) -> list[KafkaTopicPartition]:
        """The group's committed offsets, retried while its coordinator is not ready (a fresh cluster)."""
        assert self._consumer is not None
        return consumer_committed(self._consumer, partitions, self.commit_timeout_s * 6, self.stopping)

    def _opened(self, partitions: Sequence[TopicPartition],
                starts: Mapping[TopicPartition, int | None]) -> list[KafkaTopicPartition]:
        """Open the partitions in the task; where to start each: committed, or where open() seeked.

        Seeks asked for in open() become the assignment's offsets (librdkafka cannot seek a
        partition before it is fetching).
        """
        windowed = self.bounds.windowed
        for tp in partitions:
            self._before.setdefault(tp, starts.get(tp))
            if starts.get(tp) is not None:
                self.current[tp] = starts[tp]  # type: ignore[assignment]
                if not windowed:
                    self.committed[tp] = starts[tp]  # type: ignore[assignment]
        self.context.assigned.update(partitions)
        assert self._consumer is not None
        self.ends.resolve(self._consumer, partitions)
        self.task.open(list(partitions))
        seeks = {tp: offset for tp, offset in self.context.take_seeks().items() if tp in partitions}
        if windowed:
            self._end_window_at_live_positions(partitions, seeks)
            seeks = {}  # the window places the consumer
        self.current.update(seeks)
        offsets = {**{tp: o for tp, o in starts.items() if o is not None}, **seeks}
        return [KafkaTopicPartition(tp.topic, tp.partition, offsets.get(tp, OFFSET_INVALID)) for tp in partitions]

    def _end_window_at_live_positions(self, partitions: Sequence[TopicPartition],
                                      seeks: Mapping[TopicPartition, int]) -> None:
        """A windowed run stops each partition at its live position: where a live run resumes.

        That is the seek ``open()`` asked for (a sink keeping its offsets in its destination, as the
        storage sink does with its committed files), else the group's committed offset, else the log
        start (a live run copies everything), unless ``auto.offset.reset=latest`` (a live run never
        copies the past, so the window reads to its planned end). Records from there on
        are the live runs' to copy; copying them here would commit past what the live runs hold,
        and a storage sink resuming after its greatest committed offset would skip the gap.
        """
        latest = resets_to_latest(self.consumer_config)
        for tp in partitions:
            live = seeks.get(tp, self._group_offsets.get(tp))
            if live is None and latest:
                continue  # a live run would start at the log end: the whole window is this run's
            end = self.ends.ends.get(tp)
            cap = live if live is not None else 0
            if end is None or cap < end:
                self.ends.ends[tp] = cap
                log.info("Task %s: windowed run of %s-%d stops at the live position %d", self.id, tp.topic,
                         tp.partition, cap)

    def _on_revoke(self, consumer: Consumer, partitions: list[KafkaTopicPartition]) -> None:
        tps = [TopicPartition(p.topic, p.partition) for p in partitions]
        self._commit(only=set(tps))
        self.task.close(tps)
        self.context.assigned.difference_update(tps)
        self.context.paused.difference_update(tps)
        for tp in tps:
            self.current.pop(tp, None)
            self.committed.pop(tp, None)

    # ------------------------------------------------------------------ the loop

    def execute(self, watch: StopWatch) -> StopReason:
        if self._batches is not None and self.fixed_assignment is not None:
            with (ThreadPoolExecutor(CONVERTING_THREADS, thread_name_prefix=f"{self.id}-convert") as converting,
                  longer_switch_interval()):  # three threads take turns on the GIL: see interpreter_settings
                return self._loop_converting_ahead(watch, converting)
        next_commit = time.monotonic() + self.commit_interval_s
        consumer = self._consumer
        assert consumer is not None
        while not self.stopping.is_set():
            if self.ends.all_reached():
                return StopReason.END_OFFSETS
            messages = consumer.consume(self.batch_size, timeout=0.5)
            runs = self.ends.accept(consumer, messages) if messages else []  # runs of one partition
            delivered = self._put(self._convert(runs, frozenset(self.ends.finished))) if runs else 0
            self._apply_context()
            reason = self._after_batch(watch, delivered)
            if reason is not None:
                return reason
            next_commit = self._commit_when_due(next_commit)
        return StopReason.STOPPED

    def _loop_converting_ahead(self, watch: StopWatch, converting: ThreadPoolExecutor) -> StopReason:
        """The loop with the next batches consumed while earlier ones are converted on ``converting``'s threads.

        Consuming (Python objects per message) and the columnar decode (mostly a JSON parse that
        releases the GIL) then share two cores instead of taking turns on one. Up to
        :data:`BATCHES_AHEAD` accepted batches wait or convert while the next is consumed: one
        batch ahead left the consuming thread waiting whenever a decode ran long (alternated
        1M-record file-sink runs, medians of 6: 3.96 s with two ahead, 4.52 s with one, 5.12 s with
        three). Only for assigned runs: no rebalance can revoke a partition while its records wait
        to be put.

        Batches are put in order on this thread, and the task's seeks and pauses are applied after
        each put, as in the plain loop; the batches accepted before that put were fetched too
        early, so a change of the context drops them and the batch just consumed
        (:meth:`_drop_fetched_too_early`). A converted batch that no stop condition lets this run put is
        dropped: its offsets are not in ``current``, so no commit passes them.
        """
        next_commit = time.monotonic() + self.commit_interval_s
        consumer = self._consumer
        assert consumer is not None
        pending: deque[_Ahead] = deque()  # accepted batches, oldest first
        while not self.stopping.is_set():
            if self.ends.all_reached() and not pending:
                return StopReason.END_OFFSETS
            messages = [] if self.ends.all_reached() else consumer.consume(self.batch_size, timeout=0.5)
            delivered = 0
            if pending and (len(pending) == BATCHES_AHEAD or not messages):
                put = pending.popleft().converted.result()
                delivered = self._put(put)
                seeked, paused = self._apply_context()
                if seeked or paused:
                    self._drop_fetched_too_early(pending, messages, seeked, put.finished)
                    messages = []
            runs = self.ends.accept(consumer, messages) if messages else []
            if runs:
                pending.append(_Ahead(runs, converting.submit(self._convert, runs, frozenset(self.ends.finished))))
            reason = self._after_batch(watch, delivered)
            if reason is not None:
                return reason
            next_commit = self._commit_when_due(next_commit)
        return StopReason.STOPPED

    def _after_batch(self, watch: StopWatch, delivered: int) -> StopReason | None:
        if not self.context.assigned or not self.context.assigned <= self.ends.at_log_end:
            watch.touch()  # idle counts only once every partition was read to its end
        return watch.after_batch(delivered)

    def _commit_when_due(self, next_commit: float) -> float:
        """Commit when the task asked or the interval passed; when the next timed commit is due."""
        # a windowed run commits no offsets: pre_commit only at the end, so files are cut the same every run
        timed = not self.bounds.windowed and time.monotonic() >= next_commit
        if self.context.commit_requested or timed:
            self.context.commit_requested = False
            self._commit()
            return time.monotonic() + self.commit_interval_s
        return next_commit

    def _apply_context(self) -> tuple[set[TopicPartition], set[TopicPartition]]:
        """Apply the task's seeks and pauses to the consumer; (the partitions seeked, those paused if changed).

        Records of those partitions consumed before now were fetched from where the task no longer
        wants to read (see :meth:`_drop_fetched_too_early`).
        """
        consumer = self._consumer
        assert consumer is not None
        seeks = self.context.take_seeks()
        for tp, offset in seeks.items():
            consumer.seek(KafkaTopicPartition(tp.topic, tp.partition, offset))
            self.current[tp] = offset
        paused: set[TopicPartition] = set()
        if self.context.pause_changed:
            self.context.pause_changed = False
            assigned = self.context.assigned - self.ends.finished
            paused = self.context.paused & assigned
            resumed = [KafkaTopicPartition(tp.topic, tp.partition) for tp in assigned - self.context.paused]
            if paused:
                consumer.pause([KafkaTopicPartition(tp.topic, tp.partition) for tp in paused])
            if resumed:
                consumer.resume(resumed)
        return set(seeks), paused

    def _drop_fetched_too_early(self, pending: deque[_Ahead], messages: list[Message], seeked: set[TopicPartition],
                                finished_at_put: frozenset[TopicPartition]) -> None:
        """Drop the batches accepted before the task's last put changed its context, and the batch
        just consumed (``messages``: the caller accepts none of it).

        They were fetched from where the task may no longer want to read, so each partition they
        held records of is read again from the first of those (the task's own seek wins), as Kafka's
        consumer keeps a paused partition's fetched records for after its resume. A partition that
        one of them took to its planned end is open again (:meth:`PlannedEnds.read_again`).
        """
        consumer = self._consumer
        assert consumer is not None
        dropped = [message for ahead in pending for run in ahead.runs for message in run]
        pending.clear()  # a conversion still running is left to finish unread
        first: dict[TopicPartition, int] = {}
        for message in chain(dropped, messages):  # in consumption order: the first one read wins
            if message.error() is None:
                first.setdefault(TopicPartition(message.topic(), message.partition()), message.offset())
        for tp, offset in first.items():
            if tp not in seeked:
                consumer.seek(KafkaTopicPartition(tp.topic, tp.partition, offset))
        self.ends.read_again(consumer, first.keys(), finished_at_put, self.context.paused)

    # ------------------------------------------------------------------ stages

    def _convert(self, runs: list[Sequence[Message]], finished: frozenset[TopicPartition]) -> _Converted:
        """Convert a batch (runs of one partition) as the columnar path can; the record path converts at put."""
        messages = runs[0] if len(runs) == 1 else list(chain.from_iterable(runs))
        # len(message) is its value's length (0 for none): no value object per message
        size = sum(map(len, messages)) + sum(map(len, filter(None, map(Message.key, messages))))
        inside = self._inside_window(messages) if self.bounds.windowed else messages
        if self._batches is None:
            pieces = None
        elif inside is messages:
            pieces = self._batches.convert_runs(runs, messages)
        else:
            pieces = self._batches.convert_runs(partition_runs(inside, self.ends.one_topic))
        return _Converted(runs, messages, size, inside, pieces, finished)

    def _put(self, converted: _Converted) -> int:
        """Put one converted batch; returns how many records were consumed."""
        runs, messages, inside = converted.runs, converted.messages, converted.inside
        if self.at_most_once and not self.bounds.windowed:
            self._commit_before_put(runs)
        self.summary.filtered += len(messages) - len(inside)
        if converted.pieces is None:
            self._deliver_records(inside)
        else:
            for piece, batch in converted.pieces:
                if batch is None:
                    self._deliver_records(piece)
                else:
                    self._retrying(partial(self.task.put_batch, batch), len(batch), partial(_describe_batch, batch))
                    self.summary.records += len(batch)
        for run in runs:  # in consumption order: a later run of a partition wins
            last = run[-1]
            self.current[TopicPartition(last.topic(), last.partition())] = last.offset() + 1
        for tp in converted.finished:  # offsets up to the end may hold markers or compacted gaps
            self.current[tp] = max(self.current.get(tp, 0), self.ends.ends[tp])
        self.summary.bytes += converted.size
        return len(messages)

    def _commit_before_put(self, runs: list[Sequence[Message]]) -> None:
        """At-most-once: the consumer group moves past the batch before put() sees it, or nothing is put."""
        positions = {TopicPartition(run[-1].topic(), run[-1].partition()): run[-1].offset() + 1 for run in runs}
        try:
            self._commit_to_group(positions)
        except KafkaException as exc:
            raise ConnectError(f"Task {self.id} could not commit its consumer group past a batch before put(): "
                               f"{exc}; with delivery.guarantee=at_most_once the batch is not put") from exc

    def _deliver_records(self, messages: Sequence[Message]) -> None:
        """The record path: convert, transform, put()."""
        records = self._converter.convert(messages) if messages else []
        outgoing = self._transform(records)
        self.summary.filtered += len(records) - len(outgoing)
        if outgoing:
            self._retrying(partial(self.task.put, outgoing), len(outgoing), partial(_describe, outgoing))
        self.summary.records += len(outgoing)

    def _inside_window(self, messages: Sequence[Message]) -> list[Message]:
        """The messages stamped inside ``[window_start_ms, window_end_ms)``; unstamped ones are outside."""
        start, end = self.bounds.window_start_ms, self.bounds.window_end_ms
        assert start is not None and end is not None
        inside = []
        for message in messages:
            timestamp_type, timestamp = message.timestamp()
            if timestamp_type and start <= timestamp < end:
                inside.append(message)
        return inside

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

    def _retrying(self, put: Callable[[], None], count: int, describe: Callable[[], str]) -> None:
        """put() (or put_batch()) the batch; on RetriableError pause, back off and hand the same batch again."""
        while True:
            try:
                put()
                break
            except RetriableError as exc:
                backoff = (self.context.timeout_ms / 1000 if self.context.timeout_ms is not None
                           else _RETRY_BACKOFF_S)
                log.warning("Task %s: put() of %d records raised a retriable error, retrying the same "
                            "batch in %.1f s: %s", self.id, count, backoff, exc)
                self._pause_all_while(backoff)
                if self.stopping.is_set():
                    raise ConnectError(f"Task {self.id} was stopped while retrying put() of "
                                       f"{describe()}; those offsets are not committed") from exc
            except Exception as exc:
                raise ConnectError(f"Task {self.id}: put() failed on {describe()}; the task stops "
                                   f"and those offsets are not committed: {type(exc).__name__}: {exc}") from exc

    def _pause_all_while(self, seconds: float) -> None:
        consumer = self._consumer
        assert consumer is not None
        assigned = [KafkaTopicPartition(tp.topic, tp.partition) for tp in self.context.assigned]
        consumer.pause(assigned)
        deadline = time.monotonic() + seconds
        while not self.stopping.is_set() and time.monotonic() < deadline:
            consumer.poll(min(0.1, max(0.0, deadline - time.monotonic())))  # keeps group membership
        self.context.pause_changed = True  # resume what the task did not pause itself
        self._apply_context()
        active = [KafkaTopicPartition(tp.topic, tp.partition)
                  for tp in self.context.assigned - self.context.paused - self.ends.finished]
        if active:
            consumer.resume(active)

    # ------------------------------------------------------------------ commits

    def _commit(self, *, final: bool = False, only: set[TopicPartition] | None = None) -> None:
        """pre_commit, then commit what it returned for the partitions still held."""
        consumer = self._consumer
        if consumer is None or not self.context.assigned:
            return
        current = {tp: o for tp, o in self.current.items()
                   if tp in self.context.assigned and (only is None or tp in only)}
        self.parts.retry.flush(self.commit_timeout_s)
        safe = self.task.pre_commit(dict(current))
        if self.bounds.windowed:  # the task wrote what it holds; the group keeps the live offsets
            if final or only:
                self._report_window(current)
            return
        to_commit = {TopicPartition(*tp): o for tp, o in (safe or {}).items()
                     if TopicPartition(*tp) in self.context.assigned and self.committed.get(TopicPartition(*tp)) != o
                     and not (self.at_most_once and o < self.committed.get(TopicPartition(*tp), -1))}
        if to_commit:
            try:
                self._commit_to_group(to_commit)
            except KafkaException as exc:
                if final:
                    raise ConnectError(f"Task {self.id} could not commit offsets {to_commit}: {exc}") from exc
                log.warning("Task %s: offset commit failed, retrying at the next commit: %s", self.id, exc)
                return
        if final or only:
            for tp in current:
                self.summary.offsets[f"{tp.topic}-{tp.partition}"] = {
                    "topic": tp.topic, "partition": tp.partition, "before": self._before.get(tp),
                    "after": self.committed.get(tp)}

    def _commit_to_group(self, offsets: Mapping[TopicPartition, int]) -> None:
        """Commit ``offsets`` to the consumer group, synchronously; KafkaException when it cannot."""
        consumer = self._consumer
        assert consumer is not None
        consumer.commit(offsets=[KafkaTopicPartition(tp.topic, tp.partition, o) for tp, o in offsets.items()],
                        asynchronous=False)
        self.committed.update(offsets)

    def _report_window(self, current: Mapping[TopicPartition, int]) -> None:
        """A windowed run's offsets: the range copied (before/after) and the untouched group offset."""
        for tp in current:
            self.summary.offsets[f"{tp.topic}-{tp.partition}"] = {
                "topic": tp.topic, "partition": tp.partition, "before": self._before.get(tp),
                "after": current[tp], "committed": self._group_offsets.get(tp)}


def _context_of(record: SinkRecord) -> ProcessingContext:
    from kopycat.runtime.errors import ConsumedRecord

    return ProcessingContext(consumer_record=ConsumedRecord(
        record.original_topic or record.topic, record.original_kafka_partition or 0,
        record.original_kafka_offset or 0))


def _describe_batch(batch: SinkRecordBatch) -> str:
    return f"topic '{batch.topic}' partition {batch.kafka_partition} offsets {batch.offsets[0]}-{batch.offsets[-1]}"


def _describe(records: Sequence[SinkRecord]) -> str:
    ranges: dict[tuple[str, int], list[int]] = {}
    for record in records:
        tp = record.topic_partition
        span = ranges.setdefault((tp.topic, tp.partition), [record.kafka_offset, record.kafka_offset])
        span[0], span[1] = min(span[0], record.kafka_offset), max(span[1], record.kafka_offset)
    return "; ".join(f"topic '{t}' partition {p} offsets {a}-{b}" for (t, p), (a, b) in sorted(ranges.items()))

"""Runs one SinkTask: consume -> accept -> convert -> put -> apply the task's context -> commit.

Follows Kafka Connect's ``WorkerSinkTask``. Offsets live in the consumer group
``connect-<connector>`` (Kafka's name), so a Kafka Connect cluster and Kopycat see the same
progress. The group is committed only with what ``pre_commit`` returns: at-least-once, and
exactly-once for sinks that keep offsets in their destination (they return nothing and seek
with ``context.offset`` in ``open``); at-most-once moves it before ``put``
(:mod:`kopycat.runtime.delivery_guarantee`).

Two ways to get partitions:

- *subscribed* (``topics``/``topics.regex``, standalone and continuous runs): the group assigns
  them; revoked partitions are committed and closed first, as Kafka's rebalance listener does;
- *assigned* (bounded runs, the Airflow plan's and the worker's: :mod:`kopycat.runtime.sink_assignment`):
  the run's share of the partitions is given, with their end offsets when it has planned ones.

Where each partition starts and ends, which messages are put and what the summary reports is the
run's range (:mod:`kopycat.runtime.run_range`): a live run from the group's committed offsets to the
planned ends, or a backfill window (see kopycat.runtime.run_range.BackfillWindow).

One batch: ``consume``; the range accepts the messages before each partition's end, as runs of
one partition; :class:`~kopycat.runtime.sink_conversion.SinkConversion` converts them (columns or
records); ``put``/``put_batch``; the seeks and pauses the task asked for are applied; the group is
committed when due. :class:`~kopycat.runtime.converting_ahead.ConvertingAhead` holds the accepted
batches between accepting and putting: none for most runs, two converting on helper threads for
an assigned run whose task takes batches that its value converter decodes mostly outside the GIL.

A ``RetriableError`` from ``put`` pauses fetching and hands the *same* batch to ``put`` again
after ``context.timeout`` (or a backoff), as Kafka does; any other error fails the task with the
batch's topic, partitions and offsets in the message. Bad records in conversion and
transformation follow ``errors.tolerance`` (dead letter queue included).

Thread-safety: ``run`` executes on one thread; ``stop`` may be called from any other. The task is
only ever called from ``run``'s thread; batches ahead convert on helper threads.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from functools import partial
from typing import Any, Final

from confluent_kafka import OFFSET_INVALID, Consumer, KafkaError, KafkaException, Message
from confluent_kafka import TopicPartition as KafkaTopicPartition

from kopycat.api.errors import ConnectError, RetriableError
from kopycat.api.record_batch import SinkRecordBatch
from kopycat.api.records import SinkRecord, TopicPartition
from kopycat.api.task import SinkTask
from kopycat.consumer_assignment import assign_with_metadata
from kopycat.group_offsets import consumer_committed
from kopycat.kafka import resets_to_latest
from kopycat.runtime.bounds import Bounds, StopReason, StopWatch
from kopycat.runtime.converting_ahead import BATCHES_AHEAD, ConvertingAhead
from kopycat.runtime.delivery_guarantee import AtLeastOnce, AtMostOnce
from kopycat.runtime.run_range import run_range
from kopycat.runtime.sink_conversion import ConvertedBatch, SinkConversion
from kopycat.runtime.sink_task_context import WorkerSinkTaskContext
from kopycat.runtime.task_metrics import SINK
from kopycat.runtime.task_parts import TaskId, TaskParts
from kopycat.runtime.worker_task import WorkerTask

__all__ = ["SinkTaskRunner"]

log = logging.getLogger(__name__)

_RETRY_BACKOFF_S = 1.0
CONSUME_WAIT_S: Final = 0.5
"""How long one ``consume`` waits for records; a caught-up run idle for less waits only that long, so
its last wait does not outlast the idleness that ends it."""


class SinkTaskRunner(WorkerTask):
    """Drives one :class:`SinkTask` until stopped, failed or a :class:`Bounds` condition holds."""

    def __init__(self, task_id: TaskId, task: SinkTask, task_props: Mapping[str, str], parts: TaskParts,
                 *, consumer_config: Mapping[str, Any], topics: Sequence[str] = (), topics_regex: str = "",
                 assignment: Collection[TopicPartition] | None = None, batch_size: int = 5_000,
                 offset_commit_interval_ms: int = 60_000, offset_commit_timeout_ms: int = 5_000,
                 bounds: Bounds | None = None, at_most_once: bool = False) -> None:
        super().__init__(task_id, bounds, kind=SINK, retry=parts.retry)
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
        self.context = WorkerSinkTaskContext(self.task_props)
        self.current: dict[TopicPartition, int] = {}      # next offset after what put() got
        self.committed: dict[TopicPartition, int] = {}
        self._consumer: Consumer | None = None
        self._task_started = False
        one_topic = self.fixed_assignment is not None and len({tp.topic for tp in self.fixed_assignment}) == 1
        one_partition = self.fixed_assignment is not None and len(set(self.fixed_assignment)) == 1
        self.range = run_range(self.bounds, str(task_id), self.commit_timeout_s * 6, one_topic=one_topic,
                               one_partition=one_partition,
                               live_starts_at_log_end=resets_to_latest(self.consumer_config))
        self.ends = self.range.ends
        # a windowed run never commits the group, so there is no order of commit and put to keep
        self.delivery = AtMostOnce(str(task_id)) if at_most_once and self.range.commits_group else AtLeastOnce()
        self.conversion: SinkConversion | None = None
        self._ahead: ConvertingAhead | None = None

    # ------------------------------------------------------------------ lifecycle (WorkerTask hooks)

    def stop(self) -> None:
        """End the run at the next batch boundary (any thread)."""
        super().stop()
        self.parts.retry.stop()

    def final_offset_commit(self, failed: bool) -> None:
        """The last pre_commit and group commit; after a failure nothing is committed, as in Kafka."""
        if not failed:
            self.timed_commit(partial(self._commit, final=True))

    def initialize_and_start(self) -> None:
        self.task.initialize(self.context)
        self.task.start(self.task_props)
        self._task_started = True
        self.conversion = SinkConversion(self.parts, self.summary, self.task.batch_value_types(), self.range.inside)
        self._consumer = Consumer(self.consumer_config)
        # batches wait to be put only where no rebalance can revoke their partitions meanwhile
        ahead = self.conversion.decodes_off_the_gil and self.fixed_assignment is not None
        self._ahead = ConvertingAhead(self._consumer, self.ends, self.conversion.convert,
                                      BATCHES_AHEAD if ahead else 0, str(self.id))
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
        assign_with_metadata(consumer, self._opened(partitions), self.commit_timeout_s * 6)

    def _on_assign(self, consumer: Consumer, partitions: list[KafkaTopicPartition]) -> None:
        consumer.assign(self._opened([TopicPartition(p.topic, p.partition) for p in partitions]))

    def _committed_offsets(self, partitions: Sequence[TopicPartition]) -> dict[TopicPartition, int | None]:
        """The group's committed offsets, retried while its coordinator is not ready (a fresh cluster)."""
        assert self._consumer is not None
        committed = consumer_committed(self._consumer, [KafkaTopicPartition(tp.topic, tp.partition)
                                                        for tp in partitions],
                                       self.commit_timeout_s * 6, self.stopping)
        return {TopicPartition(c.topic, c.partition): (c.offset if c.offset >= 0 else None) for c in committed}

    def _opened(self, partitions: Sequence[TopicPartition]) -> list[KafkaTopicPartition]:
        """Open the partitions in the task; where to start each: as the range says, or where open() seeked.

        Seeks asked for in open() become the assignment's offsets (librdkafka cannot seek a
        partition before it is fetching).
        """
        consumer = self._consumer
        assert consumer is not None
        starts = self.range.open(consumer, partitions, self._committed_offsets(partitions))
        for tp in partitions:
            start = starts.get(tp)
            if start is not None:
                self.current[tp] = start
                if self.range.commits_group:
                    self.committed[tp] = start
        self.context.assigned.update(partitions)
        self.task.open(list(partitions))
        seeks = self.range.placing(partitions, {tp: offset for tp, offset in self.context.take_seeks().items()
                                                if tp in partitions})
        self.current.update(seeks)
        offsets = {**{tp: o for tp, o in starts.items() if o is not None}, **seeks}
        return [KafkaTopicPartition(tp.topic, tp.partition, offsets.get(tp, OFFSET_INVALID)) for tp in partitions]

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
        """consume -> accept -> convert -> put -> apply the task's context -> commit when due.

        With batches ahead, the oldest is put once its turn came, before the batch just consumed
        is accepted (so a change of the task's context can still drop it); at depth 0 each batch
        is put before the next is consumed.
        """
        consumer, ahead = self._consumer, self._ahead
        assert consumer is not None and ahead is not None
        next_commit = time.monotonic() + self.commit_interval_s
        idle_ms = self.bounds.idle_ms
        wait_s = CONSUME_WAIT_S if idle_ms is None else min(CONSUME_WAIT_S, idle_ms / 1000)
        with ahead.running():
            while not self.stopping.is_set():
                if self.ends.all_reached() and ahead.empty():
                    return StopReason.END_OFFSETS
                messages = [] if self.ends.all_reached() else consumer.consume(self.batch_size, timeout=wait_s)
                delivered = 0
                if ahead.depth:
                    delivered, messages = self._put_due(messages)
                runs = self.ends.accept(consumer, messages) if messages else []  # runs of one partition
                if runs:
                    ahead.add(runs, frozenset(self.ends.finished))
                if not ahead.depth:
                    delivered, _ = self._put_due([])
                reason = self._after_batch(watch, delivered)
                if reason is not None:
                    return reason
                next_commit = self._commit_when_due(next_commit)
        return StopReason.STOPPED

    def _put_due(self, messages: list[Message]) -> tuple[int, list[Message]]:
        """Put the oldest batch if its turn came, then apply the task's context; (records consumed,
        the consumed ``messages`` still to accept).

        At depth 0 the context is applied after every batch, records or none, so what the task asks
        for in ``open`` or ``pre_commit`` holds before the next consume. With batches ahead it is
        applied after each put, and a changed seek or pause drops what was fetched before it
        (:meth:`ConvertingAhead.drop_fetched_too_early`).
        """
        ahead = self._ahead
        assert ahead is not None
        batch = ahead.due(more=bool(messages))
        if batch is None:
            if not ahead.depth:
                self._apply_context()
            return 0, messages
        delivered = self._put(batch)
        seeked, paused = self._apply_context()
        if ahead.depth and (seeked or paused):
            ahead.drop_fetched_too_early(messages, seeked, batch.finished, self.context.paused)
            messages = []
        return delivered, messages

    def _after_batch(self, watch: StopWatch, delivered: int) -> StopReason | None:
        assert self._ahead is not None
        if (not self.context.assigned or not self.context.assigned <= self.ends.at_log_end
                or not self._ahead.empty()):
            watch.touch()  # idle counts only once every partition was read to its end and all read was put
        return watch.after_batch(delivered)

    def _commit_when_due(self, next_commit: float) -> float:
        """Commit when the task asked or the interval passed; when the next timed commit is due."""
        # a run that keeps the group where it is calls pre_commit only when asked and at the end
        timed = self.range.commits_group and time.monotonic() >= next_commit
        if self.context.commit_requested or timed:
            self.context.commit_requested = False
            self.timed_commit(self._commit)
            return time.monotonic() + self.commit_interval_s
        return next_commit

    def _apply_context(self) -> tuple[set[TopicPartition], set[TopicPartition]]:
        """Apply the task's seeks and pauses to the consumer; (the partitions seeked, those paused if changed).

        Records of those partitions consumed before now were fetched from where the task no longer
        wants to read (see :meth:`ConvertingAhead.drop_fetched_too_early`).
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

    # ------------------------------------------------------------------ put

    def _put(self, batch: ConvertedBatch) -> int:
        """Put one converted batch, in order: columns to put_batch(), records to put(); returns how
        many records were consumed."""
        assert self.conversion is not None
        started = time.perf_counter()
        self.delivery.before_put(batch.runs, self._commit_to_group)
        self.summary.filtered += len(batch.messages) - len(batch.inside)
        for piece, columns in batch.pieces:
            if columns is None:
                records = self.conversion.records(piece)
                if records:
                    self._retrying(partial(self.task.put, records), len(records), partial(_describe, records))
                self.summary.records += len(records)
            else:
                self._retrying(partial(self.task.put_batch, columns), len(columns), partial(_describe_batch, columns))
                self.summary.records += len(columns)
        for run in batch.runs:  # in consumption order: a later run of a partition wins
            last = run[-1]
            self.current[TopicPartition(last.topic(), last.partition())] = last.offset() + 1
        for tp in batch.finished:  # offsets up to the end may hold markers or compacted gaps
            self.current[tp] = max(self.current.get(tp, 0), self.ends.ends[tp])
        self.summary.bytes += batch.size
        self.metrics.batch_s = time.perf_counter() - started
        return len(batch.messages)

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

    def _commit(self, *, final: bool = False, only: set[TopicPartition] | None = None) -> bool | None:
        """pre_commit, then commit what it returned for the partitions still held (unless the range keeps
        the group where it is); at the end or a revocation, report the partitions. False when the
        commit failed (retried at the next), None when no partition is held."""
        consumer = self._consumer
        if consumer is None or not self.context.assigned:
            return None
        current = {tp: o for tp, o in self.current.items()
                   if tp in self.context.assigned and (only is None or tp in only)}
        self.parts.retry.flush(self.commit_timeout_s)
        safe = self.task.pre_commit(dict(current))
        if self.range.commits_group and not self._commit_safe(safe or {}, final):
            return False
        if final or only:
            for tp, offset in current.items():
                self.summary.offsets[f"{tp.topic}-{tp.partition}"] = self.range.report(
                    tp, offset, self.committed.get(tp))
        return True

    def _commit_safe(self, safe: Mapping[Any, int], final: bool) -> bool:
        """Commit the offsets pre_commit returned that the delivery guarantee allows; False when a
        commit other than the final one failed (it is retried at the next)."""
        assigned = self.context.assigned
        held = {TopicPartition(*tp): o for tp, o in safe.items() if TopicPartition(*tp) in assigned}
        to_commit = self.delivery.committable(held, self.committed)
        if to_commit:
            try:
                if final:
                    self._final_commit_to_group(to_commit)
                else:
                    self._commit_to_group(to_commit)
            except KafkaException as exc:
                if final:
                    raise ConnectError(f"Task {self.id} could not commit offsets {to_commit}: {exc}"
                                       f"{_member_hint(exc, self.consumer_config)}") from exc
                log.warning("Task %s: offset commit failed, retrying at the next commit: %s", self.id, exc)
                return False
        return True

    def _final_commit_to_group(self, offsets: Mapping[TopicPartition, int]) -> None:
        """The last commit of the run, retried while the group refuses it for a member's sake.

        An assigned run commits as a simple consumer, which the broker refuses (UNKNOWN_MEMBER_ID) while
        the group has members: after a subscribed worker of the same group was killed, its member stays
        until its session times out. Everything was put, so waiting out that session (plus a margin) saves
        the rerun from copying the range again; past it the error names the member problem.
        """
        deadline = time.monotonic() + _session_timeout_s(self.consumer_config) + 15.0
        backoff = 0.5
        while True:
            try:
                self._commit_to_group(offsets)
                return
            except KafkaException as exc:
                if not _refused_for_membership(exc) or time.monotonic() + backoff > deadline:
                    raise
                log.info("Task %s: the group refuses the final commit while another member is in it (%s); "
                         "retrying until its session expires", self.id, exc.args[0])
                time.sleep(backoff)
                backoff = min(backoff * 2, 5.0)

    def _commit_to_group(self, offsets: Mapping[TopicPartition, int]) -> None:
        """Commit ``offsets`` to the consumer group, synchronously; KafkaException when it cannot."""
        consumer = self._consumer
        assert consumer is not None
        consumer.commit(offsets=[KafkaTopicPartition(tp.topic, tp.partition, o) for tp, o in offsets.items()],
                        asynchronous=False)
        self.committed.update(offsets)


_MEMBERSHIP_REFUSALS: Final = frozenset({KafkaError.UNKNOWN_MEMBER_ID, KafkaError.ILLEGAL_GENERATION,
                                         KafkaError.REBALANCE_IN_PROGRESS})


def _refused_for_membership(exc: KafkaException) -> bool:
    """Whether a commit was refused because of the group's members, not the offsets themselves."""
    error = exc.args[0] if exc.args else None
    return isinstance(error, KafkaError) and error.code() in _MEMBERSHIP_REFUSALS


def _session_timeout_s(consumer_config: Mapping[str, Any]) -> float:
    """The group's session timeout as this consumer asks for it (librdkafka's default, 45 s, otherwise)."""
    return int(consumer_config.get("session.timeout.ms", 45_000)) / 1000


def _member_hint(exc: KafkaException, consumer_config: Mapping[str, Any]) -> str:
    """What to do when the group kept refusing the final commit for its members' sake."""
    if not _refused_for_membership(exc):
        return ""
    return (f"; the consumer group {consumer_config.get('group.id')!r} still has a member after the "
            f"{_session_timeout_s(consumer_config):.0f} s session timeout: another worker runs this connector "
            f"continuously (stop it, or give this run its own group with consumer.override.group.id)")


def _describe_batch(batch: SinkRecordBatch) -> str:
    return f"topic '{batch.topic}' partition {batch.kafka_partition} offsets {batch.offsets[0]}-{batch.offsets[-1]}"


def _describe(records: Sequence[SinkRecord]) -> str:
    ranges: dict[tuple[str, int], list[int]] = {}
    for record in records:
        tp = record.topic_partition
        span = ranges.setdefault((tp.topic, tp.partition), [record.kafka_offset, record.kafka_offset])
        span[0], span[1] = min(span[0], record.kafka_offset), max(span[1], record.kafka_offset)
    return "; ".join(f"topic '{t}' partition {p} offsets {a}-{b}" for (t, p), (a, b) in sorted(ranges.items()))

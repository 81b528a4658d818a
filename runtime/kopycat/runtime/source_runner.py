"""Runs one SourceTask: poll -> transforms -> convert -> produce -> commit offsets.

Follows Kafka Connect's ``AbstractWorkerSourceTask`` and ``WorkerSourceTask`` (at-least-once).
The exactly-once variant is :mod:`kopycat.runtime.exactly_once_source_runner`.

Which offsets may be committed: Kafka tracks every record until its ack and commits the longest
fully-acknowledged prefix per source partition (``SubmittedRecords``). Per-record tracking in
Python costs most of the throughput (DESIGN.md §8), so the runner uses a *flush barrier*
instead, which commits the same prefix: the producer reports only failures
(``delivery.report.only.error``), the offset writer keeps the offset of the last record handed
to the producer per partition, and a commit first ``flush()``-es the producer. When the flush
completes with no failure reported, every record produced so far is acknowledged, so every
buffered offset is safe. If a flush times out nothing is committed and the offsets go out with
the next commit. A crash re-sends the records after the last commit: duplicates only from that
window, never a loss.

Columnar batches (DESIGN.md §2): ``poll`` returns records and :class:`SourceRecordBatch` items in
any mix, and the runner chooses per item, as dlt's extractor does for objects and Arrow tables.
When nothing needs records one by one (no transform, no acknowledgements, not exactly-once) a
batch is encoded a column at a time by the converters' ``from_arrow_array`` and produced value by
value with no record object; otherwise, or when a converter answers None (or fails), the batch
goes down the record path as ``batch.records()``, in order with the records around it.

Tasks that override ``commit_record`` or ``commit_records`` get per-record delivery reports
instead (as in Kafka): :mod:`kopycat.runtime.source_delivery` gathers them and, after every
``poll`` of the producer (and before each ``commit``), hands them to the task in one
``commit_records`` call, on this runner's thread.

Extension points (Kafka's ``AbstractWorkerSourceTask`` declares the same): a runner that commits
differently, as :mod:`kopycat.runtime.exactly_once_source_runner` does with transactions, passes a
``transaction_context`` for its task and implements the hooks :meth:`~SourceTaskRunner.prepare_to_initialize_task`,
:meth:`~SourceTaskRunner.dispatch_records`, :meth:`~SourceTaskRunner.batch_dispatched`,
:meth:`~SourceTaskRunner.commit_offsets` and :meth:`~SourceTaskRunner.final_offset_commit`; the loop,
conversion and producing stay here. Producing itself is :mod:`kopycat.runtime.source_produce`.

Thread-safety: ``run`` executes on one thread; ``stop`` may be called from any other.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping, Sequence
from functools import partial
from itertools import groupby
from typing import Any, ClassVar

import orjson
from confluent_kafka import Producer

from kopycat.api.bounded import RunComplete
from kopycat.api.errors import ConnectError, RetriableError
from kopycat.api.record_batch import SourceRecordBatch
from kopycat.api.records import SourceRecord
from kopycat.api.task import SourceItem, SourceTask, TransactionContext
from kopycat.idempotent_producer import connect_idempotent
from kopycat.interpreter_settings import gc_paused
from kopycat.runtime.bounds import Bounds, StopReason, StopWatch
from kopycat.runtime.errors import ProcessingContext, Stage
from kopycat.runtime.source_conversion import Run, SourceRecordConverter
from kopycat.runtime.source_delivery import DeliveryReports
from kopycat.runtime.source_produce import (
    PARTITION_ANY,
    TIMESTAMP_NOW,
    byte_count,
    produce_all,
    produce_when_room,
)
from kopycat.runtime.source_task_context import WorkerSourceTaskContext
from kopycat.runtime.task_metrics import SOURCE
from kopycat.runtime.task_parts import TaskId, TaskParts
from kopycat.runtime.topic_creation import TopicCreator
from kopycat.runtime.worker_task import WorkerTask
from kopycat.storage.offset_backing_store import OffsetBackingStore
from kopycat.storage.offset_storage_reader_writer import OffsetStorageReaderImpl, OffsetStorageWriter

__all__ = ["SourceTaskRunner"]

log = logging.getLogger(__name__)

_FINAL_COMMIT_S = 60.0


def partition_text(partition: Mapping[str, Any] | None) -> str:
    """A source partition as sorted compact JSON: how summaries and logs name it."""
    return orjson.dumps(partition, option=orjson.OPT_SORT_KEYS).decode()


class SourceTaskRunner(WorkerTask):
    """Drives one :class:`SourceTask` until stopped, failed or a :class:`Bounds` condition holds.

    ``transaction_context`` is what the task sees as ``context.transaction_context`` (set by a
    runner whose task may define transaction boundaries).
    """

    columnar: ClassVar[bool] = True
    """Whether this runner may send a task's batches as columns when nothing needs records one by
    one (no transform, no acknowledgements); a runner that must see every record says False."""

    def __init__(self, task_id: TaskId, task: SourceTask, task_props: Mapping[str, str], parts: TaskParts,
                 *, producer_config: Mapping[str, Any], offset_store: OffsetBackingStore,
                 offset_flush_interval_ms: int = 60_000, offset_flush_timeout_ms: int = 5_000,
                 bounds: Bounds | None = None, topic_creator: TopicCreator | None = None,
                 at_most_once: bool = False, transaction_context: TransactionContext | None = None) -> None:
        super().__init__(task_id, bounds, kind=SOURCE, retry=parts.retry)
        self.at_most_once = at_most_once
        self.task = task
        self.task_props = dict(task_props)
        self.parts = parts
        self.offset_store = offset_store
        self.reader = OffsetStorageReaderImpl(offset_store, task_id.connector)
        self.writer = OffsetStorageWriter(offset_store, task_id.connector)
        self.flush_interval_s = offset_flush_interval_ms / 1000
        self.flush_timeout_s = offset_flush_timeout_ms / 1000
        self.topic_creator = topic_creator
        self.conversion = SourceRecordConverter(task_id, parts, self.summary)
        self.reports = DeliveryReports(task_id, task, parts, self.summary)
        self.wants_acks = (type(task).commit_record is not SourceTask.commit_record
                           or type(task).commit_records is not SourceTask.commit_records)
        self.takes_columns = self.columnar and not len(parts.transforms) and not self.wants_acks
        self.transaction_context = transaction_context
        self.producer_config = self._with_delivery_reports(dict(producer_config))
        self.producer: Producer | None = None
        self._complete = False  # the task raised RunComplete in a bounded run
        self._task_stopped = False
        self._task_lock = threading.Lock()
        self._touched: dict[str, Mapping[str, Any] | None] = {}
        self._before: dict[str, Any] = {}

    # ------------------------------------------------------------------ lifecycle (WorkerTask hooks)

    def stop(self) -> None:
        """Ask the run to end at the next batch boundary; wakes a blocking poll (any thread)."""
        super().stop()
        self.parts.retry.stop()
        self._stop_task()

    def _stop_task(self) -> None:
        with self._task_lock:
            if self._task_stopped:
                return
            self._task_stopped = True
        try:
            self.task.stop()
        except Exception:  # noqa: BLE001 - a failing stop must not hide the run's outcome
            log.exception("Task %s failed to stop cleanly", self.id)

    def initialize_and_start(self) -> None:
        self.producer = Producer(self.producer_config)
        self.prepare_to_initialize_task()
        self._before = self.committed_offsets()
        self.task.initialize(WorkerSourceTaskContext(self.task_props, self.reader, self.transaction_context,
                                                     self.takes_columns))
        self.task.start(self.task_props)
        if "transactional.id" not in self.producer_config:  # init_transactions fetched the id already
            connect_idempotent(self.producer, f"Task {self.id}")
        log.info("Task %s started (%s)", self.id, type(self.task).__name__)

    def close(self) -> None:
        self._stop_task()
        if self.producer is not None:
            self.producer.flush(self.flush_timeout_s)
            self.producer = None  # destroys the client: its callbacks hold this runner
        self.parts.close()

    # ------------------------------------------------------------------ hooks (Kafka's AbstractWorkerSourceTask)

    def prepare_to_initialize_task(self) -> None:
        """Hook: the producer exists; the committed offsets are read and the task started next
        (Kafka's ``prepareToInitializeTask``). Default: nothing."""

    def dispatch_records(self, records: Sequence[SourceRecord]) -> None:
        """Hook: send records of one poll, in order, through :meth:`send_records` (Kafka's
        ``prepareToSendRecord``/``recordDispatched`` around each send). Called for each run of
        records between the poll's columnar batches: once per poll when the run takes no columns.
        Default: one call. A runner that wraps sends (in transactions) or splits them (at the
        boundaries a task asks for) does it here."""
        self.send_records(records)

    def batch_dispatched(self) -> None:
        """Hook: everything one poll returned was handed to the producer (Kafka's
        ``batchDispatched``); not called after a poll that returned nothing. Default: nothing."""

    def commit_offsets(self, *, final: bool = False) -> bool:
        """Hook: the periodic commit (every ``offset.flush.interval.ms``) and, with ``final``, the
        one before stopping, retried while it answers False. Default: the flush barrier, then the
        buffered offsets; False when either timed out."""
        producer = self.producer
        assert producer is not None
        left = producer.flush(self.flush_timeout_s)
        self.check_delivery_errors()
        if left:
            log.warning("Task %s: %d records not yet acknowledged after %.1f s; committing offsets "
                        "at the next interval", self.id, left, self.flush_timeout_s)
            return False
        self.parts.retry.flush(self.flush_timeout_s)
        if not self.writer.flush(self.flush_timeout_s):
            return False
        self.commit_source_task()
        if final:
            self.summarize_offsets()
        return True

    def _with_delivery_reports(self, config: dict[str, Any]) -> dict[str, Any]:
        if self.wants_acks:
            config["delivery.report.only.error"] = False
        else:
            config["on_delivery"] = self.reports.on_delivery_error
        return config

    # ------------------------------------------------------------------ the loop

    def execute(self, watch: StopWatch) -> StopReason:
        next_commit = time.monotonic() + self.flush_interval_s
        producer = self.producer
        assert producer is not None
        while not self.stopping.is_set():
            count = self._dispatch(self._poll())
            if count:
                self.batch_dispatched()
            producer.poll(0)
            self.check_delivery_errors()
            reason = watch.after_batch(count)
            if reason is not None:
                return reason
            if self._complete:
                return StopReason.CAUGHT_UP
            if time.monotonic() >= next_commit:
                self.timed_commit(self.commit_offsets)
                next_commit = time.monotonic() + self.flush_interval_s
        return StopReason.STOPPED

    def _poll(self) -> Sequence[SourceItem]:
        """What the task's ``poll`` returned; [] for nothing."""
        started = time.perf_counter()
        try:
            with gc_paused():  # tasks build a batch of records here: no cycles, many allocations
                items = self.task.poll()
            self.metrics.batch_s = time.perf_counter() - started
        except RetriableError as exc:
            log.warning("Task %s: poll() raised a retriable error, polling again: %s", self.id, exc)
            return []
        except RunComplete:
            self._complete = self.bounds.bounded
            return []
        return items or []

    def _dispatch(self, items: Sequence[SourceItem]) -> int:
        """Send one poll's items in order, each batch as columns where it can be; the record count.

        Records (and batches that go the record path) gather into one list, handed to
        :meth:`dispatch_records` before the next columnar batch and at the end. Items are grouped
        by ``type`` in C, so a poll of records costs no Python step per record here.
        """
        pending: list[SourceRecord] = []
        count = 0
        for kind, group in groupby(items, type):
            if not issubclass(kind, SourceRecordBatch):
                before = len(pending)
                pending += group
                count += len(pending) - before
                continue
            for batch in group:
                if not len(batch):
                    continue
                count += len(batch)
                encoded = self.conversion.encode_batch(batch) if self.takes_columns else None
                if encoded is None:
                    pending += batch.records()
                    continue
                if pending:
                    self.dispatch_records(pending)
                    pending = []
                self._send_columns(batch, *encoded)
        if pending:
            self.dispatch_records(pending)
        return count

    def send_records(self, records: Sequence[SourceRecord]) -> None:
        """Transform, convert and produce records, then note their offsets for the next commit.

        The machinery :meth:`dispatch_records` calls; not a hook."""
        origin: dict[int, SourceRecord] | None = None
        if self.wants_acks and len(self.parts.transforms):
            outgoing, origin = self._transform_tracked(records)
        else:
            outgoing = self._transform(records)
        self.summary.filtered += len(records) - len(outgoing)
        runs = self.conversion.convert(outgoing)
        if self.conversion.unsent:
            self._drop_unsent(origin)
        if self.at_most_once:
            self._note_offsets(records)
            self._store_offsets_first()
        self._produce(runs, origin)
        if not self.at_most_once:
            self._note_offsets(records)

    def _send_columns(self, batch: SourceRecordBatch, keys: Any, values: Any) -> None:
        """Produce a batch its converters encoded, then note its offset for the next commit."""
        if self.at_most_once:
            self._note_offset(batch.source_partition, batch.source_offset)
            self._store_offsets_first()
        self._produce_batch(batch, keys, values)
        if not self.at_most_once:
            self._note_offset(batch.source_partition, batch.source_offset)

    def _store_offsets_first(self) -> None:
        """At-most-once: the batch's offsets are stored before it is produced, or it is not produced."""
        if not self.writer.flush(self.flush_timeout_s):
            raise ConnectError(f"Task {self.id} could not store the offsets of a batch before producing it "
                               f"within {self.flush_timeout_s:.1f} s; with delivery.guarantee=at_most_once "
                               f"the batch is not produced, and is read again when the task restarts")

    def _transform_tracked(self, records: Sequence[SourceRecord]
                           ) -> tuple[list[SourceRecord], dict[int, SourceRecord]]:
        """One by one, remembering each outgoing record's original (``id`` -> original) for its
        acknowledgement; a record dropped here is acknowledged with None at once, as in Kafka."""
        outgoing, origin = [], {}
        for record in records:
            transformed = self._transform_one(record)
            if transformed is None:
                self.reports.acks.append((record, None, None))
                continue
            outgoing.append(transformed)
            origin[id(transformed)] = record
        return outgoing, origin

    def _drop_unsent(self, origin: Mapping[int, SourceRecord] | None) -> None:
        """Records a tolerated conversion error skipped are acknowledged with None (for acks)."""
        unsent, self.conversion.unsent = self.conversion.unsent, []
        if self.wants_acks:
            self.reports.acks.extend((record if origin is None else origin[id(record)], None, None)
                                     for record in unsent)

    # ------------------------------------------------------------------ stages

    def _transform(self, records: Sequence[SourceRecord]) -> list[SourceRecord]:
        chain = self.parts.transforms
        if not len(chain):
            return list(records)
        try:
            return chain.apply_batch(records)
        except Exception:  # noqa: BLE001 - find the bad record(s) one by one, with error handling
            return [t for t in map(self._transform_one, records) if t is not None]

    def _transform_one(self, record: SourceRecord) -> SourceRecord | None:
        chain = self.parts.transforms
        if not len(chain):
            return record
        result = self.parts.retry.execute(lambda: (chain.apply(record),), Stage.TRANSFORMATION,
                                          type(chain), ProcessingContext.for_source(record))
        if result is None:  # a tolerated failure; (None,) is a record the chain filtered out
            self.summary.skipped += 1
            return None
        return result[0]

    def _produce(self, runs: Sequence[Run], origin: Mapping[int, SourceRecord] | None) -> None:
        """Hand every converted record to the producer; with acks, each carries its original."""
        producer = self.producer
        assert producer is not None
        self._ensure_topics({topic for topic, _ in runs})
        send, acks, wants_acks = producer.produce, self.reports.acks.append, self.wants_acks
        size = count = 0
        for topic, produced in runs:
            count += len(produced)
            for record, key, value, headers in produced:
                callback = None
                if wants_acks:
                    original = record if origin is None else origin[id(record)]
                    callback = lambda error, message, original=original: acks((original, error, message))  # noqa: E731 - a closure per record carries its original
                partition = record.kafka_partition
                if partition is None:
                    partition = PARTITION_ANY
                if headers:
                    args = (topic, value, key, partition, callback, None, record.timestamp or TIMESTAMP_NOW, headers)
                else:
                    args = (topic, value, key, partition, callback, None, record.timestamp or TIMESTAMP_NOW)
                try:
                    send(*args)
                except BufferError:
                    produce_when_room(producer, args, self.id)
                if key:
                    size += len(key)
                if value:
                    size += len(value)
        self.summary.records += count
        self.summary.bytes += size

    def _ensure_topics(self, topics: set[str]) -> None:
        """Create the topics records are about to go to where topic creation asks for it."""
        if self.topic_creator is not None:
            self.topic_creator.ensure(topics)
        self.summary.topics.update(topics)

    def _produce_batch(self, batch: SourceRecordBatch, keys: Any, values: Any) -> None:
        """Hand an encoded batch to the producer, value by value (librdkafka batches them)."""
        producer = self.producer
        assert producer is not None
        topic = batch.topic
        self._ensure_topics({topic})
        partition = PARTITION_ANY if batch.kafka_partition is None else batch.kafka_partition
        timestamp = batch.timestamp or TIMESTAMP_NOW
        value_bytes = values.to_pylist()
        if keys is None and partition == PARTITION_ANY and timestamp == TIMESTAMP_NOW:
            produce_all(producer, self.id, topic, value_bytes)
        else:
            key_bytes = [None] * len(value_bytes) if keys is None else keys.to_pylist()
            produce_all(producer, self.id, topic, value_bytes, key_bytes, partition, None, None, timestamp)
        self.summary.records += len(value_bytes)
        self.summary.bytes += byte_count(values) + (0 if keys is None else byte_count(keys))

    def _note_offsets(self, records: Sequence[SourceRecord]) -> None:
        """The last offset of each source partition in the batch goes to the writer."""
        last: dict[int, SourceRecord] = {}
        for record in records:
            last[id(record.source_partition)] = record
        for record in last.values():
            self._note_offset(record.source_partition, record.source_offset)

    def _note_offset(self, partition: Mapping[str, Any] | None, offset: Mapping[str, Any] | None) -> None:
        if partition is None:
            return
        self.writer.offset(partition, offset)
        text = partition_text(partition)
        if text not in self._touched:
            self._touched[text] = partition

    def check_delivery_errors(self) -> None:
        """Acknowledgements to the task, then records Kafka refused through error handling
        (:meth:`DeliveryReports.check`); every commit does this after its flush."""
        self.reports.check()

    # ------------------------------------------------------------------ commits

    def final_offset_commit(self, failed: bool) -> None:
        """Commit before stopping, retrying for up to a minute: a run that ends uncommitted would
        make the next one re-send everything it copied. Fails the run if it cannot commit.
        After a failure, commit only what was acknowledged, if that can be known."""
        if failed:
            self._commit_acknowledged()
            return
        deadline = time.monotonic() + max(_FINAL_COMMIT_S, self.flush_timeout_s)
        while not self.timed_commit(partial(self.commit_offsets, final=True)):
            if time.monotonic() > deadline:
                raise ConnectError(f"Task {self.id} could not commit its offsets before stopping: the "
                                   f"records it copied since the last commit will be sent again")
            log.info("Task %s: retrying the final offset commit", self.id)

    def commit_source_task(self) -> None:
        """Tell the task its offsets were committed (Kafka's ``commitSourceTask``); a failing
        ``commit()`` is logged and the run carries on, as in Kafka."""
        try:
            self.task.commit()
        except Exception:  # noqa: BLE001 - Kafka logs a failing commit() hook and carries on
            log.exception("Task %s: commit() failed", self.id)

    def _commit_acknowledged(self) -> None:
        """Commit what was acknowledged before the failure, if that can be known (Kafka does too)."""
        if self.producer is None:
            return
        if self.producer.flush(self.flush_timeout_s) != 0:
            return
        self.reports.deliver_acks()
        if not self.reports.errors:
            self.writer.flush(self.flush_timeout_s)
            self.summarize_offsets()

    def summarize_offsets(self) -> None:
        """The run summary's offsets: before and after this run, for each partition it wrote."""
        partitions = list(self._touched.values())
        for partition, offset in self.reader.offsets([p for p in partitions if p is not None]):
            text = partition_text(partition)
            self.summary.offsets[text] = {"partition": partition, "before": self._before.get(text),
                                          "after": offset}

    def committed_offsets(self) -> dict[str, Any]:
        """Committed offsets of every partition of this connector, by partition text."""
        partitions = [p for p in self.offset_store.connector_partitions(self.id.connector) if p is not None]
        return {partition_text(p): o for p, o in self.reader.offsets(partitions)}

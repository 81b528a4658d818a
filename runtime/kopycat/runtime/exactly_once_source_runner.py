"""Runs one SourceTask exactly once: records and their offsets in one Kafka transaction (KIP-618).

Follows Kafka Connect's ``ExactlyOnceWorkerSourceTask``. The producer's ``transactional.id`` is
``<group.id>-<connector>-<task>``, so a restarted task (a retried Airflow task instance, a new
standalone worker) fences its zombie: ``init_transactions`` aborts or completes the old
instance's open transaction before this one reads its offsets, so it resumes exactly where the
last *committed* transaction ended. Each transaction holds a batch of records plus the
offsets-topic records of their source offsets; read_committed consumers see both or neither.

Boundaries (``transaction.boundary``): ``poll`` commits after every non-empty poll batch;
``interval`` every ``transaction.boundary.interval.ms`` (default: ``offset.flush.interval.ms``).
``connector``: where the task asks through ``SourceTaskContext.transaction_context``
(:mod:`kopycat.runtime.transaction_context`), after a record or after a batch; a requested abort
drops the transaction's records but commits their offsets, and nothing else commits. The
connector must say it can define boundaries (``can_define_transaction_boundaries``).

Any failure inside a transaction aborts it and fails the task; nothing of it becomes visible,
and the restarted task re-reads from the last committed offsets.

The runner fills in :class:`~kopycat.runtime.source_runner.SourceTaskRunner`'s hooks as Kafka's
``ExactlyOnceWorkerSourceTask`` fills in ``AbstractWorkerSourceTask``'s: ``prepare_to_initialize_task``
fences, ``dispatch_records`` sends inside transactions (split where the task asked),
``batch_dispatched`` ends a poll's transaction, ``commit_offsets`` and ``final_offset_commit``
commit or abort the open one. It sends records only (``columnar`` is False): transactions and
the boundaries a task asks for split record lists.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from confluent_kafka import KafkaException, Producer

from kopycat.api.errors import ConfigError, ConnectError
from kopycat.api.records import SourceRecord
from kopycat.api.task import SourceTask
from kopycat.client_security import explain_client_error
from kopycat.runtime.bounds import Bounds
from kopycat.runtime.source_runner import SourceTaskRunner
from kopycat.runtime.task_parts import TaskId, TaskParts
from kopycat.runtime.topic_creation import TopicCreator
from kopycat.runtime.transaction_context import WorkerTransactionContext
from kopycat.storage.kafka_offset_store import KafkaOffsetStore

__all__ = ["ExactlyOnceSourceTaskRunner", "fence_zombies", "transactional_id"]

log = logging.getLogger(__name__)


def transactional_id(group_id: str, task_id: TaskId) -> str:
    """Kafka Connect's ``<group.id>-<connector>-<task>`` (``Worker.taskTransactionalId``)."""
    return f"{group_id}-{task_id.connector}-{task_id.task}"


def fence_zombies(producer_config: Mapping[str, Any], group_id: str, connector: str, tasks: int,
                  timeout_s: float = 60.0) -> None:
    """Fence every task of ``connector`` before a new generation of its tasks starts.

    Kafka's leader does this (``DistributedHerder.fenceZombieSourceTasks``) because a task only
    fences its own transactional id when it starts: a killed sibling's open transaction would
    hide later committed offsets in the offsets topic from read_committed readers, and the new
    task could resume from stale ones. Under Airflow the plan task runs before the mapped copy
    tasks, so it fences here: ``init_transactions`` with each task's id aborts what is open.
    """
    for task in range(tasks):
        task_transactional_id = transactional_id(group_id, TaskId(connector, task))
        producer = Producer({**producer_config, "transactional.id": task_transactional_id})
        try:
            producer.init_transactions(timeout_s)
        except KafkaException as exc:
            explained = explain_client_error(exc)
            raise ConnectError(f"Could not fence the earlier transactions of task {task} of {connector} "
                               f"(transactional.id '{task_transactional_id}') before starting it again: "
                               f"{explained or exc}") from exc
        finally:
            with contextlib.suppress(KafkaException):  # a fatal error is raised again by every call
                producer.flush(0)
    log.info("Fenced the transactional producers of tasks 0..%d of %s", tasks - 1, connector)


class ExactlyOnceSourceTaskRunner(SourceTaskRunner):
    """A :class:`SourceTaskRunner` whose commits are Kafka transactions. Same threading rules."""

    columnar: ClassVar[bool] = False

    def __init__(self, task_id: TaskId, task: SourceTask, task_props: Mapping[str, str], parts: TaskParts,
                 *, producer_config: Mapping[str, Any], offset_store: KafkaOffsetStore, group_id: str,
                 transaction_boundary: str = "poll", transaction_interval_ms: int | None = None,
                 offset_flush_interval_ms: int = 60_000, offset_flush_timeout_ms: int = 5_000,
                 bounds: Bounds | None = None, topic_creator: TopicCreator | None = None) -> None:
        if not isinstance(offset_store, KafkaOffsetStore):
            raise ConfigError("Exactly-once source tasks keep their offsets on a Kafka topic: use the "
                              "Kafka offset store (offset.storage.topic), not a file or memory store",
                              key="exactly.once.source.support")
        boundary = transaction_boundary.lower()
        if boundary not in ("poll", "interval", "connector"):
            raise ConfigError.for_key("transaction.boundary", transaction_boundary,
                                      "one of poll, interval, connector")
        self.transactional_id = transactional_id(group_id, task_id)
        config = {**producer_config, "transactional.id": self.transactional_id}
        self.transactions = WorkerTransactionContext() if boundary == "connector" else None
        super().__init__(task_id, task, task_props, parts, producer_config=config, offset_store=offset_store,
                         offset_flush_interval_ms=(transaction_interval_ms or offset_flush_interval_ms
                                                   if boundary == "interval" else offset_flush_interval_ms),
                         offset_flush_timeout_ms=offset_flush_timeout_ms, bounds=bounds,
                         topic_creator=topic_creator, transaction_context=self.transactions)
        self.kafka_store = offset_store
        self.per_poll = boundary == "poll"
        self._in_transaction = False
        self._records_in_transaction = 0
        self.transaction_timeout_s = max(self.flush_timeout_s, 60.0)

    def prepare_to_initialize_task(self) -> None:
        """Fence zombies first: the old instance's transaction completes before offsets are read."""
        assert self.producer is not None
        self.producer.init_transactions(self.transaction_timeout_s)
        log.info("Task %s: transactional producer %r initialized", self.id, self.transactional_id)

    def dispatch_records(self, records: Sequence[SourceRecord]) -> None:
        """Send inside the open transaction (begun if none is); with connector boundaries, end it
        after each record the task named."""
        if self.transactions is None:
            self._send_in_transaction(records)
            return
        start = 0
        if self.transactions.has_record_requests:  # a transaction may end inside this batch
            for index, record in enumerate(records):
                request = self.transactions.request_after(record)
                if request is not None:
                    self._send_in_transaction(records[start:index + 1])
                    self._end_transaction(request)
                    start = index + 1
        if start < len(records):
            self._send_in_transaction(records[start:])

    def batch_dispatched(self) -> None:
        """End the poll's transaction: always with poll boundaries; with connector boundaries, as
        the task asked for the batch."""
        if self.transactions is None:
            if self.per_poll:
                self.timed_commit(self._commit_transaction)
            return
        request = self.transactions.batch_request()
        if request is not None:
            self._end_transaction(request)

    def _send_in_transaction(self, records: Sequence[SourceRecord]) -> None:
        self._begin()
        try:
            self.send_records(records)
        except BaseException:
            self._abort()
            raise
        self._records_in_transaction += len(records)

    def _begin(self) -> None:
        if not self._in_transaction:
            assert self.producer is not None
            self.producer.begin_transaction()
            self._in_transaction = True
            self._records_in_transaction = 0

    def _end_transaction(self, request: str) -> None:
        """What the task asked (connector boundaries): commit, or abort and still commit the offsets.

        As Kafka: an aborted transaction's records are dropped, but their offsets are committed
        (in a transaction of their own), so the task does not read the same records again.
        """
        if request == "abort" and self._in_transaction:
            self._abort_as_asked()
        self.timed_commit(self._commit_transaction)

    def _abort_as_asked(self) -> None:
        producer = self.producer
        assert producer is not None
        producer.flush(self.transaction_timeout_s)  # nothing left queued: no purge errors to report
        self.check_delivery_errors()
        producer.abort_transaction(self.transaction_timeout_s)
        self._in_transaction = False
        self.summary.records -= self._records_in_transaction
        log.info("Task %s: aborted a transaction of %d record(s), as the task asked; their offsets are "
                 "committed", self.id, self._records_in_transaction)

    def commit_offsets(self, *, final: bool = False) -> bool:
        """The periodic and final commits; with connector boundaries only the task commits (an open
        transaction at the end is aborted when the runner closes, and its records are read again)."""
        if self._in_transaction and self.transactions is None:
            self._commit_transaction()
        if final:
            self.summarize_offsets()
        return True

    def _commit_transaction(self) -> bool:
        """Offsets into the open transaction, commit it; any failure aborts and fails the task.
        True once committed (for :meth:`timed_commit`)."""
        producer = self.producer
        assert producer is not None
        serialized: dict[bytes, bytes | None] = {}
        self._begin()  # after a requested abort, the offsets go in a transaction of their own
        try:
            if self.writer.begin_flush():
                serialized = self.writer.serialized_snapshot()
                for record in self.kafka_store.offset_records(serialized):
                    producer.produce(record.topic, key=record.key, value=record.value,
                                     partition=record.partition)
            producer.commit_transaction(self.transaction_timeout_s)
            self.check_delivery_errors()
        except (KafkaException, ConnectError) as exc:
            self._abort()
            raise ConnectError(f"Task {self.id}: the transaction could not be committed, so none of its "
                               f"records or offsets are visible; the task resumes from the last "
                               f"committed offsets when restarted: {exc}") from exc
        self._in_transaction = False
        if serialized:
            self.writer.finish_flush(None)
            self.kafka_store.record_committed(serialized)
        self.commit_source_task()
        return True

    def _abort(self) -> None:
        self.writer.cancel_flush()
        if not self._in_transaction or self.producer is None:
            return
        self._in_transaction = False
        try:
            self.producer.abort_transaction(self.transaction_timeout_s)
        except KafkaException as exc:
            log.error("Task %s: aborting the transaction failed (the broker aborts it when it times "
                      "out, or the next instance fences it): %s", self.id, exc)

    def final_offset_commit(self, failed: bool) -> None:
        """After a failure nothing is committed: the open transaction is aborted instead."""
        if failed:
            self._abort()
        else:
            super().final_offset_commit(failed)

    def close(self) -> None:
        self._abort()
        super().close()

"""Runs one SourceTask exactly once: records and their offsets in one Kafka transaction (KIP-618).

Follows Kafka Connect's ``ExactlyOnceWorkerSourceTask``. The producer's ``transactional.id`` is
``<group.id>-<connector>-<task>``, so a restarted task (a retried Airflow task instance, a new
standalone worker) fences its zombie: ``init_transactions`` aborts or completes the old
instance's open transaction before this one reads its offsets, so it resumes exactly where the
last *committed* transaction ended. Each transaction holds a batch of records plus the
offsets-topic records of their source offsets; read_committed consumers see both or neither.

Boundaries (``transaction.boundary``): ``poll`` commits after every non-empty poll batch;
``interval`` every ``transaction.boundary.interval.ms`` (default: ``offset.flush.interval.ms``).
``connector`` (task-defined boundaries) is refused at start: not built yet.

Any failure inside a transaction aborts it and fails the task; nothing of it becomes visible,
and the restarted task re-reads from the last committed offsets.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from confluent_kafka import KafkaException, Producer

from kopycat.api.errors import ConfigError, ConnectError
from kopycat.api.records import SourceRecord
from kopycat.api.task import SourceTask
from kopycat.runtime.bounds import Bounds
from kopycat.runtime.source_runner import SourceTaskRunner
from kopycat.runtime.task_parts import TaskId, TaskParts
from kopycat.runtime.topic_creation import TopicCreator
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
        producer = Producer({**producer_config, "transactional.id": transactional_id(group_id, TaskId(connector, task))})
        try:
            producer.init_transactions(timeout_s)
        except KafkaException as exc:
            raise ConnectError(f"Could not fence the earlier transactions of task {task} of {connector} before "
                               f"starting it again: {exc}") from exc
        finally:
            producer.flush(0)
    log.info("Fenced the transactional producers of tasks 0..%d of %s", tasks - 1, connector)


class ExactlyOnceSourceTaskRunner(SourceTaskRunner):
    """A :class:`SourceTaskRunner` whose commits are Kafka transactions. Same threading rules."""

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
        if boundary not in ("poll", "interval"):
            raise ConfigError.for_key("transaction.boundary", transaction_boundary,
                                      "Kopycat supports 'poll' and 'interval' so far")
        self.transactional_id = transactional_id(group_id, task_id)
        config = {**producer_config, "transactional.id": self.transactional_id}
        super().__init__(task_id, task, task_props, parts, producer_config=config, offset_store=offset_store,
                         offset_flush_interval_ms=(transaction_interval_ms or offset_flush_interval_ms
                                                   if boundary == "interval" else offset_flush_interval_ms),
                         offset_flush_timeout_ms=offset_flush_timeout_ms, bounds=bounds,
                         topic_creator=topic_creator)
        self.kafka_store = offset_store
        self.per_poll = boundary == "poll"
        self._in_transaction = False
        self.transaction_timeout_s = max(self.flush_timeout_s, 60.0)

    def _create_producer(self) -> Producer:
        """Fence zombies first: the old instance's transaction completes before offsets are read."""
        producer = Producer(self._producer_config)
        producer.init_transactions(self.transaction_timeout_s)
        log.info("Task %s: transactional producer %r initialized", self.id, self.transactional_id)
        return producer

    def _send(self, records: Sequence[SourceRecord]) -> None:
        producer = self._producer
        assert producer is not None
        if not self._in_transaction:
            producer.begin_transaction()
            self._in_transaction = True
        try:
            super()._send(records)
        except BaseException:
            self._abort()
            raise
        if self.per_poll:
            self._commit_transaction()

    def _commit(self, *, final: bool = False) -> bool:
        if self._in_transaction:
            self._commit_transaction()
        if final:
            self._summarize_offsets()
        return True

    def _commit_transaction(self) -> None:
        """Offsets into the open transaction, commit it; any failure aborts and fails the task."""
        producer = self._producer
        assert producer is not None
        serialized: dict[bytes, bytes | None] = {}
        try:
            if self.writer.begin_flush():
                serialized = self.writer.serialized_snapshot()
                for record in self.kafka_store.offset_records(serialized):
                    producer.produce(record.topic, key=record.key, value=record.value,
                                     partition=record.partition)
            producer.commit_transaction(self.transaction_timeout_s)
            self._check_delivery_errors()
        except (KafkaException, ConnectError) as exc:
            self._abort()
            raise ConnectError(f"Task {self.id}: the transaction could not be committed, so none of its "
                               f"records or offsets are visible; the task resumes from the last "
                               f"committed offsets when restarted: {exc}") from exc
        self._in_transaction = False
        if serialized:
            self.writer.finish_flush(None)
            self.kafka_store.record_committed(serialized)
        self._after_commit(final=False)

    def _abort(self) -> None:
        self.writer.cancel_flush()
        if not self._in_transaction or self._producer is None:
            return
        self._in_transaction = False
        try:
            self._producer.abort_transaction(self.transaction_timeout_s)
        except KafkaException as exc:
            log.error("Task %s: aborting the transaction failed (the broker aborts it when it times "
                      "out, or the next instance fences it): %s", self.id, exc)

    def _commit_after_failure(self) -> None:
        """Never commit after a failure: the open transaction is aborted instead."""
        self._abort()

    def _close(self) -> None:
        self._abort()
        super()._close()

"""What Kafka says about produced records: acknowledgements for the task, refusals for error handling.

Follows Kafka Connect's ``AbstractWorkerSourceTask`` producer callbacks. Tasks that override
``commit_record`` or ``commit_records`` get per-record delivery reports: each report only appends
to :attr:`DeliveryReports.acks` (librdkafka calls back from ``poll``/``flush`` on the runner's
thread), and :meth:`DeliveryReports.deliver_acks` hands the gathered ones to the task in one
``commit_records`` call. Other tasks get reports of failures only (``delivery.report.only.error``,
see :mod:`kopycat.runtime.source_runner`'s flush barrier). A record Kafka refused fails the task
under ``errors.tolerance=none`` or is reported and skipped under ``all``
(:meth:`DeliveryReports.check`), before the commit that would otherwise cover it.
"""

from __future__ import annotations

from confluent_kafka import KafkaError, Message, Producer

from kopycat.api.errors import ConnectError
from kopycat.api.records import RecordMetadata, SourceRecord
from kopycat.api.task import SourceTask
from kopycat.runtime.bounds import RunSummary
from kopycat.runtime.errors import ProcessingContext, Stage
from kopycat.runtime.task_parts import TaskId, TaskParts

__all__ = ["Ack", "DeliveryReports"]

Ack = tuple[SourceRecord, KafkaError | None, Message | None]
"""(original record, error, where it was stored); a None message: dropped before producing."""
_new_metadata = tuple.__new__  # RecordMetadata without NamedTuple's Python-level __new__


def _partition(message: Message) -> int:
    """The partition a report names; -1 when the record was refused before one was chosen."""
    partition = message.partition()
    return -1 if partition is None else partition


class DeliveryReports:
    """One task's gathered acknowledgements and refusals; used on the runner's thread only."""

    def __init__(self, task_id: TaskId, task: SourceTask, parts: TaskParts, summary: RunSummary) -> None:
        self.id = task_id
        self.task = task
        self.parts = parts
        self.summary = summary
        self.acks: list[Ack] = []
        self.errors: list[tuple[KafkaError, str, int]] = []

    def on_delivery_error(self, error: KafkaError | None, message: Message) -> None:
        """The producer's callback when only failures are reported."""
        if error is not None:
            self.errors.append((error, message.topic() or "", _partition(message)))

    def deliver_acks(self) -> None:
        """Give the task the acknowledgements gathered so far, in one ``commit_records`` call."""
        if not self.acks:
            return
        acks = self.acks.copy()
        self.acks.clear()  # the same list: callbacks of records still in flight append to it
        records: list[SourceRecord] = []
        metadata: list[RecordMetadata | None] = []
        for record, error, message in acks:
            if error is not None:
                assert message is not None
                self.errors.append((error, message.topic() or "", _partition(message)))
                continue
            records.append(record)
            if message is None:  # dropped by a transform or a tolerated conversion error
                metadata.append(None)
                continue
            timestamp = message.timestamp()[1]
            metadata.append(_new_metadata(RecordMetadata, (message.topic(), message.partition(), message.offset(),
                                                           timestamp if timestamp >= 0 else None)))
        if records:
            self.task.commit_records(records, metadata)

    def check(self) -> None:
        """Fail on a record Kafka refused (tolerance none), or report and skip it (all).

        Gathered acknowledgements go to the task first (their failures are among them); every
        commit checks here after its flush, so the task hears of them before ``commit()``.
        """
        self.deliver_acks()
        if not self.errors:
            return
        errors, self.errors = self.errors, []
        for error, topic, partition in errors:
            cause = ConnectError(f"Kafka refused a record for topic '{topic}' partition {partition}: "
                                 f"{error.str()}; with errors.tolerance=none its offset is not "
                                 f"committed and it is re-sent when the task restarts")
            self.parts.retry.execute_failed(Stage.KAFKA_PRODUCE, Producer, cause, ProcessingContext())
            self.summary.skipped += 1

"""Tasks: copy records between Kafka and another system (Kafka Connect's connect/api tasks).

The engine runs one task per task config from ``Connector.task_configs``. A task never talks
to Kafka itself: a :class:`SourceTask` returns records from ``poll`` and the engine converts,
produces and commits their offsets; a :class:`SinkTask` gets consumed records in ``put`` and tells
the engine through ``pre_commit`` which offsets are safe to commit.

Threads: ``start``, ``poll``/``put``, ``flush``/``pre_commit`` and the commit callbacks come
from the task's one engine thread; ``stop`` may come from another thread and should make a
blocking ``poll`` return promptly.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

from kopycat import __version__
from kopycat.api.data import Type
from kopycat.api.record_batch import SinkRecordBatch, SourceRecordBatch
from kopycat.api.records import RecordMetadata, SinkRecord, SourceRecord, TopicPartition

SourceItem = SourceRecord | SourceRecordBatch
"""What a source task's poll() returns items of: a record, or consecutive records as Arrow columns."""

__all__ = [
    "OffsetStorageReader", "SinkTask", "SinkTaskContext", "SourceItem", "SourceTask", "SourceTaskContext",
    "Task", "TransactionContext",
]


class OffsetStorageReader(ABC):
    """Reads committed source offsets (Kafka Connect's OffsetStorageReader).

    Partitions and offsets are the dicts the task put in its SourceRecords; the lookup accepts
    any key order.
    """

    @abstractmethod
    def offsets(self, partitions: Iterable[Mapping[str, Any]]
                ) -> list[tuple[dict[str, Any], dict[str, Any] | None]]:
        """(partition, committed offset or None) for each partition asked for, in order."""

    def offset(self, partition: Mapping[str, Any]) -> dict[str, Any] | None:
        """The committed offset of one source partition, or None if it was never committed."""
        return self.offsets([partition])[0][1]


class TransactionContext(ABC):
    """Lets a source task set transaction boundaries itself (KIP-618's TransactionContext)."""

    @abstractmethod
    def commit_transaction(self, record: SourceRecord | None = None) -> None:
        """Commit after `record` (or after the current batch when None)."""

    @abstractmethod
    def abort_transaction(self, record: SourceRecord | None = None) -> None:
        """Abort the transaction holding `record` (or the current one when None)."""


class SourceTaskContext(ABC):
    """What the engine offers a source task (Kafka Connect's SourceTaskContext)."""

    @property
    @abstractmethod
    def configs(self) -> Mapping[str, str]:
        """The task's configuration, as given to start()."""

    @property
    @abstractmethod
    def offset_reader(self) -> OffsetStorageReader:
        """Committed offsets, to resume from in start()."""

    @property
    def transaction_context(self) -> TransactionContext | None:
        """Set only when exactly-once is on and the connector defines transaction boundaries."""
        return None

    @property
    def takes_columns(self) -> bool:
        """Whether this run sends the :class:`SourceRecordBatch` items poll() returns as columns.

        Beyond Kafka Connect. False when something needs records one by one (a transform,
        ``commit_record`` acknowledgements, exactly-once): each batch is then sent as
        ``batch.records()``. A task may use it to choose how it reads (reading a table straight
        into Arrow pays off only when the batch stays columns); what it returns stays the same.
        Default: True.
        """
        return True


class SinkTaskContext(ABC):
    """What the engine offers a sink task (Kafka Connect's SinkTaskContext)."""

    @property
    @abstractmethod
    def configs(self) -> Mapping[str, str]:
        """The task's configuration, as given to start()."""

    @abstractmethod
    def offset(self, offsets: Mapping[TopicPartition, int]) -> None:
        """Rewind or skip: consume each partition from the given offset next.

        A sink that keeps offsets in its destination calls this from open() with what it finds.
        """

    @abstractmethod
    def assignment(self) -> set[TopicPartition]:
        """The topic-partitions this task holds now."""

    @abstractmethod
    def pause(self, *partitions: TopicPartition) -> None:
        """Stop fetching these partitions until resume(); put() receives none of their records."""

    @abstractmethod
    def resume(self, *partitions: TopicPartition) -> None:
        """Fetch paused partitions again."""

    @abstractmethod
    def timeout(self, timeout_ms: int) -> None:
        """After a RetriableError from put(), wait this long before redelivering the batch."""

    @abstractmethod
    def request_commit(self) -> None:
        """Ask for an offset commit (flush/pre_commit) as soon as possible."""


class Task(ABC):
    """What every task has (Kafka Connect's Task)."""

    def version(self) -> str:
        return __version__

    @abstractmethod
    def start(self, props: Mapping[str, str]) -> None:
        """Start with a config from Connector.task_configs; resume from committed offsets here."""

    @abstractmethod
    def stop(self) -> None:
        """Stop; may be called from another thread while poll()/put() runs."""


class SourceTask(Task):
    """Reads an outside system and returns records for Kafka (Kafka Connect's SourceTask)."""

    context: SourceTaskContext

    def initialize(self, context: SourceTaskContext) -> None:
        """Called by the engine once, before start()."""
        self.context = context

    @abstractmethod
    def poll(self) -> list[SourceItem] | None:
        """Return the next records, or None when nothing is ready.

        Items are :class:`SourceRecord` s and, beyond Kafka Connect, :class:`SourceRecordBatch` es
        (consecutive records of one source partition as Arrow columns), in any mix: the engine
        keeps their order, a batch's records in place between the records around it. It encodes
        a batch a column at a time when it can (no transform, no acknowledgements, not
        exactly-once, a converter that encodes Arrow) and sends ``batch.records()`` otherwise, so
        the same rows reach Kafka as the same bytes either way. A task that cannot put some rows
        in columns returns those as records between its batches.

        Offsets: a record's ``source_offset`` is committed once it and everything before it was
        acknowledged; a batch commits as a whole, at its ``source_offset`` (its last row's).

        May block, but must return regularly so the worker can pause or stop the task.
        stop() is called from another thread; poll() should then return promptly.
        Raises RetriableError to have the worker back off and call poll() again.
        """

    def commit(self) -> None:
        """Offsets up to the last acknowledged records were committed (optional hook).

        For systems that want to be told, e.g. to delete consumed input.
        """

    def commit_record(self, record: SourceRecord, metadata: RecordMetadata | None) -> None:
        """`record` was acknowledged by Kafka at `metadata` (None: dropped by a transform or
        skipped as a tolerated error). Optional hook, called from the engine's thread."""

    def commit_records(self, records: Sequence[SourceRecord], metadata: Sequence[RecordMetadata | None]) -> None:
        """The batch form of :meth:`commit_record` (Kopycat's; Kafka Connect has only the single one).

        ``metadata[i]`` is where ``records[i]`` was stored, as for :meth:`commit_record`. The engine
        gathers the acknowledgements that arrive while it serves the producer and calls this once
        for them, in acknowledgement order (per Kafka partition, the order produced), and always
        before :meth:`commit` for the records that commit covers. The default calls
        :meth:`commit_record` for each; a task that wants every acknowledgement on a hot path
        (MirrorMaker's offset syncs) overrides this instead and saves a Python call per record.
        """
        for record, where in zip(records, metadata, strict=True):
            self.commit_record(record, where)


class SinkTask(Task):
    """Writes records consumed from Kafka to an outside system (Kafka Connect's SinkTask).

    Records arrive through :meth:`put`. A task that writes columns may also take them as Arrow
    batches, and there is one way to say so: return the value types it takes that way from
    :meth:`batch_value_types` and implement :meth:`put_batch`. Implementing ``put_batch`` alone
    takes nothing; put() stays required, as the engine falls back to it record by record.
    """

    context: SinkTaskContext

    def initialize(self, context: SinkTaskContext) -> None:
        """Called by the engine once, before start()."""
        self.context = context

    def open(self, partitions: Collection[TopicPartition]) -> None:
        """These partitions were assigned: set up writers; seek with context.offset() here."""

    @abstractmethod
    def put(self, records: Sequence[SinkRecord]) -> None:
        """Write (or buffer) a batch. Raise RetriableError to have the same batch redelivered."""

    def batch_value_types(self) -> frozenset[Type]:
        """The value schema types the engine may hand to :meth:`put_batch` instead of put() (asked once,
        after start()); empty, the default, for none.

        Beyond Kafka Connect, and the only switch for the columnar path: a task that writes
        columns and needs only record values names the types it writes that way (a Parquet writer
        STRUCT, a line writer STRING). The engine hands a run of one partition's records over as a
        :class:`~kopycat.api.record_batch.SinkRecordBatch` only when no transform is configured,
        the value converter decodes it to an Arrow array of one of these types and no message
        carries headers; it calls put() for everything else, in order, so results do not depend
        on the path.
        """
        return frozenset()

    def put_batch(self, batch: SinkRecordBatch) -> None:
        """Write (or buffer) one topic partition's records as an Arrow array; same contract as put().

        Called only with values of a type :meth:`batch_value_types` names; the result must equal
        put() of the same records. Raise RetriableError to have the same batch redelivered.
        """
        raise NotImplementedError(f"{type(self).__name__} accepts batches but does not implement put_batch()")

    def flush(self, current_offsets: Mapping[TopicPartition, int]) -> None:
        """Make everything put() so far durable (optional; see pre_commit)."""

    def pre_commit(self, current_offsets: Mapping[TopicPartition, int]
                   ) -> Mapping[TopicPartition, int]:
        """Return the offsets that are safe to commit to the consumer group.

        ``current_offsets`` are the next offsets after the records put() so far. The default
        flushes and returns them all (Kafka's preCommit). A sink that writes asynchronously
        returns less; one that keeps offsets in its destination returns {} (exactly-once).
        """
        self.flush(current_offsets)
        return current_offsets

    def close(self, partitions: Collection[TopicPartition]) -> None:
        """These partitions were revoked: finish or drop their writers."""

"""Connector-defined transaction boundaries: what a source task asked for (Kafka's ``WorkerTransactionContext``).

With ``transaction.boundary=connector`` (KIP-618) an exactly-once source task decides where its
transactions end through ``SourceTaskContext.transaction_context``: commit or abort after a given
record, or after the current batch. The task may call from any thread; the runner asks, on its
own thread, after sending each record the task named and after each batch. A request is answered
once (asking clears it), and asking for both a commit and an abort of the same record or batch is
the task's error, as in Kafka.
"""

from __future__ import annotations

import threading

from kopycat.api.errors import ConnectError
from kopycat.api.records import SourceRecord
from kopycat.api.task import TransactionContext

__all__ = ["WorkerTransactionContext"]


class WorkerTransactionContext(TransactionContext):
    """Records the task's requests; records are matched by identity (they are not hashable)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._commit_batch = False
        self._abort_batch = False
        self._commit_records: dict[int, SourceRecord] = {}
        self._abort_records: dict[int, SourceRecord] = {}

    def commit_transaction(self, record: SourceRecord | None = None) -> None:
        with self._lock:
            if record is None:
                self._commit_batch = True
            else:
                self._commit_records[id(record)] = record  # the reference keeps the id unique

    def abort_transaction(self, record: SourceRecord | None = None) -> None:
        with self._lock:
            if record is None:
                self._abort_batch = True
            else:
                self._abort_records[id(record)] = record

    @property
    def has_record_requests(self) -> bool:
        """Whether any record-level request waits: the runner then checks the batch record by record."""
        return bool(self._commit_records or self._abort_records)

    def request_after(self, record: SourceRecord) -> str | None:
        """``"commit"``, ``"abort"`` or None for the transaction ending with ``record``; clears the request."""
        with self._lock:
            commit = self._commit_records.pop(id(record), None) is not None
            abort = self._abort_records.pop(id(record), None) is not None
        if commit and abort:
            raise ConnectError(f"The task asked to both commit and abort the transaction after the record for "
                               f"topic {record.topic!r} (source offset {record.source_offset}): ask for one")
        return "commit" if commit else "abort" if abort else None

    def batch_request(self) -> str | None:
        """``"commit"``, ``"abort"`` or None for the transaction after the current batch; clears it."""
        with self._lock:
            commit, abort = self._commit_batch, self._abort_batch
            self._commit_batch = self._abort_batch = False
        if commit and abort:
            raise ConnectError("The task asked to both commit and abort the transaction after the same batch: "
                               "ask for one")
        return "commit" if commit else "abort" if abort else None

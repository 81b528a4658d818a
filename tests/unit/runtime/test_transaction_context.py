"""WorkerTransactionContext: a task's boundary requests, answered once, matched by record identity."""

from __future__ import annotations

import pytest

from kopycat.api.errors import ConnectError
from kopycat.api.records import SourceRecord
from kopycat.runtime.transaction_context import WorkerTransactionContext


def record(i: int) -> SourceRecord:
    return SourceRecord(topic="t", source_partition={"p": 0}, source_offset={"i": i}, value=i)


def test_a_record_request_is_answered_once_and_only_for_that_record_object() -> None:
    context, first, equal_copy = WorkerTransactionContext(), record(1), record(1)
    context.commit_transaction(first)
    assert context.has_record_requests
    assert context.request_after(equal_copy) is None  # an equal record is another record
    assert context.request_after(first) == "commit"
    assert context.request_after(first) is None and not context.has_record_requests
    context.abort_transaction(first)
    assert context.request_after(first) == "abort"


def test_a_batch_request_is_answered_once() -> None:
    context = WorkerTransactionContext()
    assert context.batch_request() is None
    context.abort_transaction()
    assert context.batch_request() == "abort"
    assert context.batch_request() is None


def test_asking_to_commit_and_abort_the_same_record_or_batch_is_the_tasks_error() -> None:
    context, one = WorkerTransactionContext(), record(7)
    context.commit_transaction(one)
    context.abort_transaction(one)
    with pytest.raises(ConnectError, match=r"both commit and abort .* \(source offset {'i': 7}\)"):
        context.request_after(one)
    context.commit_transaction()
    context.abort_transaction()
    with pytest.raises(ConnectError, match="both commit and abort the transaction after the same batch"):
        context.batch_request()

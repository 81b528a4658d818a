"""What a source task's poll() returned, as records: how tests look at batches and records alike."""

from __future__ import annotations

from collections.abc import Iterable

from kopycat.api.record_batch import SourceRecordBatch
from kopycat.api.records import SourceRecord
from kopycat.api.task import SourceItem, SourceTask


def records_of(items: Iterable[SourceItem]) -> list[SourceRecord]:
    """Polled items as records: each batch as the records it holds (``batch.records()``), in order."""
    return [r for item in items for r in (item.records() if isinstance(item, SourceRecordBatch) else [item])]


def poll_records(task: SourceTask) -> list[SourceRecord] | None:
    """One poll's records (batches opened into theirs); None when the poll returned None."""
    items = task.poll()
    return None if items is None else records_of(items)

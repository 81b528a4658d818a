"""The conversion stage of a source task: records (or columnar batches) to key, value and header bytes.

Follows Kafka Connect's ``WorkerSourceTask.convertTransformedRecord``: each record's key and value
go through the task's converters and its headers through the header converter, with the error
handling of the stage (retries, tolerance, dead letter reporting). Converters see a run of
records sharing a topic and schemas at once (``from_connect_data_batch``); a run that fails is
converted record by record to find, report and (when tolerated) skip the bad ones.

Columnar batches (:class:`~kopycat.api.record_batch.SourceRecordBatch`) are encoded a column at a
time by ``Converter.from_arrow_array``; a converter that cannot (None, or an error) leaves the batch
to the record path, which reports bad values as always.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from kopycat.api.record_batch import SourceRecordBatch
from kopycat.api.records import SourceRecord
from kopycat.runtime.bounds import RunSummary
from kopycat.runtime.errors import ProcessingContext, Stage
from kopycat.runtime.task_parts import TaskId, TaskParts

__all__ = ["Produced", "Run", "SourceRecordConverter"]

log = logging.getLogger(__name__)

Produced = tuple[SourceRecord, bytes | None, bytes | None, list[tuple[str, bytes | None]] | None]
"""A record and its key, value and header bytes."""
Run = tuple[str, list[Produced]]
"""One topic's consecutive records, converted."""


class SourceRecordConverter:
    """Converts one task's records; counts tolerated failures in the run's summary (one thread)."""

    def __init__(self, task_id: TaskId, parts: TaskParts, summary: RunSummary) -> None:
        self.id = task_id
        self.parts = parts
        self.summary = summary
        self.unsent: list[SourceRecord] = []  # skipped by a tolerated conversion error, until taken

    def convert(self, records: Sequence[SourceRecord]) -> list[Run]:
        """Key, value and header bytes of each record, per run of one topic and schemas; tolerated
        failures are left out (and noted in ``unsent``)."""
        out: list[Run] = []
        start = 0
        while start < len(records):
            first = records[start]
            end = start + 1
            while (end < len(records) and records[end].topic == first.topic
                   and records[end].key_schema is first.key_schema
                   and records[end].value_schema is first.value_schema):
                end += 1
            out.append((first.topic, self._convert_run(records[start:end])))
            start = end
        return out

    def _convert_run(self, run: Sequence[SourceRecord]) -> list[Produced]:
        parts, first = self.parts, run[0]
        try:
            keys = parts.key_converter.from_connect_data_batch(first.topic, first.key_schema,
                                                              [r.key for r in run])
            values = parts.value_converter.from_connect_data_batch(first.topic, first.value_schema,
                                                                  [r.value for r in run])
            return [(r, k, v, self._headers(r) if r.headers else None)
                    for r, k, v in zip(run, keys, values, strict=True)]
        except Exception:  # noqa: BLE001 - find the bad record(s) one by one, with error handling
            return self._convert_each(run)

    def _convert_each(self, run: Sequence[SourceRecord]) -> list[Produced]:
        out = []
        for record in run:
            produced = self._convert_one(record)
            if produced is None:
                self.unsent.append(record)
            else:
                out.append(produced)
        return out

    def _convert_one(self, record: SourceRecord) -> Produced | None:
        parts, context = self.parts, ProcessingContext.for_source(record)
        converted: list[Any] = []
        for stage, converter, schema, value in (
                (Stage.KEY_CONVERTER, parts.key_converter, record.key_schema, record.key),
                (Stage.VALUE_CONVERTER, parts.value_converter, record.value_schema, record.value)):
            result = parts.retry.execute(
                lambda c=converter, s=schema, v=value: (c.from_connect_data(record.topic, s, v),),
                stage, type(converter), context)
            if result is None:
                self.summary.skipped += 1
                return None
            converted.append(result[0])
        headers = parts.retry.execute(lambda: (self._headers(record),), Stage.HEADER_CONVERTER,
                                      type(parts.header_converter), context) if record.headers else (None,)
        if headers is None:
            self.summary.skipped += 1
            return None
        return record, converted[0], converted[1], headers[0]

    def _headers(self, record: SourceRecord) -> list[tuple[str, bytes | None]]:
        convert = self.parts.header_converter.from_connect_header
        return [(h.key, convert(record.topic, h.key, h.schema, h.value)) for h in record.headers]

    def encode_batch(self, batch: SourceRecordBatch) -> tuple[Any, Any] | None:
        """The batch's key and value bytes as Arrow binary arrays (keys None without keys), or None
        when a converter answers None or fails: the record path then converts (and reports) them."""
        parts = self.parts
        try:
            values = parts.value_converter.from_arrow_array(batch.topic, batch.value_schema, batch.values)
            if values is None or batch.keys is None:
                return None if values is None else (None, values)
            keys = parts.key_converter.from_arrow_array(batch.topic, batch.key_schema, batch.keys)
        except Exception:  # noqa: BLE001 - the record path finds the bad record and applies error handling
            log.debug("Task %s: a batch for %s takes the record path", self.id, batch.topic, exc_info=True)
            return None
        return None if keys is None else (keys, values)

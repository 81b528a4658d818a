"""Consumed messages to SinkRecords: the converters and the header converter, batch by batch.

Kafka Connect's ``WorkerSinkTask.convertMessages`` / ``convertAndTransformRecord`` (conversion
part): each run of one topic in a consumed batch goes through the key and value converters'
batch methods, and the records are built in one loop with ``SinkRecord.of``, the hot path of
every sink. When a batch fails to convert, it is redone message by message under the task's
``errors.tolerance`` (``RetryWithToleranceOperator``), so a tolerated bad message is skipped
(and counted) and an intolerable one fails the task naming its topic, partition and offset.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any

from confluent_kafka import Message

from kopycat.api.records import Header, Headers, SinkRecord, TimestampType
from kopycat.runtime.bounds import RunSummary
from kopycat.runtime.errors import ProcessingContext, Stage
from kopycat.runtime.task_parts import TaskParts

__all__ = ["MessageConverter"]

_TIMESTAMP_TYPES = (TimestampType.NO_TIMESTAMP_TYPE, TimestampType.CREATE_TIME, TimestampType.LOG_APPEND_TIME)


class MessageConverter:
    """Converts with ``parts``' converters and error handling; skipped messages count in ``summary``."""

    def __init__(self, parts: TaskParts, summary: RunSummary) -> None:
        self.parts = parts
        self.summary = summary

    def convert(self, messages: Sequence[Message]) -> list[SinkRecord]:
        """The batch's records; a batch that fails to convert is redone message by message."""
        parts = self.parts
        topic = messages[0].topic()
        if any(m.topic() != topic for m in messages):  # one converter call per run of one topic
            runs: list[list[Message]] = []
            for message in messages:
                if runs and runs[-1][0].topic() == message.topic():
                    runs[-1].append(message)
                else:
                    runs.append([message])
            return [record for run in runs for record in self.convert(run)]
        try:
            keys = parts.key_converter.to_connect_data_batch(topic, [m.key() for m in messages])
            values = parts.value_converter.to_connect_data_batch(topic, [m.value() for m in messages])
            return self._records(topic, messages, keys, values)
        except Exception:  # noqa: BLE001 - find the bad record(s) one by one, with error handling
            return [r for r in map(self._convert_one, messages) if r is not None]

    def _convert_one(self, message: Message) -> SinkRecord | None:
        parts, topic = self.parts, message.topic()
        context = partial(ProcessingContext.for_message, message)
        key = parts.retry.execute(lambda: parts.key_converter.to_connect_data(topic, message.key()),
                                  Stage.KEY_CONVERTER, type(parts.key_converter), context)
        value = None if key is None else parts.retry.execute(
            lambda: parts.value_converter.to_connect_data(topic, message.value()),
            Stage.VALUE_CONVERTER, type(parts.value_converter), context)
        headers = None if value is None else parts.retry.execute(
            lambda: (self._headers(message),), Stage.HEADER_CONVERTER, type(parts.header_converter), context)
        if headers is None:
            self.summary.skipped += 1
            return None
        return self._record(message, key, value, headers[0])  # type: ignore[arg-type]

    def _headers(self, message: Message) -> Headers | None:
        raw = message.headers()
        if not raw:
            return None
        convert, topic = self.parts.header_converter.to_connect_header, message.topic()
        headers = []
        for key, value in raw:
            schema, converted = convert(topic, key, value)
            headers.append(Header(key, converted, schema))
        return Headers(headers)

    def _records(self, topic: str, messages: Sequence[Message], keys: list[Any], values: list[Any]) -> list[SinkRecord]:
        """The batch's records (one topic): ``SinkRecord.of`` in one loop, the hot path of every sink."""
        of, types, headers = SinkRecord.of, _TIMESTAMP_TYPES, self._headers
        records = []
        append = records.append
        for message, (key_schema, key), (value_schema, value) in zip(messages, keys, values, strict=True):
            timestamp_type, timestamp = message.timestamp()
            offset = message.offset()
            append(of(topic, message.partition(), key_schema, key, value_schema, value, offset,
                      timestamp if timestamp_type else None, types[timestamp_type],
                      headers(message) if message.headers() else None))
        return records

    @staticmethod
    def _record(message: Message, key: Any, value: Any, headers: Headers | None) -> SinkRecord:
        timestamp_type, timestamp = message.timestamp()
        return SinkRecord.of(message.topic(), message.partition(), key[0], key[1], value[0], value[1],
                             message.offset(), timestamp if timestamp_type else None,
                             _TIMESTAMP_TYPES[timestamp_type], headers)

"""SingerSinkTask: feeds a Singer target from topics, committing only what the target persisted.

Each topic is a Singer stream of the same name. Before a topic's first record, and whenever its
value schema changes, the target gets a SCHEMA message (the Connect schema as JSON Schema,
:func:`~kopycat.connectors.singer.json_schema.json_schema_of`, with the key struct's fields as
``key_properties``), then RECORD messages, written to its stdin in bulk. A STATE message holding
the next offset of every partition written follows each batch of at most
``singer.batch.max.records`` records.

The consumer group is committed behind the target (Kafka Connect's ``SinkTask.preCommit``
contract): pre_commit returns the offsets of the last state the target echoed, the state of
records it has persisted, never the offsets merely consumed. A new echo asks for a commit at
once (``request_commit``), so a crash of the target or of Kopycat writes again at most the
records persisted after the last echo committed. A target echoes when it persists (pipelinewise
targets after each flush) or only at the end of its input (Meltano SDK targets hold state until
``drain_all``); so a bounded run ends the target's input at each commit, and a continuous one
at a commit when the target echoed nothing since the last, and waits for it to persist, echo
and exit; the next batch starts a new target run, as a scheduled Meltano run would. A target
that exits non-zero, or early, fails the task with the tail of its stderr.

With ``singer.target.echo.timeout.ms`` set, put() runs in lock-step with a target that persists
at each STATE: one batch, its echo, a commit, the next batch (the rest of the poll is delivered
again through ``SinkTaskContext.offset``), so a crash writes again at most one batch.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import orjson

from kopycat.api import DataError, Schema, SinkRecord, SinkTask, is_bounded_run
from kopycat.api.records import TopicPartition
from kopycat.connectors.singer.json_schema import json_schema_of, json_writer
from kopycat.connectors.singer.sink_config import (
    BATCH_RECORDS_CONFIG,
    CONFIG,
    CONFIG_FILE_CONFIG,
    ECHO_TIMEOUT_MS_CONFIG,
    EXECUTABLE_CONFIG,
    FINISH_TIMEOUT_MS_CONFIG,
    SETTING_PREFIX,
    offsets_of,
    state_value,
)
from kopycat.connectors.singer.source_config import plugin_settings
from kopycat.connectors.singer.target_process import TargetProcess

__all__ = ["SingerSinkTask"]

log = logging.getLogger(__name__)


class _Stream:
    """A topic's schema as last sent to the target, and the writer of its values."""

    def __init__(self, topic: str, schema: Schema, key_schema: Schema | None) -> None:
        self.schema = schema
        self.write = json_writer(schema, topic)
        key_fields = key_schema.fields if key_schema is not None and key_schema.type.name == "STRUCT" else []
        names = {field.name for field in schema.fields}
        self.key_properties = [field.name for field in key_fields if field.name in names]
        self.message = orjson.dumps({"type": "SCHEMA", "stream": topic, "schema": json_schema_of(schema),
                                     "key_properties": self.key_properties})


class SingerSinkTask(SinkTask):
    """Runs a Singer target and writes the records put() hands it; see the module docstring.

    Thread-safety: the engine's task thread calls everything but stop(), which may come from
    another thread and only ends the target.
    """

    def __init__(self) -> None:
        self.target: TargetProcess | None = None
        self.workdir: Path | None = None

    def start(self, props: Mapping[str, str]) -> None:
        parsed = CONFIG.parse(props)
        self.executable = str(parsed[EXECUTABLE_CONFIG])
        self.batch_records = int(parsed[BATCH_RECORDS_CONFIG])
        self.finish_s = int(parsed[FINISH_TIMEOUT_MS_CONFIG]) / 1000
        self.echo_timeout_s = int(parsed[ECHO_TIMEOUT_MS_CONFIG]) / 1000
        self.bounded = is_bounded_run(props)
        self.workdir = Path(tempfile.mkdtemp(prefix="kopycat-singer-target-"))
        settings = plugin_settings(self.executable, props, SETTING_PREFIX, CONFIG_FILE_CONFIG)
        self.config_file = self._private_file("config.json", settings)
        self.streams: dict[str, _Stream] = {}
        self.written: dict[TopicPartition, int] = {}
        self.persisted: dict[TopicPartition, int] = {}
        self.echoes_taken = self.echoes_at_commit = 0

    def _private_file(self, name: str, content: Any) -> Path:
        """A file only this user may read: the target's config may hold secrets."""
        assert self.workdir is not None
        path = self.workdir / name
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "wb") as out:
            out.write(orjson.dumps(content))
        return path

    def _running_target(self) -> TargetProcess:
        if self.target is None:
            self.target = TargetProcess([self.executable, "--config", str(self.config_file)])
            self.streams = {}  # a new run needs every SCHEMA again
            self.echoes_taken = self.echoes_at_commit = 0
        return self.target

    def put(self, records: Sequence[SinkRecord]) -> None:
        if not records:
            return
        target = self._running_target()
        target.check_alive()
        if self.echo_timeout_s:
            self._put_lock_step(target, records)
            return
        lines: list[bytes] = []
        for start in range(0, len(records), self.batch_records):
            lines.extend(self._batch_lines(records[start:start + self.batch_records]))
        target.write(b"".join(lines))
        self._take_echo(target)

    def _put_lock_step(self, target: TargetProcess, records: Sequence[SinkRecord]) -> None:
        """Write one batch, wait for its echo, and have the rest of ``records`` delivered again after the
        commit (SinkTaskContext.offset), so no more than one batch is ever persisted and uncommitted."""
        batch, rest = records[:self.batch_records], records[self.batch_records:]
        target.write(b"".join(self._batch_lines(batch)))
        target.wait_for_echo(state_value(self.written), self.echo_timeout_s)
        self._take_echo(target)
        rewind: dict[TopicPartition, int] = {}
        for record in rest:
            rewind.setdefault(TopicPartition(record.original_topic, record.original_kafka_partition),
                              record.original_kafka_offset)
        if rewind:
            self.context.offset(rewind)

    def _batch_lines(self, records: Sequence[SinkRecord]) -> list[bytes]:
        """The SCHEMA and RECORD lines of ``records``, then the STATE of the offsets after them."""
        lines: list[bytes] = []
        for record in records:
            self.written[TopicPartition(record.original_topic, record.original_kafka_partition)] = (
                record.original_kafka_offset + 1)
            if record.value is not None:  # a tombstone: Singer has no deletes
                lines.extend(self._messages(record))
        lines.append(orjson.dumps({"type": "STATE", "value": state_value(self.written)}) + b"\n")
        return lines

    def _messages(self, record: SinkRecord) -> list[bytes]:
        """The RECORD line of ``record``, after a SCHEMA line when its topic's schema is new or changed."""
        schema = record.value_schema
        if schema is None or schema.type.name != "STRUCT":
            raise DataError(f"Topic {record.topic} offset {record.kafka_offset}: the Singer sink needs values with a "
                            f"STRUCT schema, got {schema.type.name if schema else 'no schema'}; use a converter "
                            f"that carries schemas (JsonConverter with schemas.enable=true, AvroConverter)")
        stream = self.streams.get(record.topic)
        lines = []
        if stream is None or (stream.schema is not schema and stream.schema != schema):
            stream = self.streams[record.topic] = _Stream(record.topic, schema, record.key_schema)
            lines.append(stream.message + b"\n")
        lines.append(orjson.dumps({"type": "RECORD", "stream": record.topic, "record": stream.write(record.value)},
                                  option=orjson.OPT_APPEND_NEWLINE))
        return lines

    def _take_echo(self, target: TargetProcess, *, ask: bool = True) -> None:
        """Keep the offsets of a new echoed state; in a continuous run, ``ask`` for a commit of them."""
        if target.echoes == self.echoes_taken:
            return
        state = target.latest_state()
        self.echoes_taken = target.echoes
        if state is not None:
            self.persisted.update(offsets_of(state, self.executable))
            if ask and not self.bounded:
                self.context.request_commit()

    def pre_commit(self, current_offsets: Mapping[TopicPartition, int]) -> Mapping[TopicPartition, int]:
        """The offsets of the last state the target echoed (what it persisted) of the partitions held.

        The target's input ends first (it persists everything written, echoes the last state and
        exits) in a bounded run, and in a continuous one when it holds records and echoed nothing
        since the last commit: a target that echoes only at the end of its input.
        """
        target = self.target
        if target is not None:
            if self.bounded or (target.echoes == self.echoes_at_commit and self.written != self.persisted):
                self.target = None
                target.finish(self.finish_s)
            self._take_echo(target, ask=False)
            self.echoes_at_commit = target.echoes
        return {tp: offset for tp, offset in self.persisted.items() if tp in current_offsets}

    def stop(self) -> None:
        """End the target (what it did not echo is written again by the next run) and remove its files."""
        target = self.target
        if target is not None:
            target.terminate()
        if self.workdir is not None:
            shutil.rmtree(self.workdir, ignore_errors=True)

"""One topic partition's files: fill, rotate, commit exactly once (Confluent's TopicPartitionWriter).

Records of a partition go to one open file per encoded partition (``partition=3``, or
``region=eu`` with the field partitioner, ``year=2026/...`` with the time-based one). The files
open together form a *round*; a round ends (all its files are committed) when

- ``flush.size`` records are in it,
- a record's time is ``rotate.interval.ms`` past the round's first record (record time, so a
  replay cuts the same files),
- the wall clock passes a ``rotate.schedule.interval.ms`` boundary (in ``timezone``),
- a record's value schema cannot go into its file (``schema.compatibility``, see
  :class:`SchemaCompatibility`: any change under NONE, a newer version under BACKWARD/FULL, an
  older one under FORWARD, another schema name always),
- or the task commits everything it holds (the end of a bounded run).

Commit protocol (DESIGN.md §3): each file is written under ``+tmp`` and moved to its committed
name ``<topic>+<partition>+<start>+<end>.<ext>``. A round of one file is committed by that one
move. A round of several files first writes a round manifest listing the committed names, moves
the files, then deletes the manifest; a crash in between leaves the manifest, and recovery
deletes the round's committed files (roll back), so a round is either wholly committed or not at
all and the greatest end offset in the names is always a true resume point. Rounds are written and
moved on the task's :class:`~kopycat.connectors.files.round_committer.RoundCommitter` thread while
the next round fills; the consumer group is told only the start of a round in flight. Confluent's S3 sink
has no such step and can lose the rest of a round that a crash cut in half.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import posixpath
import uuid
from bisect import bisect_left
from collections.abc import Iterable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from functools import partial
from typing import Final

from kopycat.api.data import Schema
from kopycat.api.errors import ConnectError, DataError
from kopycat.api.record_batch import SinkRecordBatch
from kopycat.api.records import SinkRecord, TopicPartition
from kopycat.api.schema_projector import SchemaProjector
from kopycat.connectors.files.committed_files import TEMP_DIR, committed_name
from kopycat.connectors.files.partitioner_config import parse_timezone
from kopycat.connectors.files.partitioners import Partitioner
from kopycat.connectors.files.record_formats import FileContents, RecordFormat
from kopycat.connectors.files.round_committer import RoundCommitter
from kopycat.connectors.files.sink_config import FileSinkSettings
from kopycat.connectors.files.store import Store

__all__ = ["SchemaCompatibility", "TopicPartitionWriter", "round_manifest_name", "round_manifest_path",
           "temp_prefix"]

log = logging.getLogger(__name__)

MANIFEST_SUFFIX: Final = ".round.json"


def temp_prefix(tp: TopicPartition) -> str:
    """Base-name prefix of this partition's temporary files (one writer per partition)."""
    return f"{tp.topic}+{tp.partition}+"


def round_manifest_name(tp: TopicPartition) -> str:
    """The base name of the partition's round manifest, in its topic's ``+tmp`` (the Spark export's too)."""
    return f"{tp.topic}+{tp.partition}{MANIFEST_SUFFIX}"


def round_manifest_path(store: Store, topics_dir: str, tp: TopicPartition) -> str:
    return store.path(topics_dir, tp.topic, TEMP_DIR, round_manifest_name(tp))


class SchemaCompatibility:
    """What a record of another value schema does to its open file (Confluent's StorageSchemaCompatibility).

    NONE: any other schema rolls a new file. BACKWARD and FULL: a newer version rolls (the new
    file takes it), an older or equal one is projected onto the file's schema with Kafka's
    :class:`~kopycat.api.schema_projector.SchemaProjector`. FORWARD: an older version rolls, a
    newer or equal one is projected. A schema of another name always rolls (nothing to project:
    Confluent's newer releases roll on it too). All but NONE need versioned schemas.
    """

    def __init__(self, mode: str) -> None:
        self.mode = mode
        self.versioned = mode != "NONE"

    def check(self, record: SinkRecord) -> None:
        """Raise DataError naming the record and the fix unless its value schema has a version."""
        schema = record.value_schema
        if schema is not None and schema.version is not None:
            return
        what = "no value schema" if schema is None else f"a value schema without a version ({schema!r})"
        raise DataError(f"Record {record.topic}-{record.kafka_partition} offset {record.kafka_offset} (key "
                        f"{_short(record.key)}) has {what}, but schema.compatibility={self.mode} orders schemas "
                        f"by version: give the value schemas versions (Schema Registry converters do; "
                        f"JsonConverter envelopes carry \"version\"), or set schema.compatibility=NONE")

    def rolls(self, schema: Schema | None, file_schema: Schema | None) -> bool:
        """True when a record of ``schema`` must start a new file instead of going into one of ``file_schema``."""
        if schema is file_schema or schema == file_schema:
            return False
        if not self.versioned or schema is None or file_schema is None or schema.name != file_schema.name:
            return True
        if self.mode == "FORWARD":
            return schema.version < file_schema.version  # type: ignore[operator]  # check() saw versions
        return schema.version > file_schema.version  # type: ignore[operator]

    def project(self, record: SinkRecord, file_schema: Schema | None) -> SinkRecord:
        """The record with its value projected onto ``file_schema`` (itself when the schemas are equal)."""
        schema = record.value_schema
        if schema is file_schema or schema == file_schema or schema is None or file_schema is None:
            return record
        try:
            value = SchemaProjector.project(schema, record.value, file_schema)
        except DataError as exc:
            raise DataError(f"Record {record.topic}-{record.kafka_partition} offset {record.kafka_offset} (key "
                            f"{_short(record.key)}) of {_version(schema)} cannot go into its open file of "
                            f"{_version(file_schema)} under schema.compatibility={self.mode}: {exc}. Make the "
                            f"schema change {self.mode} compatible, or set schema.compatibility=NONE") from exc
        return record.new_record(value_schema=file_schema, value=value)


def _version(schema: Schema) -> str:
    return f"value schema {schema.name or schema.type.name} version {schema.version}"


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


@dataclass
class _OpenFile:
    encoded: str
    schema: Schema | None
    contents: FileContents
    start_offset: int
    end_offset: int = -1
    records: int = 0


@dataclass(frozen=True)
class _InFlight:
    """A round handed to the committer: its first offset, and the offset after it once committed."""

    start_offset: int
    future: Future[int]


@dataclass
class _Round:
    """The files open together and what ends them."""

    start_offset: int
    files: dict[str, _OpenFile] = field(default_factory=dict)
    records: int = 0
    base_timestamp: int | None = None
    scheduled_end_ms: int | None = None


class TopicPartitionWriter:
    """Writes one topic partition's records to files and commits them; one writer per partition."""

    def __init__(self, tp: TopicPartition, store: Store, settings: FileSinkSettings,
                 partitioner: Partitioner, record_format: RecordFormat, timezone: str | None,
                 committer: RoundCommitter | None = None) -> None:
        self.tp = tp
        self.committer = committer or RoundCommitter(background=False)
        self.store = store
        self.settings = settings
        self.partitioner = partitioner
        self.format = record_format
        self.zone = parse_timezone(timezone) if timezone else dt.UTC
        self.compatibility = SchemaCompatibility(settings.schema_compatibility)
        self.next_offset: int | None = None
        """The offset after the last committed file (None: no committed file known)."""
        self.skipped_to: int | None = None
        """The offset after the last record seen, when no round is open (safe to commit)."""
        self._round: _Round | None = None
        self._in_flight: _InFlight | None = None
        self._failed_at: int | None = None
        """The first offset of a round whose commit failed: nothing from it on is ever reported safe."""

    # ------------------------------------------------------------------ recovery

    def roll_back_partial_round(self) -> list[str]:
        """Delete the committed files of a round a crash cut short; the names deleted."""
        manifest = round_manifest_path(self.store, self.settings.topics_dir, self.tp)
        if not self.store.exists(manifest):
            return []
        names = json.loads(self.store.read_bytes(manifest))["files"]
        for path in names:
            self.store.delete(path)
        self.store.delete(manifest)
        log.warning("Rolled back a partly committed round of %s-%d: deleted %s", self.tp.topic, self.tp.partition,
                    ", ".join(posixpath.basename(p) for p in names))
        return list(names)

    def delete_temp_files(self, temp_paths: Iterable[str]) -> None:
        prefix = temp_prefix(self.tp)
        for path in temp_paths:
            if posixpath.basename(path).startswith(prefix) and not path.endswith(MANIFEST_SUFFIX):
                self.store.delete(path)

    # ------------------------------------------------------------------ writes

    def write(self, records: Sequence[SinkRecord], now_ms: int) -> None:
        """Add records of this partition (offset order), committing rounds as they end."""
        self._settle(block=False)
        if records and self.next_offset is not None and records[0].kafka_offset < self.next_offset:
            # A redelivery of committed offsets (records come in offset order): drop that prefix.
            records = [r for r in records if r.kafka_offset >= self.next_offset]
        if not records:
            return
        self.commit_if_scheduled(now_ms)
        encoded = self.partitioner.encode_partitions(records, now_ms)
        pending: dict[str, list[SinkRecord]] = {}
        for record, partition in zip(records, encoded, strict=True):
            if record.value is None:
                self._null_value(record, pending)
                continue
            if self.compatibility.versioned:
                self.compatibility.check(record)
            is_open, file_schema = self._file_schema(partition, pending)
            if self._time_to_rotate(record, now_ms) or (
                    is_open and self.compatibility.rolls(record.value_schema, file_schema)):
                self._add(pending)
                pending = {}
                self.commit()
            elif is_open:
                record = self.compatibility.project(record, file_schema)
            self._count(record, now_ms)
            pending.setdefault(partition, []).append(record)
            if self._round is not None and self._round.records >= self.settings.flush_size:
                self._add(pending)
                pending = {}
                self.commit()
        self._add(pending)

    def write_batch(self, batch: SinkRecordBatch, now_ms: int) -> None:
        """Add a batch of this partition as columns, cutting it where the record path would cut files.

        For what :meth:`FileSinkTask.batch_value_types` allows: a partitioner that places batches
        (the default one; time-based on the Kafka timestamp or the wall clock), no
        ``rotate.interval.ms``, schema.compatibility NONE (another schema rolls, equal schemas need
        no projection) and no null values (a batch has none).
        """
        self._settle(block=False)
        if self.next_offset is not None and batch.offsets[0] < self.next_offset:
            batch = batch.slice(bisect_left(batch.offsets, self.next_offset), len(batch))  # redelivered prefix
        if not len(batch):
            return
        self.commit_if_scheduled(now_ms)
        for encoded, start, stop in self.partitioner.encode_batch(batch, now_ms):
            self._write_run(batch.slice(start, stop), encoded, now_ms)

    def _write_run(self, batch: SinkRecordBatch, encoded: str, now_ms: int) -> None:
        """Records of one encoded partition into its file, committing the round at flush.size."""
        position = 0
        while position < len(batch):
            file = self._round.files.get(encoded) if self._round is not None else None
            if file is not None and self.compatibility.rolls(batch.value_schema, file.schema):
                self.commit()
                continue
            current = self._open_round(batch.offsets[position], now_ms)
            piece = batch.slice(position, position + min(self.settings.flush_size - current.records,
                                                         len(batch) - position))
            if file is None:
                file = current.files[encoded] = _OpenFile(encoded, batch.value_schema,
                                                          self.format.new_file(batch.value_schema),
                                                          start_offset=piece.offsets[0])
            file.contents.add_columns(piece)
            file.end_offset = piece.offsets[-1]
            file.records += len(piece)
            current.records += len(piece)
            position += len(piece)
            if current.records >= self.settings.flush_size:
                self.commit()

    def _open_round(self, start_offset: int, now_ms: int) -> _Round:
        """The open round, or a new one starting at ``start_offset``."""
        if self._round is None:
            self._round = _Round(start_offset=start_offset, scheduled_end_ms=self._next_scheduled_rotation(now_ms))
            self.skipped_to = None
        return self._round

    def _null_value(self, record: SinkRecord, pending: dict[str, list[SinkRecord]]) -> None:
        if not self.settings.ignore_null_values:
            raise DataError(f"Record {record.topic}-{record.kafka_partition} offset {record.kafka_offset} has a "
                            f"null value (a tombstone), which files cannot hold: set "
                            f"behavior.on.null.values=ignore to skip such records")
        if self._round is None and not pending:
            self.skipped_to = record.kafka_offset + 1

    def _time_to_rotate(self, record: SinkRecord, now_ms: int) -> bool:
        interval = self.settings.rotate_interval_ms
        current = self._round
        if interval <= 0 or current is None or current.base_timestamp is None:
            return False
        timestamp = self._record_time(record, now_ms)
        return timestamp is not None and timestamp - current.base_timestamp >= interval

    def _file_schema(self, partition: str, pending: dict[str, list[SinkRecord]]) -> tuple[bool, Schema | None]:
        """(whether ``partition`` has a file open or pending, that file's value schema)."""
        waiting = pending.get(partition)
        if waiting:
            return True, waiting[-1].value_schema
        if self._round is not None and partition in self._round.files:
            return True, self._round.files[partition].schema
        return False, None

    def _count(self, record: SinkRecord, now_ms: int) -> None:
        current = self._open_round(record.kafka_offset, now_ms)
        current.records += 1
        if current.base_timestamp is None and self.settings.rotate_interval_ms > 0:
            current.base_timestamp = self._record_time(record, now_ms)

    def _record_time(self, record: SinkRecord, now_ms: int) -> int | None:
        timestamp = self.partitioner.record_timestamp(record, now_ms)
        return record.timestamp if timestamp is None else timestamp

    def _add(self, pending: dict[str, list[SinkRecord]]) -> None:
        current = self._round
        if current is None:
            return
        for partition, records in pending.items():
            file = current.files.get(partition)
            if file is None:
                file = current.files[partition] = _OpenFile(
                    partition, records[0].value_schema, self.format.new_file(records[0].value_schema),
                    start_offset=records[0].kafka_offset)
            file.contents.add(records)
            file.end_offset = records[-1].kafka_offset
            file.records += len(records)

    # ------------------------------------------------------------------ commits

    def commit_if_scheduled(self, now_ms: int) -> None:
        current = self._round
        if current is not None and current.scheduled_end_ms is not None and now_ms >= current.scheduled_end_ms:
            self.commit()

    def _next_scheduled_rotation(self, now_ms: int) -> int | None:
        """The next wall-clock boundary of rotate.schedule.interval.ms in the configured zone."""
        interval = self.settings.rotate_schedule_interval_ms
        if interval <= 0:
            return None
        offset = dt.datetime.fromtimestamp(now_ms / 1000, self.zone).utcoffset()
        local = now_ms + int(offset.total_seconds() * 1000 if offset else 0)
        return now_ms + interval - local % interval

    def commit(self) -> None:
        """Hand every open file (one round) to the committer: each file exactly once, the round all or nothing.

        Waits for this partition's round in flight first, so rounds commit in order and at most
        two are held (one filling, one being written).
        """
        current, self._round = self._round, None
        if current is None or not current.files:
            return
        self._settle(block=True)
        what = f"the files of {self.tp.topic}-{self.tp.partition} from offset {current.start_offset}"
        self._in_flight = _InFlight(current.start_offset, self.committer.submit(partial(self._commit_round, current),
                                                                                what))
        self._settle(block=False)  # a commit run in the caller's thread is done: take its outcome now

    def wait_for_commit(self) -> None:
        """Block until the round in flight is committed; ConnectError if its commit failed."""
        self._settle(block=True)

    def _settle(self, block: bool) -> None:
        """Take the outcome of the round in flight once it is done (or wait for it)."""
        if self._failed_at is not None:
            raise ConnectError(f"An earlier commit of {self.tp.topic}-{self.tp.partition} failed at offset "
                               f"{self._failed_at}; the task must restart from there")
        flight = self._in_flight
        if flight is None or (not block and not flight.future.done()):
            return
        self._in_flight = None
        try:
            self.next_offset = flight.future.result()
        except Exception as exc:
            self._failed_at = flight.start_offset
            raise ConnectError(f"Committing the files of {self.tp.topic}-{self.tp.partition} from offset "
                               f"{flight.start_offset} failed: {type(exc).__name__}: {exc}. Nothing from that "
                               f"offset on is committed; the task stops and a restart copies it again") from exc

    def _commit_round(self, current: _Round) -> int:
        """Write, then move, every file of the round (on the committer's thread); the offset after it."""
        files = sorted(current.files.values(), key=lambda f: f.start_offset)
        staged = [(self._stage(file), self._committed_path(file)) for file in files]
        manifest = None
        if len(staged) > 1:
            manifest = round_manifest_path(self.store, self.settings.topics_dir, self.tp)
            self.store.write_bytes(manifest, json.dumps({"files": [final for _, final in staged]}).encode())
        for temp, final in staged:
            self.store.move(temp, final)
        if manifest is not None:
            self.store.delete(manifest)
        next_offset = max(file.end_offset for file in files) + 1
        log.info("Committed %d file(s) of %s-%d, offsets %d..%d (%d records)", len(files), self.tp.topic,
                 self.tp.partition, current.start_offset, next_offset - 1, current.records)
        return next_offset

    def _stage(self, file: _OpenFile) -> str:
        temp = self.store.path(self.settings.topics_dir, self.tp.topic, TEMP_DIR,
                               f"{temp_prefix(self.tp)}{uuid.uuid4().hex}.{self.format.extension}")
        with self.store.open_output(temp) as stream:
            file.contents.write_to(stream)
        return temp

    def _committed_path(self, file: _OpenFile) -> str:
        directory = self.partitioner.partitioned_path(self.tp.topic, file.encoded)
        name = committed_name(self.tp.topic, self.tp.partition, file.start_offset, file.end_offset,
                              self.format.extension)
        return self.store.path(self.settings.topics_dir, directory, name)

    # ------------------------------------------------------------------ offsets

    def safe_offset(self, consumed: int | None) -> int | None:
        """The offset the consumer group may commit: before the round in flight or open, or all consumed."""
        if self._failed_at is not None:
            return self._failed_at
        self._settle(block=False)
        if self._in_flight is not None:
            return self._in_flight.start_offset
        if self._round is not None:
            return self._round.start_offset
        candidates = [o for o in (self.next_offset, self.skipped_to, consumed) if o is not None]
        return max(candidates) if candidates else None

    @property
    def has_open_files(self) -> bool:
        return self._round is not None and bool(self._round.files)

    def discard(self) -> None:
        """Drop open files (partition revoked): their records are consumed again by the next owner.

        The round in flight is waited for first, so the next owner's recovery sees it committed
        (or not at all) and never copies it a second time.
        """
        self._round = None
        try:
            self._settle(block=True)
        except ConnectError as exc:
            log.warning("Dropping %s-%d: %s", self.tp.topic, self.tp.partition, exc)

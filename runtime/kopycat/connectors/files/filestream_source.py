"""Stream the lines of files into a Kafka topic (Kafka's ``FileStreamSourceConnector``/``Task``).

Kafka's connector reads one file (``file``); this one also reads every file matching glob
patterns (``files``), the "log import" KIP-26 describes, and keeps up with files that appear
later. Offsets have Kafka Connect's exact shape, so Kafka Connect's FileStreamSource resumes
from ours and we resume from its::

    SourceRecord(source_partition={"filename": "/var/log/app.log"},
                 source_offset={"position": 4711},   # bytes up to and including the line's end
                 topic="logs", value="the line", value_schema=Schema.STRING_SCHEMA)

As in Kafka's ``FileStreamSourceTask``:

- lines end at ``\\n``, ``\\r\\n`` or a lone ``\\r`` (Kafka's ``extractLine``); a ``\\r`` that is
  the last byte read waits for the next byte to tell which. The value is the line without its
  terminator, decoded as UTF-8 with U+FFFD for bytes that do not decode (Java's
  ``InputStreamReader`` does the same);
- a last line without its terminator is not emitted until the terminator is written, so the
  committed position is always a line boundary and a crash never emits half a line;
- the ``file`` value is the partition's ``filename`` verbatim; a glob match is named as the glob
  returned it (absolute when the pattern is absolute).

``position`` counts bytes, which is what Kafka's task skips on resume, though it counts decoded
characters when it writes: the same number for ASCII files; for a file with multi-byte characters
a position Kafka wrote falls short of the line end it means (Kafka re-reads from there, as we do).
Beyond Kafka: a file shorter than its committed position is read from the start with a WARNING;
a file truncated while read (``copytruncate``) is read again from the start; a file renamed away
(rotation) is read to its end, then the new file at its path from the start. Offsets are per
path, as in Kafka, so a file deleted and recreated between two runs resumes at the old position
if it is long enough. Reads are 1 MiB, split and decoded a chunk at a time (no per-line calls).

``poll`` returns each file's new lines as one :class:`~kopycat.api.record_batch.SourceRecordBatch`
(a string column), the records above as columns: the engine encodes it at once, or sends its
records, each with its own ``position``, when the run needs records one by one.
"""

from __future__ import annotations

import glob
import logging
import os
import threading
import time
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any, Final

import orjson

from kopycat.api.config import (
    NO_DEFAULT,
    ConfigDef,
    ConfigType,
    ConfigValue,
    Importance,
    LambdaValidator,
    NonEmptyString,
    Range,
)
from kopycat.api.connector import ExactlyOnceSupport, SourceConnector
from kopycat.api.data import Schema
from kopycat.api.errors import ConfigError, ConnectError
from kopycat.api.record_batch import SourceRecordBatch
from kopycat.api.records import SourceRecord
from kopycat.api.task import SourceTask
from kopycat.connectors.files.tailed_file import FILENAME_FIELD, TailedFile

__all__ = [
    "CONFIG", "FileStreamSourceConnector", "FileStreamSourceTask", "discover_files", "owner_of",
]

log = logging.getLogger(__name__)

FILE_CONFIG: Final = "file"
FILES_CONFIG: Final = "files"
TOPIC_CONFIG: Final = "topic"
TASK_BATCH_SIZE_CONFIG: Final = "batch.size"
DISCOVERY_INTERVAL_CONFIG: Final = "file.discovery.interval.ms"
POLL_INTERVAL_CONFIG: Final = "poll.interval.ms"
TASK_INDEX_CONFIG: Final = "task.index"
TASK_COUNT_CONFIG: Final = "task.count"

POSITION_FIELD: Final = "position"
DEFAULT_TASK_BATCH_SIZE: Final = 2000
"""Bytes asked of the OS per read (module-level so tests can make it small)."""



def _no_blank_entries(name: str, value: Any) -> None:
    if value is not None and any(not str(entry).strip() for entry in value):
        raise ConfigError.for_key(name, value, "Entries must be paths or glob patterns; remove the "
                                  "empty entry (two commas in a row, or a trailing comma)")


CONFIG: Final = (
    ConfigDef()
    .define(FILE_CONFIG, ConfigType.STRING, None, None, Importance.HIGH,
            "Source filename, as Kafka's FileStreamSource: one file, named verbatim in the offsets. "
            f"Set this or '{FILES_CONFIG}', not both; standard input is not supported.")
    .define(FILES_CONFIG, ConfigType.LIST, "", LambdaValidator(_no_blank_entries, "paths or glob "
            "patterns"), Importance.HIGH,
            "Paths or glob patterns ('**' recurses) of the files to read; files that match later "
            f"are picked up too. Set this or '{FILE_CONFIG}', not both.")
    .define(TOPIC_CONFIG, ConfigType.STRING, NO_DEFAULT, NonEmptyString(), Importance.HIGH,
            "The topic to publish data to")
    .define(TASK_BATCH_SIZE_CONFIG, ConfigType.INT, DEFAULT_TASK_BATCH_SIZE, Range.at_least(1),
            Importance.LOW,
            "The maximum number of records the source task can read from the files each time it "
            "is polled")
    .define(DISCOVERY_INTERVAL_CONFIG, ConfigType.LONG, 10_000, Range.at_least(0), Importance.LOW,
            "How often (ms) a task looks for new files matching its patterns and checks its open "
            "files for truncation and rotation; 0 looks at every poll.")
    .define(POLL_INTERVAL_CONFIG, ConfigType.LONG, 1_000, Range.at_least(0), Importance.LOW,
            "How long (ms) poll() waits when no file has a new line, as Kafka's task waits 1 s.")
    .define(TASK_INDEX_CONFIG, ConfigType.INT, 0, Range.at_least(0), Importance.LOW,
            "Which of the task.count tasks this is (set by task_configs).", internal=True)
    .define(TASK_COUNT_CONFIG, ConfigType.INT, 1, Range.at_least(1), Importance.LOW,
            "How many tasks share the files (set by task_configs).", internal=True)
)
"""The source's configuration; ``task.index``/``task.count`` are internal (task_configs sets them)."""


def _choice_problem(file: str | None, files: list[str] | None) -> ConfigError | None:
    """Exactly one of ``file`` and ``files`` must be set; the error names both keys."""
    if file and files:
        return ConfigError.for_key(
            FILE_CONFIG, file, f"'{FILE_CONFIG}' and '{FILES_CONFIG}' ({','.join(files)}) are both "
            f"set; keep '{FILE_CONFIG}' for one file (as Kafka's FileStreamSource) or "
            f"'{FILES_CONFIG}' for paths and glob patterns, not both")
    if not file and not files:
        return ConfigError(
            f"Neither '{FILE_CONFIG}' nor '{FILES_CONFIG}' is set: set '{FILE_CONFIG}' to one path "
            f"or '{FILES_CONFIG}' to paths or glob patterns (standard input is not supported)",
            key=FILE_CONFIG)
    return None


@dataclass(frozen=True)
class _Settings:
    """A parsed, cross-checked source configuration (connector and task parse the same one)."""

    file: str | None
    patterns: tuple[str, ...]
    topic: str
    batch_size: int
    discovery_interval_s: float
    poll_interval_s: float
    task_index: int
    task_count: int

    @classmethod
    def parse(cls, props: Mapping[str, Any]) -> _Settings:
        values = CONFIG.parse(props)
        problem = _choice_problem(values[FILE_CONFIG], values[FILES_CONFIG])
        if problem is not None:
            raise problem
        index, count = values[TASK_INDEX_CONFIG], values[TASK_COUNT_CONFIG]
        if index >= count:
            raise ConfigError.for_key(TASK_INDEX_CONFIG, index, f"Must be below {TASK_COUNT_CONFIG} "
                                      f"({count}); leave both to task_configs()")
        return cls(values[FILE_CONFIG] or None, tuple(values[FILES_CONFIG]), values[TOPIC_CONFIG],
                   values[TASK_BATCH_SIZE_CONFIG], values[DISCOVERY_INTERVAL_CONFIG] / 1000,
                   values[POLL_INTERVAL_CONFIG] / 1000, index, count)


def discover_files(patterns: Iterable[str]) -> list[str]:
    """Regular files matching the glob patterns, each once: in pattern order, sorted within one.

    ``**`` matches directories recursively. A name that is not valid UTF-8 cannot be written
    to the offsets (JSON) and is skipped with a WARNING.
    """
    found: dict[str, None] = {}
    for pattern in patterns:
        for path in sorted(glob.glob(pattern, recursive=True)):
            if path in found or not os.path.isfile(path):
                continue
            try:
                path.encode("utf-8")
            except UnicodeEncodeError:
                log.warning("Skipping %r: its name is not valid UTF-8, so it cannot be named in "
                            "the offsets; rename it to read it", path)
                continue
            found[path] = None
    return list(found)


def owner_of(path: str, task_count: int) -> int:
    """The index of the task that reads ``path``: CRC-32 of its UTF-8 bytes modulo the task count.

    Stable across processes and hosts (unlike ``hash``), so every task agrees without talking,
    each file has exactly one reader, and a new file is read by its owner without re-planning.
    """
    return zlib.crc32(path.encode("utf-8", "surrogateescape")) % task_count


def _committed_position(path: str, offset: Mapping[str, Any] | None) -> int:
    """The byte position to resume ``path`` at: the committed one, or 0 when none was committed."""
    position = None if offset is None else offset.get(POSITION_FIELD)
    if position is None:
        return 0
    if isinstance(position, bool) or not isinstance(position, int) or position < 0:
        raise ConnectError(f"The committed offset of file {path!r} is {dict(offset or {})!r}; "
                           f"'{POSITION_FIELD}' must be a non-negative byte position. Fix it with "
                           f"PATCH /connectors/<name>/offsets or reset the connector's offsets")
    return position


def _line_records(partition: Mapping[str, Any], topic: str, values: Any, ends: Any, timestamp: int
                  ) -> list[SourceRecord]:
    """A batch's lines as records, each with the byte position after it (the record path)."""
    record, schema = SourceRecord.of, Schema.STRING_SCHEMA
    return [record(partition, {POSITION_FIELD: end}, topic, None, None, None, schema, value, timestamp)
            for value, end in zip(values.to_pylist(), ends.tolist(), strict=True)]


class FileStreamSourceTask(SourceTask):
    """Reads new lines of its files and returns them as batches (Kafka's ``FileStreamSourceTask``).

    With ``file`` it reads that one file (waiting for it to exist, as Kafka's does); with
    ``files`` it reads the matching files it owns (:func:`owner_of`), looking for new ones every
    ``file.discovery.interval.ms``. ``poll`` returns at most ``batch.size`` lines, taking
    files in turn so a busy file does not starve the others, or waits ``poll.interval.ms`` and
    returns None. Thread-safety: ``stop`` may come from another thread; a lock keeps it from
    closing a file mid-read, and an event wakes a waiting ``poll``.
    """

    def __init__(self) -> None:
        self._settings: _Settings | None = None
        self._files: dict[str, TailedFile] = {}
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._next_discovery = 0.0
        self._turn = 0
        self._warned_missing = False
        self._rotated: set[str] = set()  # paths whose next file starts at 0, not the stored offset
        self._topic = ""

    def start(self, props: Mapping[str, str]) -> None:
        """Parse the config and open the owned files at their committed positions."""
        self._settings = _Settings.parse(props)
        self._topic = self._settings.topic
        self._stopping.clear()
        with self._lock:
            self._discover(self._settings)
        log.info("FileStreamSourceTask %d/%d reading %d files into %s", self._settings.task_index,
                 self._settings.task_count, len(self._files), self._settings.topic)

    def poll(self) -> list[SourceRecordBatch] | None:
        """The next lines, a batch per file read, or None after waiting ``poll.interval.ms``."""
        settings = self._settings
        if settings is None:
            raise ConnectError("FileStreamSourceTask.poll() called before start()")
        with self._lock:
            if self._stopping.is_set():
                return None
            if (time.monotonic() >= self._next_discovery
                    or (settings.file is not None and not self._files)):
                self._discover(settings)
            out = self._read_batch(settings)
        if out:
            return out
        self._stopping.wait(settings.poll_interval_s)
        return None

    def stop(self) -> None:
        self._stopping.set()
        with self._lock:
            for tailed in self._files.values():
                tailed.close()
            self._files.clear()

    def _discover(self, settings: _Settings) -> None:
        """Check open files, then open new owned files at their committed positions (one lookup)."""
        self._next_discovery = time.monotonic() + settings.discovery_interval_s
        for tailed in self._files.values():
            tailed.check()
        if settings.file is not None:
            candidates = [settings.file]
        else:
            candidates = [path for path in discover_files(settings.patterns)
                          if owner_of(path, settings.task_count) == settings.task_index]
        new = [path for path in candidates if path not in self._files and os.path.isfile(path)]
        if settings.file is not None and not new and not self._files:
            if not self._warned_missing:
                log.warning("Couldn't find file %s for FileStreamSourceTask, waiting for it to be "
                            "created", settings.file)
                self._warned_missing = True
            return
        if not new:
            return
        committed = self.context.offset_reader.offsets([{FILENAME_FIELD: path} for path in new])
        for path, (_, offset) in zip(new, committed, strict=True):
            fresh = path in self._rotated
            self._rotated.discard(path)
            self._open(path, 0 if fresh else _committed_position(path, offset))

    def _open(self, path: str, position: int) -> None:
        try:
            self._files[path] = TailedFile.open(path, position)
        except FileNotFoundError:
            log.debug("%s disappeared before it could be opened", path)
            return
        except OSError as exc:
            raise ConnectError(f"Cannot open {path!r} for reading: {exc}. Fix its permissions, or "
                               f"narrow '{FILES_CONFIG}' so it does not match it") from exc
        log.debug("Opened %s at position %d", path, position)

    def _read_batch(self, settings: _Settings) -> list[SourceRecordBatch]:
        """Up to batch.size lines, files in turn, as a batch per file read."""
        files = list(self._files.values())
        if not files:
            return []
        first = self._turn % len(files)
        self._turn += 1
        out: list[SourceRecordBatch] = []
        budget = settings.batch_size
        timestamp = int(time.time() * 1000)  # Kafka stamps records with the poll's wall clock
        for tailed in files[first:] + files[:first]:
            while budget > 0:
                values, ends = tailed.take(budget)
                if not len(values):
                    break
                out.append(SourceRecordBatch(tailed.partition, {POSITION_FIELD: int(ends[-1])}, self._topic,
                                             Schema.STRING_SCHEMA, values, timestamp=timestamp,
                                             record_factory=partial(_line_records, tailed.partition,
                                                                    self._topic, values, ends, timestamp)))
                budget -= len(values)
            if tailed.replaced and tailed.drained:
                self._follow_rotation(tailed)
            if budget <= 0:
                break
        return out

    def _follow_rotation(self, tailed: TailedFile) -> None:
        """The old file is read to its end: read the file now at its path from the start."""
        tailed.close()
        del self._files[tailed.path]
        log.info("File %s was rotated or deleted and the old one is read to its end%s",
                 tailed.path, tailed.dropped_note())
        if os.path.isfile(tailed.path):
            self._open(tailed.path, 0)
        else:  # the new file is not there yet: when it appears, it starts at 0 too
            self._rotated.add(tailed.path)


class FileStreamSourceConnector(SourceConnector):
    """Plans file reading tasks (Kafka's ``FileStreamSourceConnector``, plus glob patterns).

    With ``file``: one task config, the props as given (Kafka's behaviour). With ``files``:
    ``min(max_tasks, files matching now)`` configs (at least one), each the props plus
    ``task.index`` and ``task.count``; a task reads the files whose :func:`owner_of` is its
    index. So no task is planned without a file to read, each file has one reader, and files
    that appear later go to one of the planned tasks; the next plan (the next Airflow run,
    a reconfiguration) spreads them over more tasks. Offsets are per file, so a file moving
    to another task on a new plan resumes where it was.
    """

    def __init__(self) -> None:
        self._props: dict[str, str] = {}
        self._settings: _Settings | None = None

    def start(self, props: Mapping[str, str]) -> None:
        self._props = dict(props)
        self._settings = _Settings.parse(props)
        source = self._settings.file or ",".join(self._settings.patterns)
        log.info("Starting file source connector reading from %s", source)

    def task_class(self) -> type[FileStreamSourceTask]:
        return FileStreamSourceTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        if self._settings is None:
            raise ConnectError("FileStreamSourceConnector.task_configs() called before start()")
        if self._settings.file is not None:
            return [dict(self._props)]
        count = max(1, min(max_tasks, len(discover_files(self._settings.patterns))))
        return [{**self._props, TASK_INDEX_CONFIG: str(index), TASK_COUNT_CONFIG: str(count)}
                for index in range(count)]

    def stop(self) -> None:
        """Nothing to stop: the connector has no background monitoring (as Kafka's)."""

    def config(self) -> ConfigDef:
        return CONFIG

    def validate(self, props: Mapping[str, str]) -> list[ConfigValue]:
        """Per-key checks, plus "exactly one of file and files" reported against both keys."""
        results = super().validate(props)
        by_name = {result.name: result for result in results}
        chosen = by_name[FILE_CONFIG], by_name[FILES_CONFIG]
        if not any(result.errors for result in chosen):
            problem = _choice_problem(chosen[0].value, chosen[1].value)
            if problem is not None:
                for result in chosen:
                    result.add_error_message(str(problem))
        return results

    def exactly_once_support(self, props: Mapping[str, str]) -> ExactlyOnceSupport | None:
        """Supported, as Kafka's for a real file: as long as files are only appended to."""
        return ExactlyOnceSupport.SUPPORTED

    def alter_offsets(self, props: Mapping[str, str],
                      offsets: Mapping[Any, Mapping[str, Any] | None]) -> bool:
        """Check offsets set through the REST API as Kafka's ``alterOffsets`` does.

        A tombstone is always allowed; otherwise the partition must be ``{"filename": path}``
        and the offset ``{"position": <non-negative int>}``. Whether the position fits the file
        is checked when a task opens it.
        """
        for partition, offset in offsets.items():
            if offset is None:
                continue
            position = offset.get(POSITION_FIELD) if isinstance(offset, Mapping) else None
            if isinstance(position, bool) or not isinstance(position, int) or position < 0:
                raise ConfigError(f"The offset {offset!r} of source partition {partition!r} is "
                                  f"invalid: use {{\"{POSITION_FIELD}\": <non-negative byte "
                                  f"position>}}, or null to reset it")
            parsed = _as_mapping(partition)
            if parsed is None or FILENAME_FIELD not in parsed:
                raise ConfigError(f"The source partition {partition!r} is invalid: use "
                                  f"{{\"{FILENAME_FIELD}\": <path>}}")
        return True


def _as_mapping(partition: Any) -> Mapping[str, Any] | None:
    """A source partition given as a dict or as its JSON text."""
    if isinstance(partition, Mapping):
        return partition
    if isinstance(partition, str | bytes):
        try:
            parsed = orjson.loads(partition)
        except orjson.JSONDecodeError:
            return None
        return parsed if isinstance(parsed, dict) else None
    return None

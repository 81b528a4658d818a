"""Append record values to a file, one per line (Kafka's ``FileStreamSinkConnector``/``Task``).

Kafka's task prints ``record.value()`` with ``PrintStream.println``: the value's ``toString()``
in UTF-8, then a newline, appended to the file (created if missing). This one writes the same
text: strings as they are, None as ``null``, booleans as ``true``/``false``, floats and lists as
Java prints them (:func:`kopycat.api.config.convert_to_string`), anything else with ``str()``.
Characters UTF-8 cannot encode (lone surrogates) become ``?``, as Java's encoder writes them.

Each ``put`` hands its whole batch to the operating system in one ``writev`` call before it
returns, as Kafka's ``PrintStream`` writes each line through to the file: a killed worker loses
no batch ``put`` returned from (under ``delivery.guarantee=at_most_once`` it loses at most the
batch in flight). A kill inside that call can leave part of the batch, ending in a torn line:
``start`` cuts the file back to its last newline, so the next lines never run on from half a
record (the cut records were never acknowledged: resent under at-least-once, lost under
at-most-once, as the batch in flight is).

Differences from Kafka, on purpose: ``file`` is required (Kafka's falls back to standard
output), ``flush`` also fsyncs, so the offsets the engine commits after it never run ahead of
what is on disk, and the connector plans one task: a file has one writer (Kafka's plans
``max_tasks`` copies that all append to the same file, interleaving their lines). The sink's
``topics``/``topics.regex`` are the engine's keys (its sink connector config); every given key
is passed through to the task config.
"""

from __future__ import annotations

import logging
import os
import stat
import threading
from array import array
from collections.abc import Mapping, Sequence
from typing import Any, BinaryIO, Final

from kopycat.api.config import (
    NO_DEFAULT,
    ConfigDef,
    ConfigType,
    Importance,
    NonEmptyString,
    convert_to_string,
)
from kopycat.api.connector import SinkConnector
from kopycat.api.data import Type
from kopycat.api.errors import ConnectError
from kopycat.api.record_batch import SinkRecordBatch
from kopycat.api.records import SinkRecord, TopicPartition
from kopycat.api.task import SinkTask

__all__ = ["CONFIG", "FileStreamSinkConnector", "FileStreamSinkTask"]

log = logging.getLogger(__name__)

FILE_CONFIG: Final = "file"

CONFIG: Final = ConfigDef().define(
    FILE_CONFIG, ConfigType.STRING, NO_DEFAULT, NonEmptyString(), Importance.HIGH,
    "Destination filename: lines are appended, the file is created if missing. Unlike Kafka's "
    "FileStreamSink it is required (there is no standard output fallback).")
"""The sink's own configuration (``topics``/``topics.regex`` belong to the engine's)."""


def _text(value: Any) -> str:
    """What Java's ``println(value)`` prints for a value (``String.valueOf``)."""
    return "null" if value is None else str(convert_to_string(value))


def _joined_lines(texts: Any) -> Any:
    """A string array's values joined by newlines, as one buffer (pyarrow's ``binary_join``).

    The list offsets and the separator are built from buffers: a Python list or str given to
    pyarrow would make it import pandas (half a second) to check for pandas types.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    one_list = pa.Array.from_buffers(pa.int32(), 2, [None, pa.py_buffer(array("i", [0, len(texts)]))])
    newline = pa.Array.from_buffers(pa.string(), 1, [None, pa.py_buffer(array("i", [0, 1])), pa.py_buffer(b"\n")])
    return pc.binary_join(pa.ListArray.from_arrays(one_list, texts), newline)[0].as_buffer()


class FileStreamSinkTask(SinkTask):
    """Writes each record's value as one line (Kafka's ``FileStreamSinkTask``).

    ``put`` encodes the whole batch and writes it with one unbuffered call (``put_batch`` joins
    an Arrow string array of the texts instead, no Python string per line); ``flush`` fsyncs.
    Thread-safety: ``stop`` may come from another thread; a lock keeps it from closing the file
    under a ``put`` or ``flush``.
    """

    def __init__(self) -> None:
        self._path: str | None = None
        self._file: BinaryIO | None = None
        self._lock = threading.Lock()

    def start(self, props: Mapping[str, str]) -> None:
        path = CONFIG.parse(props)[FILE_CONFIG]
        try:
            handle = open(path, "ab", buffering=0)  # noqa: SIM115 - closed by stop()
            cut_torn_line(path)
        except OSError as exc:
            raise ConnectError(f"Couldn't find or create file {path!r} for FileStreamSinkTask: "
                               f"{exc}. Create its directory or fix the '{FILE_CONFIG}' setting"
                               ) from exc
        with self._lock:
            self._path, self._file = path, handle
        log.info("FileStreamSinkTask appending to %s", path)

    def put(self, records: Sequence[SinkRecord]) -> None:
        if not records:
            return
        lines = [value if value.__class__ is str else _text(value)
                 for value in (record.value for record in records)]
        self._write([("\n".join(lines) + "\n").encode("utf-8", "replace")])

    def batch_value_types(self) -> frozenset[Type]:
        """Text values can come as one Arrow string array (StringConverter's, for instance)."""
        return frozenset({Type.STRING})

    def put_batch(self, batch: SinkRecordBatch) -> None:
        """The texts joined by newlines in Arrow, written with one call: the same bytes put() writes."""
        self._write([_joined_lines(batch.values), b"\n"])

    def flush(self, current_offsets: Mapping[TopicPartition, int]) -> None:
        """Fsync, so what the engine commits next is on disk, not only in the OS's cache."""
        with self._lock:
            os.fsync(self._open_file().fileno())

    def _write(self, pieces: list[Any]) -> None:
        """Append ``pieces`` (bytes-like) in one ``writev``; a short write (a full disk) writes the rest."""
        with self._lock:
            fd = self._open_file().fileno()
            done = os.writev(fd, pieces)
            rest = memoryview(b"".join(pieces))[done:] if done < sum(len(piece) for piece in pieces) else None
            while rest:
                rest = rest[os.write(fd, rest):]

    def stop(self) -> None:
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None

    def _open_file(self) -> BinaryIO:
        if self._file is None:
            raise ConnectError(f"FileStreamSinkTask for {self._path or '(not started)'} is not "
                               f"running: start() it first (or it was stopped)")
        return self._file


def cut_torn_line(path: str, chunk: int = 1 << 16) -> int:
    """Truncate ``path`` after its last newline; the number of bytes cut (0 for a whole last line).

    Only a regular file is read: a FIFO or a device (``/dev/stdout``) has no tail to cut.
    """
    if not stat.S_ISREG(os.stat(path).st_mode):
        return 0
    with open(path, "rb") as file:
        size = end = file.seek(0, os.SEEK_END)
        while end > 0:
            start = max(0, end - chunk)
            file.seek(start)
            newline = file.read(end - start).rfind(b"\n")
            if newline >= 0:
                end = start + newline + 1
                break
            end = start
    if end < size:
        os.truncate(path, end)
        log.warning("FileStreamSinkTask cut a torn last line (%d bytes, a killed write's) from %s", size - end, path)
    return size - end


class FileStreamSinkConnector(SinkConnector):
    """Plans one task that appends to ``file`` (Kafka's ``FileStreamSinkConnector``)."""

    def __init__(self) -> None:
        self._props: dict[str, str] = {}

    def start(self, props: Mapping[str, str]) -> None:
        path = CONFIG.parse(props)[FILE_CONFIG]
        self._props = dict(props)
        log.info("Starting file sink connector writing to %s", path)

    def task_class(self) -> type[FileStreamSinkTask]:
        return FileStreamSinkTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        """One config with every given key (the engine's topics too): a file has one writer."""
        return [dict(self._props)]

    def stop(self) -> None:
        """Nothing to stop: the connector has no background monitoring (as Kafka's)."""

    def config(self) -> ConfigDef:
        return CONFIG

    def alter_offsets(self, props: Mapping[str, str], offsets: Mapping[Any, int | None]) -> bool:
        """Accept any consumer offsets: nothing is kept in the file (as Kafka's returns true)."""
        return True

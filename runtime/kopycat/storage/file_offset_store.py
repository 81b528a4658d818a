"""Offsets in a local file, for standalone mode (``offset.storage.file.filename``).

Follows Kafka Connect's ``FileOffsetBackingStore``: the whole table is kept in memory and the
file is rewritten on every ``set``. Kafka's file is a Java-serialized ``HashMap<byte[], byte[]>``
(``ObjectOutputStream``), which Python cannot write faithfully, so the two cannot share a file.
The keys and values inside are the same bytes as on the ``connect-offsets`` topic, though, so
entries can be copied between this file and the topic unchanged.

File format (UTF-8 JSON, one document)::

    {"format": "kopycat.file-offsets", "version": 1,
     "offsets": [{"key": "[\\"my-source\\",{\\"filename\\":\\"/x\\"}]", "value": "{\\"position\\":42}"}]}

``key``/``value`` hold the serialized bytes as text when they are UTF-8 (always, for keys and
values written by Kopycat or Kafka Connect's JsonConverter), else ``key_b64``/``value_b64``
hold them base64-encoded. Deleted offsets are simply absent.

Writes are atomic: the new content goes to a temporary file in the same directory, is flushed
and fsynced, then renamed over the old file (``os.replace``) and the directory is fsynced. A
crash at any point leaves either the old or the new file, never a torn one.
"""

from __future__ import annotations

import base64
import contextlib
import logging
import os
import tempfile
import threading
from collections.abc import Collection, Mapping
from concurrent.futures import Future
from pathlib import Path
from typing import Any, Final

import orjson

from kopycat.api.errors import ConnectError
from kopycat.storage.offset_backing_store import OffsetBackingStore, OffsetTable
from kopycat.storage.write_completion import SetCallback, completed_future

__all__ = ["FILE_FORMAT", "FILE_FORMAT_VERSION", "FileOffsetStore"]

log = logging.getLogger(__name__)

FILE_FORMAT: Final = "kopycat.file-offsets"
FILE_FORMAT_VERSION: Final = 1


def _encode_bytes(name: str, data: bytes) -> dict[str, str]:
    try:
        return {name: data.decode("utf-8")}
    except UnicodeDecodeError:
        return {f"{name}_b64": base64.b64encode(data).decode("ascii")}


def _decode_bytes(entry: Mapping[str, Any], name: str) -> bytes:
    if name in entry:
        return str(entry[name]).encode("utf-8")
    return base64.b64decode(entry[f"{name}_b64"], validate=True)


def dumps_offsets(data: Mapping[bytes, bytes]) -> bytes:
    """The file's content for a table of live offsets."""
    entries = [{**_encode_bytes("key", key), **_encode_bytes("value", value)} for key, value in data.items()]
    return orjson.dumps({"format": FILE_FORMAT, "version": FILE_FORMAT_VERSION, "offsets": entries},
                        option=orjson.OPT_INDENT_2) + b"\n"


def loads_offsets(content: bytes, source: str) -> dict[bytes, bytes]:
    """The table held by a file's content; ConnectError naming ``source`` if it is not one."""
    try:
        document = orjson.loads(content)
        if document.get("format") != FILE_FORMAT:
            raise ValueError(f"format is {document.get('format')!r}, not {FILE_FORMAT!r}")
        if document.get("version") != FILE_FORMAT_VERSION:
            raise ValueError(f"version {document.get('version')!r} is not supported "
                             f"(this Kopycat reads version {FILE_FORMAT_VERSION})")
        return {_decode_bytes(entry, "key"): _decode_bytes(entry, "value") for entry in document["offsets"]}
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ConnectError(f"The offsets file {source} cannot be read: {exc}. Restore it from a "
                           f"backup, or move it away to start every connector from scratch") from exc


class FileOffsetStore(OffsetBackingStore):
    """Source offsets in one local file (Kafka Connect's ``FileOffsetBackingStore``).

    ``start`` loads the file (a missing file is an empty store); ``set`` writes the new file
    atomically and only then applies the values in memory, so memory never runs ahead of the
    file. Writes happen in the calling thread and the returned future is already done (Kafka
    uses a one-thread executor; a file of offsets is small). Thread-safe: writes are serialized
    by a lock. One process per file: two workers sharing a file would overwrite each other.
    """

    def __init__(self, filename: str | os.PathLike[str]) -> None:
        self.path = Path(filename)
        self.table = OffsetTable()
        self._write_lock = threading.Lock()

    def start(self) -> None:
        log.info("Starting FileOffsetStore with file %s", self.path)
        self._remove_stale_temp_files()
        try:
            content = self.path.read_bytes()
        except FileNotFoundError:
            self.table.replace({})
            return
        self.table.replace(loads_offsets(content, str(self.path)))
        log.info("Loaded %d offsets from %s", len(self.table), self.path)

    def stop(self) -> None:
        """Nothing pending: every ``set`` was written before it returned."""

    def get(self, keys: Collection[bytes]) -> dict[bytes, bytes | None]:
        return self.table.get(keys)

    def connector_partitions(self, connector: str) -> list[dict[str, Any] | None]:
        return self.table.connector_partitions(connector)

    def set(self, values: Mapping[bytes, bytes | None],
            callback: SetCallback | None = None) -> Future[None]:
        error: BaseException | None = None
        with self._write_lock:
            data = self.table.snapshot()
            for key, value in values.items():
                if value is None:
                    data.pop(key, None)
                else:
                    data[key] = value
            try:
                self._write(dumps_offsets(data))
            except OSError as exc:
                error = ConnectError(f"Failed to write the offsets file {self.path}: {exc}; the "
                                     f"previous offsets are kept and the write is retried with the "
                                     f"next flush")
                error.__cause__ = exc
            else:
                self.table.apply_all(values)
        if callback is not None:
            callback(error)
        return completed_future(error)

    def _write(self, content: bytes) -> None:
        """Temp file in the same directory, fsync, rename over the target, fsync the directory."""
        directory = self.path.parent
        directory.mkdir(parents=True, exist_ok=True)
        fd, temp_name = tempfile.mkstemp(prefix=f".{self.path.name}.", suffix=".tmp", dir=directory)
        try:
            with os.fdopen(fd, "wb") as temp:
                temp.write(content)
                temp.flush()
                os.fsync(temp.fileno())
            os.replace(temp_name, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temp_name)
            raise
        self._fsync_directory(directory)

    @staticmethod
    def _fsync_directory(directory: Path) -> None:
        """Make the rename durable (POSIX); platforms that cannot open directories skip it."""
        try:
            fd = os.open(directory, os.O_RDONLY)
        except OSError:
            return
        try:
            os.fsync(fd)
        except OSError:
            pass
        finally:
            os.close(fd)

    def _remove_stale_temp_files(self) -> None:
        """Temp files a crash left behind (never the real file: the rename is atomic)."""
        if not self.path.parent.is_dir():
            return
        for stale in self.path.parent.glob(f".{self.path.name}.*.tmp"):
            log.info("Removing %s, left by an interrupted offsets write", stale)
            stale.unlink(missing_ok=True)

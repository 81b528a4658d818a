"""Offsets in a local file, for standalone mode (``offset.storage.file.filename``).

Follows Kafka Connect's ``FileOffsetBackingStore``: the whole table is kept in memory and the
file is rewritten on every ``set``. The file is Kafka's own: a Java-serialized
``HashMap<byte[], byte[]>`` of the serialized keys and values, the same bytes as on the
``connect-offsets`` topic (see :mod:`kopycat.storage.java_serialization`). Kafka's
``connect-standalone`` and ``kopycat standalone`` therefore resume from each other's file.

Kopycat's JSON offsets files (UTF-8, one document) are read as well::

    {"format": "kopycat.file-offsets", "version": 1,
     "offsets": [{"key": "[\\"my-source\\",{\\"filename\\":\\"/x\\"}]", "value": "{\\"position\\":42}"}]}

(``key_b64``/``value_b64`` instead when the bytes are not UTF-8); the next write converts such
a file to Kafka's format. An entry whose value is null (Kafka writes one for
a key whose offset was reset) is read as no offset; Kopycat leaves deleted keys out of the file.
An empty file is an empty store, as in Kafka; anything else that is neither format fails
``start`` rather than starting every connector over.

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
from kopycat.storage.java_serialization import (
    JavaSerializationError,
    dump_byte_array_map,
    is_java_serialization,
    load_byte_array_map,
)
from kopycat.storage.offset_backing_store import OffsetBackingStore, OffsetTable
from kopycat.storage.write_completion import SetCallback, completed_future

__all__ = ["FileOffsetStore", "dumps_offsets", "loads_offsets"]

log = logging.getLogger(__name__)

JSON_FORMAT: Final = "kopycat.file-offsets"
JSON_FORMAT_VERSION: Final = 1
KAFKA_FORMAT: Final = "a Java-serialized HashMap<byte[], byte[]> (Kafka Connect's FileOffsetBackingStore)"


def _decode_bytes(entry: Mapping[str, Any], name: str) -> bytes:
    if name in entry:
        return str(entry[name]).encode("utf-8")
    return base64.b64decode(entry[f"{name}_b64"], validate=True)


def dumps_offsets(data: Mapping[bytes, bytes]) -> bytes:
    """The file's content for a table of live offsets, in Kafka Connect's format."""
    return dump_byte_array_map(data.items())


def _loads_java(content: bytes) -> dict[bytes, bytes]:
    return {key: value for key, value in load_byte_array_map(content)
            if key is not None and value is not None}


def _loads_json(content: bytes) -> dict[bytes, bytes]:
    try:
        document = orjson.loads(content)
    except orjson.JSONDecodeError:
        raise ValueError(f"its content starts with {content[:24]!r}") from None
    if not isinstance(document, dict) or document.get("format") != JSON_FORMAT:
        found = document.get("format") if isinstance(document, dict) else type(document).__name__
        raise ValueError(f"it holds JSON whose format is {found!r}, not {JSON_FORMAT!r}")
    if document.get("version") != JSON_FORMAT_VERSION:
        raise ValueError(f"it holds Kopycat JSON offsets of version {document.get('version')!r}; this "
                         f"Kopycat reads version {JSON_FORMAT_VERSION}")
    try:
        return {_decode_bytes(entry, "key"): _decode_bytes(entry, "value") for entry in document["offsets"]}
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ValueError(f"its Kopycat JSON offsets are malformed ({exc!r})") from exc


def is_json_offsets(content: bytes) -> bool:
    """Whether ``content`` is a Kopycat JSON offsets file, which the next write converts."""
    return bool(content) and not is_java_serialization(content)


def loads_offsets(content: bytes, source: str) -> dict[bytes, bytes]:
    """The live offsets held by a file's content, in Kafka's format or Kopycat's older JSON.

    Raises ConnectError naming ``source``, what was found and a way out that keeps offsets.
    """
    if not content:
        return {}
    try:
        if is_java_serialization(content):
            return _loads_java(content)
        return _loads_json(content)
    except (JavaSerializationError, ValueError) as exc:
        raise ConnectError(
            f"The offsets file {source} is neither {KAFKA_FORMAT} nor Kopycat's JSON offsets file: "
            f"{exc}. Restore it from a backup (or point offset.storage.file.filename at the right "
            f"file); remove it only to copy everything again from the start") from exc


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
        if is_json_offsets(content):
            log.info("%s is a Kopycat JSON offsets file: the next offsets write converts it "
                     "to Kafka Connect's format, which connect-standalone reads too", self.path)

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

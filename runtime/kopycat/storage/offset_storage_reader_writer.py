"""A connector's view of the offset store: reads for its tasks, buffered writes for the engine.

Follows Kafka Connect's ``OffsetStorageReaderImpl`` and ``OffsetStorageWriter``: both work on
one namespace (the connector name), turn partition and offset dicts into the bytes of
:mod:`kopycat.storage.offset_codec` and hand them to an
:class:`~kopycat.storage.offset_backing_store.OffsetBackingStore`.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Mapping
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeoutError
from typing import Any

from kopycat.api.errors import ConnectError, DataError
from kopycat.api.task import OffsetStorageReader
from kopycat.storage.offset_backing_store import OffsetBackingStore
from kopycat.storage.offset_codec import decode_value, encode_key, encode_value, validate_format
from kopycat.storage.write_completion import SetCallback, completed_future

__all__ = ["OffsetStorageReaderImpl", "OffsetStorageWriter"]

log = logging.getLogger(__name__)

_PartitionId = tuple[tuple[str, type, Any], ...]
_Entries = dict[_PartitionId | None, tuple[dict[str, Any] | None, dict[str, Any] | None]]


def _partition_id(partition: Mapping[str, Any] | None) -> _PartitionId | None:
    """A hashable identity of a partition dict: equal maps, in any order, give equal ids.

    The value's type is part of it, as ``Long 1`` and ``Boolean true`` differ in Java.
    """
    if partition is None:
        return None
    return tuple(sorted((key, type(value), bytes(value) if isinstance(value, bytearray) else value)
                        for key, value in partition.items()))


class OffsetStorageReaderImpl(OffsetStorageReader):
    """Committed offsets of one connector's partitions (Kafka's ``OffsetStorageReaderImpl``).

    Each call asks the backing store, which brings itself up to date first (a Kafka store reads
    its topic to the end), so a task never resumes from stale data. Unlike Kafka, a partition
    that cannot be serialized or a stored offset that cannot be read raises
    :class:`~kopycat.api.errors.DataError` instead of being logged and skipped: skipping would
    silently restart that partition from the beginning. Thread-safe if the store is.
    """

    def __init__(self, store: OffsetBackingStore, namespace: str) -> None:
        self.store = store
        self.namespace = namespace

    def offsets(self, partitions: Iterable[Mapping[str, Any]]
                ) -> list[tuple[dict[str, Any], dict[str, Any] | None]]:
        asked = [dict(partition) for partition in partitions]
        keys = [encode_key(self.namespace, partition) for partition in asked]
        try:
            raw = self.store.get(keys)
        except ConnectError:
            raise
        except Exception as exc:
            raise ConnectError(f"Failed to fetch offsets of connector {self.namespace!r}: {exc}") from exc
        found = []
        for partition, key in zip(asked, keys, strict=True):
            try:
                offset = decode_value(raw.get(key))
                validate_format(offset)
            except DataError as exc:
                raise DataError(f"The stored offset of connector {self.namespace!r}, partition "
                                f"{partition!r} cannot be read ({exc}); reset it with "
                                f"`kopycat offsets reset --connector {self.namespace}`") from exc
            found.append((partition, offset))
        return found


class OffsetStorageWriter:
    """Buffers a connector's offsets and flushes snapshots of them (Kafka's ``OffsetStorageWriter``).

    ``offset`` records the latest offset per partition. A flush is two steps so the engine can
    keep working while one is in flight: ``begin_flush`` moves the buffered offsets into a
    snapshot (offsets recorded afterwards go to the *next* flush), ``do_flush`` writes the
    snapshot to the store. If the write fails or times out, ``cancel_flush`` puts the snapshot
    back under any newer offsets, so nothing is lost and nothing newer is overwritten. A write
    that completes after it was cancelled is ignored (flush ids, as Kafka's).

    For exactly-once sources the engine writes the snapshot inside its own transaction instead:
    ``begin_flush``, :meth:`serialized_snapshot`, produce, then :meth:`finish_flush`.

    Thread-safety: every method may be called from any thread (one lock, as Kafka's
    ``synchronized`` methods); the store's completion callback arrives on the store's thread.
    Only one flush may be in flight at a time.
    """

    def __init__(self, store: OffsetBackingStore, namespace: str) -> None:
        self.store = store
        self.namespace = namespace
        self._lock = threading.Lock()
        self._data: _Entries = {}  # partition id -> (partition, offset), the latest per partition
        self._to_flush: _Entries | None = None
        self._flush_id = 0

    def offset(self, partition: Mapping[str, Any] | None, offset: Mapping[str, Any] | None) -> None:
        """Remember ``offset`` as the latest of ``partition``; None offsets delete it at the flush.

        Checked here (Kafka checks at flush time) so a bad dict fails the record that carried it.
        """
        validate_format(partition, "partition")
        validate_format(offset, "offset")
        entry = (None if partition is None else dict(partition), None if offset is None else dict(offset))
        with self._lock:
            self._data[_partition_id(partition)] = entry

    @property
    def flushing(self) -> bool:
        with self._lock:
            return self._to_flush is not None

    def pending(self) -> dict[str, Any]:
        """A summary for logs: how many partitions are buffered and in flight."""
        with self._lock:
            return {"buffered": len(self._data),
                    "flushing": None if self._to_flush is None else len(self._to_flush)}

    def begin_flush(self) -> bool:
        """Snapshot the buffered offsets; False (and no flush) when there are none.

        Raises ConnectError if a flush is already in flight: the engine must finish or cancel it.
        """
        with self._lock:
            if self._to_flush is not None:
                raise ConnectError(f"The offset writer of connector {self.namespace!r} is already "
                                   f"flushing; finish or cancel that flush first")
            if not self._data:
                return False
            self._to_flush, self._data = self._data, {}
            return True

    def serialized_snapshot(self) -> dict[bytes, bytes | None]:
        """The snapshot taken by ``begin_flush`` as offsets-topic keys and values."""
        with self._lock:
            if self._to_flush is None:
                raise ConnectError("serialized_snapshot() needs a flush begun with begin_flush()")
            entries = list(self._to_flush.values())
        return {encode_key(self.namespace, partition): encode_value(offset) for partition, offset in entries}

    def do_flush(self, callback: SetCallback | None = None) -> Future[None]:
        """Write the snapshot to the store; the future (and ``callback``) report the outcome.

        A failed write puts the snapshot back (as ``cancel_flush``); ``callback`` is not called
        for a flush that was cancelled meanwhile.
        """
        with self._lock:
            flush_id = self._flush_id
        try:
            serialized = self.serialized_snapshot()
        except Exception as exc:  # noqa: BLE001 - reported through the future, as Kafka does
            log.error("Failed to serialize the offsets of connector %r; they cannot be committed until "
                      "the partition or offset is overwritten: %s", self.namespace, exc)
            self.cancel_flush()
            if callback is not None:
                callback(exc)
            return completed_future(exc)
        log.debug("Submitting %d offsets of connector %r to the store", len(serialized), self.namespace)

        def on_write(error: BaseException | None) -> None:
            if self.finish_flush(error, flush_id=flush_id) and callback is not None:
                callback(error)

        return self.store.set(serialized, on_write)

    def finish_flush(self, error: BaseException | None = None, *, flush_id: int | None = None) -> bool:
        """End the flush in flight: done on success, put back (cancelled) on ``error``.

        ``flush_id`` (used by ``do_flush``) makes a late completion of a cancelled flush a
        no-op. Returns whether this completion was for the current flush.
        """
        with self._lock:
            if flush_id is not None and flush_id != self._flush_id:
                return False
            if self._to_flush is None:
                return False
            if error is None:
                self._flush_id += 1
                self._to_flush = None
            else:
                self._cancel_locked()
            return True

    def cancel_flush(self) -> None:
        """Abandon the flush in flight: its offsets return to the buffer, below newer ones."""
        with self._lock:
            self._cancel_locked()

    def _cancel_locked(self) -> None:
        if self._to_flush is None:
            return
        self._to_flush.update(self._data)
        self._data, self._to_flush = self._to_flush, None
        self._flush_id += 1

    def flush(self, timeout_s: float) -> bool:
        """Begin, write and wait, as Kafka's ``WorkerSourceTask.commitOffsets`` does.

        True when the offsets are stored (or there were none); False when the write failed or
        took longer than ``timeout_s``: the flush is then cancelled, and the offsets go out with
        the next one. The failure is logged with its cause.
        """
        if not self.begin_flush():
            return True
        future = self.do_flush()
        try:
            future.result(timeout=timeout_s)
        except FutureTimeoutError:
            log.error("Timed out after %.1f s waiting to flush the offsets of connector %r; they "
                      "will be written with the next flush", timeout_s, self.namespace)
            self.cancel_flush()
            return False
        except Exception as exc:  # noqa: BLE001 - the store's error, reported and retried later
            log.error("Failed to flush the offsets of connector %r; they will be written with the "
                      "next flush: %s", self.namespace, exc)
            return False
        return True

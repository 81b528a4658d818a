"""Where source offsets live: the backing-store interface and the in-memory store.

Follows Kafka Connect's ``OffsetBackingStore`` and ``MemoryOffsetBackingStore``: a store maps
serialized keys to serialized values (the bytes of :mod:`kopycat.storage.offset_codec`), knows
nothing of connectors beyond listing their partitions (KIP-875's ``connectorPartitions``), and
is wrapped by :class:`~kopycat.storage.offset_storage_reader_writer.OffsetStorageReaderImpl`
(reads for a task) and :class:`~kopycat.storage.offset_storage_reader_writer.OffsetStorageWriter`
(buffered, snapshotting writes).

Three stores implement it: :class:`MemoryOffsetStore` (tests, embedded use),
:class:`~kopycat.storage.file_offset_store.FileOffsetStore` (standalone mode) and
:class:`~kopycat.storage.kafka_offset_store.KafkaOffsetStore` (the ``connect-offsets`` topic).
"""

from __future__ import annotations

import threading
from abc import abstractmethod
from collections.abc import Collection, Mapping
from concurrent.futures import Future
from typing import Any

import orjson

from kopycat.lifecycle import Lifecycle
from kopycat.storage.offset_codec import canonical_key
from kopycat.storage.write_completion import SetCallback, completed_future

__all__ = ["MemoryOffsetStore", "OffsetBackingStore", "OffsetTable"]


class OffsetBackingStore(Lifecycle):
    """Key-value storage of serialized source offsets (Kafka Connect's ``OffsetBackingStore``).

    Keys and values are bytes; a None value is a tombstone: the key is deleted. Methods may be
    called from any thread; implementations state their own guarantees.
    ``start`` loads existing offsets, so that ``get`` afterwards sees everything stored so far;
    ``stop`` finishes pending writes as far as possible.
    """

    @abstractmethod
    def get(self, keys: Collection[bytes]) -> dict[bytes, bytes | None]:
        """The stored value of each key (None when absent). Blocks until the store is current.

        Keys that differ from a stored key only in the order of their partition map's keys find
        it too (see :func:`~kopycat.storage.offset_codec.canonical_key`).
        """

    @abstractmethod
    def set(self, values: Mapping[bytes, bytes | None],
            callback: SetCallback | None = None) -> Future[None]:
        """Store all ``values`` (None deletes). ``callback`` runs before the future resolves.

        The write is complete, and durable as far as the store allows, when the future resolves
        without error. On error nothing is promised about which values were written.
        """

    @abstractmethod
    def connector_partitions(self, connector: str) -> list[dict[str, Any] | None]:
        """The source partitions of ``connector`` that have a stored offset (KIP-875)."""


class OffsetTable:
    """The last value per key, as every store keeps it in memory (Kafka's ``data`` map).

    Besides the raw bytes it indexes keys by :func:`canonical_key`, so a lookup finds an
    offset whose key a Java connector wrote with another map order, and it answers with the
    most recently written of such equivalent keys. Thread-safe: one lock guards both maps.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._data: dict[bytes, bytes] = {}
        # canonical key -> raw keys holding a value, least recently written first
        self._aliases: dict[bytes, dict[bytes, None]] = {}

    def apply(self, key: bytes | None, value: bytes | None) -> None:
        """Record one write read from or made to the store; None deletes (a tombstone)."""
        if key is None:  # Kafka Connect's readers ignore records without a key too
            return
        canonical = canonical_key(key)
        with self._lock:
            if value is None:
                self._data.pop(key, None)
                if canonical is not None and canonical in self._aliases:
                    self._aliases[canonical].pop(key, None)
                    if not self._aliases[canonical]:
                        del self._aliases[canonical]
                return
            self._data[key] = value
            if canonical is not None:
                aliases = self._aliases.setdefault(canonical, {})
                aliases.pop(key, None)
                aliases[key] = None

    def apply_all(self, values: Mapping[bytes, bytes | None]) -> None:
        for key, value in values.items():
            self.apply(key, value)

    def get(self, keys: Collection[bytes]) -> dict[bytes, bytes | None]:
        canonicals = {key: canonical_key(key) for key in keys}
        with self._lock:
            found: dict[bytes, bytes | None] = {}
            for key, canonical in canonicals.items():
                aliases = self._aliases.get(canonical) if canonical is not None else None
                if aliases:
                    found[key] = self._data[next(reversed(aliases))]
                else:
                    found[key] = self._data.get(key)
            return found

    def snapshot(self) -> dict[bytes, bytes]:
        """A copy of every live key and value."""
        with self._lock:
            return dict(self._data)

    def replace(self, data: Mapping[bytes, bytes]) -> None:
        """Drop everything and hold ``data`` instead (a store reloaded from its file)."""
        with self._lock:
            self._data.clear()
            self._aliases.clear()
        self.apply_all(data)

    def connector_partitions(self, connector: str) -> list[dict[str, Any] | None]:
        with self._lock:
            canonicals = list(self._aliases)
        partitions = []
        for canonical in canonicals:
            name, partition = orjson.loads(canonical)
            if name == connector:
                partitions.append(partition)
        return partitions

    def __len__(self) -> int:
        with self._lock:
            return len(self._data)


class MemoryOffsetStore(OffsetBackingStore):
    """Offsets in memory only, lost on exit (Kafka Connect's ``MemoryOffsetBackingStore``).

    For tests and embedded runs that keep offsets elsewhere. ``set`` applies the values and
    completes before returning. Thread-safe.
    """

    def __init__(self) -> None:
        self.table = OffsetTable()

    def start(self) -> None:
        """Nothing to load."""

    def stop(self) -> None:
        """Nothing to release; the offsets stay readable until the object is dropped."""

    def get(self, keys: Collection[bytes]) -> dict[bytes, bytes | None]:
        return self.table.get(keys)

    def set(self, values: Mapping[bytes, bytes | None],
            callback: SetCallback | None = None) -> Future[None]:
        self.table.apply_all(values)
        if callback is not None:
            callback(None)
        return completed_future()

    def connector_partitions(self, connector: str) -> list[dict[str, Any] | None]:
        return self.table.connector_partitions(connector)

"""One connector's view of source offsets: its own offsets topic first, the worker's as fallback.

Follows Kafka Connect's ``ConnectorOffsetBackingStore`` (KIP-618). A source connector may name its
own ``offsets.storage.topic``; its tasks then write offsets there, and reads look in that topic
first and fall back to the worker's store for keys the connector's topic does not hold (offsets
written before the connector got its own topic). Writes go to the *primary* store (the
connector's topic, else the worker's) and, once that succeeded, to the *secondary* (the worker's)
as a best-effort copy whose failure is only logged, as Kafka does, so that a connector whose own
topic is later removed from its config still resumes. Tombstones go to the secondary first and
synchronously: a tombstone only in the connector's topic would let the fallback read bring the
deleted offset back.

The worker's store is shared by every connector of the worker: :meth:`start` and :meth:`stop`
touch only the connector's own store. Thread-safe as the stores it composes.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Mapping
from concurrent.futures import Future
from typing import Any

import orjson

from kopycat.storage.kafka_offset_store import KafkaOffsetStore
from kopycat.storage.offset_backing_store import OffsetBackingStore
from kopycat.storage.write_completion import SetCallback

__all__ = ["ConnectorOffsetBackingStore"]

log = logging.getLogger(__name__)

_TOMBSTONE_TIMEOUT_S = 60.0


class ConnectorOffsetBackingStore(OffsetBackingStore):
    """The worker's store, a connector's own Kafka store, or both (Kafka's ``ConnectorOffsetBackingStore``).

    :param worker_store: the worker-global store, started and stopped by its owner; None when
        the connector's offsets live only in its own topic.
    :param connector_store: the store on the connector's ``offsets.storage.topic`` (a
        :class:`~kopycat.storage.kafka_offset_store.KafkaOffsetStore` in a worker), started and
        stopped with this object; None when the connector uses the worker's store.
    """

    def __init__(self, worker_store: OffsetBackingStore | None, connector_store: OffsetBackingStore | None) -> None:
        if worker_store is None and connector_store is None:
            raise ValueError("At least one offset store must be given")
        self.worker_store = worker_store
        self.connector_store = connector_store

    @classmethod
    def with_only_worker_store(cls, worker_store: OffsetBackingStore) -> ConnectorOffsetBackingStore:
        """A connector without its own offsets topic: everything goes to the worker's store."""
        return cls(worker_store, None)

    @classmethod
    def with_connector_and_worker_stores(cls, worker_store: OffsetBackingStore,
                                         connector_store: OffsetBackingStore) -> ConnectorOffsetBackingStore:
        """A connector with its own offsets topic on the worker's cluster: primary and fallback."""
        return cls(worker_store, connector_store)

    @property
    def primary_store(self) -> OffsetBackingStore:
        """Where this connector's offsets are written first: its own topic if it has one."""
        if self.connector_store is not None:
            return self.connector_store
        assert self.worker_store is not None
        return self.worker_store

    @property
    def primary_offsets_topic(self) -> str | None:
        """The topic of :attr:`primary_store`, or None when it is not a Kafka topic."""
        store = self.primary_store
        return store.topic if isinstance(store, KafkaOffsetStore) else None

    def start(self) -> None:
        """Start the connector's own store; the worker's must already be started by its owner."""
        if self.connector_store is not None:
            self.connector_store.start()

    def stop(self) -> None:
        """Stop the connector's own store; the worker's serves other connectors and stays up."""
        if self.connector_store is not None:
            self.connector_store.stop()

    def get(self, keys: Collection[bytes]) -> dict[bytes, bytes | None]:
        """The connector's stored values, falling back to the worker's for keys it lacks."""
        found: dict[bytes, bytes | None] = dict.fromkeys(keys)
        if self.worker_store is not None:
            found.update(self.worker_store.get(keys))
        if self.connector_store is not None:
            found.update({k: v for k, v in self.connector_store.get(keys).items() if v is not None})
        return found

    def set(self, values: Mapping[bytes, bytes | None],
            callback: SetCallback | None = None) -> Future[None]:
        """Write ``values`` to the primary store; the secondary gets tombstones first, copies after."""
        secondary = self.worker_store if self.connector_store is not None else None
        if secondary is None:
            return self.primary_store.set(values, callback)
        tombstones = {key: None for key, value in values.items() if value is None}
        if tombstones:
            try:
                secondary.set(tombstones).result(_TOMBSTONE_TIMEOUT_S)
            except Exception as exc:  # noqa: BLE001 - reported through the callback and future, as Kafka
                log.error("Writing %d offset tombstones to the worker's offset store failed: %s", len(tombstones), exc)
                if callback is not None:
                    callback(exc)
                failed: Future[None] = Future()
                failed.set_exception(exc)
                return failed
        regular = {key: value for key, value in values.items() if value is not None}

        def copy_to_secondary(error: BaseException | None) -> None:
            if error is None and regular:
                try:
                    secondary.set(regular, _log_secondary_failure)
                except Exception as exc:  # noqa: BLE001 - the secondary copy is best effort
                    _log_secondary_failure(exc)
            if callback is not None:
                callback(error)

        return self.primary_store.set(values, copy_to_secondary)

    def connector_partitions(self, connector: str) -> list[dict[str, Any] | None]:
        """The partitions either store holds an offset for, each once."""
        stores = [store for store in (self.worker_store, self.connector_store) if store is not None]
        seen: dict[bytes, dict[str, Any] | None] = {}
        for store in stores:
            for partition in store.connector_partitions(connector):
                seen.setdefault(orjson.dumps(partition, option=orjson.OPT_SORT_KEYS), partition)
        return list(seen.values())


def _log_secondary_failure(error: BaseException | None) -> None:
    if error is not None:
        log.warning("Copying offsets to the worker's offset store failed (the connector's own topic has them): %s",
                    error)

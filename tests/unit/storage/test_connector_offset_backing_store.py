"""ConnectorOffsetBackingStore: a connector's own offsets first, the worker's as fallback (KIP-618)."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from concurrent.futures import Future
from typing import Any

import pytest

from kopycat.runtime.offsets_admin import connector_offset_store
from kopycat.storage.connector_offset_backing_store import ConnectorOffsetBackingStore
from kopycat.storage.offset_backing_store import MemoryOffsetStore
from kopycat.storage.offset_codec import encode_key, encode_value
from kopycat.storage.write_completion import SetCallback, completed_future

KEY = encode_key("files", {"filename": "/data/in.txt"})
OTHER = encode_key("files", {"filename": "/data/other.txt"})


class StartCounting(MemoryOffsetStore):
    """A memory store that counts start/stop calls, to see who owns which store."""

    def __init__(self) -> None:
        super().__init__()
        self.starts = self.stops = 0

    def start(self) -> None:
        self.starts += 1

    def stop(self) -> None:
        self.stops += 1


class FailingStore(MemoryOffsetStore):
    def set(self, values: Mapping[bytes, bytes | None], callback: SetCallback | None = None) -> Future[None]:
        error = RuntimeError("broker down")
        if callback is not None:
            callback(error)
        return completed_future(error)

    def get(self, keys: Collection[bytes]) -> dict[bytes, bytes | None]:
        return dict.fromkeys(keys)

    def connector_partitions(self, connector: str) -> list[dict[str, Any] | None]:
        return []


def test_reads_prefer_the_connectors_topic_and_fall_back_to_the_workers() -> None:
    worker, own = MemoryOffsetStore(), MemoryOffsetStore()
    worker.set({KEY: encode_value({"position": 10}), OTHER: encode_value({"position": 7})})
    own.set({KEY: encode_value({"position": 99})})
    store = ConnectorOffsetBackingStore.with_connector_and_worker_stores(worker, own)

    assert store.get([KEY, OTHER]) == {KEY: encode_value({"position": 99}), OTHER: encode_value({"position": 7})}
    assert sorted(p["filename"] for p in store.connector_partitions("files") if p) == ["/data/in.txt",
                                                                                     "/data/other.txt"]


def test_writes_go_to_the_connectors_topic_and_are_copied_to_the_workers() -> None:
    worker, own = MemoryOffsetStore(), MemoryOffsetStore()
    store = ConnectorOffsetBackingStore.with_connector_and_worker_stores(worker, own)
    seen: list[BaseException | None] = []

    store.set({KEY: encode_value({"position": 5})}, seen.append).result(5)

    assert seen == [None]
    assert own.get([KEY]) == worker.get([KEY]) == {KEY: encode_value({"position": 5})}


def test_a_failed_copy_to_the_worker_store_does_not_fail_the_write() -> None:
    own = MemoryOffsetStore()
    store = ConnectorOffsetBackingStore.with_connector_and_worker_stores(FailingStore(), own)
    seen: list[BaseException | None] = []

    store.set({KEY: encode_value({"position": 5})}, seen.append).result(5)

    assert seen == [None] and own.get([KEY]) == {KEY: encode_value({"position": 5})}


def test_tombstones_reach_the_worker_store_first_so_the_fallback_cannot_resurrect_them() -> None:
    worker, own = MemoryOffsetStore(), MemoryOffsetStore()
    worker.set({KEY: encode_value({"position": 10})})
    own.set({KEY: encode_value({"position": 20})})
    store = ConnectorOffsetBackingStore.with_connector_and_worker_stores(worker, own)

    store.set({KEY: None}).result(5)

    assert store.get([KEY]) == {KEY: None}


def test_a_tombstone_the_worker_store_refuses_fails_the_write_before_the_connectors_topic() -> None:
    own = MemoryOffsetStore()
    own.set({KEY: encode_value({"position": 20})})
    store = ConnectorOffsetBackingStore.with_connector_and_worker_stores(FailingStore(), own)
    seen: list[BaseException | None] = []

    with pytest.raises(RuntimeError, match="broker down"):
        store.set({KEY: None}, seen.append).result(5)

    assert isinstance(seen[0], RuntimeError) and own.get([KEY]) == {KEY: encode_value({"position": 20})}


def test_start_and_stop_leave_the_shared_worker_store_to_its_owner() -> None:
    worker, own = StartCounting(), StartCounting()
    store = ConnectorOffsetBackingStore.with_connector_and_worker_stores(worker, own)

    with store:
        pass

    assert (own.starts, own.stops, worker.starts, worker.stops) == (1, 1, 0, 0)


def test_without_an_own_topic_the_connector_uses_only_the_worker_store() -> None:
    worker = MemoryOffsetStore()
    store = connector_offset_store(worker, {"name": "files"}, {"bootstrap.servers": "127.0.0.1:1"})

    store.set({KEY: encode_value({"position": 1})}).result(5)

    assert store.connector_store is None and store.primary_store is worker
    assert worker.get([KEY]) == {KEY: encode_value({"position": 1})}


def test_an_own_topic_gets_a_kafka_store_on_the_workers_cluster() -> None:
    worker = MemoryOffsetStore()
    store = connector_offset_store(worker, {"offsets.storage.topic": "my-offsets"},
                                   {"bootstrap.servers": "127.0.0.1:1", "offset.storage.replication.factor": "1"})

    assert store.primary_offsets_topic == "my-offsets" and store.worker_store is worker

"""OffsetStorageWriter and OffsetStorageReaderImpl over a store, as Kafka Connect's behave."""

from __future__ import annotations

import threading
from collections.abc import Collection, Mapping
from concurrent.futures import Future
from typing import Any

import pytest

from kopycat.api.errors import ConnectError, DataError
from kopycat.storage import MemoryOffsetStore, OffsetBackingStore, OffsetStorageReaderImpl, OffsetStorageWriter
from kopycat.storage.offset_codec import encode_key, encode_value
from kopycat.storage.write_completion import SetCallback


class HeldStore(OffsetBackingStore):
    """A memory store whose writes complete only when the test says so."""

    def __init__(self) -> None:
        self.memory = MemoryOffsetStore()
        self.pending: list[tuple[Mapping[bytes, bytes | None], SetCallback | None, Future[None]]] = []

    def start(self) -> None: ...

    def stop(self) -> None: ...

    def get(self, keys: Collection[bytes]) -> dict[bytes, bytes | None]:
        return self.memory.get(keys)

    def connector_partitions(self, connector: str) -> list[dict[str, Any] | None]:
        return self.memory.connector_partitions(connector)

    def set(self, values: Mapping[bytes, bytes | None], callback: SetCallback | None = None) -> Future[None]:
        future: Future[None] = Future()
        self.pending.append((dict(values), callback, future))
        return future

    def complete(self, index: int = 0, error: BaseException | None = None) -> None:
        values, callback, future = self.pending.pop(index)
        if error is None:
            self.memory.set(values)
        if callback is not None:
            callback(error)
        if error is None:
            future.set_result(None)
        else:
            future.set_exception(error)


def stored(store: OffsetBackingStore, namespace: str, partition: dict[str, Any]) -> dict[str, Any] | None:
    return OffsetStorageReaderImpl(store, namespace).offset(partition)


def test_offsets_recorded_after_a_flush_began_go_to_the_next_flush() -> None:
    store = HeldStore()
    writer = OffsetStorageWriter(store, "src")
    writer.offset({"file": "a"}, {"pos": 1})
    assert writer.begin_flush()
    writer.offset({"file": "a"}, {"pos": 2})  # acked while the first flush is in flight
    writer.offset({"file": "b"}, {"pos": 7})
    future = writer.do_flush()
    assert store.pending[0][0] == {encode_key("src", {"file": "a"}): b'{"pos":1}'}
    store.complete()
    future.result(1)
    assert stored(store, "src", {"file": "a"}) == {"pos": 1}
    assert writer.begin_flush()
    writer.do_flush()
    assert store.pending[0][0] == {encode_key("src", {"file": "a"}): b'{"pos":2}',
                                   encode_key("src", {"file": "b"}): b'{"pos":7}'}


def test_a_failed_flush_puts_its_offsets_back_below_newer_ones() -> None:
    store = HeldStore()
    writer = OffsetStorageWriter(store, "src")
    writer.offset({"file": "a"}, {"pos": 1})
    writer.offset({"file": "b"}, {"pos": 5})
    assert writer.begin_flush()
    writer.offset({"file": "a"}, {"pos": 2})
    errors: list[BaseException | None] = []
    future = writer.do_flush(errors.append)
    store.complete(error=RuntimeError("broker down"))
    with pytest.raises(RuntimeError, match="broker down"):
        future.result(1)
    assert [type(e) for e in errors] == [RuntimeError]
    assert not writer.flushing
    assert writer.begin_flush()
    writer.do_flush()
    assert store.pending[0][0] == {encode_key("src", {"file": "a"}): b'{"pos":2}',
                                   encode_key("src", {"file": "b"}): b'{"pos":5}'}


def test_a_write_completing_after_its_flush_was_cancelled_is_ignored() -> None:
    store = HeldStore()
    writer = OffsetStorageWriter(store, "src")
    writer.offset({"file": "a"}, {"pos": 1})
    writer.begin_flush()
    called: list[BaseException | None] = []
    writer.do_flush(called.append)
    writer.cancel_flush()  # e.g. offset.flush.timeout.ms passed
    writer.offset({"file": "a"}, {"pos": 2})
    assert writer.begin_flush()  # a new flush may start while the old write is still out
    store.complete(0)  # the late completion of the cancelled write
    assert called == []
    assert writer.flushing  # the new flush is untouched
    assert writer.pending() == {"buffered": 0, "flushing": 1}


def test_only_one_flush_at_a_time_and_nothing_to_flush_is_no_flush() -> None:
    writer = OffsetStorageWriter(HeldStore(), "src")
    assert not writer.begin_flush()
    writer.offset({"p": 1}, {"o": 1})
    assert writer.begin_flush()
    with pytest.raises(ConnectError, match="already flushing"):
        writer.begin_flush()


def test_partitions_equal_in_any_key_order_are_one_partition() -> None:
    store = MemoryOffsetStore()
    writer = OffsetStorageWriter(store, "src")
    writer.offset({"table": "t", "protocol": "1"}, {"n": 1})
    writer.offset({"protocol": "1", "table": "t"}, {"n": 2})
    writer.offset({"protocol": 1, "table": "t"}, {"n": 3})  # an int is another partition
    assert writer.flush(timeout_s=1)
    assert len(store.table) == 2
    assert stored(store, "src", {"table": "t", "protocol": "1"}) == {"n": 2}


def test_a_none_offset_deletes_the_stored_one() -> None:
    store = MemoryOffsetStore()
    writer = OffsetStorageWriter(store, "src")
    writer.offset({"f": "a"}, {"pos": 3})
    assert writer.flush(1)
    writer.offset({"f": "a"}, None)
    assert writer.flush(1)
    assert stored(store, "src", {"f": "a"}) is None
    assert store.connector_partitions("src") == []


def test_flush_gives_up_after_the_timeout_and_keeps_the_offsets() -> None:
    store = HeldStore()
    writer = OffsetStorageWriter(store, "src")
    writer.offset({"f": "a"}, {"pos": 3})
    assert writer.flush(timeout_s=0.05) is False
    assert not writer.flushing
    assert writer.pending() == {"buffered": 1, "flushing": None}


def test_bad_offsets_are_refused_when_recorded() -> None:
    writer = OffsetStorageWriter(MemoryOffsetStore(), "src")
    with pytest.raises(DataError, match="field 'pos' contains list"):
        writer.offset({"f": "a"}, {"pos": [1]})
    with pytest.raises(DataError, match="partition"):
        writer.offset({"f": {"x": 1}}, {"pos": 1})


def test_exactly_once_flow_serializes_the_snapshot_and_finishes_it() -> None:
    store = MemoryOffsetStore()
    writer = OffsetStorageWriter(store, "src")
    writer.offset({"f": "a"}, {"pos": 3})
    with pytest.raises(ConnectError, match="begin_flush"):
        writer.serialized_snapshot()
    assert writer.begin_flush()
    assert writer.serialized_snapshot() == {encode_key("src", {"f": "a"}): encode_value({"pos": 3})}
    writer.offset({"f": "a"}, {"pos": 4})
    writer.finish_flush(RuntimeError("transaction aborted"))
    assert writer.begin_flush()
    assert writer.serialized_snapshot() == {encode_key("src", {"f": "a"}): b'{"pos":4}'}
    assert writer.finish_flush(None)
    assert not writer.flushing


def test_reader_answers_every_partition_in_order_and_finds_any_key_order() -> None:
    store = MemoryOffsetStore()
    # as a Java connector using a LinkedHashMap would have written it: not HashMap order
    store.set({b'["src",{"table":"t","protocol":"1"}]': b'{"n":9}',
               encode_key("src", {"f": "b"}): b'{"pos":1}',
               encode_key("other", {"f": "a"}): b'{"pos":5}'})
    reader = OffsetStorageReaderImpl(store, "src")
    assert reader.offsets([{"protocol": "1", "table": "t"}, {"f": "a"}, {"f": "b"}]) == [
        ({"protocol": "1", "table": "t"}, {"n": 9}), ({"f": "a"}, None), ({"f": "b"}, {"pos": 1})]


def test_the_latest_of_equivalent_keys_wins() -> None:
    store = MemoryOffsetStore()
    ours = encode_key("src", {"table": "t", "protocol": "1"})
    java_linked = b'["src",{"table":"t","protocol":"1"}]'
    store.set({ours: b'{"n":1}'})
    store.set({java_linked: b'{"n":2}'})
    assert stored(store, "src", {"protocol": "1", "table": "t"}) == {"n": 2}
    store.set({java_linked: None})
    assert stored(store, "src", {"protocol": "1", "table": "t"}) == {"n": 1}
    assert store.connector_partitions("src") == [{"protocol": "1", "table": "t"}]


def test_reader_refuses_a_stored_offset_it_cannot_read() -> None:
    store = MemoryOffsetStore()
    store.set({encode_key("src", {"f": "a"}): b"[1,2]"})
    with pytest.raises(DataError, match="kopycat offsets reset --connector src"):
        stored(store, "src", {"f": "a"})


def test_offsets_may_be_recorded_from_several_threads_while_one_flushes() -> None:
    store = MemoryOffsetStore()
    writer = OffsetStorageWriter(store, "src")
    flush_lock = threading.Lock()  # the engine's one committer: one flush at a time

    def record(n: int) -> None:
        for i in range(200):
            writer.offset({"task": n}, {"i": i})
            if i % 50 == 0:
                with flush_lock:
                    assert writer.flush(1)

    threads = [threading.Thread(target=record, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert writer.flush(1)
    assert [stored(store, "src", {"task": n}) for n in range(4)] == [{"i": 199}] * 4

"""ReadAhead: an iterator's items in order from a thread of its own, its error after the items before it,
at most ``depth`` items plus the one in hand read ahead, and a stop that ends and joins the reader; read_ahead
flattens chunks read so (the CDC slot's fetches), closing them on the reader's thread."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator

import pytest

from kopycat.read_ahead import ReadAhead, read_ahead

WAIT_S = 60.0


class Counted:
    """0, 1, 2, ... up to ``count`` items, noting how many were taken from it; raises at ``fail_at``."""

    def __init__(self, count: int, fail_at: int = -1) -> None:
        self.count, self.fail_at, self.taken = count, fail_at, 0

    def __iter__(self) -> Iterator[int]:
        for item in range(self.count):
            if item == self.fail_at:
                raise KeyError(f"item {item}")
            self.taken += 1
            yield item


def wait_until(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


def drain(ahead: ReadAhead[int]) -> list[int]:
    items = []
    while (item := ahead.take()) is not None:
        items.append(item)
    return items


def test_items_come_in_order_then_none_and_the_reader_ends() -> None:
    ahead = ReadAhead(iter(Counted(50)), 2, "test-read-ahead-order", threading.Event())
    assert drain(ahead) == list(range(50))
    assert ahead.take() is None  # still the end, at once
    ahead.close()
    assert not [t for t in threading.enumerate() if t.name == "test-read-ahead-order"]


def test_the_iterators_error_is_raised_after_the_items_before_it() -> None:
    ahead = ReadAhead(iter(Counted(10, fail_at=3)), 1, "test-read-ahead-error", threading.Event())
    taken = [ahead.take(), ahead.take(), ahead.take()]
    with pytest.raises(KeyError, match="item 3"):
        ahead.take()
    assert taken == [0, 1, 2]
    ahead.close()


def test_the_reader_stays_at_most_depth_and_one_in_hand_ahead_and_stops_when_asked() -> None:
    source, stopping = Counted(1000), threading.Event()
    ahead = ReadAhead(iter(source), 2, "test-read-ahead-bounded", stopping)
    assert ahead.take() == 0
    wait_until(lambda: source.taken >= 4, "the reader to fill the queue")
    stopping.set()
    ahead.close()
    assert not [t for t in threading.enumerate() if t.name == "test-read-ahead-bounded"]
    assert source.taken == 4  # the one taken, two queued, one in hand: then it waited for room and saw the stop
    assert ahead.take() is None


class _Chunks:
    """A generator of numbered chunks that records where it ran, how far it got and whether it was closed."""

    def __init__(self, chunks: int, size: int, fail_at: int | None = None) -> None:
        self.chunks, self.size, self.fail_at = chunks, size, fail_at
        self.threads: set[str] = set()
        self.made = 0
        self.closed = threading.Event()

    def __call__(self) -> Iterator[list[int]]:
        try:
            for index in range(self.chunks):
                self.threads.add(threading.current_thread().name)
                if index == self.fail_at:
                    raise ValueError(f"chunk {index} failed")
                self.made += 1
                yield list(range(index * self.size, (index + 1) * self.size))
        finally:
            self.closed.set()


def test_every_row_arrives_once_in_order_fetched_on_the_helper_thread() -> None:
    chunks = _Chunks(chunks=50, size=1000)
    rows = list(read_ahead(chunks(), "slot-read-ahead", 3))
    assert rows == list(range(50_000))
    assert chunks.threads == {"slot-read-ahead"}
    assert chunks.closed.is_set()


def test_the_reads_error_is_raised_where_its_rows_would_have_come() -> None:
    chunks = _Chunks(chunks=10, size=10, fail_at=3)
    seen: list[int] = []
    with pytest.raises(ValueError, match="chunk 3 failed"):
        seen.extend(read_ahead(chunks(), "slot-read-ahead", 3))
    assert seen == list(range(30))


def test_closing_early_stops_the_thread_and_closes_the_chunks_with_at_most_depth_chunks_fetched_ahead() -> None:
    chunks = _Chunks(chunks=1000, size=10)
    rows = read_ahead(chunks(), "slot-read-ahead", depth=2)
    first = [next(rows) for _ in range(15)]  # the second chunk is taken: two may wait, one is being put
    assert first == list(range(15))
    rows.close()
    assert chunks.closed.wait(10)
    assert 2 <= chunks.made <= 2 + 2 + 1
    assert not any(thread.name == "slot-read-ahead" for thread in threading.enumerate())

"""ReadAhead: an iterator's items in order from a thread of its own, its error after the items before it,
at most ``depth`` items plus the one in hand read ahead, and a stop that ends and joins the reader."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator

import pytest

from kopycat.connectors.dlt.read_ahead import ReadAhead

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

"""The WAL's chunks are fetched on a helper thread: same rows, same order, errors and closing on the task's thread."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from kopycat.connectors.postgres_cdc.read_ahead import read_ahead


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
    rows = list(read_ahead(chunks(), "slot-read-ahead"))
    assert rows == list(range(50_000))
    assert chunks.threads == {"slot-read-ahead"}
    assert chunks.closed.is_set()


def test_the_reads_error_is_raised_where_its_rows_would_have_come() -> None:
    chunks = _Chunks(chunks=10, size=10, fail_at=3)
    seen: list[int] = []
    with pytest.raises(ValueError, match="chunk 3 failed"):
        seen.extend(read_ahead(chunks(), "slot-read-ahead"))
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

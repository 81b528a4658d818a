"""Read the slot's next rows on a helper thread while the task's thread builds and produces events.

The WAL arrives through ``FETCH``es of a server-side cursor (:meth:`.replication.PostgresSource.peek`),
each a round trip to PostgreSQL; on one thread the task waited through every one of them, and on a
loaded machine those waits (the server's backend scheduled late) were a third of a streaming run.
Debezium's ``PostgresStreamingChangeEventSource`` keeps the same distance between the socket and its
event building: the replication stream is read on its own thread into a bounded ``ChangeEventQueue``
that the task's ``poll()`` drains. Here psycopg waits for the server with the GIL released, so a
helper thread fetching the next chunks costs the task's thread only the moments it parses rows.

Order and content are unchanged: the chunks are handed over in the order they were fetched, the
thread runs at most :data:`CHUNKS_AHEAD` chunks ahead (a bound on memory), and an error of the
read is raised on the task's thread where the next row would have come. The connection stays
usable by the task's thread meanwhile (a relation's catalog lookup, the slot's confirmation):
psycopg runs one statement at a time per connection, between two fetches.

Thread-safety: the iterator returned by :func:`read_ahead` is used by one thread (the task's);
only the wrapped ``chunks`` iterator runs on the helper thread, from its first step to its close.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Iterator
from typing import Final, Generic, TypeVar

__all__ = ["CHUNKS_AHEAD", "read_ahead"]

log = logging.getLogger(__name__)

CHUNKS_AHEAD: Final = 3
"""Fetched chunks that may wait for the task's thread: with one, the fetch of the next chunk began
only once the task took the previous one."""

_CLOSE_WAIT_S: Final = 60.0
"""How long closing waits for a fetch in progress (the helper thread's last round trip) to end."""

T = TypeVar("T")


def read_ahead(chunks: Iterator[list[T]], name: str, depth: int = CHUNKS_AHEAD) -> Iterator[T]:
    """The items of ``chunks``, in order, fetched up to ``depth`` chunks ahead on a thread ``name``d.

    Closing the returned iterator (or leaving it at its end) stops the thread and closes ``chunks``
    on it: a generator is closed where it runs."""
    ahead = _Ahead(chunks, name, depth)
    try:
        while (chunk := ahead.next()) is not None:
            yield from chunk
    finally:
        ahead.close()


class _Failed:
    """What the helper thread hands over when the read failed: raised on the task's thread."""

    __slots__ = ("error",)

    def __init__(self, error: BaseException) -> None:
        self.error = error


_END: Final = object()


class _Ahead(Generic[T]):
    """The helper thread and the bounded queue of chunks it fills."""

    def __init__(self, chunks: Iterator[list[T]], name: str, depth: int) -> None:
        self.ready: queue.Queue[object] = queue.Queue(depth)
        self.closing = threading.Event()
        self.thread = threading.Thread(target=self._fill, args=(chunks,), name=name, daemon=True)
        self.thread.start()

    def _fill(self, chunks: Iterator[list[T]]) -> None:
        try:
            for chunk in chunks:
                if not self._put(chunk):
                    break
            else:
                self._put(_END)
        except BaseException as exc:  # noqa: BLE001 - handed to the task's thread, which raises it
            self._put(_Failed(exc))
        finally:
            close = getattr(chunks, "close", None)
            if close is not None:
                close()

    def _put(self, item: object) -> bool:
        """Queue ``item`` when there is room; False once the reader closed."""
        while not self.closing.is_set():
            try:
                self.ready.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def next(self) -> list[T] | None:
        """The next chunk; None at the end; the read's error raised."""
        item = self.ready.get()
        if item is _END:
            return None
        if item.__class__ is _Failed:
            raise item.error  # type: ignore[attr-defined]
        return item  # type: ignore[return-value]

    def close(self) -> None:
        self.closing.set()
        self.thread.join(_CLOSE_WAIT_S)
        if self.thread.is_alive():
            log.warning("Thread %s still reads after %.0f s; leaving it to end on its own",
                        self.thread.name, _CLOSE_WAIT_S)

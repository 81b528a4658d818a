"""A bounded read-ahead: an iterator run on a thread of its own, a few items ahead of its consumer.

Debezium's shape (``ChangeEventQueue``): its connectors read on their own thread into a bounded
queue that ``poll()`` drains, and an error on that thread is handed to the next ``poll()``
(Debezium's ``ErrorHandler``). A source task reads its system here while the runner converts and
produces what the last ``poll()`` returned: database drivers, Arrow and librdkafka release the GIL
while they wait, so the two take the time of the slower instead of the sum. Used by the dlt source
(a resource's Arrow tables) and the PostgreSQL CDC source (the slot's ``FETCH`` round trips).

The iterator runs only on the reader thread, from its first step to its close, so whatever it
computes between two items (dlt's state after a table) is what it was when that item was made,
however far ahead it runs, and a generator holding a cursor is closed where it ran. ``depth``
items wait in the queue at most, and one more in the reader's hand.

Thread-safety: :meth:`ReadAhead.take` is for one consumer thread; :meth:`ReadAhead.close` may come
from any thread, as may setting the ``stopping`` event.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Iterator
from typing import Final, Generic, TypeVar, cast

__all__ = ["ReadAhead", "read_ahead"]

log = logging.getLogger(__name__)

T = TypeVar("T")

WAIT_S: Final = 0.2
"""How often a waiting reader or consumer looks at ``stopping``."""
JOIN_S: Final = 60.0
"""How long :meth:`ReadAhead.close` waits for the reader to leave the iterator (a query, a fetch)."""

_END = object()
"""Put after the iterator's last item."""


class _Failed:
    """The exception the iterator raised, on its way to the consumer."""

    def __init__(self, error: BaseException) -> None:
        self.error = error


class ReadAhead(Generic[T]):
    """Runs ``items`` on a daemon thread named ``name``, keeping up to ``depth`` items ready.

    The reader stops taking items once ``stopping`` is set or :meth:`close` is called (after the
    item it is reading, which may take as long as the iterator takes).
    """

    def __init__(self, items: Iterator[T], depth: int, name: str, stopping: threading.Event) -> None:
        self.name = name
        self.stopping = stopping
        self._closing = threading.Event()
        self._items = items
        self._ready: queue.Queue[object] = queue.Queue(maxsize=depth)
        self._ended = False
        self._thread = threading.Thread(target=self._read, name=name, daemon=True)
        self._thread.start()

    def take(self) -> T | None:
        """The next item, waiting for it; None once the items ended or ``stopping`` is set (the
        caller tells which). Raises what the iterator raised, once its earlier items were taken."""
        while not self._ended and not self.stopping.is_set():
            try:
                item = self._ready.get(timeout=WAIT_S)
            except queue.Empty:
                continue
            if item is _END:
                self._ended = True
                return None
            if isinstance(item, _Failed):
                raise item.error
            return cast(T, item)
        return None

    def close(self) -> None:
        """Stop the reader after its current item and wait for it to close the iterator."""
        self._closing.set()
        self._thread.join(JOIN_S)
        if self._thread.is_alive():
            log.warning("%s: still reading after %.0f s; it ends when its current read returns", self.name, JOIN_S)

    def _read(self) -> None:
        try:
            for item in self._items:
                if not self._put(item):
                    return
            self._put(_END)
        except BaseException as exc:  # noqa: BLE001 - the consumer's thread raises it
            self._put(_Failed(exc))
        finally:
            close = getattr(self._items, "close", None)
            if close is not None:
                close()

    def _put(self, item: object) -> bool:
        """Queue ``item``, waiting for room; False when stopping or closing came first."""
        while not self.stopping.is_set() and not self._closing.is_set():
            try:
                self._ready.put(item, timeout=WAIT_S)
                return True
            except queue.Full:
                continue
        return False


def read_ahead(chunks: Iterator[list[T]], name: str, depth: int) -> Iterator[T]:
    """The items of ``chunks``, in order, read up to ``depth`` chunks ahead on a thread ``name``d.

    Closing the returned iterator (or leaving it at its end) stops the thread and closes ``chunks``
    on it."""
    ahead = ReadAhead(chunks, depth, name, threading.Event())
    try:
        while (chunk := ahead.take()) is not None:
            yield from chunk
    finally:
        ahead.close()

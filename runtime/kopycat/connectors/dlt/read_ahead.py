"""A bounded read-ahead: an iterator run on a thread of its own, a few items ahead of its consumer.

Debezium's shape (``ChangeEventQueue``): its connectors read on their own thread into a bounded
queue that ``poll()`` drains, and an error on that thread is handed to the next ``poll()``
(Debezium's ``ErrorHandler``). Here a dlt resource is read while the runner converts and produces
what the last ``poll()`` returned: the database driver, Arrow and librdkafka release the GIL, so
the two take the time of the slower instead of the sum.

The iterator runs only on the reader thread, so whatever it reads and computes between two items
(dlt's state after a table) is what it was when that item was made, however far ahead it runs.
``depth`` items wait in the queue at most, and one more in the reader's hand.

Thread-safety: :meth:`take` is for one consumer thread; :meth:`close` may come from any thread,
as may setting the ``stopping`` event.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Iterator
from typing import Final, Generic, TypeVar, cast

__all__ = ["ReadAhead"]

log = logging.getLogger(__name__)

T = TypeVar("T")

WAIT_S: Final = 0.2
"""How often a waiting reader or consumer looks at ``stopping``."""
JOIN_S: Final = 30.0
"""How long :meth:`ReadAhead.close` waits for the reader to leave the iterator (a query, a page)."""

_END = object()
"""Put after the iterator's last item."""


class _Failed:
    """The exception the iterator raised, on its way to the consumer."""

    def __init__(self, error: BaseException) -> None:
        self.error = error


class ReadAhead(Generic[T]):
    """Runs ``items`` on a daemon thread named ``name``, keeping up to ``depth`` items ready.

    The reader stops taking items once ``stopping`` is set (after the item it is reading, which
    may take as long as the iterator takes); :meth:`close` then waits for it to end.
    """

    def __init__(self, items: Iterator[T], depth: int, name: str, stopping: threading.Event) -> None:
        self.name = name
        self.stopping = stopping
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
        """Wait for the reader to end (it ends after its last item, or once ``stopping`` is set)."""
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

    def _put(self, item: object) -> bool:
        """Queue ``item``, waiting for room; False when ``stopping`` was set first."""
        while not self.stopping.is_set():
            try:
                self._ready.put(item, timeout=WAIT_S)
                return True
            except queue.Full:
                continue
        return False

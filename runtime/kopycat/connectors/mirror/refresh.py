"""The periodic re-read of a mirror connector's work list: MM2's topic and group refreshes.

``MirrorSourceConnector`` lists the source topic-partitions again every
``refresh.topics.interval.seconds`` and ``MirrorCheckpointConnector`` the consumer groups every
``refresh.groups.interval.seconds``; when the list changed, they ask the runtime to reconfigure
their tasks (Kafka's ``Scheduler.scheduleRepeating`` of ``refreshTopicPartitions`` and
``refreshConsumerGroups``). One daemon thread per connector, stopped with it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

__all__ = ["RefreshMonitor"]

log = logging.getLogger(__name__)

T = TypeVar("T")


class RefreshMonitor(Generic[T]):
    """Holds the current list; a thread re-reads it and calls ``on_change`` when it differs.

    ``read`` failures of the ``retried`` types are logged and retried at the next interval.
    """

    def __init__(self, read: Callable[[], list[T]], on_change: Callable[[], None],
                 retried: tuple[type[Exception], ...] = (Exception,)) -> None:
        self.read, self.on_change, self.retried = read, on_change, retried
        self.label = "refresh"
        self._items: list[T] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    def current(self) -> list[T]:
        with self._lock:
            return list(self._items)

    def replace(self, items: Sequence[T]) -> bool:
        """Set the list; True when it changed."""
        with self._lock:
            changed, self._items = list(items) != self._items, list(items)
        return changed

    def start(self, label: str, items: Sequence[T], interval_s: float | None) -> None:
        """Hold ``items``; with an interval, re-read them every ``interval_s`` until :meth:`stop`.
        ``label`` names the connector and the list in log lines and the thread's name."""
        self.label = label
        self._stopping.clear()
        self.replace(items)
        if interval_s is not None:
            self._thread = threading.Thread(target=self._watch, args=(interval_s,), name=f"refresh-{self.label}",
                                            daemon=True)
            self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        thread, self._thread = self._thread, None
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=5)

    def _watch(self, interval_s: float) -> None:
        while not self._stopping.wait(interval_s):
            try:
                items = self.read()
            except self.retried as exc:  # a failed refresh is retried at the next interval
                log.warning("%s: refreshing failed, retrying in %s s: %s", self.label, interval_s, exc)
                continue
            if self.replace(items) and not self._stopping.is_set():
                log.info("%s: changed (%d now); reconfiguring tasks", self.label, len(items))
                self.on_change()

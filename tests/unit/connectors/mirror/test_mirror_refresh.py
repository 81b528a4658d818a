"""The mirror connectors' refresh loop: a changed list asks for task reconfiguration, once per change."""

from __future__ import annotations

import threading
import time

from kopycat.api.errors import ConnectError
from kopycat.connectors.mirror.refresh import RefreshMonitor


def test_a_changed_list_reconfigures_once_a_failed_read_is_retried_and_stop_ends_the_thread() -> None:
    reads = iter([["a"], ConnectError("source down"), ["a", "b"], ["a", "b"], ["a", "b"]])
    seen: list[list[str]] = []
    changed = threading.Event()

    def read() -> list[str]:
        item = next(reads, ["a", "b"])
        if isinstance(item, Exception):
            raise item
        return item

    def on_change() -> None:
        seen.append(monitor.current())
        changed.set()

    monitor: RefreshMonitor[str] = RefreshMonitor(read, on_change, retried=(ConnectError,))
    monitor.start("test", ["a"], interval_s=0.01)
    assert changed.wait(5)
    time.sleep(0.1)  # ten more rounds, all reading the same list
    monitor.stop()
    assert seen == [["a", "b"]]  # unchanged ["a"], the failure and the repeats asked nothing
    assert monitor.current() == ["a", "b"]
    assert not any(t.name == "refresh-test" for t in threading.enumerate())


def test_without_an_interval_there_is_no_thread() -> None:
    monitor: RefreshMonitor[int] = RefreshMonitor(lambda: [2], lambda: None)
    monitor.start("quiet", [1], interval_s=None)
    assert monitor.current() == [1] and not any(t.name == "refresh-quiet" for t in threading.enumerate())
    monitor.stop()

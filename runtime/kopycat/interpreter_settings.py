"""Process-wide interpreter settings a runner changes while it copies: the collector and the GIL.

**The cyclic garbage collector.** Building or decoding a batch allocates several container
objects per record (structs, value lists, records) and frees none of them until the batch is
done, so the collector's generation-0 threshold trips every few hundred records and each
collection walks every young object, then promotes them and walks them again in older
generations: on a record-at-a-time source that is most of the time spent per record. Records
and structs form no cycles, so nothing is lost by collecting after the batch instead
(:func:`gc_paused`).

Collecting after the batch still walks every record of it, since they are all alive then, and a
mirror run would pay that on every batch. While a runner copies, :func:`young_collections_deferred`
raises the generation-0 threshold, so collections come every 50,000 net allocations instead of 700:
a record is freed once Kafka acknowledges it, which takes the allocation count back down, so copies
in steady state rarely collect at all.

**The GIL's switch interval.** A sink runner that converts batches on helper threads while it
consumes the next has several threads wanting the GIL: the consuming one holds it for milliseconds
at a time (confluent-kafka builds a batch's message objects, the runner splits them), the converting
ones drop and retake it around every pyarrow call. At CPython's default 5 ms interval the consuming
thread is made to hand the GIL over in the middle of that work and wait to get it back.
:func:`longer_switch_interval` lengthens the interval to 20 ms while such a loop runs, so the
consuming thread finishes its work on a batch before it hands over, while the converting threads
still get their turn often enough to keep up. A thread that blocks (I/O, a lock, a pyarrow kernel)
still hands the GIL over at once; only a thread running Python code keeps it longer.

Each setting is process-wide: runners on several threads share it, the first to enter saves the
old value and the last to leave restores it (:class:`_SharedOverride`).
"""

from __future__ import annotations

import gc
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Final, Generic, TypeVar

__all__ = ["gc_paused", "longer_switch_interval", "young_collections_deferred"]

DEFERRED_GEN0_THRESHOLD: Final = 50_000
COPY_SWITCH_INTERVAL_S: Final = 0.02

T = TypeVar("T")


class _SharedOverride(Generic[T]):
    """A process-wide setting overridden while at least one block holds it.

    The first block in saves the current value and sets ``raised(saved, wanted)``; later blocks
    leave it as the first set it; the last block out restores the saved value.
    """

    def __init__(self, get: Callable[[], T], set_: Callable[[T], None], raised: Callable[[T, T], T]) -> None:
        self._get, self._set, self._raised = get, set_, raised
        self._lock = threading.Lock()
        self._holders = 0
        self._saved: T | None = None

    @contextmanager
    def held(self, wanted: T) -> Iterator[None]:
        with self._lock:
            if self._holders == 0:
                self._saved = self._get()
                self._set(self._raised(self._saved, wanted))
            self._holders += 1
        try:
            yield
        finally:
            with self._lock:
                self._holders -= 1
                if self._holders == 0 and self._saved is not None:
                    self._set(self._saved)


def _raised_threshold(saved: tuple[int, ...], wanted: tuple[int, ...]) -> tuple[int, ...]:
    return (max(wanted[0], saved[0]), *saved[1:])


def _set_threshold(threshold: tuple[int, ...]) -> None:
    gc.set_threshold(*threshold)


_gen0_threshold: Final = _SharedOverride(gc.get_threshold, _set_threshold, _raised_threshold)
_switch_interval: Final = _SharedOverride(sys.getswitchinterval, sys.setswitchinterval, max)


@contextmanager
def gc_paused() -> Iterator[None]:
    """Disable the collector for the block; re-enable it only if it was enabled on entry.

    The switch is process-wide: with several task threads, the first to leave re-enables it
    while another may still be inside its block, which only costs that block some speed.
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


@contextmanager
def young_collections_deferred(threshold: int = DEFERRED_GEN0_THRESHOLD) -> Iterator[None]:
    """Raise the generation-0 threshold to at least ``threshold`` for the block (never lower it)."""
    with _gen0_threshold.held((threshold,)):
        yield


@contextmanager
def longer_switch_interval(seconds: float = COPY_SWITCH_INTERVAL_S) -> Iterator[None]:
    """Lengthen the GIL's switch interval to at least ``seconds`` for the block (never shorten it)."""
    with _switch_interval.held(seconds):
        yield

"""The lifecycle every backing store shares: start, stop, and use in a ``with`` block.

Kafka Connect's offset, config and status backing stores each declare ``start()`` and ``stop()``;
here they share this base, which also makes each usable as a context manager (stopped on exit,
error or not). Each store's own base restates what its ``start`` loads and its ``stop`` finishes.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from types import TracebackType
from typing import Self

__all__ = ["BackingStore"]


class BackingStore(ABC):
    """Started before use, stopped after; ``with store:`` does both."""

    @abstractmethod
    def start(self) -> None:
        """Connect and load what is stored."""

    @abstractmethod
    def stop(self) -> None:
        """Release resources; pending writes are finished as far as possible."""

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

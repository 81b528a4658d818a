"""Started before use, stopped after: the lifecycle the backing stores share, with a ``with`` block.

Kafka Connect's offset, config and status backing stores each declare ``start()`` and ``stop()``;
here they share this base, which also makes each usable as a context manager (stopped on exit,
error or not). It holds nothing store-specific, so any service with this lifecycle can use it;
each subclass's docstring says what its ``start`` loads and its ``stop`` finishes.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from types import TracebackType
from typing import Self

__all__ = ["Lifecycle"]


class Lifecycle(ABC):
    """Started before use, stopped after; ``with thing:`` does both."""

    @abstractmethod
    def start(self) -> None:
        """Connect and load what is stored; return once ready."""

    @abstractmethod
    def stop(self) -> None:
        """Release resources; pending work is finished as far as possible."""

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

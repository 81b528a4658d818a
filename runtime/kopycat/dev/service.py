"""What every local service shares: start/stop, and use as a context manager."""

from __future__ import annotations

from abc import ABC, abstractmethod
from types import TracebackType
from typing import Self


class LocalService(ABC):
    """A real process or server on loopback, owned by one object: start() it, stop() it.

    ``with Service() as s:`` starts it and stops it however the block ends. Not thread-safe.
    """

    @abstractmethod
    def start(self) -> None:
        """Start the service and return once it answers."""

    @abstractmethod
    def stop(self) -> None:
        """Stop the service and remove what it wrote; safe to call twice."""

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

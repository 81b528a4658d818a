"""What every local service shares: start/stop, and use as a context manager."""

from __future__ import annotations

from kopycat.lifecycle import Lifecycle

__all__ = ["LocalService"]


class LocalService(Lifecycle):
    """A real process or server on loopback, owned by one object: start() it, stop() it.

    ``start()`` returns once the service answers; ``stop()`` removes what it wrote and is safe to
    call twice. ``with Service() as s:`` starts it and stops it however the block ends. Not thread-safe.
    """

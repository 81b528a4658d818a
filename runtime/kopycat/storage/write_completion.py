"""How a store reports that a write completed: a callback and a future.

Kafka Connect's ``OffsetBackingStore.set`` takes a ``Callback<Void>`` and returns a ``Future<Void>``;
Kopycat's stores (offsets, configs, statuses; in memory, in a file or on a Kafka topic) do the
same, so the types live here, apart from any one store.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future

__all__ = ["SetCallback", "completed_future"]

SetCallback = Callable[[BaseException | None], None]
"""Called once when a write finished: with None on success, else with the error."""


def completed_future(error: BaseException | None = None) -> Future[None]:
    """A future that is already done, failed with ``error`` when one is given."""
    future: Future[None] = Future()
    if error is None:
        future.set_result(None)
    else:
        future.set_exception(error)
    return future

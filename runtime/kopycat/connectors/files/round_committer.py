"""Where the storage sink's rounds are written and committed: one background thread per task.

Beyond Kafka Connect, whose storage sinks write and commit a file on the task's thread. Writing
a round (Parquet encoding and compression, the upload, the moves) took about a tenth of the
sink's consumer loop, and pyarrow releases the GIL while it writes, so on its own thread it
overlaps the next batches' consumption and decoding. One thread keeps a task's commits in
order (a partition's rounds share its manifest path); :class:`TopicPartitionWriter` keeps at
most one round per partition in flight, so memory holds at most two rounds per partition.

A commit that fails with :class:`RetriableError` (a throttled or unreachable store) is retried
here, backing off, until it succeeds or the task stops: the round is still whole in memory, so
nothing is lost or written twice (each attempt stages new temporary files and moves them onto
the same committed names). Any other failure fails the task at its next call, and the writer
never reports an offset past the failed round as safe, so a restart copies it again.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Final, TypeVar

from kopycat.api.errors import ConnectError, RetriableError

__all__ = ["RoundCommitter"]

log = logging.getLogger(__name__)

T = TypeVar("T")

FIRST_BACKOFF_S: Final = 1.0
MAX_BACKOFF_S: Final = 30.0


class RoundCommitter:
    """Runs commits in submission order, retrying retriable failures; ``background=False`` runs them in the caller."""

    def __init__(self, *, background: bool = True, first_backoff_s: float = FIRST_BACKOFF_S,
                 max_backoff_s: float = MAX_BACKOFF_S) -> None:
        self._executor = ThreadPoolExecutor(1, thread_name_prefix="file-sink-commit") if background else None
        self._closing = threading.Event()
        self.first_backoff_s = first_backoff_s
        self.max_backoff_s = max_backoff_s

    @property
    def background(self) -> bool:
        return self._executor is not None

    def submit(self, commit: Callable[[], T], what: str) -> Future[T]:
        """Run ``commit`` (described by ``what`` in logs) after every commit submitted before it."""
        if self._executor is not None:
            return self._executor.submit(self._retrying, commit, what)
        done: Future[T] = Future()
        try:
            done.set_result(self._retrying(commit, what))
        except Exception as exc:  # noqa: BLE001 - handed to the caller through the future, as on the thread
            done.set_exception(exc)
        return done

    def close(self) -> None:
        """Finish the commit under way (its retries stop at the next failure), then end the thread."""
        self._closing.set()
        if self._executor is not None:
            self._executor.shutdown(wait=True, cancel_futures=True)

    def _retrying(self, commit: Callable[[], T], what: str) -> T:
        backoff = self.first_backoff_s
        while True:
            try:
                return commit()
            except RetriableError as exc:
                if self._closing.is_set():
                    raise ConnectError(f"Committing {what} failed and the task is stopping: {exc}") from exc
                log.warning("Committing %s failed, retrying in %.0f s: %s", what, backoff, exc)
                if self._closing.wait(backoff):
                    raise ConnectError(f"Committing {what} failed and the task is stopping: {exc}") from exc
                backoff = min(backoff * 2, self.max_backoff_s)

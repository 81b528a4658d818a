"""A Singer tap as a child process: its stdout read as Singer messages, its stderr kept for errors.

A tap writes one JSON message a line to stdout and logs to stderr (Singer spec). The process
machinery (start, pipe threads, stderr tail, exit code) is :class:`SingerProcess`'s; here stdout's
lines become messages in a queue, so :meth:`TapProcess.messages` can wait with a timeout
(``SourceTask.poll`` must return regularly). A tap that exits non-zero fails the task with the
last lines of its stderr.
"""

from __future__ import annotations

import json
import queue
import re
from collections.abc import Sequence
from typing import IO, Any

import orjson

from kopycat.api import ConnectError
from kopycat.connectors.singer.singer_process import SingerProcess

__all__ = ["TapProcess"]

_END = object()
"""Put in the queue after stdout's last line."""

_LONG_NUMBER = re.compile(rb"[0-9]{19}")
"""19 digits in a row: maybe an integer beyond 64 bits, which ``json`` keeps exact."""


class TapProcess(SingerProcess):
    """Runs ``argv`` and hands out its stdout's messages in order.

    Thread-safety: :meth:`messages` is for one reader (the task's thread); :meth:`terminate`
    may come from any thread.
    """

    def __init__(self, argv: Sequence[str], *, stderr_lines: int = 20) -> None:
        self._queue: queue.Queue[Any] = queue.Queue(maxsize=10_000)
        self.ended = False
        super().__init__(argv, role="tap", executable_key="singer.tap.executable", with_stdin=False,
                         stderr_lines=stderr_lines)

    def read_stdout(self, stream: IO[bytes]) -> None:
        try:
            for raw in stream:
                if raw.strip():
                    self._queue.put(_parse(raw, self.name))
        finally:
            self._queue.put(_END)

    def messages(self, limit: int, timeout_s: float) -> list[dict[str, Any]]:
        """Up to ``limit`` messages: waits up to ``timeout_s`` for the first, then takes what is there.

        Empty once stdout ended (``ended`` is then True). A line that is not a JSON object raises
        ConnectError.
        """
        found: list[dict[str, Any]] = []
        if self.ended:
            return found
        try:
            item = self._queue.get(timeout=timeout_s)
            while True:
                if item is _END:
                    self.ended = True
                    break
                if isinstance(item, Exception):
                    raise item
                found.append(item)
                if len(found) >= limit:
                    break
                item = self._queue.get_nowait()
        except queue.Empty:
            pass
        return found

    def check_exit(self) -> None:
        """Raise ConnectError with the stderr tail when the tap exited non-zero."""
        self.check_exit_code(self.wait())


def _parse(raw: bytes, tap: str) -> dict[str, Any] | ConnectError:
    """One stdout line's message: orjson (a few times faster than ``json``, and the tap's lines are
    most of the task's input), or ``json`` for what orjson reads otherwise or refuses: a line with
    19 digits in a row (orjson turns an integer beyond 64 bits into a float), NaN, a lone surrogate."""
    try:
        if _LONG_NUMBER.search(raw):
            raise orjson.JSONDecodeError("an integer orjson may round", "", 0)
        message = orjson.loads(raw)
    except orjson.JSONDecodeError:
        line = raw.decode("utf-8")
        try:
            message = json.loads(line)
        except json.JSONDecodeError as exc:
            return ConnectError(f"Singer tap {tap!r} wrote a line to stdout that is not a Singer message ({exc}): "
                                f"{line[:200]!r}; a tap must log to stderr")
    if not isinstance(message, dict) or "type" not in message:
        text = raw[:200].decode(errors="replace")
        return ConnectError(f"Singer tap {tap!r} wrote a message without a type: {text!r}")
    return message

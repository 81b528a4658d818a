"""A Singer tap as a child process: its stdout read as Singer messages, its stderr kept for errors.

A tap writes one JSON message a line to stdout and logs to stderr (Singer spec). Two daemon
threads read both pipes, so a tap that logs a lot never blocks on a full stderr pipe and
:meth:`TapProcess.messages` can wait with a timeout (``SourceTask.poll`` must return regularly).
The last lines of stderr are kept: a tap that exits non-zero fails the task with them.
"""

from __future__ import annotations

import collections
import json
import logging
import queue
import subprocess
import threading
from collections.abc import Sequence
from typing import IO, Any

from kopycat.api import ConnectError

__all__ = ["TapProcess"]

log = logging.getLogger(__name__)

_END = object()
"""Put in the queue after stdout's last line."""


class TapProcess:
    """Runs ``argv`` and hands out its stdout's messages in order.

    Thread-safety: :meth:`messages` is for one reader (the task's thread); :meth:`terminate`
    may come from any thread.
    """

    def __init__(self, argv: Sequence[str], *, stderr_lines: int = 20) -> None:
        self.argv = list(argv)
        self.name = self.argv[0]
        self._queue: queue.Queue[Any] = queue.Queue(maxsize=10_000)
        self._stderr: collections.deque[str] = collections.deque(maxlen=stderr_lines)
        self.ended = False
        log.info("Starting Singer tap: %s", " ".join(self.argv))
        try:
            self._process = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                             stderr=subprocess.PIPE, text=True, encoding="utf-8")
        except OSError as exc:
            raise ConnectError(f"Could not start the Singer tap {self.name!r}: {exc}; check "
                               f"singer.tap.executable (an executable on PATH or a path)") from exc
        assert self._process.stdout is not None and self._process.stderr is not None
        self._threads = [threading.Thread(target=self._read_stdout, args=(self._process.stdout,), daemon=True),
                         threading.Thread(target=self._read_stderr, args=(self._process.stderr,), daemon=True)]
        for thread in self._threads:
            thread.start()

    def _read_stdout(self, stream: IO[str]) -> None:
        try:
            for line in stream:
                if line.strip():
                    self._queue.put(_parse(line, self.name))
        finally:
            self._queue.put(_END)

    def _read_stderr(self, stream: IO[str]) -> None:
        for line in stream:
            self._stderr.append(line.rstrip("\n"))
            log.debug("%s: %s", self.name, line.rstrip("\n"))

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

    def wait(self, timeout_s: float = 60.0) -> int:
        """The tap's exit code, waiting up to ``timeout_s`` after its stdout closed."""
        code = self._process.wait(timeout_s)
        self._threads[1].join(5)
        return code

    def stderr_tail(self) -> str:
        return "\n".join(self._stderr)

    def check_exit(self) -> None:
        """Raise ConnectError with the stderr tail when the tap exited non-zero."""
        code = self.wait()
        if code != 0:
            raise ConnectError(f"Singer tap {self.name!r} exited with code {code}; the last lines it "
                               f"wrote to stderr:\n{self.stderr_tail()}")

    def terminate(self, grace_s: float = 5.0) -> None:
        """Stop the tap: SIGTERM, then SIGKILL after ``grace_s``."""
        if self._process.poll() is not None:
            return
        self._process.terminate()
        try:
            self._process.wait(grace_s)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()


def _parse(line: str, tap: str) -> dict[str, Any] | ConnectError:
    try:
        message = json.loads(line)
    except json.JSONDecodeError as exc:
        return ConnectError(f"Singer tap {tap!r} wrote a line to stdout that is not a Singer message ({exc}): "
                            f"{line[:200]!r}; a tap must log to stderr")
    if not isinstance(message, dict) or "type" not in message:
        return ConnectError(f"Singer tap {tap!r} wrote a message without a type: {line[:200]!r}")
    return message

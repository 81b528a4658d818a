"""A Singer target as a child process: messages written to its stdin, the state it echoes read back.

A Singer target reads SCHEMA/RECORD/STATE lines on stdin, and once it has persisted the records
before a STATE it writes that state's value to stdout, one JSON object a line (Singer spec;
Meltano's SDK does it in ``Target.drain_all``, pipelinewise targets after each flush). A daemon
thread reads stdout and keeps the last state echoed, another keeps stderr's tail for errors, so
a chatty target never blocks on a full pipe. Some targets wrap the value in a STATE message;
both forms are read.
"""

from __future__ import annotations

import collections
import contextlib
import json
import logging
import subprocess
import threading
import time
from collections.abc import Sequence
from typing import IO, Any

from kopycat.api import ConnectError

__all__ = ["TargetProcess"]

log = logging.getLogger(__name__)


class TargetProcess:
    """Runs ``argv``, takes lines for its stdin and keeps the last state it echoed.

    Thread-safety: :meth:`write`, :meth:`finish` and :meth:`latest_state` are for the task's
    thread; :meth:`terminate` may come from any thread.
    """

    def __init__(self, argv: Sequence[str], *, stderr_lines: int = 20) -> None:
        self.argv = list(argv)
        self.name = self.argv[0]
        self._stderr: collections.deque[str] = collections.deque(maxlen=stderr_lines)
        self._echoed = threading.Condition()
        self._state: dict[str, Any] | None = None
        self.echoes = 0
        """How many states the target echoed: a changed count says a new one came."""
        log.info("Starting Singer target: %s", " ".join(self.argv))
        try:
            self._process = subprocess.Popen(self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                             stderr=subprocess.PIPE)
        except OSError as exc:
            raise ConnectError(f"Could not start the Singer target {self.name!r}: {exc}; check "
                               f"singer.target.executable (an executable on PATH or a path)") from exc
        assert self._process.stdout is not None and self._process.stderr is not None
        self._threads = [threading.Thread(target=self._read_stdout, args=(self._process.stdout,), daemon=True),
                         threading.Thread(target=self._read_stderr, args=(self._process.stderr,), daemon=True)]
        for thread in self._threads:
            thread.start()

    def _read_stdout(self, stream: IO[bytes]) -> None:
        for line in stream:
            state = _state(line)
            if state is not None:
                with self._echoed:
                    self._state = state
                    self.echoes += 1
                    self._echoed.notify_all()
        with self._echoed:
            self._echoed.notify_all()  # the target is gone: a waiting wait_for_echo() checks why

    def _read_stderr(self, stream: IO[bytes]) -> None:
        for raw in stream:
            line = raw.decode("utf-8", "replace").rstrip("\n")
            self._stderr.append(line)
            log.debug("%s: %s", self.name, line)

    def latest_state(self) -> dict[str, Any] | None:
        """The last state the target echoed (what it has persisted), or None before its first."""
        with self._echoed:
            return self._state

    def wait_for_echo(self, state: dict[str, Any], timeout_s: float) -> None:
        """Wait until the target echoed ``state``; ConnectError when it exits or takes longer than ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        with self._echoed:
            while self._state != state:
                left = deadline - time.monotonic()
                if not self._threads[0].is_alive():  # its stdout ended: no echo can come
                    break
                if left <= 0:
                    raise ConnectError(f"Singer target {self.name!r} did not echo the state it was sent within "
                                       f"{timeout_s:.0f} s; raise singer.target.echo.timeout.ms, or set it to 0 "
                                       f"for a target that echoes only at the end of its input")
                self._echoed.wait(min(left, 1.0))
        if self._state != state:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._process.wait(5)
            self.check_alive()
            raise ConnectError(f"Singer target {self.name!r} closed its stdout without echoing the state it was sent")

    def write(self, data: bytes) -> None:
        """Hand lines to the target; ConnectError with its stderr tail when it is gone."""
        stdin = self._process.stdin
        assert stdin is not None
        try:
            stdin.write(data)
            stdin.flush()
        except (BrokenPipeError, ValueError) as exc:
            raise ConnectError(f"Singer target {self.name!r} stopped reading its input "
                               f"({self._exit_text()}); the last lines it wrote to stderr:\n"
                               f"{self.stderr_tail()}") from exc

    def finish(self, timeout_s: float) -> None:
        """End the input and wait for the target to persist, echo and exit; ConnectError when it fails."""
        stdin = self._process.stdin
        assert stdin is not None
        try:
            stdin.close()
        except BrokenPipeError:
            pass
        try:
            code = self._process.wait(timeout_s)
        except subprocess.TimeoutExpired as exc:
            self.terminate()
            raise ConnectError(f"Singer target {self.name!r} did not exit within {timeout_s:.0f} s of the end of "
                               f"its input; raise singer.target.finish.timeout.ms") from exc
        for thread in self._threads:
            thread.join(5)
        if code != 0:
            raise ConnectError(f"Singer target {self.name!r} exited with code {code}; the last lines it wrote "
                               f"to stderr:\n{self.stderr_tail()}")

    def check_alive(self) -> None:
        """ConnectError with the stderr tail when the target exited before its input ended."""
        if self._process.poll() is not None:
            for thread in self._threads:
                thread.join(5)
            raise ConnectError(f"Singer target {self.name!r} exited early ({self._exit_text()}); the last lines "
                               f"it wrote to stderr:\n{self.stderr_tail()}")

    def _exit_text(self) -> str:
        code = self._process.poll()
        return "still running" if code is None else f"exit code {code}"

    def stderr_tail(self) -> str:
        return "\n".join(self._stderr)

    def terminate(self, grace_s: float = 5.0) -> None:
        """Stop the target: SIGTERM, then SIGKILL after ``grace_s``."""
        if self._process.poll() is not None:
            return
        self._process.terminate()
        try:
            self._process.wait(grace_s)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()


def _state(line: bytes) -> dict[str, Any] | None:
    """The state a stdout line carries: the bare value, or a STATE message's; None for anything else."""
    try:
        message = json.loads(line)
    except ValueError:
        log.debug("Singer target wrote a line that is not JSON: %r", line[:200])
        return None
    if not isinstance(message, dict):
        return None
    if message.get("type") == "STATE":
        value = message.get("value")
        return value if isinstance(value, dict) else None
    return message

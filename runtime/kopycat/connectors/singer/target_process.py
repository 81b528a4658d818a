"""A Singer target as a child process: messages written to its stdin, the state it echoes read back.

A Singer target reads SCHEMA/RECORD/STATE lines on stdin, and once it has persisted the records
before a STATE it writes that state's value to stdout, one JSON object a line (Singer spec;
Meltano's SDK does it in ``Target.drain_all``, pipelinewise targets after each flush). The
process machinery (start, pipe threads, stderr tail, exit code) is :class:`SingerProcess`'s;
here stdout's lines are read for the last state echoed. Some targets wrap the value in a STATE
message; both forms are read.
"""

from __future__ import annotations

import contextlib
import json
import logging
import subprocess
import threading
import time
from collections.abc import Sequence
from typing import IO, Any

from kopycat.api import ConnectError
from kopycat.connectors.singer.singer_process import SingerProcess

__all__ = ["TargetProcess"]

log = logging.getLogger(__name__)


class TargetProcess(SingerProcess):
    """Runs ``argv``, takes lines for its stdin and keeps the last state it echoed.

    Thread-safety: :meth:`write`, :meth:`finish` and :meth:`latest_state` are for the task's
    thread; :meth:`terminate` may come from any thread.
    """

    def __init__(self, argv: Sequence[str], *, stderr_lines: int = 20) -> None:
        self._echoed = threading.Condition()
        self._state: dict[str, Any] | None = None
        self.echoes = 0
        """How many states the target echoed: a changed count says a new one came."""
        super().__init__(argv, role="target", executable_key="singer.target.executable", with_stdin=True,
                         stderr_lines=stderr_lines)

    def read_stdout(self, stream: IO[bytes]) -> None:
        for line in stream:
            state = _state(line)
            if state is not None:
                with self._echoed:
                    self._state = state
                    self.echoes += 1
                    self._echoed.notify_all()
        with self._echoed:
            self._echoed.notify_all()  # the target is gone: a waiting wait_for_echo() checks why

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
                if not self.stdout_open():  # no echo can come
                    break
                if left <= 0:
                    raise ConnectError(f"Singer target {self.name!r} did not echo the state it was sent within "
                                       f"{timeout_s:.0f} s; raise singer.target.echo.timeout.ms, or set it to 0 "
                                       f"for a target that echoes only at the end of its input")
                self._echoed.wait(min(left, 1.0))
        if self._state != state:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(5)
            self.check_alive()
            raise ConnectError(f"Singer target {self.name!r} closed its stdout without echoing the state it was sent")

    def write(self, data: bytes) -> None:
        """Hand lines to the target; ConnectError with its stderr tail when it is gone."""
        stdin = self.process.stdin
        assert stdin is not None
        try:
            stdin.write(data)
            stdin.flush()
        except (BrokenPipeError, ValueError) as exc:
            raise ConnectError(f"Singer target {self.name!r} stopped reading its input "
                               f"({self.exit_text()}); the last lines it wrote to stderr:\n"
                               f"{self.stderr_tail()}") from exc

    def finish(self, timeout_s: float) -> None:
        """End the input and wait for the target to persist, echo and exit; ConnectError when it fails."""
        stdin = self.process.stdin
        assert stdin is not None
        try:
            stdin.close()
        except BrokenPipeError:
            pass
        try:
            code = self.process.wait(timeout_s)
        except subprocess.TimeoutExpired as exc:
            self.terminate()
            raise ConnectError(f"Singer target {self.name!r} did not exit within {timeout_s:.0f} s of the end of "
                               f"its input; raise singer.target.finish.timeout.ms") from exc
        self.join_output()
        self.check_exit_code(code)

    def check_alive(self) -> None:
        """ConnectError with the stderr tail when the target exited before its input ended."""
        if self.exit_code() is not None:
            self.join_output()
            raise ConnectError(f"Singer target {self.name!r} exited early ({self.exit_text()}); the last lines "
                               f"it wrote to stderr:\n{self.stderr_tail()}")


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

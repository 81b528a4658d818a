"""A Singer tap or target as a child process: started, its stderr's tail kept, its exit code checked.

Taps and targets are programs (Singer spec): a tap writes messages to stdout, a target reads them
on stdin and echoes the states it persisted on stdout, and both log to stderr. What they share is
here: starting the program (a clear error naming the executable key when it cannot), a daemon
thread per output pipe so a chatty program never blocks on a full one, the last lines of stderr
for the error when it exits non-zero, and SIGTERM-then-SIGKILL. What is read from stdout is the
subclass's (:class:`~kopycat.connectors.singer.tap_process.TapProcess`,
:class:`~kopycat.connectors.singer.target_process.TargetProcess`).
"""

from __future__ import annotations

import collections
import logging
import subprocess
import threading
from collections.abc import Sequence
from typing import IO

from kopycat.api import ConnectError

__all__ = ["SingerProcess"]

log = logging.getLogger(__name__)


class SingerProcess:
    """Runs ``argv`` as a Singer ``role`` ("tap" or "target"); subclasses read its stdout in :meth:`read_stdout`.

    Thread-safety: :meth:`read_stdout` runs in a thread of its own; :meth:`terminate` may come
    from any thread; the rest is for the task's thread.
    """

    def __init__(self, argv: Sequence[str], *, role: str, executable_key: str, with_stdin: bool,
                 stderr_lines: int = 20) -> None:
        self.argv = list(argv)
        self.name = self.argv[0]
        self.role = role
        self._stderr: collections.deque[str] = collections.deque(maxlen=stderr_lines)
        log.info("Starting Singer %s: %s", role, " ".join(self.argv))
        try:
            self.process = subprocess.Popen(self.argv, stdin=subprocess.PIPE if with_stdin else subprocess.DEVNULL,
                                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        except OSError as exc:
            raise ConnectError(f"Could not start the Singer {role} {self.name!r}: {exc}; check "
                               f"{executable_key} (an executable on PATH or a path)") from exc
        assert self.process.stdout is not None and self.process.stderr is not None
        self._threads = [threading.Thread(target=self.read_stdout, args=(self.process.stdout,), daemon=True),
                         threading.Thread(target=self._read_stderr, args=(self.process.stderr,), daemon=True)]
        for thread in self._threads:
            thread.start()

    def read_stdout(self, stream: IO[bytes]) -> None:
        """Read the program's stdout to its end (in a thread of its own)."""
        raise NotImplementedError

    def _read_stderr(self, stream: IO[bytes]) -> None:
        for raw in stream:
            line = raw.decode("utf-8", "replace").rstrip("\n")
            self._stderr.append(line)
            log.debug("%s: %s", self.name, line)

    def stdout_open(self) -> bool:
        """True while the program's stdout is being read: it has not closed it."""
        return self._threads[0].is_alive()

    def wait(self, timeout_s: float = 60.0) -> int:
        """The exit code, waiting up to ``timeout_s``; stderr is read to its end after."""
        code = self.process.wait(timeout_s)
        self._threads[1].join(5)
        return code

    def join_output(self) -> None:
        """Wait (a few seconds at most) for both pipes to be read to their end, once the program exited."""
        for thread in self._threads:
            thread.join(5)

    def exit_code(self) -> int | None:
        """The exit code, or None while the program runs."""
        return self.process.poll()

    def exit_text(self) -> str:
        code = self.process.poll()
        return "still running" if code is None else f"exit code {code}"

    def stderr_tail(self) -> str:
        return "\n".join(self._stderr)

    def check_exit_code(self, code: int) -> None:
        """ConnectError with the stderr tail when ``code`` (the program's exit code) is not 0."""
        if code != 0:
            raise ConnectError(f"Singer {self.role} {self.name!r} exited with code {code}; the last lines it "
                               f"wrote to stderr:\n{self.stderr_tail()}")

    def terminate(self, grace_s: float = 5.0) -> None:
        """Stop the program: SIGTERM, then SIGKILL after ``grace_s``."""
        if self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(grace_s)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

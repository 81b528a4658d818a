"""Kill -9 from outside at a chosen moment: the fault tests' one way to land a SIGKILL mid-work.

A test starts the process (a ``kopycat run``, a spark-submit in a session of its own), names the
moment (records in the topic, a committed file on disk) and :func:`kill_when` polls for it, failing
with the process's log if the process ends first or the moment never comes on a loaded machine.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

__all__ = ["kill_when"]


def kill_when(process: subprocess.Popen[bytes], ready: Callable[[], object], log: Path, *, waiting_for: str,
              timeout_s: float = 300.0, poll_s: float = 0.05, group: bool = False, after_s: float = 0.0) -> None:
    """SIGKILL ``process`` (with ``group``, its whole process group: it was started with
    ``start_new_session=True``) ``after_s`` after ``ready()`` is truthy, and reap it. Fails, with ``log``'s
    end, when the process exits first or ``waiting_for`` has not happened within ``timeout_s``.

    ``after_s`` lets the process work on past the moment: the kill loops draw it at random, so each
    kill lands somewhere else in the work (between two commits, inside an open transaction)."""
    deadline = time.monotonic() + timeout_s
    while not ready():
        assert process.poll() is None, f"the process ended before the kill: {log.read_text()[-3000:]}"
        assert time.monotonic() < deadline, f"{waiting_for}: not within {timeout_s:.0f} s: {log.read_text()[-3000:]}"
        time.sleep(poll_s)
    time.sleep(after_s)
    if group:
        os.killpg(process.pid, signal.SIGKILL)
    else:
        process.send_signal(signal.SIGKILL)
    process.wait(60)

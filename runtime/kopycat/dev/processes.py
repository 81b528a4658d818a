"""Stopping a child started in a session of its own: the dev services' and the benches' one way."""

from __future__ import annotations

import os
import signal
import subprocess

__all__ = ["stop_process_group"]


def stop_process_group(process: subprocess.Popen[bytes], timeout_s: float) -> int:
    """SIGTERM ``process``'s process group (it shuts down cleanly), SIGKILL after ``timeout_s``;
    the exit code. For children started with ``start_new_session=True``."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    return int(process.returncode)

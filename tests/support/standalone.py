"""The standalone worker as an operator runs it: properties files and a ``kopycat standalone`` subprocess."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

__all__ = ["RUNNING", "run_until", "start_worker", "write_props"]

REPO = Path(__file__).parents[2]
RUNNING = b"standalone worker running"  # the worker's log line once it runs (and handles SIGTERM)


def write_props(path: Path, props: dict[str, str]) -> Path:
    path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    return path


def start_worker(worker: Path, connector: Path, log: Path) -> subprocess.Popen[bytes]:
    """``python -m kopycat.cli standalone worker connector``, its output appended to ``log``."""
    with log.open("ab") as out:
        return subprocess.Popen([sys.executable, "-m", "kopycat.cli", "standalone", str(worker), str(connector)],
                                stdout=out, stderr=subprocess.STDOUT, cwd=REPO)


def run_until(worker: Path, connector: Path, log: Path, progress: Callable[[], int], expected: int, *,
              poll_s: float = 1.0, stall_s: float = 180.0) -> None:
    """A last run of the worker until ``progress()`` reaches ``expected``, then a clean stop (exit code 0).

    SIGTERM is only handled once the worker runs (before, Python's default ends it), and the killed
    runs may have done everything already, so this waits for the worker to be up first. A slow
    machine is fine; progress that stalls ``stall_s`` fails the test with the log's end."""
    seen = log.stat().st_size if log.exists() else 0
    process = start_worker(worker, connector, log)
    deadline = time.monotonic() + 300
    while RUNNING not in log.read_bytes()[seen:]:
        assert process.poll() is None, f"worker exited early: {log.read_text()[-3000:]}"
        assert time.monotonic() < deadline, f"the worker did not start: {log.read_text()[-3000:]}"
        time.sleep(0.2)
    last, stalled_since = -1, time.monotonic()
    while (now := progress()) < expected:
        assert process.poll() is None, f"worker exited early: {log.read_text()[-3000:]}"
        if now != last:
            last, stalled_since = now, time.monotonic()
        assert time.monotonic() - stalled_since < stall_s, f"stalled at {now}/{expected}: {log.read_text()[-3000:]}"
        time.sleep(poll_s)
    process.send_signal(signal.SIGTERM)
    assert process.wait(120) == 0, log.read_text()[-3000:]

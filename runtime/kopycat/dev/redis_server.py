"""A real Redis server (Debian's ``redis-server``) on a free loopback port: the Celery broker.

Airflow's CeleryExecutor queues task workloads on a broker; Redis is the one Airflow's docs and
docker-compose use. This runs ``redis-server`` in a temp dir with no persistence (no RDB
snapshots, no AOF): a throwaway broker for tests and ``kopycat dev redis``. ``start()`` returns
once the server answers ``PING``.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

from kopycat.dev.ports import free_port
from kopycat.dev.processes import die_with_parent, stop_process_group
from kopycat.dev.service import LocalService

__all__ = ["LocalRedis", "RedisStartError"]


class RedisStartError(RuntimeError):
    """The server did not come up; the message carries its log (or says it is not installed)."""


class LocalRedis(LocalService):
    """One ``redis-server`` process owned by this object (context manager or start/stop). Not thread-safe."""

    def __init__(self, *, name: str = "redis", start_timeout_s: float = 60.0) -> None:
        self.name = name
        self.start_timeout_s = start_timeout_s
        self.port = 0
        self.workdir: Path | None = None
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """``redis://127.0.0.1:<port>/0``: Celery's ``broker_url`` (Airflow's ``[celery] broker_url``)."""
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        executable = shutil.which("redis-server")
        if executable is None:
            raise RedisStartError("no `redis-server` on PATH: run `make setup` (or apt-get install redis-server)")
        self.workdir = Path(tempfile.mkdtemp(prefix=f"kopycat-{self.name}-"))
        self.port = free_port()
        log = open(self.workdir / "server.log", "wb")  # noqa: SIM115 - owned by the process
        self._process = subprocess.Popen(
            [executable, "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.workdir),
             "--save", "", "--appendonly", "no", "--protected-mode", "no"],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
            preexec_fn=die_with_parent)  # noqa: PLW1509 - one prctl call, no locks taken
        deadline = time.monotonic() + self.start_timeout_s
        while not self.ping():
            if self._process.poll() is not None or time.monotonic() > deadline:
                raise RedisStartError(f"redis-server did not answer PING on port {self.port} "
                                      f"within {self.start_timeout_s:.0f} s:\n{self.log_tail()}")
            time.sleep(0.1)

    def ping(self) -> bool:
        """True when the server answers ``PING`` (RESP inline command) with ``+PONG``."""
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1) as sock:
                sock.sendall(b"PING\r\n")
                return sock.recv(64).startswith(b"+PONG")
        except OSError:
            return False

    def log_tail(self, lines: int = 40) -> str:
        log = self.workdir / "server.log" if self.workdir else None
        if log is None or not log.exists():
            return "(no log)"
        return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is not None:
            stop_process_group(process, timeout_s=10)
        if self.workdir is not None:
            shutil.rmtree(self.workdir, ignore_errors=True)
            self.workdir = None

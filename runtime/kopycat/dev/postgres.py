"""A real PostgreSQL server (Debian's `postgresql` package) in a temp dir on loopback.

initdb + pg_ctl on a free 127.0.0.1 port, trust auth, fsync off: a throwaway server for tests
and the demo, with ``wal_level=logical`` and room for replication slots, so change-data-capture
connectors (Kopycat's and Debezium's) can decode its WAL. PostgreSQL refuses to run as root, so
as root the server runs as the `postgres` user the Debian package creates (or `nobody`).
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
from pathlib import Path

from kopycat.dev.ports import free_port
from kopycat.dev.service import LocalService

SUPERUSER = "kopycat"


class PostgresStartError(RuntimeError):
    """The server did not come up; the message carries its log."""


def postgres_bin_dir() -> Path:
    """The newest installed PostgreSQL server's bin dir (Debian: /usr/lib/postgresql/N/bin)."""
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"),
                        key=lambda p: int(Path(p).parts[-3]) if Path(p).parts[-3].isdigit() else 0)
    if candidates:
        return Path(candidates[-1]).parent
    initdb = shutil.which("initdb")
    if initdb:
        return Path(initdb).resolve().parent
    raise PostgresStartError("no PostgreSQL server found (initdb): run `make setup` "
                             "(or apt-get install postgresql)")


def _run_as() -> str | None:
    """The unprivileged user to run the server as when we are root, else None."""
    if os.geteuid() != 0:
        return None
    for user in ("postgres", "nobody"):
        try:
            pwd.getpwnam(user)
            return user
        except KeyError:
            continue
    raise PostgresStartError("running as root and no unprivileged user (postgres, nobody) exists")


class LocalPostgres(LocalService):
    """One PostgreSQL server process owned by this object (context manager or start/stop)."""

    def __init__(self, *, name: str = "postgres") -> None:
        self.name = name
        self.port = 0
        self.workdir: Path | None = None
        self._user = _run_as()

    def url(self, database: str = "postgres") -> str:
        """A SQLAlchemy URL (psycopg 3 driver) for `database` on this server."""
        return f"postgresql+psycopg://{SUPERUSER}@127.0.0.1:{self.port}/{database}"

    def dsn(self, database: str = "postgres") -> str:
        """A libpq connection string for `database` on this server."""
        return f"host=127.0.0.1 port={self.port} user={SUPERUSER} dbname={database}"

    def _cmd(self, *args: str) -> list[str]:
        return ["runuser", "-u", self._user, "--", *args] if self._user else list(args)

    def start(self) -> None:
        bindir = postgres_bin_dir()
        self.workdir = Path(tempfile.mkdtemp(prefix=f"kopycat-{self.name}-"))
        if self._user:
            shutil.chown(self.workdir, user=self._user)
        data, log = self.workdir / "data", self.workdir / "server.log"
        self.port = free_port()
        self._check(self._cmd(str(bindir / "initdb"), "-D", str(data), "-U", SUPERUSER,
                              "--auth=trust", "-E", "UTF8", "--no-locale"), "initdb")
        options = (f"-p {self.port} -k {self.workdir} -c listen_addresses=127.0.0.1 "
                   "-c fsync=off -c synchronous_commit=off -c full_page_writes=off "
                   "-c wal_level=logical -c max_replication_slots=64 -c max_wal_senders=20")
        self._check(self._cmd(str(bindir / "pg_ctl"), "-D", str(data), "-o", options,
                              "-l", str(log), "-w", "-t", "60", "start"), "pg_ctl start")

    def _check(self, cmd: list[str], what: str) -> None:
        result = subprocess.run(cmd, capture_output=True, text=True, cwd=self.workdir)
        if result.returncode != 0:
            log = self.workdir / "server.log" if self.workdir else None
            tail = log.read_text(errors="replace")[-3000:] if log and log.exists() else ""
            raise PostgresStartError(f"{what} failed ({' '.join(cmd)}):\n"
                                     f"{result.stdout}{result.stderr}\n{tail}")

    def create_database(self, name: str) -> str:
        """Create an empty database and return its SQLAlchemy URL."""
        import psycopg

        with psycopg.connect(self.dsn(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def stop(self) -> None:
        if self.workdir is None:
            return
        data = self.workdir / "data"
        if (data / "postmaster.pid").exists():
            subprocess.run(self._cmd(str(postgres_bin_dir() / "pg_ctl"), "-D", str(data),
                                     "-m", "immediate", "-w", "stop"),
                           capture_output=True, cwd=self.workdir)
        shutil.rmtree(self.workdir, ignore_errors=True)
        self.workdir = None

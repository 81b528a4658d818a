"""A real Airflow 3 deployment for tests: api-server, scheduler and dag-processor with the LocalExecutor.

``dag.test()`` (LocalAirflow.run_dag) runs a DAG in one process and never sees what only a
scheduler does: backfills (``airflow backfill create`` only queues runs, the scheduler starts
them), dag-run types, task instances in their own processes talking to the execution API.
This starts the three processes Airflow 3 needs for that (as ``airflow standalone`` does, minus
the triggerer), each in a session of its own, so that stopping reaches the LocalExecutor's workers
and their task processes. The metadata DB is SQLite, which Airflow 3.3 runs with the LocalExecutor.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import sqlite3
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from contextlib import closing, suppress
from pathlib import Path
from typing import Any, TypeVar

from kopycat.dev.ports import free_port
from kopycat_airflow.local import LocalAirflow

__all__ = ["AirflowDeployment"]

T = TypeVar("T")


class AirflowDeployment:
    """Airflow on ``airflow``'s home, DAGs folder and environment, its processes' logs in that home.

    :param airflow: the home (migrated by :meth:`start`), DAGs folder and extra environment.
    :param parallelism: the LocalExecutor's task slots (each task is a process: mind the 2 cores).
    """

    def __init__(self, airflow: LocalAirflow, parallelism: int = 4) -> None:
        self.airflow = airflow
        self.api_port = free_port()
        self.env = {
            **airflow.environ(),
            "AIRFLOW__CORE__EXECUTOR": "LocalExecutor",
            "AIRFLOW__CORE__PARALLELISM": str(parallelism),
            "AIRFLOW__API__HOST": "127.0.0.1",
            "AIRFLOW__API__PORT": str(self.api_port),
            "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"http://127.0.0.1:{self.api_port}/execution/",
            "AIRFLOW__API_AUTH__JWT_SECRET": secrets.token_hex(32),  # one secret: tokens cross processes
            "AIRFLOW__LOGGING__WORKER_LOG_SERVER_PORT": str(free_port()),  # not 8793: tests run side by side
            # Four processes write one SQLite file: wait for its lock (sqlite3's default is 5 s, which the
            # backfill CLI overran on a loaded CI machine with "database is locked").
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{airflow.home / 'airflow.db'}?timeout=120",
        }
        self.processes: dict[str, subprocess.Popen[bytes]] = {}

    @property
    def db_path(self) -> Path:
        return self.airflow.home / "airflow.db"

    def start(self, timeout_s: float = 180) -> AirflowDeployment:
        """Migrate the DB, start the api-server, and once it answers the dag-processor and scheduler.

        The api-server comes first: a task the scheduler starts before the execution API answers fails.
        """
        self.airflow.migrate()
        self._spawn("api-server")
        self.wait_for(self._healthy, timeout_s, "the api-server's health endpoint")
        self._spawn("dag-processor")
        self._spawn("scheduler")
        return self

    def stop(self, grace_s: float = 20) -> None:
        """SIGTERM each process group, then SIGKILL whatever is left in their sessions.

        Sessions, not groups: the task SDK's supervisor puts each task runner in a process group
        of its own (supervisor.py, ``os.setpgid``), but it stays in the scheduler's session.
        """
        for process in self.processes.values():
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        deadline = time.monotonic() + grace_s
        for process in self.processes.values():
            with suppress(subprocess.TimeoutExpired):
                process.wait(timeout=max(0.1, deadline - time.monotonic()))
        for process in self.processes.values():
            for pid in _session_members(process.pid):
                with suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            process.wait(timeout=30)
        self.processes.clear()

    def __enter__(self) -> AirflowDeployment:
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def cli(self, *args: str, timeout_s: float = 120, attempts: int = 3) -> str:
        """``airflow <args>`` against this deployment's DB; its stdout (raises with stderr on failure).

        SQLite answers "database is locked" at once, whatever its busy timeout, when a read
        transaction must become a write while the scheduler writes; the command's transaction was
        rolled back, so it is run again (up to ``attempts`` times).
        """
        for _ in range(attempts):
            done = subprocess.run([sys.executable, "-m", "airflow", *args], env=self.env, capture_output=True,
                                  text=True, timeout=timeout_s)
            if done.returncode == 0 or "database is locked" not in done.stdout + done.stderr:
                break
            time.sleep(1)
        if done.returncode != 0:
            raise RuntimeError(f"airflow {' '.join(args)} failed (exit {done.returncode}):\n"
                               f"{done.stdout[-2000:]}\n{done.stderr[-3000:]}")
        return done.stdout

    def dag_runs(self, dag_id: str) -> list[dict[str, Any]]:
        """The DAG's runs from the metadata DB: run_id, run_type, state, logical_date, backfill_id."""
        return self._query("SELECT run_id, run_type, state, logical_date, data_interval_start, data_interval_end,"
                           " backfill_id FROM dag_run WHERE dag_id = ? ORDER BY logical_date", (dag_id,))

    def task_instances(self, dag_id: str, run_id: str) -> list[dict[str, Any]]:
        return self._query("SELECT task_id, map_index, state, try_number FROM task_instance"
                           " WHERE dag_id = ? AND run_id = ? ORDER BY task_id, map_index", (dag_id, run_id))

    def wait_for(self, probe: Callable[[], T | None], timeout_s: float, what: str) -> T:
        """``probe()``'s first truthy answer, polled every second; fails with the processes' log tails
        on timeout or as soon as one of them has exited."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            dead = [name for name, process in self.processes.items() if process.poll() is not None]
            if dead:
                raise RuntimeError(f"airflow {', '.join(dead)} exited while waiting for {what}\n{self._tails()}")
            answer = probe()
            if answer:
                return answer
            time.sleep(1)
        raise TimeoutError(f"no {what} within {timeout_s:.0f} s\n{self._tails()}")

    def _spawn(self, name: str) -> None:
        log = self.airflow.home / f"{name}.log"
        with log.open("ab") as out:
            self.processes[name] = subprocess.Popen([sys.executable, "-m", "airflow", name], env=self.env,
                                                    stdout=out, stderr=subprocess.STDOUT, start_new_session=True)

    def _healthy(self) -> bool:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.api_port}/api/v2/monitor/health", timeout=2) as r:
                return json.load(r)["metadatabase"]["status"] == "healthy"
        except OSError:
            return False

    def _query(self, sql: str, params: tuple[Any, ...]) -> list[dict[str, Any]]:
        with closing(sqlite3.connect(f"file:{self.db_path}?mode=ro", uri=True, timeout=30)) as db:
            db.row_factory = sqlite3.Row
            return [dict(row) for row in db.execute(sql, params)]

    def _tails(self, lines: int = 15) -> str:
        tails = []
        for name in self.processes:
            log = self.airflow.home / f"{name}.log"
            text = log.read_text(errors="replace").splitlines()[-lines:] if log.exists() else []
            tails.append(f"--- {log}\n" + "\n".join(text))
        return "\n".join(tails)


def _session_members(session_id: int) -> list[int]:
    """The pids of the processes still in session ``session_id`` (its leader included), from /proc."""
    members = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()  # after "pid (comm)": state ppid pgrp session
        except OSError:
            continue
        if int(fields[3]) == session_id and fields[0] != "Z":
            members.append(int(stat.parent.name))
    return members

"""A real Airflow 3 deployment for tests: api-server, scheduler and dag-processor as processes.

``dag.test()`` (LocalAirflow.run_dag) runs a DAG in one process and never sees what only a
scheduler does: backfills (``airflow backfill create`` only queues runs, the scheduler starts
them), dag-run types, task instances in their own processes talking to the execution API.
:class:`AirflowProcesses` starts the three processes Airflow 3 needs for that (as ``airflow standalone``
does, minus the triggerer), each in a session of its own, so that stopping reaches the executor's
workers and their task processes; a deployment names its executor and metadata DB.
:class:`AirflowDeployment` is the LocalExecutor on SQLite, which Airflow 3.3 runs;
``tests/support/celery_deployment.py`` adds Celery workers on PostgreSQL and Redis.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import sys
import time
import urllib.request
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from contextlib import suppress
from pathlib import Path
from typing import Any, Self, TypeVar

import sqlalchemy as sa

from kopycat.dev.ports import free_port
from kopycat_airflow.local import LocalAirflow

__all__ = ["AirflowDeployment", "AirflowProcesses"]

T = TypeVar("T")


class AirflowProcesses(ABC):
    """Airflow on ``airflow``'s home, DAGs folder and environment plus ``env`` (the executor and the
    metadata DB), its processes' logs in that home.

    Subclasses name where the metadata DB is read (:attr:`metadata_url`) and may start more
    processes once the scheduler runs (:meth:`start_workers`, with :meth:`spawn`).
    """

    def __init__(self, airflow: LocalAirflow, env: Mapping[str, str]) -> None:
        self.airflow = airflow.with_dags(airflow.dags_folder, env)  # `airflow db migrate` sees the same DB
        self.api_port = free_port()
        self.env = {
            **self.airflow.environ(),
            "AIRFLOW__API__HOST": "127.0.0.1",
            "AIRFLOW__API__PORT": str(self.api_port),
            "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"http://127.0.0.1:{self.api_port}/execution/",
            "AIRFLOW__API_AUTH__JWT_SECRET": secrets.token_hex(32),  # one secret: tokens cross processes
            "AIRFLOW__LOGGING__WORKER_LOG_SERVER_PORT": str(free_port()),  # not 8793: tests run side by side
        }
        self.processes: dict[str, subprocess.Popen[bytes]] = {}
        self._engine: sa.Engine | None = None

    @property
    @abstractmethod
    def metadata_url(self) -> str:
        """A SQLAlchemy URL the test reads the metadata DB with (read-only where the DB allows)."""

    def start_workers(self) -> None:  # noqa: B027 - a hook whose default is to do nothing
        """Hook: start the executor's own processes once the scheduler runs. Default: none (the
        LocalExecutor's workers are the scheduler's children)."""

    def start(self, timeout_s: float = 180) -> Self:
        """Migrate the DB, start the api-server, and once it answers the dag-processor, scheduler and workers.

        The api-server comes first: a task the scheduler starts before the execution API answers fails.
        """
        self.airflow.migrate()
        self.start_api_server(timeout_s)
        self.spawn("dag-processor", ["dag-processor"])
        self.spawn("scheduler", ["scheduler"])
        self.start_workers()
        return self

    def start_api_server(self, timeout_s: float = 180) -> Self:
        """Start the api-server alone (on a migrated DB) and wait until it answers: enough for tests of
        what it serves (the UI, plugins' apps) over runs made elsewhere, e.g. by ``dag.test()``."""
        self.spawn("api-server", ["api-server"])
        self.wait_for(self._healthy, timeout_s, "the api-server's health endpoint")
        return self

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self.api_port}"

    def stop(self, grace_s: float = 20) -> None:
        """SIGTERM each process group, then SIGKILL whatever is left in their sessions.

        Sessions, not groups: the task SDK's supervisor puts each task runner in a process group
        of its own (supervisor.py, ``os.setpgid``), but it stays in its executor's session (the
        scheduler's for the LocalExecutor, a Celery worker's for the CeleryExecutor).
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
        if self._engine is not None:
            self._engine.dispose()
            self._engine = None

    def __enter__(self) -> Self:
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
        return self.query("SELECT run_id, run_type, state, logical_date, data_interval_start, data_interval_end,"
                          " backfill_id FROM dag_run WHERE dag_id = :dag_id ORDER BY logical_date", dag_id=dag_id)

    def task_instances(self, dag_id: str, run_id: str) -> list[dict[str, Any]]:
        """The run's task instances: task_id, map_index, state, try_number, and where the last try ran
        (hostname, pid)."""
        return self.query("SELECT task_id, map_index, state, try_number, hostname, pid FROM task_instance"
                          " WHERE dag_id = :dag_id AND run_id = :run_id ORDER BY task_id, map_index",
                          dag_id=dag_id, run_id=run_id)

    def run_report(self, dag_id: str, run_id: str, lines: int = 40) -> str:
        """The run's task instances and the log tail of each failed try: what a failed assertion prints."""
        tasks = self.task_instances(dag_id, run_id)
        report = [f"{t['task_id']}[{t['map_index']}] {t['state']} try {t['try_number']}" for t in tasks]
        run_logs = self.airflow.home / "logs" / f"dag_id={dag_id}" / f"run_id={run_id}"
        for task in (t for t in tasks if t["state"] == "failed"):
            for log in sorted((run_logs / f"task_id={task['task_id']}").rglob("attempt=*.log")):
                report.append(f"--- {log}\n" + "\n".join(log.read_text(errors="replace").splitlines()[-lines:]))
        return "\n".join(report)

    def query(self, sql: str, **params: Any) -> list[dict[str, Any]]:
        """Rows of ``sql`` (``:name`` parameters) on the metadata DB, as dicts."""
        if self._engine is None:
            self._engine = sa.create_engine(self.metadata_url, poolclass=sa.pool.NullPool)
        with self._engine.connect() as db:
            return [dict(row._mapping) for row in db.execute(sa.text(sql), params)]

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

    def spawn(self, name: str, args: list[str], env: Mapping[str, str] | None = None) -> None:
        """Start ``airflow <args>`` as process ``name`` in a session of its own, with ``env`` added to the
        deployment's; its output goes to ``<home>/<name>.log``."""
        log = self.airflow.home / f"{name}.log"
        with log.open("ab") as out:
            self.processes[name] = subprocess.Popen([sys.executable, "-m", "airflow", *args],
                                                    env={**self.env, **(env or {})}, stdout=out,
                                                    stderr=subprocess.STDOUT, start_new_session=True)

    def _healthy(self) -> bool:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.api_port}/api/v2/monitor/health", timeout=2) as r:
                return json.load(r)["metadatabase"]["status"] == "healthy"
        except OSError:
            return False

    def _tails(self, lines: int = 15) -> str:
        tails = []
        for name in self.processes:
            log = self.airflow.home / f"{name}.log"
            text = log.read_text(errors="replace").splitlines()[-lines:] if log.exists() else []
            tails.append(f"--- {log}\n" + "\n".join(text))
        return "\n".join(tails)


class AirflowDeployment(AirflowProcesses):
    """The LocalExecutor on a SQLite metadata DB in the home.

    :param airflow: the home (migrated by :meth:`start`), DAGs folder and extra environment.
    :param parallelism: the LocalExecutor's task slots (each task is a process: mind the 2 cores).
    """

    def __init__(self, airflow: LocalAirflow, parallelism: int = 4) -> None:
        super().__init__(airflow, {
            "AIRFLOW__CORE__EXECUTOR": "LocalExecutor",
            "AIRFLOW__CORE__PARALLELISM": str(parallelism),
            # Four processes write one SQLite file: wait for its lock (sqlite3's default is 5 s, which the
            # backfill CLI overran on a loaded CI machine with "database is locked").
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{airflow.home / 'airflow.db'}?timeout=120",
        })

    @property
    def db_path(self) -> Path:
        return self.airflow.home / "airflow.db"

    @property
    def metadata_url(self) -> str:
        """Read-only: the test's reads never take SQLite's write lock from the scheduler."""
        return f"sqlite:///file:{self.db_path}?mode=ro&uri=true&timeout=30"


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

"""A throwaway Airflow for the demo and the tests: its own home, metadata DB and DAGs folder.

Each DAG run is ``dag.test()`` in a child process (``python -m kopycat_airflow.dag_test``), as
``airflow dags test`` does: Airflow reads its configuration once per process from the
environment, so a child gets exactly this Airflow's. ``serve()`` keeps one child for many runs,
which saves Airflow's 15-30 s start per run. Imports nothing from Airflow itself.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

__all__ = ["DagRunResult", "DagTestServer", "LocalAirflow"]


class DagRunResult(dict[str, Any]):
    """What ``dag_test`` printed: ``state`` and ``tasks`` (task_id, map_index, label, state, result)."""

    def tasks(self, task_id: str) -> list[dict[str, Any]]:
        """The task instances of ``task_id`` (a suffix match, so task group prefixes may be left out)."""
        return [t for t in self["tasks"] if t["task_id"] == task_id or t["task_id"].endswith("." + task_id)]

    def results(self, task_id: str) -> list[Any]:
        return [t["result"] for t in self.tasks(task_id)]


class LocalAirflow:
    """Airflow with its home in ``home`` and DAGs from ``dags_folder``; ``env`` adds variables.

    :param home: AIRFLOW_HOME (created; holds airflow.db and the logs).
    :param dags_folder: the DAGs folder (the repo's ``dags/`` or a test's own).
    :param env: more environment, e.g. ``KOPYCAT_BOOTSTRAP_SERVERS`` or ``AIRFLOW_CONN_*``.
    """

    def __init__(self, home: Path, dags_folder: Path, env: Mapping[str, str] | None = None,
                 server: DagTestServer | None = None) -> None:
        self.home = Path(home)
        self.dags_folder = Path(dags_folder)
        self.extra_env = dict(env or {})
        self.server = server
        self.runs = 0

    def with_dags(self, dags_folder: Path, env: Mapping[str, str] | None = None) -> LocalAirflow:
        """This Airflow (its home, its server) with another DAGs folder and more environment."""
        return LocalAirflow(self.home, dags_folder, {**self.extra_env, **(env or {})}, self.server)

    @contextmanager
    def serve(self) -> Iterator[LocalAirflow]:
        """This Airflow with its runs answered by one ``dag_test --serve`` process, stopped on exit."""
        server = DagTestServer(self.environ(), self.home / "dag-test-server.log")
        try:
            yield LocalAirflow(self.home, self.dags_folder, self.extra_env, server)
        finally:
            server.close()

    def environ(self) -> dict[str, str]:
        source_roots = [str(Path(p).resolve()) for p in sys.path if p and Path(p).is_dir()]
        return {
            **os.environ,
            "AIRFLOW_HOME": str(self.home),
            "AIRFLOW__CORE__DAGS_FOLDER": str(self.dags_folder),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__CORE__DAGBAG_IMPORT_TIMEOUT": "120",
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{self.home / 'airflow.db'}",
            "PYTHONPATH": os.pathsep.join(source_roots),
            **self.extra_env,
        }

    def migrate(self, timeout_s: float = 900) -> None:
        """Create the metadata DB (``airflow db migrate``); about a minute."""
        self.home.mkdir(parents=True, exist_ok=True)
        self._check(subprocess.run([sys.executable, "-m", "airflow", "db", "migrate"], env=self.environ(),
                                   capture_output=True, text=True, timeout=timeout_s), "airflow db migrate")

    def run_dag(self, dag_id: str, logical_date: str | None = None, conf: Mapping[str, Any] | None = None,
                timeout_s: float = 1_200) -> DagRunResult:
        """One DAG run through ``dag.test()``; its log goes to ``<home>/dag-test-<n>-<dag_id>.log``."""
        self.runs += 1
        log = self.home / f"dag-test-{self.runs}-{dag_id}.log"
        if self.server is not None:
            return self.server.run({"dag_id": dag_id, "logical_date": logical_date, "conf": dict(conf or {}) or None,
                                    "dags_folder": str(self.dags_folder), "env": self.extra_env}, log, timeout_s)
        args = [sys.executable, "-m", "kopycat_airflow.dag_test", dag_id]
        if logical_date:
            args += ["--logical-date", logical_date]
        if conf:
            args += ["--conf", json.dumps(dict(conf))]
        with log.open("w") as out:
            done = subprocess.run(args, env=self.environ(), stdout=subprocess.PIPE, stderr=out, text=True,
                                  timeout=timeout_s)
        out_text = done.stdout.strip()
        with log.open("a") as out:
            out.write(out_text)
        last = out_text.splitlines()[-1] if out_text else ""
        if not last.startswith("{"):
            raise RuntimeError(f"dag.test of {dag_id} printed no result (exit {done.returncode}); see {log}")
        return DagRunResult(json.loads(last), log=str(log))

    @staticmethod
    def _check(done: subprocess.CompletedProcess[str], what: str) -> None:
        if done.returncode != 0:
            raise RuntimeError(f"{what} failed (exit {done.returncode}): {done.stderr[-2000:]}")


class DagTestServer:
    """One ``python -m kopycat_airflow.dag_test --serve`` child: DAG runs on request, one at a time.

    Requests go to its stdin, answers come back on a pipe of their own (tasks print to stdout);
    its stdout and stderr go to ``log``, and each run's share is copied to that run's log. The
    child starts at the first run; a run that times out kills it (the next run starts another),
    so one hung run fails one test, not the session.
    """

    def __init__(self, environ: Mapping[str, str], log: Path) -> None:
        self.environ, self.log = dict(environ), Path(log)
        self.process: subprocess.Popen[str] | None = None
        self.answers: IO[str] | None = None

    def run(self, request: Mapping[str, Any], run_log: Path, timeout_s: float) -> DagRunResult:
        process, answers = self._started()
        start = self.log.stat().st_size
        assert process.stdin is not None
        process.stdin.write(json.dumps(dict(request)) + "\n")
        process.stdin.flush()
        try:
            answer = self._answer(answers, timeout_s)
        finally:
            with self.log.open("rb") as whole, run_log.open("wb") as part:
                whole.seek(start)
                part.write(whole.read())
        if "error" in answer:
            raise RuntimeError(f"dag.test of {request['dag_id']} failed: {answer['error']}; see {run_log}")
        return DagRunResult(answer, log=str(run_log))

    def close(self) -> None:
        if self.process is not None:
            assert self.process.stdin is not None
            self.process.stdin.close()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self._kill()
        self._forget()

    def _started(self) -> tuple[subprocess.Popen[str], IO[str]]:
        if self.process is None or self.process.poll() is not None:
            self._forget()
            read, write = os.pipe()
            self.log.parent.mkdir(parents=True, exist_ok=True)
            with self.log.open("a") as out:
                self.process = subprocess.Popen(
                    [sys.executable, "-m", "kopycat_airflow.dag_test", "--serve", "--result-fd", str(write)],
                    env=self.environ, stdin=subprocess.PIPE, stdout=out, stderr=subprocess.STDOUT, text=True,
                    pass_fds=(write,), start_new_session=True)
            os.close(write)
            self.answers = os.fdopen(read, "r")
        assert self.process is not None and self.answers is not None
        return self.process, self.answers

    def _answer(self, answers: IO[str], timeout_s: float) -> dict[str, Any]:
        ready, _, _ = select.select([answers], [], [], timeout_s)
        if not ready:
            self._kill()
            raise TimeoutError(f"dag.test gave no answer within {timeout_s:.0f} s; the server was stopped")
        line = answers.readline()
        if not line:
            code = self.process.wait() if self.process is not None else None
            self._forget()
            raise RuntimeError(f"the dag.test server exited (code {code}) during the run")
        return json.loads(line)

    def _kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
        self._forget()

    def _forget(self) -> None:
        if self.answers is not None:
            self.answers.close()
        self.process, self.answers = None, None

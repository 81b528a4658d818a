"""A throwaway Airflow for the demo and the tests: its own home, metadata DB and DAGs folder.

Each DAG run is ``dag.test()`` in a child process (``python -m kopycat_airflow.dag_test``), as
``airflow dags test`` does: Airflow reads its configuration once per process from the
environment, so a child gets exactly this Airflow's. Imports nothing from Airflow itself.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["DagRunResult", "LocalAirflow"]


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

    def __init__(self, home: Path, dags_folder: Path, env: Mapping[str, str] | None = None) -> None:
        self.home = Path(home)
        self.dags_folder = Path(dags_folder)
        self.extra_env = dict(env or {})
        self.runs = 0

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
        """One DAG run through ``dag.test()``; its log goes to ``<home>/dag-test-<n>.log``."""
        self.runs += 1
        args = [sys.executable, "-m", "kopycat_airflow.dag_test", dag_id]
        if logical_date:
            args += ["--logical-date", logical_date]
        if conf:
            args += ["--conf", json.dumps(dict(conf))]
        log = self.home / f"dag-test-{self.runs}-{dag_id}.log"
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

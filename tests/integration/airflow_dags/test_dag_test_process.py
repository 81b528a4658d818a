"""``python -m kopycat_airflow.dag_test`` as its own process, as the demo and the benches run it.

The process ends without the interpreter's teardown (``exit_without_teardown``), which must not
cost the run anything: its result line is on stdout in full, and Airflow's and the DAG's exit
handlers still ran.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from kopycat_airflow.local import LocalAirflow

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

DAG_FILE = '''
import atexit
import pathlib
import pendulum
from airflow.sdk import DAG, task

atexit.register(pathlib.Path({marker!r}).write_text, "exit handlers ran")

with DAG("t_process", schedule=None, start_date=pendulum.datetime(2026, 1, 1, tz="UTC")):
    @task
    def rows():
        return [{{"id": n, "label": "x" * 100}} for n in range(2_000)]
    rows()
'''


def test_a_dag_test_process_prints_its_whole_result_and_runs_the_exit_handlers(
        local_airflow: LocalAirflow, tmp_path: Path) -> None:
    marker = tmp_path / "exit-marker"
    (local_airflow.dags_folder / "process.py").write_text(DAG_FILE.format(marker=str(marker)))
    # No server: a process of its own. Buffered stdout, as outside this sandbox (PYTHONUNBUFFERED is set here).
    fresh = LocalAirflow(local_airflow.home, local_airflow.dags_folder,
                         {**local_airflow.extra_env, "PYTHONUNBUFFERED": ""})
    result = fresh.run_dag("t_process")
    assert result["state"] == "success"
    [rows] = result.results("rows")
    assert [row["id"] for row in rows] == list(range(2_000))  # a ~250 KB result line, read whole
    assert marker.read_text() == "exit handlers ran"

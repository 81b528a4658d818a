"""The session's dag.test server: each run sees only its own DAGs folder and environment.

Every DAG test shares one served Airflow process, so a leak between runs (a DAGs folder, an
``AIRFLOW_CONN_*`` variable) would make tests pass or fail by their order; these prove there is none.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kopycat_airflow.local import LocalAirflow

pytestmark = [pytest.mark.integration, pytest.mark.timeout(1200)]

DAG_FILE = '''
import os
import pendulum
from airflow.sdk import DAG, task

with DAG("t_served", schedule=None, start_date=pendulum.datetime(2026, 1, 1, tz="UTC")):
    @task
    def report():
        return {{"folder": {folder!r}, "probe": os.environ.get("KOPYCAT_TEST_PROBE")}}
    report()
'''


def _folder(root: Path, name: str) -> Path:
    folder = root / name
    folder.mkdir()
    (folder / "served.py").write_text(DAG_FILE.format(folder=name))
    return folder


def test_runs_see_their_own_dags_folder_and_environment_and_a_failed_run_leaves_the_server_serving(
        local_airflow: LocalAirflow, tmp_path: Path) -> None:
    first = local_airflow.with_dags(_folder(tmp_path, "first"), {"KOPYCAT_TEST_PROBE": "one"})
    second = local_airflow.with_dags(_folder(tmp_path, "second"))

    assert first.run_dag("t_served").results("report") == [{"folder": "first", "probe": "one"}]
    assert second.run_dag("t_served").results("report") == [{"folder": "second", "probe": None}]

    with pytest.raises(RuntimeError, match="DAG t_missing not found"):
        second.run_dag("t_missing")
    assert first.run_dag("t_served").results("report") == [{"folder": "first", "probe": "one"}]

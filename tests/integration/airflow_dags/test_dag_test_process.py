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


ROUTES_OF_BOTH_APPS = '''
import json
from airflow.api_fastapi.execution_api.app import InProcessExecutionAPI
from airflow.sdk.api.datamodels._generated import API_VERSION
from kopycat_airflow.dag_test import serve_only_the_task_sdk_api_version

def routes(app):
    app._cadwyn_initialize()
    def name(model):
        return None if model is None else getattr(model, "__name__", repr(model))
    return sorted([route.path, sorted(route.methods or ()), route.endpoint.__qualname__,
                   name(getattr(route, "response_model", None)),
                   name(route.body_field.field_info.annotation) if getattr(route, "body_field", None) else None]
                  for route in app.router.versioned_routers[API_VERSION].routes)

full = routes(InProcessExecutionAPI().app)
patched = serve_only_the_task_sdk_api_version()
one = InProcessExecutionAPI().app
print(json.dumps({"patched": patched, "full": full, "one": routes(one),
                  "versions": sorted(one.router.versioned_routers)}))
'''


def test_the_in_process_api_serves_the_task_sdks_version_with_the_routes_airflow_gives_it(
        local_airflow: LocalAirflow) -> None:
    """``dag_test`` builds the in-process execution API for the Task SDK's API version alone (5 s
    less a process): that version's routes, endpoints and models must be those of Airflow's app."""
    import json
    import subprocess
    import sys

    from airflow.sdk.api.datamodels._generated import API_VERSION

    done = subprocess.run([sys.executable, "-c", ROUTES_OF_BOTH_APPS], env=local_airflow.environ(),
                          capture_output=True, text=True, timeout=300, check=True)
    found = json.loads(done.stdout.splitlines()[-1])
    assert found["patched"] is True
    assert found["versions"] == [API_VERSION]
    assert len(found["full"]) > 40
    assert found["one"] == found["full"]

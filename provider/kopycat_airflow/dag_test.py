"""Run DAG runs with ``dag.test()`` and report what they did as JSON: the demo's and tests' driver.

``python -m kopycat_airflow.dag_test <dag_id> [--logical-date ISO] [--conf JSON]`` with Airflow's
environment set (``AIRFLOW_HOME``, ``AIRFLOW__CORE__DAGS_FOLDER``; the metadata DB migrated).
The last stdout line is ``{"state", "tasks": [{"task_id", "map_index", "label", "state",
"try_number", "result", "rendered"}]}``: results are the XCom return values (run summaries, the plan),
``rendered`` the template fields as the UI's "Rendered Template" view shows them (secrets masked). Runs
in its own process because Airflow configures itself once per process from the environment.

``python -m kopycat_airflow.dag_test --serve --result-fd N`` runs many: one request per stdin line
(``{"dag_id", "logical_date", "conf", "dags_folder", "env"}``), one answer per line on fd ``N``
(a run as above, or ``{"error"}``). Importing and configuring Airflow and its in-process
execution API costs 4-6 s a process here, more than most test runs take, so the tests pay it once
per session (``LocalAirflow.serve``).
``env`` holds only what Airflow reads at each use (``AIRFLOW_CONN_*``, the DAG files' own
variables), and is undone after the run.
"""

from __future__ import annotations

import argparse
import atexit
import gc
import json
import os
import sys
import traceback
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, NoReturn, TextIO

__all__ = ["main", "run_dag", "serve"]


def run_dag(dag_id: str, logical_date: str | None = None, conf: dict[str, Any] | None = None) -> dict[str, Any]:
    """Parse the DAGs folder, run ``dag_id`` once, return the run's task states and results."""
    import pendulum
    from airflow import settings
    from airflow.dag_processing.dagbag import DagBag
    from airflow.models.renderedtifields import RenderedTaskInstanceFields
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session

    bag = DagBag(dag_folder=settings.DAGS_FOLDER)
    if dag_id not in bag.dags:
        errors = "; ".join(f"{path}: {err.splitlines()[-1]}" for path, err in bag.import_errors.items())
        raise SystemExit(f"DAG {dag_id} not found in {bag.dag_folder}"
                         + (f" (import errors: {errors})" if errors else ""))
    dag = bag.dags[dag_id]
    date = pendulum.parse(logical_date) if logical_date else pendulum.now("UTC")
    serve_only_the_task_sdk_api_version()
    initialize_stats()
    freeze_startup_objects()
    run = dag.test(logical_date=date, run_conf=conf)
    tasks = []
    with create_session() as session:
        for ti in sorted(run.get_task_instances(session=session), key=lambda t: (t.task_id, t.map_index)):
            result = session.scalars(XComModel.get_many(
                run_id=run.run_id, key="return_value", dag_ids=dag_id, task_ids=ti.task_id,
                map_indexes=ti.map_index)).first()
            tasks.append({"task_id": ti.task_id, "map_index": ti.map_index, "label": ti.rendered_map_index,
                          "state": _text(ti.state), "try_number": ti.try_number,
                          "result": _json(result.value) if result is not None else None,
                          "rendered": _json(RenderedTaskInstanceFields.get_templated_fields(ti, session=session))})
    return {"dag_id": dag_id, "run_id": run.run_id, "state": _text(run.state),
            "data_interval": [str(run.data_interval_start), str(run.data_interval_end)], "tasks": tasks}


def initialize_stats() -> None:
    """Set up Airflow's ``Stats`` from ``[metrics]`` as a task runner process does before its task
    (``dag.test`` runs tasks in this process, which no runner initialized): tasks' metrics reach
    the configured StatsD/Datadog/OpenTelemetry backend, read anew for each run's environment."""
    from airflow.sdk.configuration import conf
    from airflow.sdk.observability import stats
    from airflow.sdk.observability.metrics import stats_utils

    stats.initialize(factory=stats_utils.get_stats_factory(),
                     export_legacy_names=conf.getboolean("metrics", "legacy_names_on"))


def serve_only_the_task_sdk_api_version() -> bool:
    """Make ``dag.test()``'s in-process execution API serve only the version this Task SDK speaks.

    ``dag.test()`` runs each task against an in-process copy of the execution API server, and Cadwyn
    builds that app's routes for every API version Airflow still serves on its first request:
    seconds of every ``dag_test`` process, more than a large import's whole orchestration cost
    otherwise. The in-process client sends one version, the installed Task SDK's ``API_VERSION``,
    the newest one when the SDK and the API come from the same Airflow; its routes are the head
    routes, the same with or without the older versions. So the app gets a bundle of that version
    alone, and loses the routes that exist only in older versions (Cadwyn refuses a route marked so
    that no version restores). Where any of this does not hold (an older SDK, head-only version
    changes, a Cadwyn without the marker) nothing is changed. Returns whether the in-process API now
    serves one version.
    """
    from airflow.api_fastapi.execution_api import app as execution_app
    from airflow.api_fastapi.execution_api import versions
    from airflow.sdk.api.datamodels._generated import API_VERSION
    from cadwyn import HeadVersion, Version, VersionBundle, route_generation

    bundle, deleted_tag = versions.bundle, getattr(route_generation, "_DELETED_ROUTE_TAG", None)
    if (deleted_tag is None or not bundle.versions or bundle.versions[0].value != API_VERSION
            or bundle.head_version.changes):
        return False
    create_app = execution_app.create_task_execution_api_app
    if getattr(create_app, "serves_one_version", False):
        return True

    def create_one_version_app(*args: Any, **kwargs: Any) -> Any:
        versions.bundle = VersionBundle(HeadVersion(), Version(API_VERSION))
        try:
            app = create_app(*args, **kwargs)
        finally:
            versions.bundle = bundle
        router = app._latest_version_router
        router.routes = [route for route in router.routes if deleted_tag not in (getattr(route, "tags", None) or ())]
        return app

    create_one_version_app.serves_one_version = True  # type: ignore[attr-defined]
    execution_app.create_task_execution_api_app = create_one_version_app
    return True


def freeze_startup_objects() -> None:
    """End a collection pause begun at the process's start: freeze what is alive, then resume collection.

    Importing Airflow and parsing the DAGs leaves hundreds of thousands of objects, and every full
    collection on the way would walk all of them again, most of the process's collection time. With
    collection paused until the DAG is parsed, :func:`gc.freeze` moves them all out of the run's
    collections, as Python's docs advise before a fork. No collection first: it would walk them all
    to free a small fraction (a few MB kept for the process's short life). Does nothing where
    collection was not paused (a served run).
    """
    if gc.isenabled():
        return
    gc.freeze()
    gc.enable()


def serve(requests: Iterable[str], answers: TextIO) -> None:
    """Answer each run request line with one JSON line; a failed run is an answer, not an exit."""
    for line in requests:
        if not line.strip():
            continue
        request = json.loads(line)
        try:
            with _run_environment(request.get("env") or {}, request["dags_folder"]):
                answer = run_dag(request["dag_id"], request.get("logical_date"), request.get("conf"))
        except (Exception, SystemExit) as exc:  # run_dag exits when the DAG is missing; serve on
            traceback.print_exc()
            answer = {"error": f"{type(exc).__name__}: {exc}"}
        answers.write(json.dumps(answer, default=str) + "\n")
        answers.flush()


@contextmanager
def _run_environment(env: Mapping[str, str], dags_folder: str) -> Iterator[None]:
    """``env`` and ``dags_folder`` for one run, restored after it.

    ``settings.DAGS_FOLDER`` is what ``dag.test()``'s bundle sync walks; Airflow reads it from the
    environment only at import, so it is set directly.
    """
    from airflow import settings
    from airflow.configuration import conf

    saved_env, saved_folder = dict(os.environ), settings.DAGS_FOLDER
    os.environ.update({**env, "AIRFLOW__CORE__DAGS_FOLDER": dags_folder})
    conf.set("core", "dags_folder", dags_folder)
    settings.DAGS_FOLDER = dags_folder
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved_env)
        conf.set("core", "dags_folder", saved_folder)
        settings.DAGS_FOLDER = saved_folder


def _text(state: Any) -> str | None:
    """A state enum (or the plain string Airflow sometimes hands back) as its value."""
    return None if state is None else str(getattr(state, "value", state))


def _json(value: Any) -> Any:
    if isinstance(value, str | bytes):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kopycat_airflow.dag_test", description=__doc__)
    parser.add_argument("dag_id", nargs="?")
    parser.add_argument("--logical-date", help="ISO date-time of the run (default: now)")
    parser.add_argument("--conf", help="dag_run.conf as JSON, e.g. '{\"kopycat_window\": true}'")
    parser.add_argument("--serve", action="store_true", help="run the requests read from stdin, one per line")
    parser.add_argument("--result-fd", type=int, default=1, help="with --serve: the fd answers go to")
    args = parser.parse_args(argv)
    if args.serve:
        with os.fdopen(args.result_fd, "w", closefd=args.result_fd != 1) as answers:
            serve(sys.stdin, answers)
        return 0
    if not args.dag_id:
        parser.error("dag_id is required (or --serve)")
    gc.disable()  # until the DAG is parsed: freeze_startup_objects
    result = run_dag(args.dag_id, args.logical_date, json.loads(args.conf) if args.conf else None)
    sys.stdout.write(json.dumps(result, default=str) + "\n")
    return 0 if result["state"] == "success" else 1


def exit_without_teardown(code: int) -> NoReturn:
    """Run the exit handlers, flush, and end the process without the interpreter's teardown.

    Airflow, pydantic and the execution API's generated models leave millions of objects, and
    freeing them one by one at exit takes seconds of every run; nothing in that teardown writes
    anything the run still needs. Exit handlers (Airflow's ORM disposal, logging's flush) still run.
    """
    sys.stdout.flush()
    sys.stderr.flush()
    atexit._run_exitfuncs()
    os._exit(code)


if __name__ == "__main__":
    exit_without_teardown(main())

"""Calls Airflow's API server with the Kopycat plugin mounted; run by test_airflow_plugin.py.

Runs in a child process with the test's Airflow environment (Airflow configures itself once per
process). Arguments: the connector's name, its DAG's id and a file to write one JSON object to:
the HTTP answers and the DAG's state (paused flag, task instance states) after each call. A file,
not stdout: the stores log to stdout as they stop. With ``figures <name> <config JSON> <file>``:
the connector is stored, ``/kopycat/metrics`` (the page's figures) read, and the connector deleted.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from fastapi.testclient import TestClient


def dag_state(dag_id: str) -> dict[str, Any]:
    from airflow.models.dag import DagModel
    from airflow.models.dagrun import DagRun
    from airflow.utils.session import create_session
    from sqlalchemy import select

    with create_session() as session:
        paused = session.scalar(select(DagModel.is_paused).where(DagModel.dag_id == dag_id))
        run = session.scalars(select(DagRun).where(DagRun.dag_id == dag_id).order_by(DagRun.id.desc())).first()
        tis = {f"{ti.task_id}[{ti.map_index}]": None if ti.state is None else str(getattr(ti.state, "value", ti.state))
               for ti in run.get_task_instances(session=session)} if run else {}
        return {"paused": paused, "run_state": str(getattr(run.state, "value", run.state)) if run else None,
                "tis": tis}


def api_server_app() -> Any:
    """Airflow's API server app with what the plugin needs: auth manager and plugins (not every view)."""
    from airflow.api_fastapi.app import init_auth_manager, init_plugins
    from fastapi import FastAPI

    app = FastAPI()
    init_plugins(app)
    init_auth_manager(app)
    return app


def main(name: str, dag_id: str) -> dict[str, Any]:
    from airflow import plugins_manager
    from airflow.api_fastapi.app import get_auth_manager
    from airflow.api_fastapi.auth.managers.simple.user import SimpleAuthManagerUser

    client = TestClient(api_server_app())
    manager = get_auth_manager()
    admin = {"Authorization": "Bearer " + manager.generate_jwt(SimpleAuthManagerUser(username="ada", role="ADMIN"))}
    viewer = {"Authorization": "Bearer " + manager.generate_jwt(SimpleAuthManagerUser(username="vic", role="VIEWER"))}
    seen: dict[str, Any] = {"before": dag_state(dag_id)}

    def answer(key: str, method: str, path: str, headers: dict[str, str] | None = None, **kwargs: Any) -> None:
        response = client.request(method, "/kopycat" + path, headers=headers or {}, **kwargs)
        body = response.json() if "json" in response.headers.get("content-type", "") else response.text[:200]
        seen[key] = {"status": response.status_code, "body": body}

    answer("anonymous", "GET", "/connectors")
    answer("create", "POST", "/connectors", admin, json={"name": name, "config": {
        "connector.class": "FileStreamSource", "file": "/tmp/kopycat-plugin-test.txt", "topic": "plugin-test",
        "tasks.max": "1", "kopycat.schedule": "none"}})
    answer("viewer_list", "GET", "/connectors", viewer)
    answer("viewer_pause", "PUT", f"/connectors/{name}/pause", viewer)
    answer("pause", "PUT", f"/connectors/{name}/pause", admin)
    seen["after_pause"] = dag_state(dag_id)
    answer("status_paused", "GET", f"/connectors/{name}/status", admin)
    answer("resume", "PUT", f"/connectors/{name}/resume", admin)
    seen["after_resume"] = dag_state(dag_id)
    answer("restart", "POST", f"/connectors/{name}/restart", admin)
    seen["after_restart"] = dag_state(dag_id)
    answer("page", "GET", "/ui", admin)
    external_views, _ = plugins_manager._get_ui_plugins()
    seen["external_views"] = external_views
    seen["plugin_errors"] = plugins_manager._get_plugins()[1]
    answer("delete", "DELETE", f"/connectors/{name}", admin)
    return seen


def figures(name: str, config: dict[str, Any]) -> dict[str, Any]:
    from airflow.api_fastapi.app import get_auth_manager
    from airflow.api_fastapi.auth.managers.simple.user import SimpleAuthManagerUser

    client = TestClient(api_server_app())
    admin = {"Authorization": "Bearer " + get_auth_manager().generate_jwt(
        SimpleAuthManagerUser(username="ada", role="ADMIN"))}
    seen: dict[str, Any] = {}
    created = client.post("/kopycat/connectors", headers=admin, json={"name": name, "config": config})
    seen["create"] = created.status_code
    metrics = client.get("/kopycat/metrics", headers=admin)
    seen["metrics"] = {"status": metrics.status_code, "body": metrics.text}
    seen["anonymous"] = client.get("/kopycat/metrics").status_code
    seen["delete"] = client.delete(f"/kopycat/connectors/{name}", headers=admin).status_code
    return seen


if __name__ == "__main__":
    if sys.argv[1] == "figures":
        seen, answers = figures(sys.argv[2], json.loads(sys.argv[3])), sys.argv[4]
    else:
        seen, answers = main(sys.argv[1], sys.argv[2]), sys.argv[3]
    with open(answers, "w") as out:
        json.dump(seen, out, default=str)

"""The herder tells the runner (Airflow's DAGs, through RunControl) what the stores now say."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from kopycat.rest import RestHerder, create_app
from kopycat.storage.config_backing_store import MemoryConfigBackingStore, TargetState
from kopycat.storage.connector_status import ConnectorStatus, State, TaskStatus
from kopycat.storage.status_backing_store import MemoryStatusBackingStore

from .conftest import FILE_SOURCE


class RecordingRunControl:
    """Remembers each call, or fails each one when ``broken``."""

    def __init__(self, broken: bool = False) -> None:
        self.calls: list[tuple[Any, ...]] = []
        self.broken = broken

    def target_state_changed(self, name: str, state: TargetState) -> None:
        self._called("state", name, state)

    def restart(self, name: str, *, connector: bool, tasks: Sequence[int]) -> None:
        self._called("restart", name, connector, list(tasks))

    def _called(self, *call: Any) -> None:
        if self.broken:
            raise RuntimeError("the metadata DB is down")
        self.calls.append(call)


def _client(tmp_path: Path, run_control: RecordingRunControl) -> tuple[TestClient, RestHerder]:
    herder = RestHerder(MemoryConfigBackingStore(), MemoryStatusBackingStore(),
                        {"offset.storage.file.filename": str(tmp_path / "connect.offsets")}, run_control=run_control)
    client = TestClient(create_app(herder))
    assert client.post("/connectors", json=FILE_SOURCE).status_code == 201
    return client, herder


def test_pause_resume_and_stop_reach_the_runner_after_the_config_topic_holds_them(tmp_path: Path) -> None:
    runs = RecordingRunControl()
    client, herder = _client(tmp_path, runs)
    name = FILE_SOURCE["name"]
    for verb in ("pause", "resume", "stop"):
        assert client.put(f"/connectors/{name}/{verb}").status_code in (202, 204)
    assert runs.calls == [("state", name, TargetState.PAUSED), ("state", name, TargetState.STARTED),
                          ("state", name, TargetState.STOPPED)]
    assert herder.config_store.snapshot().target_states[name] is TargetState.STOPPED


def test_restarts_name_the_connector_and_exactly_the_tasks_kafka_would_restart(tmp_path: Path) -> None:
    runs = RecordingRunControl()
    client, herder = _client(tmp_path, runs)
    name = FILE_SOURCE["name"]
    herder.config_store.put_task_configs(name, [{}, {}, {}])
    herder.status_store.put(ConnectorStatus(name, State.RUNNING, None, "w"))
    for task, state in enumerate((State.RUNNING, State.FAILED, State.FAILED)):
        herder.status_store.put(TaskStatus(name, task, state, None, "w"))

    client.post(f"/connectors/{name}/restart?includeTasks=true&onlyFailed=true")
    client.post(f"/connectors/{name}/tasks/0/restart")
    client.post(f"/connectors/{name}/restart")
    client.post(f"/connectors/{name}/restart?onlyFailed=true")  # nothing failed: nothing to rerun
    assert runs.calls == [("restart", name, False, [1, 2]), ("restart", name, False, [0]),
                          ("restart", name, True, [])]


def test_a_runner_that_cannot_be_told_leaves_the_answer_and_the_stores_as_kafka_gives_them(tmp_path: Path) -> None:
    client, herder = _client(tmp_path, RecordingRunControl(broken=True))
    name = FILE_SOURCE["name"]
    assert client.put(f"/connectors/{name}/pause").status_code == 202
    assert client.post(f"/connectors/{name}/restart").status_code == 204
    assert herder.config_store.snapshot().target_states[name] is TargetState.PAUSED
    assert herder.status_store.get_connector(name).state is State.RESTARTING  # type: ignore[union-attr]


def test_the_connectors_page_is_served_beside_the_api_and_writes_user_text_as_text(tmp_path: Path) -> None:
    client, _ = _client(tmp_path, RecordingRunControl())
    page = client.get("/ui")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert "connectors?expand=status&expand=info" in page.text
    assert "innerHTML" not in page.text  # names, classes and traces are user input
    assert "/ui" not in client.get("/openapi.json").json()["paths"]

"""The worker herder makes a worker follow the config store: what it starts, stops, pauses, restarts."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from kopycat.runtime.worker_herder import WorkerHerder
from kopycat.storage.config_backing_store import MemoryConfigBackingStore, TargetState
from kopycat.storage.connector_status import ConnectorStatus, State
from kopycat.storage.status_backing_store import MemoryStatusBackingStore

CONFIG = {"connector.class": "FileStreamSource", "file": "/tmp/in.txt", "topic": "t"}


class RecordingWorker:
    """Stands in for the Worker: records the calls, runs nothing."""

    worker_id = "node:8083"

    def __init__(self, fail_start: bool = False) -> None:
        self.status_store = MemoryStatusBackingStore()
        self.running: dict[str, bool] = {}  # name -> paused
        self.calls: list[tuple[Any, ...]] = []
        self.fail_start = fail_start

    def connectors(self) -> list[str]:
        return sorted(self.running)

    def add_connector(self, props: Mapping[str, Any], *, paused: bool = False) -> str:
        self.calls.append(("add", props["name"], props["topic"], paused))
        if self.fail_start:
            raise RuntimeError("cannot open /tmp/in.txt")
        self.running[props["name"]] = paused
        return str(props["name"])

    def remove_connector(self, name: str, final_state: State | None = State.UNASSIGNED) -> None:
        self.calls.append(("remove", name, final_state))
        del self.running[name]

    def pause_connector(self, name: str) -> None:
        self.calls.append(("pause", name))

    def resume_connector(self, name: str) -> None:
        self.calls.append(("resume", name))

    def restart_task(self, name: str, task: int) -> None:
        self.calls.append(("restart_task", name, task))


@pytest.fixture
def store() -> MemoryConfigBackingStore:
    return MemoryConfigBackingStore()


def herder_over(store: MemoryConfigBackingStore, worker: RecordingWorker) -> WorkerHerder:
    return WorkerHerder(worker, store)  # type: ignore[arg-type]


def test_the_worker_follows_creates_changes_target_states_and_deletes(store: MemoryConfigBackingStore) -> None:
    worker = RecordingWorker()
    herder = herder_over(store, worker)
    store.put_connector_config("c", CONFIG)
    herder.tick()
    herder.tick()  # nothing changed: nothing done
    assert worker.calls == [("add", "c", "t", False)]

    store.put_target_state("c", TargetState.PAUSED)
    herder.tick()
    store.put_target_state("c", TargetState.STARTED)
    herder.tick()
    store.put_connector_config("c", {**CONFIG, "topic": "u"})
    herder.tick()
    assert worker.calls[1:] == [("pause", "c"), ("resume", "c"), ("remove", "c", State.UNASSIGNED),
                                ("add", "c", "u", False)]

    store.put_task_configs("c", [{"topic": "u"}])
    store.put_target_state("c", TargetState.STOPPED)
    herder.tick()
    assert worker.calls[-1] == ("remove", "c", State.STOPPED)
    assert store.snapshot().task_configs["c"] == []  # a stopped connector has no tasks (KIP-875)
    assert worker.status_store.get_connector("c").state is State.STOPPED  # type: ignore[union-attr]

    store.put_target_state("c", TargetState.STARTED)
    herder.tick()
    store.remove_connector_config("c")
    herder.tick()
    assert worker.calls[-2:] == [("add", "c", "u", False), ("remove", "c", None)]  # no status over DESTROYED


def test_a_connector_created_paused_is_planned_without_running_tasks(store: MemoryConfigBackingStore) -> None:
    worker = RecordingWorker()
    store.put_connector_config("c", CONFIG, TargetState.PAUSED)
    herder_over(store, worker).tick()
    assert worker.calls == [("add", "c", "t", True)]


def test_a_connector_that_fails_to_start_is_failed_until_restarted(store: MemoryConfigBackingStore) -> None:
    worker = RecordingWorker(fail_start=True)
    herder = herder_over(store, worker)
    store.put_connector_config("c", CONFIG)
    herder.tick()
    herder.tick()
    status = worker.status_store.get_connector("c")
    assert isinstance(status, ConnectorStatus) and status.state is State.FAILED
    assert "cannot open /tmp/in.txt" in (status.trace or "") and status.worker_id == "node:8083"
    assert len(worker.calls) == 1  # not retried on its own, as Kafka

    herder.restart("c", connector=True, tasks=[])
    herder.tick()
    assert len(worker.calls) == 2


def test_restarts_rerun_the_connector_or_only_the_tasks_asked_for(store: MemoryConfigBackingStore) -> None:
    worker = RecordingWorker()
    herder = herder_over(store, worker)
    store.put_connector_config("c", CONFIG)
    herder.tick()
    herder.restart("c", connector=False, tasks=[0])
    herder.restart("c", connector=True, tasks=[0])
    herder.restart("gone", connector=True, tasks=[])
    herder.tick()
    assert worker.calls[1:] == [("restart_task", "c", 0), ("remove", "c", None), ("add", "c", "t", False)]

"""Run connectors inside your own application (KIP-26's embedded mode).

Same engine, same offsets as the standalone worker and the Airflow tasks::

    from kopycat.embedded import Kopycat

    with Kopycat(bootstrap_servers="localhost:9092") as kc:
        logs = kc.add_connector({"name": "logs", "connector.class": "FileStreamSource",
                                 "files": "/var/log/app/*.log", "topic": "app-logs"})
        ...                                  # runs in background threads until kc stops
        summaries = kc.run_once({...})       # or: copy until caught up, then return

Source offsets go to the ``connect-offsets`` topic by default (shared with Kafka Connect), so an
application restart resumes exactly; pass ``offset_store`` to keep them elsewhere.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kopycat.runtime.bounds import Bounds, RunSummary
from kopycat.runtime.worker import Worker
from kopycat.storage.kafka_offset_store import KafkaOffsetStore
from kopycat.storage.offset_backing_store import OffsetBackingStore

__all__ = ["ConnectorHandle", "Kopycat"]


class ConnectorHandle:
    """A connector running in a :class:`Kopycat`: its status, task configs, and how to stop it."""

    def __init__(self, worker: Worker, name: str) -> None:
        self.worker = worker
        self.name = name

    def status(self) -> dict[str, Any]:
        """Kafka Connect's status body: connector and task states, with traces of failures."""
        return self.worker.status(self.name)

    @property
    def task_configs(self) -> list[dict[str, str]]:
        return self.worker.task_configs(self.name)

    def wait(self, timeout_s: float | None = None) -> list[RunSummary | None]:
        """Wait for the tasks to end (bounded runs, or failures); their summaries."""
        return self.worker.wait(self.name, timeout_s)

    def stop(self) -> None:
        """Stop the tasks (committing offsets) and the connector."""
        self.worker.remove_connector(self.name)


class Kopycat:
    """An embedded worker. Thread-safe; use as a context manager or call start()/stop()."""

    def __init__(self, bootstrap_servers: str, group_id: str = "kopycat", *,
                 worker_props: Mapping[str, Any] | None = None,
                 offset_store: OffsetBackingStore | None = None) -> None:
        """``worker_props`` takes any worker.properties key (converters, offset.storage.topic...)."""
        props = {"bootstrap.servers": bootstrap_servers, "group.id": group_id, **(worker_props or {})}
        store = offset_store if offset_store is not None else KafkaOffsetStore.from_config(props)
        self.worker = Worker(props, store)

    def start(self) -> Kopycat:
        self.worker.start()
        return self

    def stop(self) -> None:
        self.worker.stop()

    def __enter__(self) -> Kopycat:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def add_connector(self, props: Mapping[str, Any]) -> ConnectorHandle:
        """Start a connector whose tasks run until it (or this Kopycat) stops."""
        return ConnectorHandle(self.worker, self.worker.add_connector(props))

    def run_once(self, props: Mapping[str, Any], bounds: Bounds | None = None,
                 timeout_s: float | None = None) -> list[RunSummary | None]:
        """Run every task of the connector until ``bounds`` (default: caught up), then stop it.

        The bounded run an Airflow task makes, in-process: offsets are committed, and the
        summaries say what each task copied. A failed task's summary carries its error. A sink's
        tasks each copy their own share of the partitions there are when the run starts (one task
        per partition at most), as the Airflow plan splits them.
        """
        name = self.worker.add_connector(props, bounds or Bounds.caught_up())
        try:
            return self.worker.wait(name, timeout_s)
        finally:
            self.worker.remove_connector(name)

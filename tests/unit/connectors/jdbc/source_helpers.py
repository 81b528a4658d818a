"""Helpers of the JDBC source tests: a SQLite database in a temp dir and a task driven directly."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from kopycat.api.connector import ConnectorContext
from kopycat.api.records import SourceRecord
from kopycat.api.task import OffsetStorageReader, SourceTaskContext
from kopycat.connectors.jdbc.source_connector import JdbcSourceConnector
from kopycat.connectors.jdbc.source_task import JdbcSourceTask
from tests.support.source_items import records_of


class MemoryReader(OffsetStorageReader):
    """Offsets by partition (any key order), as the engine's reader answers."""

    def __init__(self, stored: Iterable[tuple[Mapping[str, Any], Mapping[str, Any]]] = ()) -> None:
        self.stored = {frozenset(p.items()): dict(o) for p, o in stored}
        self.asked: list[dict[str, Any]] = []

    def offsets(self, partitions: Iterable[Mapping[str, Any]]
                ) -> list[tuple[dict[str, Any], dict[str, Any] | None]]:
        result = []
        for partition in partitions:
            self.asked.append(dict(partition))
            result.append((dict(partition), self.stored.get(frozenset(partition.items()))))
        return result


class Context(SourceTaskContext):
    def __init__(self, reader: OffsetStorageReader) -> None:
        self._reader = reader

    @property
    def configs(self) -> Mapping[str, str]:
        return {}

    @property
    def offset_reader(self) -> OffsetStorageReader:
        return self._reader


class ConnectorCalls(ConnectorContext):
    def __init__(self) -> None:
        self.reconfigurations = 0
        self.errors: list[Exception] = []

    def request_task_reconfiguration(self) -> None:
        self.reconfigurations += 1

    def raise_error(self, error: Exception) -> None:
        self.errors.append(error)


class Database:
    """A SQLite file with helpers to run SQL."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.url = f"sqlite:///{path}"

    def run(self, sql: str, rows: Iterable[Iterable[Any]] | None = None) -> None:
        with sqlite3.connect(self.path) as connection:
            if rows is None:
                connection.executescript(sql)
            else:
                connection.executemany(sql, list(rows))


def start_task(props: Mapping[str, str], reader: OffsetStorageReader | None = None) -> JdbcSourceTask:
    task = JdbcSourceTask()
    task.initialize(Context(reader or MemoryReader()))
    task.start(props)
    return task


def drain(task: JdbcSourceTask, polls: int = 50, batches: bool = False) -> list[Any]:
    """Every record (or with ``batches`` every item as polled) until a poll comes back empty."""
    polled: list[Any] = []
    for _ in range(polls):
        items = task.poll()
        if not items:
            return polled
        polled += items if batches else records_of(items)
    raise AssertionError(f"still returning records after {polls} polls")


def plan(props: Mapping[str, str], max_tasks: int = 1) -> tuple[JdbcSourceConnector, list[dict[str, str]]]:
    connector = JdbcSourceConnector()
    connector.initialize(ConnectorCalls())
    connector.start(props)
    return connector, connector.task_configs(max_tasks)


def values(records: Iterable[SourceRecord], field: str) -> list[Any]:
    return [record.value.get(field) for record in records]

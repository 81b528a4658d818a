"""Copy a database into Kafka, table by table: Confluent's ``JdbcSourceConnector``.

Plans like Confluent's connector: it lists the tables (every table by default; filtered by
``table.whitelist``/``table.blacklist`` or ``table.include.list``/``table.exclude.list``), splits
them over ``min(tasks.max, tables)`` task configs, each the connector's props plus ``tables``
(quoted, comma separated) and ``tables.fetched=true``; a ``query`` gets one task. Confluent
groups tables in contiguous runs (``ConnectorUtils.groupPartitions``); Kopycat deals them
round-robin, the same group sizes, so neighbouring big tables land on different tasks.

Beyond Confluent, ``start`` checks every table it will copy (mode columns present, NOT NULL,
types mapped) so a bad config fails the plan, not a task later; the table list is read
synchronously there, so ``task_configs`` is ready at once (an Airflow plan task has no time
to wait). A monitor thread then lists tables every ``table.poll.interval.ms`` and asks for
reconfiguration when they change.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from sqlalchemy import Engine

from kopycat.api.config import ConfigDef, ConfigValue
from kopycat.api.connector import SourceConnector
from kopycat.api.errors import ConfigError, ConnectError
from kopycat.connectors.jdbc.connection import CONNECTION_URL_CONFIG, redacted_url
from kopycat.connectors.jdbc.source_config import (
    CONFIG,
    TABLES_CONFIG,
    TABLES_FETCHED_CONFIG,
    SourceSettings,
)
from kopycat.connectors.jdbc.source_task import JdbcSourceTask, describe_table, engine_for
from kopycat.connectors.jdbc.table_monitor import (
    TableId,
    TableMonitor,
    format_tables,
    list_tables,
    select_tables,
)

__all__ = ["JdbcSourceConnector", "check_tables", "group_round_robin"]

log = logging.getLogger(__name__)


def group_round_robin(tables: list[TableId], max_tasks: int) -> list[list[TableId]]:
    """``min(max_tasks, len(tables))`` groups; table i goes to group i % groups."""
    count = max(1, min(max_tasks, len(tables)))
    groups: list[list[TableId]] = [[] for _ in range(count)]
    for index, table in enumerate(tables):
        groups[index % count].append(table)
    return groups


class JdbcSourceConnector(SourceConnector):
    """Lists and checks the tables, plans the tasks, watches for new tables."""

    def __init__(self) -> None:
        self._props: dict[str, str] = {}
        self._settings: SourceSettings | None = None
        self._engine: Engine | None = None
        self._monitor: TableMonitor | None = None
        self._tables: list[TableId] = []

    def start(self, props: Mapping[str, str]) -> None:
        self._props = dict(props)
        settings = self._settings = SourceSettings.parse(props)
        if settings.query:
            log.info("Starting JDBC source connector for a query on %s", redacted_url(settings.values))
            return
        self._engine = engine_for(settings)
        try:
            self._tables = check_tables(self._engine, settings)
        except BaseException:
            self._engine.dispose()
            self._engine = None
            raise
        log.info("Starting JDBC source connector on %s: %d tables (%s) in mode %s",
                 redacted_url(settings.values), len(self._tables),
                 ", ".join(t.unquoted for t in self._tables), settings.mode)
        if settings.table_poll_interval_ms > 0:
            self._monitor = TableMonitor(self._engine, settings, self._tables,
                                         on_change=self._tables_changed, on_error=self._monitor_failed)
            self._monitor.start()

    def _tables_changed(self) -> None:
        self.context.request_task_reconfiguration()

    def _monitor_failed(self, error: Exception) -> None:
        self.context.raise_error(ConnectError(f"Encountered an unrecoverable error while reading "
                                              f"tables from the database: {error}"))

    def task_class(self) -> type[JdbcSourceTask]:
        return JdbcSourceTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        if self._settings is None:
            raise ConnectError("JdbcSourceConnector.task_configs() called before start()")
        fetched = {TABLES_FETCHED_CONFIG: "true"}
        if self._settings.query:
            return [{**self._props, TABLES_CONFIG: "", **fetched}]
        tables = self._monitor.tables() if self._monitor is not None else self._tables
        if not tables:
            log.warning("No tables were found so there's no work to be done.")
            return [{**self._props, TABLES_CONFIG: "", **fetched}]
        return [{**self._props, TABLES_CONFIG: format_tables(group), **fetched}
                for group in group_round_robin(tables, max_tasks)]

    def stop(self) -> None:
        monitor, engine, self._monitor, self._engine = self._monitor, self._engine, None, None
        try:
            if monitor is not None:
                monitor.stop()
        finally:
            if engine is not None:
                engine.dispose()

    def config(self) -> ConfigDef:
        return CONFIG

    def validate(self, props: Mapping[str, str]) -> list[ConfigValue]:
        """Per-key checks, then the cross-key ones, then the database's (tables, columns)."""
        results = super().validate(props)
        if any(result.errors for result in results):
            return results
        by_name = {result.name: result for result in results}
        try:
            settings = SourceSettings.parse(props)
            if not settings.query:
                engine = engine_for(settings)
                try:
                    check_tables(engine, settings)
                finally:
                    engine.dispose()
        except ConfigError as exc:
            by_name.get(exc.key or CONNECTION_URL_CONFIG, by_name[CONNECTION_URL_CONFIG]).add_error_message(str(exc))
        except ConnectError as exc:
            by_name[CONNECTION_URL_CONFIG].add_error_message(str(exc))
        return results

    def alter_offsets(self, props: Mapping[str, str], offsets: Mapping[Any, Mapping[str, Any] | None]) -> bool:
        """Accept offsets of Confluent's shapes (incrementing / timestamp / timestamp_nanos longs)."""
        for partition, offset in offsets.items():
            if offset is None:
                continue
            unknown = set(offset) - {"incrementing", "timestamp", "timestamp_nanos"}
            bad = [k for k in offset if k not in unknown and (isinstance(offset[k], bool)
                                                              or not isinstance(offset[k], int))]
            if unknown or bad:
                raise ConfigError(f"The offset {dict(offset)!r} of source partition {partition!r} is "
                                  f"not a JDBC source offset: use integer incrementing, timestamp "
                                  f"(epoch ms) and timestamp_nanos fields, or null to reset it")
        return True


def check_tables(engine: Engine, settings: SourceSettings) -> list[TableId]:
    """The tables to copy, each reflected and checked against the mode (raises ConfigError)."""
    tables = select_tables(list_tables(engine, settings), settings, strict=True)
    with engine.connect() as connection:
        for table in tables:
            describe_table(connection, table, settings)
    return tables

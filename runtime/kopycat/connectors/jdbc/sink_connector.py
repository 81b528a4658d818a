"""The JDBC sink connector: topics into tables, exactly once (Confluent's ``JdbcSinkConnector``).

Like Confluent's, it plans ``max_tasks`` identical task configs: the consumer group spreads the
topic-partitions over them. It adds :meth:`alter_offsets`: offsets set through the REST API
(KIP-875) are written to the ``kopycat_offsets`` table, since the tasks seek to what it holds.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from kopycat.api.config import ConfigDef, ConfigValue
from kopycat.api.connector import SinkConnector
from kopycat.api.records import TopicPartition
from kopycat.connectors.jdbc.connection import connect_engine, redacted_url
from kopycat.connectors.jdbc.sink_config import SINK_CONFIG, parse_sink_config, validate_sink_config
from kopycat.connectors.jdbc.sink_offsets import OffsetsTable
from kopycat.connectors.jdbc.sink_task import JdbcSinkTask

__all__ = ["JdbcSinkConnector"]

log = logging.getLogger(__name__)


class JdbcSinkConnector(SinkConnector):
    """Plans JDBC sink tasks; checks the configuration across keys before any task starts."""

    def __init__(self) -> None:
        self._props: dict[str, str] = {}

    def start(self, props: Mapping[str, str]) -> None:
        settings = parse_sink_config(props)
        self._props = dict(props)
        log.info("Starting JDBC sink connector %s writing to %s", settings.connector_name,
                 redacted_url(settings.values))

    def task_class(self) -> type[JdbcSinkTask]:
        return JdbcSinkTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        """``max_tasks`` copies of the configuration (the group assigns the partitions)."""
        return [dict(self._props) for _ in range(max_tasks)]

    def stop(self) -> None:
        """Nothing to stop: no background monitoring (as Confluent's)."""

    def config(self) -> ConfigDef:
        return SINK_CONFIG

    def validate(self, props: Mapping[str, str]) -> list[ConfigValue]:
        """Per-key checks plus ``delete.enabled``/``pk.mode`` and the other rules across keys."""
        return validate_sink_config(props)

    def alter_offsets(self, props: Mapping[str, str], offsets: Mapping[Any, int | None]) -> bool:
        """Write new offsets to ``kopycat_offsets`` (None: delete the row, the group decides again)."""
        settings = parse_sink_config(props)
        table = OffsetsTable(settings.connector_name)
        engine = connect_engine(settings.values)
        try:
            with engine.begin() as conn:
                table.ensure(conn)
                table.delete(conn, [TopicPartition(*tp) for tp, offset in offsets.items() if offset is None])
                table.write(conn, {TopicPartition(*tp): int(offset) for tp, offset in offsets.items()
                                   if offset is not None})
        finally:
            engine.dispose()
        return True

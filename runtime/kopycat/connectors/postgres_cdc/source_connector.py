"""``io.debezium.connector.postgresql.PostgresConnector``: Debezium's PostgreSQL CDC connector.

Plans one task (a replication slot has one reader) and fixes the run's end: the task config
carries the WAL's end read now (``pg_current_wal_insert_lsn()``), so a bounded run copies exactly the changes committed
before the plan, however many arrive meanwhile. A continuous run ignores the end.
"""

from __future__ import annotations

from collections.abc import Mapping

from kopycat import __version__
from kopycat.api.config import ConfigDef, ConfigValue, validate_across_keys
from kopycat.api.connector import SourceConnector
from kopycat.api.task import SourceTask
from kopycat.connectors.postgres_cdc.config import CONFIG, END_LSN_CONFIG, TOPIC_PREFIX, CdcSettings
from kopycat.connectors.postgres_cdc.pgoutput import format_lsn
from kopycat.connectors.postgres_cdc.replication import PostgresSource
from kopycat.connectors.postgres_cdc.source_task import PostgresCdcTask

__all__ = ["PostgresConnector"]


class PostgresConnector(SourceConnector):
    """Checks the server once at start (wal_level, privileges) so a bad setup fails the plan."""

    def version(self) -> str:
        return __version__

    def start(self, props: Mapping[str, str]) -> None:
        self.props = dict(props)
        self.settings = CdcSettings.parse(props)

    def validate(self, props: Mapping[str, str]) -> list[ConfigValue]:
        """Per-key checks, then those across keys that start() makes (include and exclude lists both set,
        the signal channels, the signal table's name), reported under their key as Debezium's
        ``PostgresConnector.validate`` does, so ``kopycat validate`` and the REST validate endpoint show them."""
        return validate_across_keys(super().validate(props), props, CdcSettings.parse, TOPIC_PREFIX)

    def task_class(self) -> type[SourceTask]:
        return PostgresCdcTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        source = PostgresSource(self.settings)
        try:
            source.check_ready()
            end = source.current_lsn()
        finally:
            source.close()
        return [{**self.props, END_LSN_CONFIG: format_lsn(end)}]

    def stop(self) -> None:
        """Nothing held between calls."""

    def config(self) -> ConfigDef:
        return CONFIG

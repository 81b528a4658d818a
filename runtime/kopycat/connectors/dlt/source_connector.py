"""DltSourceConnector: any dlt source or resource as a Kafka Connect source connector.

dlt (https://dlthub.com/docs) writes extractors as Python generators: ``sql_database``,
``rest_api``, ``filesystem``, the verified sources, a user's own ``@dlt.resource``. This
connector imports one (:mod:`~kopycat.connectors.dlt.source_loader`), and each of its resources
becomes a topic ``<topic.prefix><resource>`` and a source partition whose offset holds the
resource's incremental state (:mod:`~kopycat.connectors.dlt.source_task`). A resource is one
sequential generator with its own state, so it is the unit of parallelism: the resources are
dealt round-robin over ``tasks.max`` tasks, as the JDBC source deals its tables. Example::

    name=shop
    connector.class=kopycat.connectors.dlt.DltSourceConnector
    dlt.source=dlt.sources.sql_database:sql_database
    dlt.args.credentials=${file:/run/secrets/pg.properties:url}
    dlt.args.table_names=["orders", "customers"]
    dlt.args.backend=pyarrow
    dlt.incremental=orders:updated_at,customers:updated_at
    topic.prefix=shop.
    tasks.max=2
"""

from __future__ import annotations

from collections.abc import Mapping

from kopycat.api import ConfigDef, ConfigError, ConfigValue, ConnectError, SourceConnector, SourceTask
from kopycat.connectors.dlt.source_config import (
    CONFIG,
    RESOURCES_CONFIG,
    SOURCE_CONFIG,
    TASK_RESOURCES_CONFIG,
    TASK_SOURCE_CONFIG,
)
from kopycat.connectors.dlt.source_loader import load_source
from kopycat.connectors.dlt.source_task import DltSourceTask

__all__ = ["DltSourceConnector"]


class DltSourceConnector(SourceConnector):
    """Loads the source once in start() (bad config fails there), then plans tasks over its resources."""

    def start(self, props: Mapping[str, str]) -> None:
        config = CONFIG.parse(props)
        self.props = dict(props)
        source = load_source(config, props)
        self.source_name = source.name
        self.resources = list(source.resources.selected)

    def validate(self, props: Mapping[str, str]) -> list[ConfigValue]:
        """Per-key checks, then the source itself: imported and called as a run would (as the JDBC
        source connects), so a bad module, function, argument or resource shows under its key."""
        results = super().validate(props)
        if any(result.errors for result in results):
            return results
        by_name = {result.name: result for result in results}
        try:
            load_source(CONFIG.parse(props), props)
        except ConfigError as exc:
            by_name.get(exc.key or SOURCE_CONFIG, by_name[SOURCE_CONFIG]).add_error_message(str(exc))
        except ConnectError as exc:
            by_name[SOURCE_CONFIG].add_error_message(str(exc))
        return results

    def task_class(self) -> type[SourceTask]:
        return DltSourceTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        if not self.resources:
            raise ConnectError(f"{SOURCE_CONFIG}={self.props.get(SOURCE_CONFIG)} selects no resources; name "
                               f"them in {RESOURCES_CONFIG}")
        groups = [self.resources[start::max_tasks] for start in range(min(max_tasks, len(self.resources)))]
        return [{**self.props, TASK_SOURCE_CONFIG: self.source_name, TASK_RESOURCES_CONFIG: ",".join(group)}
                for group in groups]

    def stop(self) -> None:
        """Nothing to release: the resources run in the tasks."""

    def config(self) -> ConfigDef:
        return CONFIG

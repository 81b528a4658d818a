"""SingerSourceConnector: any Singer tap as a Kafka Connect source connector.

A Singer tap (https://hub.meltano.com/singer/spec) is a program that writes SCHEMA, RECORD and
STATE messages to stdout; this connector runs one as a child process and turns its streams into
topics ``<topic.prefix><stream>`` (:mod:`~kopycat.connectors.singer.source_task`). A tap is one
sequential process with one state, so the connector plans one task, as Kafka's
FileStreamSourceConnector does for its one file. Example::

    name=orders
    connector.class=kopycat.connectors.singer.SingerSourceConnector
    singer.tap.executable=tap-postgres
    singer.tap.config.sqlalchemy_url=${file:/run/secrets/pg.properties:url}
    singer.tap.select=public-orders
    topic.prefix=pg.
"""

from __future__ import annotations

from collections.abc import Mapping

from kopycat.api import ConfigDef, SourceConnector, SourceTask
from kopycat.connectors.singer.source_config import CONFIG
from kopycat.connectors.singer.source_task import SingerSourceTask

__all__ = ["SingerSourceConnector"]


class SingerSourceConnector(SourceConnector):
    """Plans one task running the tap; validates the keys first so a typo fails before the tap runs."""

    def start(self, props: Mapping[str, str]) -> None:
        CONFIG.parse(props)
        self.props = dict(props)

    def task_class(self) -> type[SourceTask]:
        return SingerSourceTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self.props)]

    def stop(self) -> None:
        """Nothing to release: the tap runs in the task."""

    def config(self) -> ConfigDef:
        return CONFIG

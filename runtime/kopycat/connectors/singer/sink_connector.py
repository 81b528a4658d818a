"""SingerSinkConnector: any Singer target as a Kafka Connect sink connector.

A Singer target (https://hub.meltano.com/singer/spec) reads SCHEMA, RECORD and STATE messages
on stdin and writes them to a destination; this connector runs one as a child process fed from
the topics of ``topics``/``topics.regex`` (:mod:`~kopycat.connectors.singer.sink_task`), and
commits the consumer group only behind the state the target echoes. A target is one sequential
process, so the connector plans one task, as Kafka's FileStreamSinkConnector does. Example::

    name=orders-to-postgres
    connector.class=kopycat.connectors.singer.SingerSinkConnector
    topics=pg.orders
    singer.target.executable=target-postgres
    singer.target.config.sqlalchemy_url=${file:/run/secrets/pg.properties:url}
"""

from __future__ import annotations

from collections.abc import Mapping

from kopycat.api import ConfigDef, SinkConnector, SinkTask
from kopycat.connectors.singer.sink_config import CONFIG
from kopycat.connectors.singer.sink_task import SingerSinkTask

__all__ = ["SingerSinkConnector"]


class SingerSinkConnector(SinkConnector):
    """Plans one task running the target; validates the keys first so a typo fails before it runs."""

    def start(self, props: Mapping[str, str]) -> None:
        CONFIG.parse(props)
        self.props = dict(props)

    def task_class(self) -> type[SinkTask]:
        return SingerSinkTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self.props)]

    def stop(self) -> None:
        """Nothing to release: the target runs in the task."""

    def config(self) -> ConfigDef:
        return CONFIG

"""An example source connector: counts 1, 2, 3, ... into a topic and resumes where it stopped.

Copy it to start a connector of your own: like Kafka's FileStreamSourceConnector it uses only
the SPI (:mod:`kopycat.api`). ``kopycat run worker.properties counter.properties`` runs it with::

    name=counter
    connector.class=kopycat.examples.counter_source.CounterSourceConnector
    topic=numbers
    count.to=1000

Each record carries its source partition (which counter) and offset (its number): the engine
stores the offsets and start() reads them back, so a second run with count.to=1500 writes 1001..1500.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping

from kopycat.api import (
    ConfigDef,
    ConfigType,
    Importance,
    Range,
    RunComplete,
    Schema,
    SourceConnector,
    SourceRecord,
    SourceTask,
    is_bounded_run,
)

TOPIC_CONFIG = "topic"
COUNT_TO_CONFIG = "count.to"
CONFIG = ConfigDef().define(
    TOPIC_CONFIG, ConfigType.STRING, importance=Importance.HIGH, doc="The topic the numbers are written to.",
).define(
    COUNT_TO_CONFIG, ConfigType.LONG, default=1000, validator=Range.at_least(0), importance=Importance.MEDIUM,
    doc="The last number to write; a run ends once it was written.")
BATCH_SIZE = 100


class CounterSourceConnector(SourceConnector):
    """Plans one task: a counter is one source partition, and a source partition has one writer."""

    def start(self, props: Mapping[str, str]) -> None:
        CONFIG.parse(props)  # a bad value fails here, with the key in the message
        self.props = dict(props)

    def task_class(self) -> type[SourceTask]:
        return CounterSourceTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [self.props]

    def stop(self) -> None:
        """Nothing to release: the connector holds no connection."""

    def config(self) -> ConfigDef:
        return CONFIG


class CounterSourceTask(SourceTask):
    """Returns the numbers after the stored offset, up to ``count.to``, a batch per poll()."""

    def __init__(self) -> None:
        self.stopping = threading.Event()  # stop() may come from another thread, even before start()

    def start(self, props: Mapping[str, str]) -> None:
        config = CONFIG.parse(props)
        self.topic, self.count_to = config[TOPIC_CONFIG], config[COUNT_TO_CONFIG]
        self.partition = {"counter": self.topic}
        stored = self.context.offset_reader.offset(self.partition)
        self.next = 1 if stored is None else stored["number"] + 1
        self.bounded = is_bounded_run(props)

    def poll(self) -> list[SourceRecord] | None:
        if self.next > self.count_to:
            if self.bounded:  # `kopycat run` or an Airflow copy task: end the run now
                raise RunComplete
            self.stopping.wait(1.0)  # the standalone worker: nothing new, but return regularly
            return None
        numbers = range(self.next, min(self.next + BATCH_SIZE, self.count_to + 1))
        self.next = numbers[-1] + 1
        return [SourceRecord(source_partition=self.partition, source_offset={"number": n},
                             topic=self.topic, value=n, value_schema=Schema.INT64_SCHEMA) for n in numbers]

    def stop(self) -> None:
        """Called from another thread: wake a poll() that waits."""
        self.stopping.set()

"""A deterministic source connector: numbered records over N source partitions.

Record ``i`` of partition ``p`` has value ``"p<p>-<i>"`` and source offset ``{"i": i}``. The task
resumes from its committed offsets, so a test can count what arrives across restarts.
"""

from __future__ import annotations

from collections.abc import Mapping

from kopycat.api import ConfigDef, SourceConnector, SourceRecord, SourceTask
from kopycat.api.config import ConfigType
from kopycat.api.data import Schema


class CountingSourceConnector(SourceConnector):
    def start(self, props: Mapping[str, str]) -> None:
        self.props = dict(props)

    def task_class(self) -> type[SourceTask]:
        return CountingSourceTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self.props, **{"task.index": str(i)}) for i in range(max_tasks)]

    def stop(self) -> None:
        pass

    def config(self) -> ConfigDef:
        return (ConfigDef()
                .define("topic", ConfigType.STRING)
                .define("partitions", ConfigType.INT, 1)
                .define("total", ConfigType.INT, 1000)
                .define("batch", ConfigType.INT, 100))


class CountingSourceTask(SourceTask):
    """Emits ``total`` records per partition, ``batch`` per poll, then returns None."""

    def start(self, props: Mapping[str, str]) -> None:
        values = CountingSourceConnector().config().parse(props)
        self.topic, self.total, self.batch = values["topic"], values["total"], values["batch"]
        self.partitions = [{"p": p} for p in range(values["partitions"])]
        committed = self.context.offset_reader.offsets(self.partitions)
        self.next = [0 if offset is None else offset["i"] + 1 for _, offset in committed]

    def poll(self) -> list[SourceRecord] | None:
        records: list[SourceRecord] = []
        for p, partition in enumerate(self.partitions):
            end = min(self.next[p] + self.batch, self.total)
            records += [SourceRecord(source_partition=partition, source_offset={"i": i}, topic=self.topic,
                                     value_schema=Schema.STRING_SCHEMA, value=f"p{p}-{i}")
                        for i in range(self.next[p], end)]
            self.next[p] = end
        return records or None

    def stop(self) -> None:
        pass

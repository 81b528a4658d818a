"""Topics into files on local disk, HDFS or S3, exactly once (Confluent's HDFS and S3 sinks).

``FileSinkConnector`` (aliases ``io.confluent.connect.hdfs.HdfsSinkConnector``,
``io.confluent.connect.s3.S3SinkConnector``) plans ``max_tasks`` identical task configs; the
consumer group spreads the topic partitions over them, as Confluent's connectors do.

Exactly-once (DESIGN.md §3): the offsets are the committed files' names. ``open`` rolls back a
round a crash cut short, clears stale temporary files and seeks every partition to the greatest
committed end offset + 1, whatever the consumer group says (Confluent's HDFS sink does the
same; its S3 sink trusts the group). ``pre_commit`` hands the group only offsets whose records
are in committed files, so the group is a lagging mirror, never ahead of the store.
"""

from __future__ import annotations

import logging
import posixpath
import time
from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping, Sequence

from kopycat.api.bounded import is_bounded_run
from kopycat.api.config import ConfigDef
from kopycat.api.connector import SinkConnector
from kopycat.api.errors import ConnectError
from kopycat.api.records import SinkRecord, TopicPartition
from kopycat.api.task import SinkTask
from kopycat.connectors.files.committed_files import TEMP_DIR, next_offsets
from kopycat.connectors.files.partition_writer import TopicPartitionWriter
from kopycat.connectors.files.partitioners import Partitioner, partitioner_from_config
from kopycat.connectors.files.record_formats import RecordFormat, format_from_config
from kopycat.connectors.files.sink_config import (
    FILE_SINK_CONFIG,
    TIMEZONE_CONFIG,
    FileSinkSettings,
    parse_file_sink_config,
)
from kopycat.connectors.files.store import Store, locate_store, open_store

__all__ = ["FileSinkConnector", "FileSinkTask"]

log = logging.getLogger(__name__)


class FileSinkConnector(SinkConnector):
    """Plans storage sink tasks after checking the whole configuration once."""

    def __init__(self) -> None:
        self._props: dict[str, str] = {}

    def start(self, props: Mapping[str, str]) -> None:
        settings = parse_file_sink_config(props)
        partitioner_from_config(props)  # cross-key partitioner errors before any task starts
        format_from_config(settings.values)
        locate_store(settings.values)
        self._props = dict(props)

    def task_class(self) -> type[FileSinkTask]:
        return FileSinkTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        """``max_tasks`` copies of the configuration (the group assigns the partitions)."""
        return [dict(self._props) for _ in range(max_tasks)]

    def stop(self) -> None:
        """Nothing runs in the connector."""

    def config(self) -> ConfigDef:
        return FILE_SINK_CONFIG


class FileSinkTask(SinkTask):
    """Writes each assigned partition through a :class:`TopicPartitionWriter`."""

    def __init__(self) -> None:
        self.settings: FileSinkSettings | None = None
        self._store: Store | None = None
        self._partitioner: Partitioner | None = None
        self._format: RecordFormat | None = None
        self._timezone: str | None = None
        self._bounded = False
        self._writers: dict[TopicPartition, TopicPartitionWriter] = {}

    def start(self, props: Mapping[str, str]) -> None:
        settings = self.settings = parse_file_sink_config(props)
        self._store = open_store(settings.values)
        self._partitioner = partitioner_from_config(props)
        self._format = format_from_config(settings.values)
        self._timezone = str(settings.values.get(TIMEZONE_CONFIG) or "") or None
        self._bounded = is_bounded_run(props)
        log.info("Storage sink task writing %s files to %s/%s (flush.size=%d%s)", self._format.extension,
                 self._store.url, settings.topics_dir, settings.flush_size,
                 ", bounded run: every commit writes files" if self._bounded else "")

    def open(self, partitions: Collection[TopicPartition]) -> None:
        """Recover each partition from the store and seek it past its last committed file."""
        store, settings = self._running_store(), self._settings()
        by_topic: dict[str, list[TopicPartition]] = defaultdict(list)
        for tp in partitions:
            tp = TopicPartition(*tp)
            by_topic[tp.topic].append(tp)
            self._writers[tp] = TopicPartitionWriter(tp, store, settings, self._running_partitioner(),
                                                     self._running_format(), self._timezone)
        seeks: dict[TopicPartition, int] = {}
        for topic, tps in by_topic.items():
            for tp in tps:
                self._writers[tp].roll_back_partial_round()
            committed, temps = _split_temp(store.list_files(store.path(settings.topics_dir, topic)))
            found = next_offsets(posixpath.basename(path) for path in committed)
            for tp in tps:
                self._writers[tp].delete_temp_files(temps)
                if tp in found:
                    self._writers[tp].next_offset = seeks[tp] = found[tp]
        if seeks:
            log.info("Resuming after the committed files: %s",
                     ", ".join(f"{tp.topic}-{tp.partition}@{o}" for tp, o in sorted(seeks.items())))
            self.context.offset(seeks)

    def put(self, records: Sequence[SinkRecord]) -> None:
        now_ms = int(time.time() * 1000)
        for tp, batch in _by_partition(records).items():
            writer = self._writers.get(tp)
            if writer is None:
                raise ConnectError(f"Got records of {tp.topic}-{tp.partition}, which was never opened")
            writer.write(batch, now_ms)
        if not records:
            for writer in self._writers.values():
                writer.commit_if_scheduled(now_ms)

    def flush(self, current_offsets: Mapping[TopicPartition, int]) -> None:
        """Nothing: files are committed by rotation (pre_commit reports what is committed)."""

    def pre_commit(self, current_offsets: Mapping[TopicPartition, int]) -> Mapping[TopicPartition, int]:
        """Offsets of committed records only; a bounded run first commits every open file."""
        now_ms = int(time.time() * 1000)
        safe: dict[TopicPartition, int] = {}
        for tp, consumed in current_offsets.items():
            writer = self._writers.get(TopicPartition(*tp))
            if writer is None:
                continue
            if self._bounded:
                writer.commit()
            else:
                writer.commit_if_scheduled(now_ms)
            offset = writer.safe_offset(consumed)
            if offset is not None:
                safe[TopicPartition(*tp)] = offset
        return safe

    def close(self, partitions: Collection[TopicPartition]) -> None:
        """Forget the partitions; open files are dropped and re-consumed by the next owner."""
        for tp in partitions:
            writer = self._writers.pop(TopicPartition(*tp), None)
            if writer is not None:
                writer.discard()

    def stop(self) -> None:
        self._writers.clear()

    def _settings(self) -> FileSinkSettings:
        if self.settings is None:
            raise ConnectError("The storage sink task was not started")
        return self.settings

    def _running_store(self) -> Store:
        if self._store is None:
            raise ConnectError("The storage sink task was not started")
        return self._store

    def _running_partitioner(self) -> Partitioner:
        if self._partitioner is None:
            raise ConnectError("The storage sink task was not started")
        return self._partitioner

    def _running_format(self) -> RecordFormat:
        if self._format is None:
            raise ConnectError("The storage sink task was not started")
        return self._format


def _split_temp(paths: Iterable[str]) -> tuple[list[str], list[str]]:
    """Committed-looking paths and paths under a ``+tmp`` directory."""
    committed: list[str] = []
    temps: list[str] = []
    marker = f"/{TEMP_DIR}/"
    for path in paths:
        (temps if marker in path else committed).append(path)
    return committed, temps


def _by_partition(records: Sequence[SinkRecord]) -> dict[TopicPartition, list[SinkRecord]]:
    groups: dict[TopicPartition, list[SinkRecord]] = defaultdict(list)
    for record in records:
        groups[record.topic_partition].append(record)
    return groups

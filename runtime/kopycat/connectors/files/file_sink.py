"""Topics into files on local disk, HDFS or S3, exactly once (Confluent's HDFS and S3 sinks).

``FileSinkConnector`` (aliases ``io.confluent.connect.hdfs.HdfsSinkConnector``,
``io.confluent.connect.s3.S3SinkConnector``) plans ``max_tasks`` identical task configs; the
consumer group spreads the topic partitions over them, as Confluent's connectors do.

Exactly-once (DESIGN.md §3): the offsets are the committed files' names. ``open`` rolls back a
round a crash cut short, clears stale temporary files and seeks every partition to the greatest
committed end offset + 1, whatever the consumer group says (Confluent's HDFS sink does the
same; its S3 sink trusts the group). ``pre_commit`` hands the group only offsets whose records
are in committed files, so the group is a lagging mirror, never ahead of the store.

Windowed (backfill) runs (DESIGN.md §4, :class:`~kopycat.api.window.TimeWindow`): the engine
hands the task the records stamped in ``[start, end)`` and commits no offsets. The destination
is made deterministic by overwriting the window's directories: only a TimeBasedPartitioner on
record time (``timestamp.extractor`` Record or RecordField) with a window of whole
``partition.duration.ms`` buckets may run so (``start`` raises ConfigError otherwise). ``open``
asks for the same seeks as a live run: the window's live position (see
kopycat.runtime.run_range.BackfillWindow); before a partition's first file commit, its committed
files in the window's bucket directories are deleted; then the new files are committed. Files are cut by
``flush.size``/``rotate.interval.ms`` only, so the same window gives the same names and bytes.
Other partitions' files and other buckets are never touched. Run a window while no live run of
the connector writes the same partitions (an Airflow DAG with ``max_active_runs=1``).
"""

from __future__ import annotations

import datetime as dt
import logging
import posixpath
import time
from collections import defaultdict
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from kopycat.api.bounded import is_bounded_run
from kopycat.api.config import ConfigDef
from kopycat.api.connector import SinkConnector
from kopycat.api.data import Type
from kopycat.api.errors import ConfigError, ConnectError
from kopycat.api.record_batch import SinkRecordBatch
from kopycat.api.records import SinkRecord, TopicPartition
from kopycat.api.task import SinkTask
from kopycat.api.window import WINDOW_END_MS_CONFIG, WINDOW_START_MS_CONFIG, TimeWindow
from kopycat.connectors.files.committed_files import (
    CommittedFile,
    next_offsets,
    parse_committed_name,
    split_temp_paths,
)
from kopycat.connectors.files.partition_writer import TopicPartitionWriter
from kopycat.connectors.files.partitioner_config import PARTITIONER_CLASS_CONFIG, PATH_FORMAT_CONFIG
from kopycat.connectors.files.partitioners import Partitioner, TimeBasedPartitioner, partitioner_from_config
from kopycat.connectors.files.record_formats import ParquetFormat, RecordFormat, format_from_config
from kopycat.connectors.files.round_committer import RoundCommitter
from kopycat.connectors.files.sink_config import (
    FILE_SINK_CONFIG,
    TIMEZONE_CONFIG,
    FileSinkSettings,
    parse_file_sink_config,
)
from kopycat.connectors.files.store import Store, locate_store
from kopycat.connectors.files.store_factory import open_store
from kopycat.connectors.files.timestamp_extractors import TIMESTAMP_EXTRACTOR_CONFIG, WallclockTimestampExtractor

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

    def __init__(self, *, background_commits: bool = True) -> None:
        """``background_commits=False`` writes and commits each round inside the put() that ends it, for
        callers that read the store right after put() (the engine reads pre_commit instead)."""
        self.background_commits = background_commits
        self.settings: FileSinkSettings | None = None
        self._store: Store | None = None
        self._partitioner: Partitioner | None = None
        self._format: RecordFormat | None = None
        self._timezone: str | None = None
        self._bounded = False
        self._window: TimeWindow | None = None
        self._window_partitions: list[str] = []
        self._writers: dict[TopicPartition, TopicPartitionWriter] = {}
        self._committer: RoundCommitter | None = None

    def start(self, props: Mapping[str, str]) -> None:
        """Parse the config; a windowed run is checked here, before anything is written or deleted."""
        settings = self.settings = parse_file_sink_config(props)
        self._partitioner = partitioner_from_config(props)
        self._window = TimeWindow.of(props)
        if self._window is not None:
            self._window_partitions = window_partitions(self._partitioner, self._window, settings.values)
        self._store = open_store(settings.values)
        self._format = format_from_config(settings.values)
        self._timezone = str(settings.values.get(TIMEZONE_CONFIG) or "") or None
        self._bounded = is_bounded_run(props)
        self._committer = RoundCommitter(background=self.background_commits)
        if self._window is not None:
            log.info("Windowed run [%d, %d): overwriting %s", self._window.start_ms, self._window.end_ms,
                     ", ".join(self._window_partitions) or "no directory (an empty window)")
        log.info("Storage sink task writing %s files to %s/%s (flush.size=%d%s)", self._format.extension,
                 self._store.url, settings.topics_dir, settings.flush_size,
                 ", bounded run: every commit writes files" if self._bounded else "")

    def open(self, partitions: Collection[TopicPartition]) -> None:
        """Recover each partition from the store and seek it past its last committed file.

        A windowed run recovers the same way and asks for the same seeks: its live positions
        (see kopycat.runtime.run_range.BackfillWindow).
        """
        store, settings = self._running_store(), self._settings()
        by_topic: dict[str, list[TopicPartition]] = defaultdict(list)
        for tp in partitions:
            tp = TopicPartition(*tp)
            by_topic[tp.topic].append(tp)
            self._writers[tp] = self._new_writer(tp)
        seeks: dict[TopicPartition, int] = {}
        for topic, tps in by_topic.items():
            for tp in tps:
                self._writers[tp].roll_back_partial_round()
            committed, temps = split_temp_paths(store.list_files(store.path(settings.topics_dir, topic)))
            found = next_offsets(posixpath.basename(path) for path in committed)
            for tp in tps:
                self._writers[tp].delete_temp_files(temps)
                if tp in found:  # a windowed run's live position
                    seeks[tp] = found[tp]
                    if self._window is None:
                        self._writers[tp].next_offset = found[tp]
        if seeks:
            log.info("%s after the committed files: %s", "Live position" if self._window else "Resuming",
                     ", ".join(f"{tp.topic}-{tp.partition}@{o}" for tp, o in sorted(seeks.items())))
            self.context.offset(seeks)

    def _new_writer(self, tp: TopicPartition) -> TopicPartitionWriter:
        args = (tp, self._running_store(), self._settings(), self._running_partitioner(), self._running_format(),
                self._timezone, self._committer)
        if self._window is None:
            return TopicPartitionWriter(*args)
        return WindowedPartitionWriter(*args, window_partitions=self._window_partitions)

    def put(self, records: Sequence[SinkRecord]) -> None:
        now_ms = int(time.time() * 1000)
        if self._window is not None:
            records = self._inside_window(records, now_ms)
        for tp, batch in _by_partition(records).items():
            writer = self._writers.get(tp)
            if writer is None:
                raise ConnectError(f"Got records of {tp.topic}-{tp.partition}, which was never opened")
            writer.write(batch, now_ms)
        if not records:
            for writer in self._writers.values():
                writer.commit_if_scheduled(now_ms)

    def batch_value_types(self) -> frozenset[Type]:
        """STRUCT columns, for Parquet files a batch can be placed in without its records: a partitioner
        that places batches (default; time-based on the Kafka timestamp or the wall clock),
        schema.compatibility NONE, no rotate.interval.ms, no window (the rest goes record by record)."""
        settings = self._settings()
        columnar = (isinstance(self._format, ParquetFormat) and self._running_partitioner().partitions_batches
                    and settings.schema_compatibility == "NONE" and settings.rotate_interval_ms <= 0
                    and self._window is None)
        return frozenset({Type.STRUCT}) if columnar else frozenset()

    def put_batch(self, batch: SinkRecordBatch) -> None:
        now_ms = int(time.time() * 1000)
        writer = self._writers.get(batch.topic_partition)
        if writer is None:
            raise ConnectError(f"Got records of {batch.topic}-{batch.kafka_partition}, which was never opened")
        writer.write_batch(batch, now_ms)

    def _inside_window(self, records: Sequence[SinkRecord], now_ms: int) -> list[SinkRecord]:
        """Records whose partitioning time is in the window: only its directories may be written.

        The engine chose them by Kafka time; with RecordField the field's time decides the
        directory, and a record whose field lies outside the window belongs to a bucket this
        run must not touch.
        """
        window, partitioner = self._window, self._running_partitioner()
        assert window is not None
        stamps = [partitioner.record_timestamp(r, now_ms) for r in records]
        return [r for r, stamp in zip(records, stamps, strict=True) if stamp is not None and window.contains(stamp)]

    def flush(self, current_offsets: Mapping[TopicPartition, int]) -> None:
        """Nothing: files are committed by rotation (pre_commit reports what is committed)."""

    def pre_commit(self, current_offsets: Mapping[TopicPartition, int]) -> Mapping[TopicPartition, int]:
        """Offsets of committed records only; a bounded run first commits every open file (and waits)."""
        now_ms = int(time.time() * 1000)
        held = [(TopicPartition(*tp), consumed, self._writers.get(TopicPartition(*tp)))
                for tp, consumed in current_offsets.items()]
        for _, _, writer in held:
            if writer is not None and self._bounded:
                writer.commit()
            elif writer is not None:
                writer.commit_if_scheduled(now_ms)
        safe: dict[TopicPartition, int] = {}
        for tp, consumed, writer in held:
            if writer is None:
                continue
            if self._bounded:
                writer.wait_for_commit()
            offset = writer.safe_offset(consumed)
            if offset is not None:
                safe[tp] = offset
        return safe

    def close(self, partitions: Collection[TopicPartition]) -> None:
        """Forget the partitions; open files are dropped and re-consumed by the next owner."""
        for tp in partitions:
            writer = self._writers.pop(TopicPartition(*tp), None)
            if writer is not None:
                writer.discard()

    def wait_for_commits(self) -> None:
        """Block until every round handed to the committer is committed (tools and tests; the engine asks
        pre_commit, which reports a round in flight as not yet safe)."""
        for writer in self._writers.values():
            writer.wait_for_commit()

    def stop(self) -> None:
        """Finish the commit under way; rounds still open are dropped and consumed again after a restart."""
        self._writers.clear()
        if self._committer is not None:
            self._committer.close()
            self._committer = None

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


class WindowedPartitionWriter(TopicPartitionWriter):
    """A partition's writer in a windowed run: overwrites the partition's files in the window's directories.

    Before its first commit it deletes the partition's committed files in the directories of the
    window's buckets (other partitions' files, other buckets and ``+tmp`` are left alone), so
    after the run those directories hold exactly this run's files for the partition. A crash
    between the delete and the commit leaves the window short until the task is retried.
    """

    def __init__(self, *args: Any, window_partitions: Sequence[str]) -> None:
        super().__init__(*args)
        self.window_partitions = list(window_partitions)
        self._cleared = False

    def commit(self) -> None:
        if not self._cleared and self.has_open_files:
            self._clear_window()
            self._cleared = True
        super().commit()

    def _clear_window(self) -> None:
        """Delete the partition's committed files in the window's directories; refuse to lose data.

        A file there whose first offset is before the window's first record holds records this
        run cannot write again (gone from Kafka by retention, or stamped outside the window in
        Kafka time with RecordField): nothing is deleted and the run fails.
        """
        current = self._round
        assert current is not None
        first = current.start_offset
        doomed = self._committed_in_window()
        older = [path for path, name in doomed if name.start_offset < first]
        if older:
            raise ConnectError(
                f"Windowed run of {self.tp.topic}-{self.tp.partition}: {', '.join(older)} hold(s) offsets before "
                f"{first}, the window's first record, which this run cannot copy again (removed from Kafka by "
                f"retention, or stamped outside the window in Kafka time); none of its files was deleted. Leave this "
                f"window as it is, or move those files away and re-run it")
        for path, _ in doomed:
            self.store.delete(path)
        log.info("Windowed run: deleted %d committed file(s) of %s-%d in %s", len(doomed), self.tp.topic,
                 self.tp.partition, ", ".join(self.window_partitions))

    def _committed_in_window(self) -> list[tuple[str, CommittedFile]]:
        """(path, parsed name) of this partition's committed files directly in the window's directories."""
        found = []
        for encoded in self.window_partitions:
            directory = self.store.path(self.settings.topics_dir,
                                        self.partitioner.partitioned_path(self.tp.topic, encoded))
            for path in self.store.list_files(directory):
                name = parse_committed_name(posixpath.basename(path))
                if posixpath.dirname(path) == directory and name is not None and name.topic_partition == self.tp:
                    found.append((path, name))
        return found


def window_partitions(partitioner: Partitioner, window: TimeWindow, values: Mapping[str, Any]) -> list[str]:
    """The encoded partitions a windowed run overwrites; ConfigError (key, value, fix) if it cannot.

    The window must map to whole directories: a TimeBasedPartitioner on record time, a window
    of whole buckets, and a ``path.format`` that prints no directory shared with a bucket
    outside the window.
    """
    if not isinstance(partitioner, TimeBasedPartitioner):
        raise ConfigError.for_key(PARTITIONER_CLASS_CONFIG, values.get(PARTITIONER_CLASS_CONFIG), _OVERWRITE_FIX)
    if isinstance(partitioner.extractor, WallclockTimestampExtractor):
        raise ConfigError.for_key(TIMESTAMP_EXTRACTOR_CONFIG, values.get(TIMESTAMP_EXTRACTOR_CONFIG),
                                  "windowed (backfill) runs overwrite the directories of the records' own time; "
                                  "the wall clock would put a past window in today's: set "
                                  "timestamp.extractor=Record (or RecordField)")
    for key, at in ((WINDOW_START_MS_CONFIG, window.start_ms), (WINDOW_END_MS_CONFIG, window.end_ms)):
        bucket = partitioner.bucket_start(at)
        if bucket != at:
            raise ConfigError.for_key(key, at, f"({_iso(at)}) is inside the bucket starting {_iso(bucket)} "
                                      f"(partition.duration.ms={partitioner.duration_ms}, timezone "
                                      f"{partitioner.zone}): a windowed run overwrites whole directories, so the "
                                      f"window must start and end on bucket boundaries; make the DAG's data "
                                      f"interval a multiple of the bucket, aligned to it")
    inside = partitioner.encoded_between(window.start_ms, window.end_ms)
    shared = {partitioner.encode_timestamp(window.start_ms - 1), partitioner.encode_timestamp(window.end_ms)}
    if inside and shared & set(inside):
        raise ConfigError.for_key(PATH_FORMAT_CONFIG, partitioner.path_format,
                                  f"prints {sorted(shared & set(inside))[0]} for buckets inside and outside the "
                                  f"window, so overwriting it would delete records of other buckets: make "
                                  f"path.format as fine as partition.duration.ms={partitioner.duration_ms}")
    return inside


_OVERWRITE_FIX = ("windowed (backfill) runs overwrite the time-based directories the window covers: set "
                  "partitioner.class=TimeBasedPartitioner (or HourlyPartitioner, DailyPartitioner) with "
                  "timestamp.extractor=Record")


def _iso(epoch_ms: int) -> str:
    return dt.datetime.fromtimestamp(epoch_ms / 1000, dt.UTC).isoformat().replace("+00:00", "Z")


def _by_partition(records: Sequence[SinkRecord]) -> dict[TopicPartition, list[SinkRecord]]:
    groups: dict[TopicPartition, list[SinkRecord]] = defaultdict(list)
    for record in records:
        groups[record.topic_partition].append(record)
    return groups

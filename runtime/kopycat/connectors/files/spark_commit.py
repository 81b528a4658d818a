"""The Spark export's commit protocol: which part files it commits and which committed files it deletes.

``include/spark/kafka_to_files.py`` writes Parquet into ``+tmp/<run id>`` with Spark; this module
decides what of it becomes committed, in the same rounds as the Python storage sink's
``TopicPartitionWriter.commit`` (a manifest first, so either mover rolls back a round the other
left half committed), and, for a windowed run, which committed files it overwrites. It lives in
the package, not in the job, because none of it needs Spark: it drives any store with the
methods of :class:`CommitStore` (the job's Hadoop ``Store``), so it is unit-tested without Spark.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from typing import NamedTuple, Protocol

from kopycat.api.errors import ConnectError
from kopycat.api.records import TopicPartition
from kopycat.api.window import TimeWindow
from kopycat.connectors.files.committed_files import committed_name, parse_committed_name
from kopycat.connectors.files.spark_export import ExportedFile, OffsetRange

__all__ = ["CommitStore", "Piece", "WindowLayout", "check_inside", "commit_pieces", "roll_back_rounds",
           "window_files"]

log = logging.getLogger("kopycat.spark.export")  # the job's logger: its log lines read as before

EXTENSION = "parquet"


class CommitStore(Protocol):
    """The store operations the commit protocol needs; URLs are below the store's URL."""

    def topic_dir(self, topic: str) -> str: ...

    def names_in(self, directory: str) -> list[str]: ...

    def exists(self, url: str) -> bool: ...

    def delete(self, url: str) -> None: ...

    def commit(self, source: str, destination: str) -> None: ...

    def read_text(self, url: str) -> str: ...

    def write_text(self, url: str, text: str) -> None: ...

    def python_path(self, url: str) -> str: ...

    def url_of(self, python_path: str) -> str: ...

    def manifest(self, topic: str, partition: int) -> str: ...


class WindowLayout(Protocol):
    """What the commit protocol reads of the job's ``Layout``: the backfill window and its directories."""

    @property
    def window(self) -> TimeWindow | None: ...

    @property
    def window_dirs(self) -> Sequence[str]: ...


class Piece(NamedTuple):
    """One part file Spark wrote and where it is committed: a Kafka partition's rows of one directory."""

    partition: int
    directory: str
    first: int
    last: int
    rows: int
    source: str


def check_inside(topic: str, pieces: Sequence[Piece], ranges: Sequence[OffsetRange]) -> dict[int, int]:
    """Each partition's range end, once every piece is known to lie inside its partition's range.

    Spark's Kafka source reads exactly ``endingOffsets``; a piece outside them (a changed source)
    would commit offsets this run was not given (for a window: see kopycat.runtime.run_range.BackfillWindow).
    """
    bounds = {r.partition: r for r in ranges}
    outside = [p for p in pieces if p.partition not in bounds
               or not bounds[p.partition].start <= p.first <= p.last < bounds[p.partition].end]
    if outside:
        raise ConnectError(f"Spark read offsets of {topic} outside the ranges it was given: "
                           f"{', '.join(f'[{p.partition}] {p.first}..{p.last}' for p in outside)} not in "
                           f"{', '.join(f'[{r.partition}] [{r.start}, {r.end})' for r in ranges)}; nothing was "
                           f"committed")
    return {partition: r.end for partition, r in bounds.items()}


def commit_pieces(store: CommitStore, topic: str, pieces: Sequence[Piece], layout: WindowLayout,
                  ends: Mapping[int, int]) -> list[ExportedFile]:
    """Commit each Kafka partition's files as one round, as the Python sink's ``TopicPartitionWriter.commit``.

    A round of several files first writes the manifest the Python sink writes (their committed
    paths), renames them, then deletes it; a crash in between leaves the manifest, and the next
    run of either mover deletes the round's files (:func:`roll_back_rounds`), so the greatest
    committed end offset stays a true resume point. A window first deletes each partition's
    committed files in its directories that the range it read (ending at ``ends[partition]``)
    covers (:func:`window_files`), after checking every partition.
    """
    by_partition: dict[int, list[Piece]] = {}
    for piece in pieces:
        by_partition.setdefault(piece.partition, []).append(piece)
    if layout.window is not None:
        doomed = {p: window_files(store, topic, p, min(x.first for x in ps), ends[p], layout)
                  for p, ps in sorted(by_partition.items())}
    files: list[ExportedFile] = []
    for partition, round_pieces in sorted(by_partition.items()):
        if layout.window is not None:
            for url in doomed[partition]:
                store.delete(url)
            log.info("windowed run: deleted %d committed file(s) of %s-%d in %s", len(doomed[partition]), topic,
                     partition, ", ".join(layout.window_dirs))
        files += _commit_round(store, topic, partition, sorted(round_pieces, key=lambda x: x.first))
    return files


def _commit_round(store: CommitStore, topic: str, partition: int, pieces: list[Piece]) -> list[ExportedFile]:
    staged = [(piece, f"{store.topic_dir(topic)}/{piece.directory}/"
                      f"{committed_name(topic, partition, piece.first, piece.last, EXTENSION)}") for piece in pieces]
    manifest = store.manifest(topic, partition) if len(staged) > 1 else None
    if manifest is not None:
        store.write_text(manifest, json.dumps({"files": [store.python_path(final) for _, final in staged]}))
    files = []
    for piece, final in staged:
        store.commit(piece.source, final)
        files.append(ExportedFile(topic, partition, piece.first, piece.last, piece.rows, final))
        log.info("committed %s (%s rows)", final, piece.rows)
    if manifest is not None:
        store.delete(manifest)
    return files


def window_files(store: CommitStore, topic: str, partition: int, first: int, end: int,
                 layout: WindowLayout) -> list[str]:
    """The partition's committed files in the window's directories below ``end``, to delete; refuse to lose data.

    As the storage sink's ``WindowedPartitionWriter``: a file there starting before the window's
    first record of the partition holds records this run cannot write again (gone from Kafka by
    retention): nothing is deleted and the run fails, its files left in ``+tmp``. Files from
    ``end`` on (the live position: see kopycat.runtime.run_range.BackfillWindow) stay; one holding
    offsets on both sides of it fails the run the same way.
    """
    doomed, older, across = [], [], []
    for directory in layout.window_dirs:
        for name in store.names_in(f"{store.topic_dir(topic)}/{directory}"):
            committed = parse_committed_name(name)
            if committed is None or committed.topic_partition != TopicPartition(topic, partition):
                continue
            url = f"{store.topic_dir(topic)}/{directory}/{name}"
            if committed.start_offset >= end:
                continue
            (older if committed.start_offset < first else across if committed.end_offset >= end else doomed).append(url)
    if older:
        raise ConnectError(f"Windowed run of {topic}-{partition}: {', '.join(older)} hold(s) offsets before {first}, "
                           f"the window's first record, which this run cannot copy again (removed from Kafka by "
                           f"retention); none of its files was deleted. Leave this window as it is, or move those "
                           f"files away and re-run it")
    if across:
        raise ConnectError(f"Windowed run of {topic}-{partition}: {', '.join(across)} hold(s) offsets on both sides "
                           f"of {end}, where this run stops; none of its files was deleted. Plan the window again: "
                           f"a live run has committed past the ranges it was given")
    return doomed


def roll_back_rounds(store: CommitStore, topic: str, partitions: Sequence[int]) -> None:
    """Delete the committed files of a round an interrupted run left half committed (the Python sink's too)."""
    for partition in partitions:
        manifest = store.manifest(topic, partition)
        if not store.exists(manifest):
            continue
        paths = json.loads(store.read_text(manifest))["files"]
        for path in paths:
            store.delete(store.url_of(path))
        store.delete(manifest)
        log.warning("rolled back a partly committed round of %s-%d: deleted %s", topic, partition,
                    ", ".join(path.rsplit("/", 1)[-1] for path in paths))

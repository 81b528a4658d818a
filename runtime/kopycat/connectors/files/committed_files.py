"""Names of committed files: the sink's offsets live in them (exactly-once, DESIGN.md §3).

A committed file is named ``<topic>+<partition>+<startOffset>+<endOffset>.<ext>`` with both
offsets inclusive and zero-padded to 10 digits, as Confluent's HDFS connector names them
(``FileUtils.committedFileName``, ``filename.offset.zero.pad.width=10``). Padding makes names
sort in offset order; offsets wider than 10 digits are written in full, never truncated.

The Python sink and the Spark job share this module, so whichever wrote a range, the other
resumes behind it: on start a writer seeks every partition to the greatest end offset + 1
found in the names (:func:`next_offsets`), not to the consumer group's offset.

Files being written live under ``+tmp`` directories, which are never read as committed.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

from kopycat.api.records import TopicPartition

__all__ = [
    "OFFSET_PAD_WIDTH", "TEMP_DIR", "CommittedFile", "committed_name", "next_offsets", "split_temp_paths",
    "parse_committed_name",
]

OFFSET_PAD_WIDTH: Final = 10
TEMP_DIR: Final = "+tmp"
"""Directory (under the topic's directory) of files not yet committed; Confluent's name."""

_NAME: Final = re.compile(r"^(?P<topic>[^+/]+)\+(?P<partition>\d+)\+(?P<start>\d+)\+(?P<end>\d+)"
                          r"\.(?P<extension>[A-Za-z0-9]+(?:\.[A-Za-z0-9]+)*)$")


@dataclass(frozen=True, slots=True)
class CommittedFile:
    """One committed file's name, taken apart: records ``start..end`` (inclusive) of a partition."""

    topic: str
    partition: int
    start_offset: int
    end_offset: int
    extension: str

    @property
    def topic_partition(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)

    @property
    def name(self) -> str:
        return committed_name(self.topic, self.partition, self.start_offset, self.end_offset,
                              self.extension)


def committed_name(topic: str, partition: int, start_offset: int, end_offset: int,
                   extension: str) -> str:
    """``orders+3+0000000100+0000000199.parquet`` for offsets 100..199 of ``orders`` partition 3."""
    if not 0 <= start_offset <= end_offset:
        raise ValueError(f"A committed file holds offsets start <= end, got {start_offset}..{end_offset}")
    width = OFFSET_PAD_WIDTH
    return f"{topic}+{partition}+{start_offset:0{width}d}+{end_offset:0{width}d}.{extension.lstrip('.')}"


def parse_committed_name(name: str) -> CommittedFile | None:
    """The parts of a committed file's base name, or None for any other file.

    Kafka topic names cannot contain ``+`` (only ``[a-zA-Z0-9._-]``), so the name splits
    unambiguously.
    """
    match = _NAME.match(name)
    if match is None:
        return None
    start, end = int(match["start"]), int(match["end"])
    if start > end:
        return None
    return CommittedFile(match["topic"], int(match["partition"]), start, end, match["extension"])


def next_offsets(base_names: Iterable[str]) -> dict[TopicPartition, int]:
    """For each partition with committed files, the offset after the greatest end offset."""
    offsets: dict[TopicPartition, int] = {}
    for base_name in base_names:
        committed = parse_committed_name(base_name)
        if committed is None:
            continue
        tp = committed.topic_partition
        if committed.end_offset + 1 > offsets.get(tp, 0):
            offsets[tp] = committed.end_offset + 1
    return offsets


def split_temp_paths(paths: Iterable[str]) -> tuple[list[str], list[str]]:
    """A store listing as (committed-looking paths, paths under a ``+tmp`` directory): the first hold
    the resume point (:func:`next_offsets`), the second are never read as committed."""
    committed: list[str] = []
    temps: list[str] = []
    marker = f"/{TEMP_DIR}/"
    for path in paths:
        (temps if marker in path else committed).append(path)
    return committed, temps

"""The Spark export's offset ranges: the JSON the job takes, resuming behind committed files, live ends.

Ranges are JSON ``{"orders": {"0": [100, 250]}}`` (start inclusive, end exclusive, like Spark's
``startingOffsets``/``endingOffsets``): :func:`ranges_to_json`, :func:`ranges_from_json`, and
:func:`resume_ranges`, which starts every partition behind the files already committed (the names
in :mod:`committed_files`), so a retried job never writes a record twice; a window's ranges end at
each partition's live position (:func:`live_positions`, :func:`end_at_live_positions`);
:func:`spark_offsets` turns them into the Kafka source's options. :mod:`spark_export` exports them too.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kopycat.api.errors import ConfigError
from kopycat.api.records import TopicPartition
from kopycat.connectors.files.committed_files import next_offsets

__all__ = ["OffsetRange", "end_at_live_positions", "live_positions", "ranges_from_json", "ranges_to_json",
           "resume_ranges", "spark_offsets"]


@dataclass(frozen=True, slots=True, order=True)
class OffsetRange:
    """Offsets ``start`` (inclusive) to ``end`` (exclusive) of one topic-partition."""

    topic: str
    partition: int
    start: int
    end: int

    @property
    def topic_partition(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)

    @property
    def empty(self) -> bool:
        return self.start >= self.end


def ranges_to_json(ranges: Iterable[OffsetRange]) -> str:
    """``{"orders": {"0": [100, 250]}}``: compact, topics and partitions sorted."""
    nested: dict[str, dict[str, list[int]]] = {}
    for r in sorted(ranges):
        nested.setdefault(r.topic, {})[str(r.partition)] = [r.start, r.end]
    return json.dumps(nested, separators=(",", ":"))


def ranges_from_json(text: str) -> list[OffsetRange]:
    """Parse :func:`ranges_to_json`'s shape; a ConfigError names the bad entry and the shape."""
    shape = 'expected {"<topic>": {"<partition>": [<start>, <end exclusive>]}}'
    try:
        nested = json.loads(text)
    except ValueError as exc:
        raise ConfigError.for_key("ranges", text[:80], f"not JSON ({exc}); {shape}") from None
    if not isinstance(nested, dict) or not nested:
        raise ConfigError.for_key("ranges", text[:80], f"no topics; {shape}")
    ranges = []
    for topic, partitions in nested.items():
        if not isinstance(partitions, dict):
            raise ConfigError.for_key("ranges", topic, f"topic {topic!r} maps to no partitions; {shape}")
        for partition, bounds in partitions.items():
            ranges.append(_range(topic, partition, bounds, shape))
    return sorted(ranges)


def _range(topic: str, partition: str, bounds: Any, shape: str) -> OffsetRange:
    where = f"{topic}[{partition}]"
    if not str(partition).isdigit():
        raise ConfigError.for_key("ranges", where, f"partition {partition!r} is not a number; {shape}")
    if (not isinstance(bounds, list) or len(bounds) != 2
            or not all(isinstance(b, int) and not isinstance(b, bool) for b in bounds)):
        raise ConfigError.for_key("ranges", where, f"{bounds!r} is not [start, end]; {shape}")
    start, end = bounds
    if not 0 <= start <= end:
        raise ConfigError.for_key("ranges", where, f"needs 0 <= start <= end, got [{start}, {end}]")
    return OffsetRange(topic, int(partition), start, end)


def resume_ranges(ranges: Iterable[OffsetRange],
                  committed_names: Iterable[str]) -> tuple[list[OffsetRange], list[OffsetRange]]:
    """Split ``ranges`` into what is left to read and what earlier runs already committed.

    Each range starts at ``max(start, greatest committed end offset + 1)``, the seek Confluent's
    storage connectors do on start. Returns ``(to_read, committed)``; a range partly committed
    appears shortened in ``to_read`` and not in ``committed``.
    """
    after = next_offsets(committed_names)
    to_read, committed = [], []
    for r in sorted(ranges):
        start = max(r.start, after.get(r.topic_partition, 0))
        resumed = OffsetRange(r.topic, r.partition, min(start, r.end), r.end)
        (committed if resumed.empty else to_read).append(resumed if not resumed.empty else r)
    return to_read, committed


def live_positions(partitions: Iterable[TopicPartition], committed_names: Iterable[str],
                   group_offsets: Mapping[TopicPartition, int]) -> dict[TopicPartition, int]:
    """Each partition's live position, the offset a live run resumes from, where the store or group tells it.

    The offset after the partition's greatest committed end offset (where :func:`resume_ranges`
    and the Python sink's recovery resume), else the group's committed offset (negative: none).
    A partition with neither is left out: a live run would start it by ``auto.offset.reset``.
    """
    after = next_offsets(committed_names)
    live = {}
    for tp in partitions:
        offset = after.get(tp, group_offsets.get(tp, -1))
        if offset >= 0:
            live[tp] = offset
    return live


def end_at_live_positions(ranges: Iterable[OffsetRange], live: Mapping[TopicPartition, int]) -> list[OffsetRange]:
    """A windowed run's ``ranges``, each ending at its partition's live position (``live``) when that is
    sooner (see kopycat.runtime.run_range.BackfillWindow). A range starting at/after it becomes empty.
    """
    capped = []
    for r in sorted(ranges):
        end = min(r.end, live.get(r.topic_partition, r.end))
        capped.append(OffsetRange(r.topic, r.partition, min(r.start, end), end))
    return capped


def spark_offsets(ranges: Sequence[OffsetRange]) -> dict[str, str]:
    """Spark Kafka source options reading exactly ``ranges`` (one topic or several)."""
    assign: dict[str, list[int]] = {}
    starting: dict[str, dict[str, int]] = {}
    ending: dict[str, dict[str, int]] = {}
    for r in sorted(ranges):
        assign.setdefault(r.topic, []).append(r.partition)
        starting.setdefault(r.topic, {})[str(r.partition)] = r.start
        ending.setdefault(r.topic, {})[str(r.partition)] = r.end
    return {"assign": json.dumps(assign), "startingOffsets": json.dumps(starting),
            "endingOffsets": json.dumps(ending)}

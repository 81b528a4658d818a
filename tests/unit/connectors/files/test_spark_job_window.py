"""The Spark export job's data-safety checks before it deletes or commits files (no Spark, no Kafka).

A windowed run (a backfill) overwrites the window's directories: it deletes the committed files
of the offsets it has just read again and commits its own. It must never delete records it
cannot copy again (a file starting before the window's first record: the rest of it may be
gone from Kafka by retention), nor the live runs' files (from the live position ``end`` on,
or one holding offsets on both sides of it), and one partition's refusal must stop the deletes
of every partition. Nor may the job commit offsets it was not given (``check_inside``): a piece
Spark wrote outside its partition's ``[start, end)`` would, for a window, be the live runs' to copy.

The store is a small in-memory fake with only the methods these functions call.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from kopycat.api.errors import ConnectError
from kopycat.api.records import TopicPartition
from kopycat.connectors.files.committed_files import TEMP_DIR, committed_name
from kopycat.connectors.files.partition_writer import round_manifest_name
from kopycat.connectors.files.spark_commit import Piece, check_inside, commit_pieces, window_files
from kopycat.connectors.files.spark_export import ExportedFile, OffsetRange
from tests.unit.connectors.files.test_spark_export import BERLIN_DAILY, DAY_MS, MIDNIGHT_BERLIN, _job_args, load_job

JOB = load_job()
ROOT = "file:/lake/topics"
TOPIC = "orders"
DAY1, DAY2, DAY3 = "year=2026/month=11/day=21", "year=2026/month=11/day=22", "year=2026/month=11/day=23"
TEMP = f"{ROOT}/{TOPIC}/{TEMP_DIR}/run1"
MANIFEST_0 = f"{ROOT}/{TOPIC}/{TEMP_DIR}/{round_manifest_name(TopicPartition(TOPIC, 0))}"


class FakeStore:
    """Files by URL below ``ROOT``; records every delete and commit."""

    def __init__(self, *urls: str) -> None:
        self.files: dict[str, str] = {url: "" for url in urls}
        self.deleted: list[str] = []
        self.committed: list[tuple[str, str]] = []

    def topic_dir(self, topic: str) -> str:
        return f"{ROOT}/{topic}"

    def names_in(self, directory: str) -> list[str]:
        prefix = f"{directory}/"
        names = [url[len(prefix):] for url in self.files if url.startswith(prefix)]
        return sorted(name for name in names if "/" not in name)

    def delete(self, url: str) -> None:
        self.deleted.append(url)
        for name in [u for u in self.files if u == url or u.startswith(f"{url}/")]:
            del self.files[name]

    def commit(self, source: str, destination: str) -> None:
        assert destination not in self.files, destination
        self.files[destination] = self.files.pop(source)
        self.committed.append((source, destination))

    def manifest(self, topic: str, partition: int) -> str:
        return f"{self.topic_dir(topic)}/{TEMP_DIR}/{round_manifest_name(TopicPartition(topic, partition))}"

    def write_text(self, url: str, text: str) -> None:
        self.files[url] = text

    def python_path(self, url: str) -> str:
        return url


def window_layout() -> Any:
    """The job's Layout of a Berlin daily window over 2026-11-21 and 22 (DAY1, DAY2)."""
    args = JOB.parse_args(_job_args("--partitioner", json.dumps(BERLIN_DAILY),
                                    "--window", f"{MIDNIGHT_BERLIN},{MIDNIGHT_BERLIN + 2 * DAY_MS}"))
    return JOB.Layout.of(args)


def at(directory: str, partition: int, start: int, end: int, topic: str = TOPIC) -> str:
    """The URL of a committed file of records ``start..end`` (inclusive) in ``directory``."""
    return f"{ROOT}/{TOPIC}/{directory}/{committed_name(topic, partition, start, end, 'parquet')}"


def piece(partition: int, first: int, last: int, directory: str = DAY1) -> Piece:
    source = f"{TEMP}/part-{partition:05d}-{first}.parquet"
    return Piece(partition, directory, first, last, last - first + 1, source)


def test_the_layout_overwrites_the_two_window_days() -> None:
    assert window_layout().window_dirs == [DAY1, DAY2]


# ---------------------------------------------------------------- window_files (first 100, end 200)

def test_a_window_deletes_its_partitions_files_from_its_first_record_to_before_its_end() -> None:
    inside = [at(DAY1, 0, 100, 149), at(DAY2, 0, 150, 199)]
    left_alone = [
        at(DAY1, 1, 0, 99),  # another partition, even one that would be refused as older
        at(DAY1, 0, 0, 99, topic="payments"),  # another topic's name
        at(DAY2, 0, 200, 250),  # the live runs': starts at end
        at(DAY3, 0, 0, 99),  # outside the window's directories
        f"{ROOT}/{TOPIC}/{DAY1}/.{TOPIC}+0+0000000050+0000000099.parquet.crc",
        f"{ROOT}/{TOPIC}/{DAY1}/_SUCCESS",
        f"{ROOT}/{TOPIC}/{DAY1}/notes.txt",
    ]
    store = FakeStore(*inside, *left_alone)
    assert window_files(store, TOPIC, 0, 100, 200, window_layout()) == inside
    assert store.deleted == []


def test_a_window_refuses_to_delete_a_file_that_starts_before_its_first_record() -> None:
    older = at(DAY2, 0, 99, 149)
    store = FakeStore(at(DAY1, 0, 150, 199), older)
    with pytest.raises(ConnectError, match=rf"^Windowed run of orders-0: {re.escape(older)} hold\(s\) offsets "
                                           r"before 100, the window's first record, .*none of its files was deleted"):
        window_files(store, TOPIC, 0, 100, 200, window_layout())
    assert store.deleted == []


def test_a_window_refuses_to_delete_a_file_that_spans_its_end() -> None:
    across = at(DAY2, 0, 150, 200)  # holds offset 200, the live position the run stops at
    store = FakeStore(at(DAY1, 0, 100, 149), across)
    with pytest.raises(ConnectError, match=rf"^Windowed run of orders-0: {re.escape(across)} hold\(s\) offsets on "
                                           r"both sides of 200, where this run stops; none of its files was deleted"):
        window_files(store, TOPIC, 0, 100, 200, window_layout())
    assert store.deleted == []


def test_a_window_names_every_file_it_refuses() -> None:
    older = [at(DAY1, 0, 0, 99), at(DAY2, 0, 50, 120)]
    store = FakeStore(*older, at(DAY1, 0, 100, 149))
    with pytest.raises(ConnectError, match=re.escape(f"orders-0: {older[0]}, {older[1]} hold(s) offsets before 100")):
        window_files(store, TOPIC, 0, 100, 200, window_layout())


# ---------------------------------------------------------------- check_inside

RANGES = [OffsetRange(TOPIC, 0, 100, 200), OffsetRange(TOPIC, 1, 0, 50)]
RANGES_TEXT = r"not in \[0\] \[100, 200\), \[1\] \[0, 50\); nothing was committed$"


def test_pieces_exactly_at_their_ranges_bounds_are_accepted_and_give_the_ranges_ends() -> None:
    pieces = [piece(0, 100, 149), piece(0, 150, 199, DAY2), piece(1, 0, 0), piece(1, 49, 49)]
    assert check_inside(TOPIC, pieces, RANGES) == {0: 200, 1: 50}


@pytest.mark.parametrize(("outside", "named"), [
    (piece(0, 150, 200), r"\[0\] 150\.\.200"),  # last == end: the live runs' offset
    (piece(0, 99, 150), r"\[0\] 99\.\.150"),  # first < start
    (piece(2, 0, 10), r"\[2\] 0\.\.10"),  # a partition the run was not given
], ids=["last-at-end", "first-before-start", "unknown-partition"])
def test_a_piece_outside_its_partitions_range_is_refused_by_name(outside: Any, named: str) -> None:
    with pytest.raises(ConnectError, match=rf"^Spark read offsets of orders outside the ranges it was given: "
                                           rf"{named} {RANGES_TEXT}"):
        check_inside(TOPIC, [piece(0, 100, 149), outside, piece(1, 0, 49)], RANGES)


def test_every_piece_outside_the_ranges_is_listed_and_none_inside() -> None:
    pieces = [piece(0, 100, 199), piece(0, 150, 200, DAY2), piece(1, 40, 50), piece(3, 0, 0)]
    with pytest.raises(ConnectError, match=rf": \[0\] 150\.\.200, \[1\] 40\.\.50, \[3\] 0\.\.0 {RANGES_TEXT}"):
        check_inside(TOPIC, pieces, RANGES)


# ---------------------------------------------------------------- commit_pieces

def test_a_window_deletes_every_partitions_covered_files_then_commits_its_own() -> None:
    covered = [at(DAY1, 0, 100, 149), at(DAY2, 0, 150, 199), at(DAY1, 1, 10, 49)]
    kept = [at(DAY2, 0, 200, 250), at(DAY3, 0, 0, 99), at(DAY1, 1, 50, 60)]
    pieces = [piece(0, 100, 160), piece(0, 161, 199, DAY2), piece(1, 10, 49)]
    store = FakeStore(*covered, *kept, *(p.source for p in pieces))
    files = commit_pieces(store, TOPIC, pieces, window_layout(), {0: 200, 1: 50})
    new = [at(DAY1, 0, 100, 160), at(DAY2, 0, 161, 199), at(DAY1, 1, 10, 49)]
    assert files == [ExportedFile(TOPIC, p.partition, p.first, p.last, p.rows, url)
                     for p, url in zip(pieces, new, strict=True)]
    assert store.deleted == [covered[0], covered[1], MANIFEST_0, covered[2]]
    assert sorted(store.files) == sorted([*kept, *new])


def test_one_partitions_refusal_deletes_and_commits_nothing_in_any_partition() -> None:
    covered = at(DAY1, 0, 100, 149)  # partition 0's: would be deleted
    older = at(DAY2, 1, 0, 9)  # partition 1's window starts at 10
    pieces = [piece(0, 100, 199), piece(1, 10, 49)]
    store = FakeStore(covered, older, *(p.source for p in pieces))
    before = dict(store.files)
    with pytest.raises(ConnectError, match=rf"^Windowed run of orders-1: {re.escape(older)} hold\(s\) offsets "
                                           r"before 10, the window's first record"):
        commit_pieces(store, TOPIC, pieces, window_layout(), {0: 200, 1: 50})
    assert (store.deleted, store.committed, store.files) == ([], [], before)


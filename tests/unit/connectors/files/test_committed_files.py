"""Committed file names: Confluent's zero-padded <topic>+<partition>+<start>+<end>.<ext>."""

from __future__ import annotations

import pytest

from kopycat.api.records import TopicPartition
from kopycat.connectors.files.committed_files import (
    CommittedFile,
    committed_name,
    next_offsets,
    parse_committed_name,
)


def test_names_pad_offsets_to_ten_digits_and_parse_back() -> None:
    name = committed_name("orders.v1", 12, 0, 4_000_000_000, "parquet")
    assert name == "orders.v1+12+0000000000+4000000000.parquet"
    assert parse_committed_name(name) == CommittedFile("orders.v1", 12, 0, 4_000_000_000, "parquet")


def test_offsets_wider_than_the_padding_are_written_in_full() -> None:
    name = committed_name("t", 0, 12_345_678_901, 12_345_678_999, "json")
    assert name == "t+0+12345678901+12345678999.json"
    assert parse_committed_name(name).end_offset == 12_345_678_999  # type: ignore[union-attr]


@pytest.mark.parametrize("name", ["part-0000.parquet", "orders+0+0000000002+0000000001.parquet",
                                  "orders+0+abc+0000000001.parquet", "orders+0+0000000001+0000000002",
                                  "orders+0+c0ffee.parquet"])
def test_other_files_are_not_committed_files(name: str) -> None:
    assert parse_committed_name(name) is None


def test_next_offsets_take_the_greatest_end_per_partition() -> None:
    names = ["a+0+0000000000+0000000009.parquet", "a+0+0000000010+0000000019.parquet",
             "a+1+0000000005+0000000005.json", "b+0+0000000000+0000000000.parquet", "README"]
    assert next_offsets(names) == {TopicPartition("a", 0): 20, TopicPartition("a", 1): 6,
                                   TopicPartition("b", 0): 1}


def test_a_start_after_the_end_is_refused() -> None:
    with pytest.raises(ValueError, match="start <= end"):
        committed_name("t", 0, 5, 4, "parquet")

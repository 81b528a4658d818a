"""KafkaOffsets: a batch's offsets read from its messages when asked, as a list of them would answer."""

from __future__ import annotations

from bisect import bisect_left

from confluent_kafka import Message

from kopycat.runtime.batch_conversion import KafkaOffsets


def offsets_of(numbers: list[int]) -> KafkaOffsets:
    return KafkaOffsets([Message(topic="t", partition=0, offset=o, value=b"v") for o in numbers])


def test_offsets_answer_as_the_list_of_their_messages_offsets() -> None:
    numbers = [10, 11, 13, 14, 20]  # gaps: a compacted topic
    offsets = offsets_of(numbers)
    assert len(offsets) == 5 and list(offsets) == numbers and offsets == numbers and offsets == tuple(numbers)
    assert (offsets[0], offsets[-1], offsets[2]) == (10, 20, 13)
    assert offsets[1:3] == [11, 13] and isinstance(offsets[1:3], KafkaOffsets)
    assert bisect_left(offsets, 14) == 3 and bisect_left(offsets, 15) == 4  # a storage sink's redelivered prefix
    assert offsets != [10, 11, 13, 14] and offsets != "abcde" and 13 in offsets and offsets.index(20) == 4

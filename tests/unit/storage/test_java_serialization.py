"""The Java-serialized HashMap<byte[], byte[]> of Kafka's offsets file, against bytes Kafka wrote.

The fixtures were written by Kafka Connect 4.1.1's own ``FileOffsetBackingStore.set()`` through
``java/FileOffsetsOracle.java`` (see its header for how to regenerate them). Java writes entries
in bucket order, which is arbitrary for ``byte[]`` keys, so the byte-exact checks write the
entries back in the order the fixture holds them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kopycat.storage.java_serialization import (
    JavaSerializationError,
    dump_byte_array_map,
    hash_map_capacity,
    is_java_serialization,
    load_byte_array_map,
)

FIXTURES = Path(__file__).parent / "fixtures"


def fixture(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


def test_one_offset_reads_and_writes_exactly_as_kafka_wrote_it() -> None:
    entries = [(b'["files",{"filename":"/var/log/app.log"}]', b'{"position":4096}')]
    assert load_byte_array_map(fixture("kafka-one-offset.offsets")) == entries
    assert dump_byte_array_map(entries) == fixture("kafka-one-offset.offsets")


def test_an_empty_map_is_written_as_kafka_writes_one() -> None:
    assert load_byte_array_map(fixture("kafka-empty.offsets")) == []
    assert dump_byte_array_map([]) == fixture("kafka-empty.offsets")


def test_a_null_value_reads_as_none_and_writes_as_tc_null() -> None:
    content = fixture("kafka-with-null-value.offsets")
    entries = load_byte_array_map(content)
    assert sorted(entries, key=lambda e: e[0] or b"") == [
        (b'["files",{"filename":"/x"}]', b'{"position":1}'), (b'["files",{"filename":"/y"}]', None)]
    assert dump_byte_array_map(entries) == content


@pytest.mark.parametrize("name", ["kafka-one-offset.offsets", "kafka-empty.offsets",
                                  "kafka-with-null-value.offsets", "kafka-thirteen-offsets.offsets"])
def test_every_kafka_file_round_trips_byte_for_byte(name: str) -> None:
    assert dump_byte_array_map(load_byte_array_map(fixture(name))) == fixture(name)


def test_thirteen_entries_grow_the_recorded_table_to_32_buckets() -> None:
    entries = load_byte_array_map(fixture("kafka-thirteen-offsets.offsets"))
    assert sorted(value for _, value in entries) == sorted(
        b'{"position":%d}' % (i * 100) for i in range(1, 14))
    assert hash_map_capacity(13) == (32, 24)


@pytest.mark.parametrize(("size", "capacity", "threshold"), [
    (0, 16, 0), (1, 16, 12), (12, 16, 12), (13, 32, 24), (24, 32, 24), (25, 64, 48), (100, 256, 192)])
def test_capacity_and_threshold_follow_hash_map_resizing(size: int, capacity: int, threshold: int) -> None:
    assert hash_map_capacity(size) == (capacity, threshold)


def test_binary_and_empty_arrays_survive_a_round_trip() -> None:
    entries: list[tuple[bytes, bytes | None]] = [(b"\xff\x00", b""), (b"", b"\x01" * 70_000), (b"k", None)]
    content = dump_byte_array_map(entries)
    assert is_java_serialization(content)
    assert load_byte_array_map(content) == entries


def test_a_reference_to_an_earlier_array_reads_as_that_array() -> None:
    content = bytearray(dump_byte_array_map([(b"key", b"value")]))
    value_at = content.rindex(b"\x75\x71\x00\x7e\x00\x02")  # the value: TC_ARRAY, TC_REFERENCE [B
    content[value_at:-1] = b"\x71\x00\x7e\x00\x03"  # TC_REFERENCE to the key array (handle 3)
    assert load_byte_array_map(bytes(content)) == [(b"key", b"key")]


def test_a_truncated_stream_says_so() -> None:
    content = fixture("kafka-one-offset.offsets")
    with pytest.raises(JavaSerializationError, match=r"ends at byte 120 inside a byte\[\] of 41 bytes.*truncated"):
        load_byte_array_map(content[:120])


def test_another_serialized_class_is_named() -> None:
    content = dump_byte_array_map([]).replace(b"\x00\x11java.util.HashMap", b"\x00\x11java.util.TreeMa_")
    with pytest.raises(JavaSerializationError, match=r"serialized java\.util\.TreeMa_, not a java\.util\.HashMap"):
        load_byte_array_map(content)


def test_string_keys_are_not_byte_arrays() -> None:
    content = dump_byte_array_map([(b"k", b"v")])
    start = content.index(b"\x75\x72")
    broken = content[:start] + b"\x74\x00\x01k" + content[start:]
    with pytest.raises(JavaSerializationError, match=r"TC_STRING at byte \d+ where a byte\[\] key or value"):
        load_byte_array_map(broken)


def test_trailing_bytes_are_refused() -> None:
    with pytest.raises(JavaSerializationError, match=r"3 bytes follow the map"):
        load_byte_array_map(dump_byte_array_map([]) + b"abc")


def test_other_content_is_not_java_serialization() -> None:
    assert not is_java_serialization(b'{"format": "kopycat.file-offsets"}')
    with pytest.raises(JavaSerializationError, match=r"starts with '7b 22 66 6f'"):
        load_byte_array_map(b'{"format": "kopycat.file-offsets"}')


def test_a_reference_to_something_other_than_an_array_is_refused() -> None:
    content = bytearray(dump_byte_array_map([(b"key", b"value")]))
    value_at = content.rindex(b"\x75\x71\x00\x7e\x00\x02")
    content[value_at:-1] = b"\x71\x00\x7e\x00\x01"  # TC_REFERENCE to the map itself
    with pytest.raises(JavaSerializationError,
                       match=r"TC_REFERENCE at byte \d+ to handle 0x7E0001, which is not a byte\[\]"):
        load_byte_array_map(bytes(content))

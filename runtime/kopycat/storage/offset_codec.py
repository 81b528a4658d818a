"""The offsets topic's wire format, byte for byte as Kafka Connect writes it.

A source offset is stored as one record (DESIGN.md §2, "Offsets topic"):

- key: ``["<connector>",{source partition}]``, value: ``{source offset}``, both written by
  Kafka Connect's ``JsonConverter`` with ``schemas.enable=false`` (``OffsetStorageWriter``
  wraps the partition as ``Arrays.asList(namespace, partition)``); a null value (tombstone)
  deletes the offset;
- partitioned by the Java producer's default partitioner: ``toPositive(murmur2(key)) %
  numPartitions`` (Kafka's ``BuiltInPartitioner.partitionForKey``).

A Java worker finds an offset by the *bytes* of the key it serializes itself, so the partition
map's keys must come out in the order its ``Map`` iterates them. Connectors build partitions
as ``java.util.HashMap`` (JDBC's ``OffsetProtocols``, MirrorMaker's ``MirrorUtils.wrapPartition``)
or single-entry maps (FileStreamSource), so maps are written in HashMap iteration order
(:func:`java_hash_map_order`). ``JsonConverter`` copies a map into a Jackson ``ObjectNode``
(a ``LinkedHashMap``), which keeps that order. On the way back any order is accepted:
:func:`canonical_key` gives one identity to keys that differ only in map order.

Values are written by :class:`kopycat.converters.json.JsonConverter` (schemaless), which writes
numbers and escapes as Jackson does, characters outside the BMP as escaped surrogate pairs.
Offsets may only
hold primitives (Kafka's ``OffsetUtils.validateFormat``): str, int (Java long range), float,
bool, bytes, None. Golden tests compare with bytes captured from Kafka 4.1.1's JsonConverter.
"""

from __future__ import annotations

import functools
import logging
import struct
from collections.abc import Iterable, Mapping
from typing import Any, Final

import orjson

from kopycat.api.errors import DataError
from kopycat.storage.internal_topic_codec import internal_converter

__all__ = [
    "canonical_key", "decode_key", "decode_value", "default_partition", "encode_key",
    "encode_value", "java_hash_map_order", "java_ordered",
    "java_string_hash", "murmur2", "to_positive", "validate_format",
]

log = logging.getLogger(__name__)

_MASK32: Final = 0xFFFFFFFF
_LONG_MIN: Final = -(2**63)
_LONG_MAX: Final = 2**63 - 1
_PRIMITIVES: Final = (str, bool, int, float, bytes, bytearray)

# java.util.HashMap's constants (OpenJDK 8 and later; unchanged through JDK 25).
DEFAULT_INITIAL_CAPACITY: Final = 16
_LOAD_FACTOR: Final = 0.75
_TREEIFY_THRESHOLD: Final = 8
_MIN_TREEIFY_CAPACITY: Final = 64
_MAXIMUM_CAPACITY: Final = 1 << 30


def _int32(value: int) -> int:
    """The signed 32-bit int with the low 32 bits of ``value`` (Java int overflow)."""
    value &= _MASK32
    return value - (1 << 32) if value & 0x80000000 else value


# ------------------------------------------------------------------------------- Java hashing

def java_string_hash(text: str) -> int:
    """``String.hashCode()``: ``s[0]*31^(n-1) + ... + s[n-1]`` over UTF-16 code units, as int.

    Characters outside the BMP count as their two surrogates, as in Java.
    """
    units = text.encode("utf-16-be", "surrogatepass")
    h = 0
    for (unit,) in struct.iter_unpack(">H", units):
        h = (31 * h + unit) & _MASK32
    return _int32(h)


def _spread(h: int) -> int:
    """``HashMap.hash``: ``h ^ (h >>> 16)``, as an unsigned 32-bit value for indexing."""
    h &= _MASK32
    return h ^ (h >> 16)


def _table_size_for(capacity: int) -> int:
    """``HashMap.tableSizeFor``: the smallest power of two >= capacity (at least 1)."""
    size = 1
    while size < capacity and size < _MAXIMUM_CAPACITY:
        size <<= 1
    return size


@functools.lru_cache(maxsize=4096)
def _hash_map_order(keys: tuple[str, ...], initial_capacity: int | None) -> tuple[str, ...]:
    # A step-by-step replay of HashMap.putVal/resize/treeifyBin for string keys:
    # the table is a list of bins, each bin a list of (spread hash, key) in linked-list order.
    capacity = 0
    threshold = 0 if initial_capacity is None else _table_size_for(initial_capacity)
    table: list[list[tuple[int, str]]] = []
    size = 0
    treeified = False

    def resize() -> None:  # HashMap.resize(): double, split each bin keeping relative order
        nonlocal capacity, threshold, table
        if capacity > 0:
            new_capacity = capacity << 1
            new_threshold = threshold << 1 if capacity >= DEFAULT_INITIAL_CAPACITY else 0
        elif threshold > 0:  # initial capacity was placed in threshold
            new_capacity, new_threshold = threshold, 0
        else:
            new_capacity = DEFAULT_INITIAL_CAPACITY
            new_threshold = int(DEFAULT_INITIAL_CAPACITY * _LOAD_FACTOR)
        if new_threshold == 0:
            new_threshold = int(new_capacity * _LOAD_FACTOR)
        new_table: list[list[tuple[int, str]]] = [[] for _ in range(new_capacity)]
        for bin_ in table:
            for node in bin_:
                new_table[node[0] & (new_capacity - 1)].append(node)
        capacity, threshold, table = new_capacity, new_threshold, new_table

    for key in dict.fromkeys(keys):
        if capacity == 0:
            resize()
        h = _spread(java_string_hash(key))
        bin_ = table[h & (capacity - 1)]
        bin_.append((h, key))
        if len(bin_) > _TREEIFY_THRESHOLD:  # putVal: binCount >= TREEIFY_THRESHOLD - 1
            if capacity < _MIN_TREEIFY_CAPACITY:
                resize()  # treeifyBin resizes small tables instead
            else:
                treeified = True
        size += 1
        if size > threshold:
            resize()
    if treeified:
        log.warning("A map of %d keys puts more than %d keys in one HashMap bin; Java turns that bin "
                    "into a tree whose iteration order is not modelled here, so a Java worker may "
                    "serialize this partition differently: %s", len(keys), _TREEIFY_THRESHOLD, keys)
    return tuple(key for bin_ in table for _, key in bin_)


def java_hash_map_order(keys: Iterable[str], initial_capacity: int | None = None) -> list[str]:
    """The order a ``java.util.HashMap`` iterates string keys put in this (insertion) order.

    ``initial_capacity=None`` is ``new HashMap<>()``; a number is ``new HashMap<>(n)``.
    Iteration goes bin by bin, bin index ``(h ^ (h >>> 16)) & (capacity - 1)`` of
    ``String.hashCode``; within a bin, nodes keep insertion order (resizes split bins without
    reordering). The capacity grows from 16 (or ``tableSizeFor(n)``) by doubling whenever the
    size passes capacity * 0.75, or when a bin reaches 9 nodes in a table smaller than 64.
    Bins that Java turns into trees (9+ colliding keys in a table of 64 or more) are not modelled:
    a warning is logged and list order is kept.
    """
    return list(_hash_map_order(tuple(keys), initial_capacity))


def java_ordered(mapping: Mapping[str, Any], initial_capacity: int | None = None) -> dict[str, Any]:
    """A copy of ``mapping`` whose keys iterate as Java's HashMap would hold them."""
    if len(mapping) < 2:
        return dict(mapping)
    return {key: mapping[key] for key in _hash_map_order(tuple(mapping), initial_capacity)}


def murmur2(data: bytes) -> int:
    """Kafka's ``Utils.murmur2``: 32-bit MurmurHash2, seed 0x9747b28c, as a signed int."""
    m, r = 0x5BD1E995, 24
    length = len(data)
    h = (0x9747B28C ^ length) & _MASK32
    whole = length & ~3
    for (k,) in struct.iter_unpack("<I", data[:whole]):
        k = (k * m) & _MASK32
        k ^= k >> r
        k = (k * m) & _MASK32
        h = ((h * m) & _MASK32) ^ k
    tail = length & 3
    if tail == 3:
        h ^= data[whole + 2] << 16
    if tail >= 2:
        h ^= data[whole + 1] << 8
    if tail >= 1:
        h ^= data[whole]
        h = (h * m) & _MASK32
    h ^= h >> 13
    h = (h * m) & _MASK32
    h ^= h >> 15
    return _int32(h)


def to_positive(number: int) -> int:
    """Kafka's ``Utils.toPositive``: clear the sign bit (not ``abs``: MIN_VALUE maps to 0)."""
    return number & 0x7FFFFFFF


def default_partition(key: bytes, num_partitions: int) -> int:
    """The partition Java's default partitioner picks for a non-null key."""
    return to_positive(murmur2(key)) % num_partitions


# -------------------------------------------------------------------------------- JSON codec

def validate_format(data: Any, what: str = "offset") -> None:
    """Kafka's ``OffsetUtils.validateFormat``: None, or a map of string keys to primitives.

    Also refuses ints outside Java's long range, which a Java worker could not read back.
    """
    if data is None:
        return
    if not isinstance(data, Mapping):
        raise DataError(f"Source {what}s must be specified as a dict (Kafka Connect: Map), got "
                        f"{type(data).__name__}: {data!r}")
    for key, value in data.items():
        if not isinstance(key, str):
            raise DataError(f"Source {what}s may only use str keys, got {key!r} in {dict(data)!r}")
        if value is None:
            continue
        if not isinstance(value, _PRIMITIVES):
            raise DataError(f"Source {what}s may only contain primitive types as values (str, int, "
                            f"float, bool, bytes), but field {key!r} contains "
                            f"{type(value).__name__}: {value!r}")
        if isinstance(value, int) and not isinstance(value, bool) and not _LONG_MIN <= value <= _LONG_MAX:
            raise DataError(f"Source {what} field {key!r} holds {value}, outside Java's long range; "
                            f"a Kafka Connect worker could not read it back")


def encode_key(connector: str, partition: Mapping[str, Any] | None,
               initial_capacity: int | None = None) -> bytes:
    """The offsets-topic key bytes for a connector's source partition.

    ``initial_capacity`` only matters to match a Java connector that presizes its HashMap.
    """
    validate_format(partition, "partition")
    ordered = None if partition is None else java_ordered(partition, initial_capacity)
    data = internal_converter().from_connect_data(connector, None, [connector, ordered])
    assert data is not None  # a list is never a tombstone
    return data


def encode_value(offset: Mapping[str, Any] | None, initial_capacity: int | None = None) -> bytes | None:
    """The offsets-topic value bytes; None (a tombstone) for a None offset."""
    validate_format(offset, "offset")
    if offset is None:
        return None
    data = internal_converter().from_connect_data("", None, java_ordered(offset, initial_capacity))
    assert data is not None
    return data


def decode_key(data: bytes) -> tuple[str, dict[str, Any] | None]:
    """``(connector, partition)`` from key bytes, any map order (``OffsetUtils.processPartitionKey``).

    Raises DataError naming the expected shape when the bytes are not such a key.
    """
    value = internal_converter().to_connect_data("", data).value
    if not (isinstance(value, list) and len(value) == 2 and isinstance(value[0], str)
            and (value[1] is None or isinstance(value[1], dict))):
        raise DataError(f'An offsets key must be a JSON array ["<connector>", {{partition}}], '
                        f"got {bytes(data)[:200]!r}")
    return value[0], value[1]


def decode_value(data: bytes | None) -> dict[str, Any] | None:
    """The offset dict from value bytes; None for a tombstone (or the JSON ``null``)."""
    if data is None:
        return None
    value = internal_converter().to_connect_data("", data).value
    if value is not None and not isinstance(value, dict):
        raise DataError(f"An offsets value must be a JSON object, got {bytes(data)[:200]!r}")
    return value


def canonical_key(data: bytes) -> bytes | None:
    """One identity for keys that differ only in map key order; None if not an offsets key.

    ``1`` and ``1.0`` or ``true`` stay different, as ``Long``, ``Double`` and ``Boolean`` are
    different keys to a Java worker.
    """
    try:
        connector, partition = decode_key(data)
    except DataError:
        return None
    return orjson.dumps([connector, partition], option=orjson.OPT_SORT_KEYS)

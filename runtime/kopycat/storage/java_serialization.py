"""Java object serialization of one object graph: a ``java.util.HashMap<byte[], byte[]>``.

Kafka Connect's standalone worker keeps its offsets file as exactly that graph:
``FileOffsetBackingStore.save()`` copies its table into a ``new HashMap<byte[], byte[]>()`` and
writes it with ``ObjectOutputStream.writeObject``; ``load()`` reads it back with
``SafeObjectInputStream.readObject``. This module reads and writes that stream and nothing else,
following the Java Object Serialization Stream Protocol (``java.io.ObjectStreamConstants``) and
``HashMap.writeObject``/``readObject``::

    AC ED 00 05                         stream magic and version
    73 72 <"java.util.HashMap"> <suid>  TC_OBJECT, TC_CLASSDESC (flags SC_SERIALIZABLE|SC_WRITE_METHOD)
       03 00 02 F loadFactor I threshold  its two serializable fields, then
       78 70                            TC_ENDBLOCKDATA (no annotation), TC_NULL (no serializable super)
    3F400000 <threshold>                the field values (loadFactor 0.75f)
    77 08 <capacity> <size>             TC_BLOCKDATA written by HashMap.writeObject
    <key> <value> ...                   size pairs: TC_ARRAY of [B (its class descriptor the first
                                        time, TC_REFERENCE to it after), or TC_NULL
    78                                  TC_ENDBLOCKDATA

Every class descriptor and object gets the next handle from 0x7E0000 in stream order, so the
HashMap's descriptor is 0x7E0000, the map 0x7E0001, ``[B``'s descriptor 0x7E0002, then one
handle per array. Entries come out in the order given (Java writes its bucket order, which for
``byte[]`` keys follows identity hashes, so no order is canonical and Kafka accepts any).
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from typing import Final, TypeVar

__all__ = ["JavaSerializationError", "dump_byte_array_map", "is_java_serialization", "load_byte_array_map"]

STREAM_HEADER: Final = b"\xac\xed\x00\x05"

TC_NULL: Final = 0x70
TC_REFERENCE: Final = 0x71
TC_CLASSDESC: Final = 0x72
TC_OBJECT: Final = 0x73
TC_STRING: Final = 0x74
TC_ARRAY: Final = 0x75
TC_BLOCKDATA: Final = 0x77
TC_ENDBLOCKDATA: Final = 0x78
BASE_WIRE_HANDLE: Final = 0x7E0000

SC_WRITE_METHOD: Final = 0x01
SC_SERIALIZABLE: Final = 0x02

HASH_MAP: Final = "java.util.HashMap"
HASH_MAP_SUID: Final = 362498820763181265
BYTE_ARRAY: Final = "[B"
BYTE_ARRAY_SUID: Final = -5984413125824719648
LOAD_FACTOR: Final = 0.75
DEFAULT_CAPACITY: Final = 16

_T = TypeVar("_T")

_PRIMITIVE_SIZES: Final = {"B": 1, "C": 2, "D": 8, "F": 4, "I": 4, "J": 8, "S": 2, "Z": 1}
_TAG_NAMES: Final = {TC_NULL: "TC_NULL", TC_REFERENCE: "TC_REFERENCE", TC_CLASSDESC: "TC_CLASSDESC",
                     TC_OBJECT: "TC_OBJECT", TC_STRING: "TC_STRING", TC_ARRAY: "TC_ARRAY",
                     TC_BLOCKDATA: "TC_BLOCKDATA", TC_ENDBLOCKDATA: "TC_ENDBLOCKDATA"}


class JavaSerializationError(ValueError):
    """The bytes are not the serialized ``HashMap<byte[], byte[]>`` this module reads; says what they are."""


def is_java_serialization(content: bytes) -> bool:
    """Whether ``content`` starts like any ``ObjectOutputStream`` (magic 0xACED, version 5)."""
    return content.startswith(STREAM_HEADER)


def hash_map_capacity(size: int) -> tuple[int, int]:
    """``(capacity, threshold)`` of a ``new HashMap<>()`` after ``size`` puts, as writeObject records them.

    The table is allocated at the first put with 16 buckets and doubles whenever the size passes
    three quarters of it; an empty map has no table yet (threshold 0, capacity reported as 16).
    """
    if size == 0:
        return DEFAULT_CAPACITY, 0
    capacity = DEFAULT_CAPACITY
    while size > capacity * 3 // 4:
        capacity *= 2
    return capacity, capacity * 3 // 4


def _utf(text: str) -> bytes:
    data = text.encode("utf-8")  # class and field names here are ASCII: modified UTF-8 is the same
    return struct.pack(">H", len(data)) + data


def _class_desc(name: str, suid: int, flags: int, fields: Iterable[tuple[str, str]]) -> bytes:
    fields = list(fields)
    out = bytearray([TC_CLASSDESC]) + _utf(name) + struct.pack(">qBH", suid, flags, len(fields))
    for type_code, field in fields:
        out += type_code.encode("ascii") + _utf(field)
    out += bytes([TC_ENDBLOCKDATA, TC_NULL])  # no class annotation, no serializable superclass
    return bytes(out)


def dump_byte_array_map(entries: Iterable[tuple[bytes, bytes | None]]) -> bytes:
    """The bytes ``ObjectOutputStream.writeObject`` writes for a ``HashMap<byte[], byte[]>`` of ``entries``.

    A ``None`` value is written as TC_NULL, as Kafka writes a key whose offset was reset.
    """
    pairs = list(entries)
    capacity, threshold = hash_map_capacity(len(pairs))
    out = bytearray(STREAM_HEADER)
    out.append(TC_OBJECT)
    out += _class_desc(HASH_MAP, HASH_MAP_SUID, SC_SERIALIZABLE | SC_WRITE_METHOD,
                       [("F", "loadFactor"), ("I", "threshold")])
    out += struct.pack(">fi", LOAD_FACTOR, threshold)
    out += struct.pack(">BBii", TC_BLOCKDATA, 8, capacity, len(pairs))
    array_desc: bytes | None = None
    for array in (item for pair in pairs for item in pair):
        if array is None:
            out.append(TC_NULL)
            continue
        out.append(TC_ARRAY)
        if array_desc is None:
            array_desc = _class_desc(BYTE_ARRAY, BYTE_ARRAY_SUID, SC_SERIALIZABLE, [])
            out += array_desc
        else:
            out += struct.pack(">BI", TC_REFERENCE, BASE_WIRE_HANDLE + 2)
        out += struct.pack(">i", len(array)) + array
    out.append(TC_ENDBLOCKDATA)
    return bytes(out)


class _ClassDesc:
    """A class descriptor read from the stream: name, flags and (type code, name) of its fields."""

    def __init__(self, name: str, flags: int, fields: list[tuple[str, str]]) -> None:
        self.name = name
        self.flags = flags
        self.fields = fields


class _Reader:
    """A cursor over the stream with its handle table; errors say where and what was found."""

    def __init__(self, content: bytes) -> None:
        self.content = content
        self.pos = 0
        self.handles: list[object] = []

    def take(self, count: int, what: str) -> bytes:
        if count < 0 or self.pos + count > len(self.content):
            raise JavaSerializationError(f"the stream ends at byte {len(self.content)} inside {what} "
                                         f"(a truncated file)")
        data = self.content[self.pos:self.pos + count]
        self.pos += count
        return data

    def unpack(self, fmt: str, what: str) -> tuple[int, ...]:
        return struct.unpack(fmt, self.take(struct.calcsize(fmt), what))

    def tag(self, what: str) -> int:
        return self.take(1, what)[0]

    def unexpected(self, tag: int, expected: str) -> JavaSerializationError:
        name = _TAG_NAMES.get(tag, f"byte 0x{tag:02X}")
        return JavaSerializationError(f"{name} at byte {self.pos - 1} where {expected} was expected")

    def utf(self, what: str) -> str:
        (length,) = self.unpack(">H", what)
        return self.take(length, what).decode("utf-8", errors="replace")

    def referenced(self, kind: type[_T], what: str) -> _T:
        """The earlier object a TC_REFERENCE (just read) names, which must be a ``kind``."""
        at = self.pos - 1
        (handle,) = self.unpack(">I", f"a reference to {what}")
        index = handle - BASE_WIRE_HANDLE
        target = self.handles[index] if 0 <= index < len(self.handles) else None
        if not isinstance(target, kind):
            raise JavaSerializationError(f"TC_REFERENCE at byte {at} to handle 0x{handle:X}, which is "
                                         f"not {what}")
        return target

    def class_desc(self) -> _ClassDesc:
        tag = self.tag("a class descriptor")
        if tag == TC_REFERENCE:
            return self.referenced(_ClassDesc, "a class descriptor")
        if tag != TC_CLASSDESC:
            raise self.unexpected(tag, "a class descriptor")
        name = self.utf("a class name")
        self.unpack(">q", "a serialVersionUID")
        (flags, count) = self.unpack(">BH", "class flags")
        fields = []
        for _ in range(count):
            type_code = chr(self.tag("a field type"))
            field = self.utf("a field name")
            if type_code not in _PRIMITIVE_SIZES:
                raise JavaSerializationError(f"class {name} has an object field {field!r}; "
                                             f"{HASH_MAP} has only primitive fields")
            fields.append((type_code, field))
        desc = _ClassDesc(name, flags, fields)
        self.handles.append(desc)
        if (tag := self.tag("the end of a class annotation")) != TC_ENDBLOCKDATA:
            raise self.unexpected(tag, f"TC_ENDBLOCKDATA after class {name}")
        if (tag := self.tag("a superclass descriptor")) != TC_NULL:
            raise JavaSerializationError(f"class {name} has a serializable superclass (byte {self.pos - 1}); "
                                         f"{HASH_MAP} has none")
        return desc

    def byte_array(self) -> bytes | None:
        tag = self.tag("a map key or value")
        if tag == TC_NULL:
            return None
        if tag == TC_REFERENCE:
            return self.referenced(bytes, "a byte[]")
        if tag != TC_ARRAY:
            raise self.unexpected(tag, "a byte[] key or value (TC_ARRAY)")
        desc = self.class_desc()
        if desc.name != BYTE_ARRAY:
            raise JavaSerializationError(f"a map entry is an array of {desc.name}, not byte[] ([B)")
        (length,) = self.unpack(">i", "an array length")
        array = self.take(length, f"a byte[] of {length} bytes")
        self.handles.append(array)
        return array


def load_byte_array_map(content: bytes) -> list[tuple[bytes | None, bytes | None]]:
    """The entries of a serialized ``HashMap<byte[], byte[]>``, in stream order (nulls as ``None``).

    Raises JavaSerializationError when ``content`` is any other stream, or is cut short.
    """
    if not is_java_serialization(content):
        raise JavaSerializationError(f"the stream starts with {content[:4].hex(' ')!r}, not the Java "
                                     f"serialization header ac ed 00 05")
    reader = _Reader(content)
    reader.pos = len(STREAM_HEADER)
    if (tag := reader.tag("the top-level object")) != TC_OBJECT:
        raise reader.unexpected(tag, f"a {HASH_MAP} object (TC_OBJECT)")
    desc = reader.class_desc()
    if desc.name != HASH_MAP:
        raise JavaSerializationError(f"the stream holds a serialized {desc.name}, not a {HASH_MAP}")
    reader.handles.append(None)  # the map object's own handle
    for type_code, field in desc.fields:
        reader.take(_PRIMITIVE_SIZES[type_code], f"field {field}")
    if (tag := reader.tag("the map's block data")) != TC_BLOCKDATA:
        raise reader.unexpected(tag, "the map's capacity and size (TC_BLOCKDATA)")
    (length,) = reader.unpack(">B", "a block data length")
    if length != 8:
        raise JavaSerializationError(f"the map's block data holds {length} bytes, not 8 (capacity, size)")
    (_capacity, size) = reader.unpack(">ii", "the map's capacity and size")
    if size < 0:
        raise JavaSerializationError(f"the map's size is {size}")
    entries = [(reader.byte_array(), reader.byte_array()) for _ in range(size)]
    if (tag := reader.tag("the end of the map")) != TC_ENDBLOCKDATA:
        raise reader.unexpected(tag, f"TC_ENDBLOCKDATA after {size} entries")
    if reader.pos != len(content):
        raise JavaSerializationError(f"{len(content) - reader.pos} bytes follow the map at byte {reader.pos}")
    return entries

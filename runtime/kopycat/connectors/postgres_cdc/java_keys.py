"""Primary keys in the incremental snapshot's offsets: a Java-serialized ``Object[]`` in hexadecimal.

Debezium's ``AbstractIncrementalSnapshotContext`` stores ``incremental_snapshot_primary_key`` and
``incremental_snapshot_maximum_key`` as ``ObjectOutputStream.writeObject(Object[])`` bytes in hex
(``HexConverter``), so a Debezium taking over a Kopycat offset (and the reverse) must read the same
bytes. The key values are what PostgreSQL's JDBC driver returns for the key columns: ``Integer``
(int2, int4), ``Long`` (int8) and ``String`` (text, varchar, char); a null array is ``aced000570``.
Only that subset of the Java serialization stream protocol is written and read; other key
types are refused by the incremental snapshot before anything is stored.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Final

__all__ = ["JavaKeyError", "JavaKind", "read_keys", "write_keys"]

JavaKind = str  # "Integer", "Long" or "String": the Java class a key column's values have

_HEADER: Final = bytes.fromhex("aced0005")
_NULL, _REFERENCE, _CLASS_DESC, _OBJECT, _STRING, _ARRAY, _END = 0x70, 0x71, 0x72, 0x73, 0x74, 0x75, 0x78
_BASE_HANDLE: Final = 0x7E0000
_ARRAY_DESC: Final = ("[Ljava.lang.Object;", 0x90CE589F1073296C, ())
_NUMBER_DESC: Final = ("java.lang.Number", 0x86AC951D0B94E08B, ())
_DESCS: Final = {"Integer": ("java.lang.Integer", 0x12E2A0A4F7818738, (("I", "value"),)),
                 "Long": ("java.lang.Long", 0x3B8BE490CC8F23DF, (("J", "value"),))}
_CACHED: Final = range(-128, 128)  # Integer.valueOf / Long.valueOf return one shared object for these


class JavaKeyError(ValueError):
    """Bytes that are not a serialized ``Object[]`` of Integer, Long and String values."""


def write_keys(values: Sequence[int | str] | None, kinds: Sequence[JavaKind]) -> str:
    """``values`` (one per key column, of the Java class in ``kinds``) as Debezium stores them."""
    if values is None:
        return (_HEADER + bytes([_NULL])).hex()
    writer = _Writer()
    writer.out += bytes([_ARRAY])
    writer.class_desc(_ARRAY_DESC)
    writer.handles += 1  # the array itself
    writer.out += struct.pack(">i", len(values))
    for value, kind in zip(values, kinds, strict=True):
        writer.value(value, kind)
    return (_HEADER + bytes(writer.out)).hex()


class _Writer:
    def __init__(self) -> None:
        self.out = bytearray()
        self.handles = 0
        self.descs: dict[str, int] = {}
        self.boxed: dict[tuple[str, int], int] = {}

    def class_desc(self, desc: tuple[str, int, tuple[tuple[str, str], ...]]) -> None:
        name, uid, fields = desc
        if name in self.descs:
            self.out += bytes([_REFERENCE]) + struct.pack(">I", _BASE_HANDLE + self.descs[name])
            return
        self.out += bytes([_CLASS_DESC]) + _utf(name) + struct.pack(">QBH", uid, 0x02, len(fields))
        self.descs[name] = self.handles
        self.handles += 1
        for code, field in fields:
            self.out += code.encode() + _utf(field)
        self.out += bytes([_END])
        if name in ("java.lang.Integer", "java.lang.Long"):
            self.class_desc(_NUMBER_DESC)
        else:
            self.out += bytes([_NULL])

    def value(self, value: int | str, kind: JavaKind) -> None:
        if kind == "String":
            self.out += bytes([_STRING]) + _utf(str(value))
            self.handles += 1
            return
        number = int(value)
        if (kind, number) in self.boxed:
            self.out += bytes([_REFERENCE]) + struct.pack(">I", _BASE_HANDLE + self.boxed[(kind, number)])
            return
        self.out += bytes([_OBJECT])
        self.class_desc(_DESCS[kind])
        if number in _CACHED:
            self.boxed[(kind, number)] = self.handles
        self.handles += 1
        self.out += struct.pack(">i" if kind == "Integer" else ">q", number)


def _utf(text: str) -> bytes:
    data = text.encode()
    return struct.pack(">H", len(data)) + data


def read_keys(text: str) -> list[int | str] | None:
    """The key values of a stored ``incremental_snapshot_*_key`` (None for a null array)."""
    try:
        return _Reader(bytes.fromhex(text)).keys()
    except (ValueError, IndexError, struct.error, KeyError) as exc:
        raise JavaKeyError(f"not a serialized key array of Integer, Long or String values: {text!r} ({exc})") from None


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 4
        self.handles: list[object] = []
        if data[:4] != _HEADER:
            raise ValueError("no Java serialization header")

    def take(self, size: int) -> bytes:
        chunk = self.data[self.pos:self.pos + size]
        if len(chunk) != size:
            raise ValueError("truncated")
        self.pos += size
        return chunk

    def utf(self) -> str:
        (size,) = struct.unpack(">H", self.take(2))
        return self.take(size).decode()

    def keys(self) -> list[int | str] | None:
        tag = self.take(1)[0]
        if tag == _NULL:
            return None
        if tag != _ARRAY or self.class_desc() != _ARRAY_DESC[0]:
            raise ValueError("not an Object[]")
        self.handles.append(None)
        (count,) = struct.unpack(">i", self.take(4))
        return [self.item() for _ in range(count)]

    def class_desc(self) -> str | None:
        tag = self.take(1)[0]
        if tag == _NULL:
            return None
        if tag == _REFERENCE:
            return str(self.handles[struct.unpack(">I", self.take(4))[0] - _BASE_HANDLE])
        if tag != _CLASS_DESC:
            raise ValueError(f"unexpected tag {tag:#x}")
        name = self.utf()
        self.take(9)  # serialVersionUID and flags
        self.handles.append(name)
        (fields,) = struct.unpack(">H", self.take(2))
        for _ in range(fields):
            self.take(1)
            self.utf()
        if self.take(1)[0] != _END:
            raise ValueError("class annotations are not supported")
        self.class_desc()  # the superclass
        return name

    def item(self) -> int | str:
        tag = self.take(1)[0]
        if tag == _STRING:
            text = self.utf()
            self.handles.append(text)
            return text
        if tag == _REFERENCE:
            found = self.handles[struct.unpack(">I", self.take(4))[0] - _BASE_HANDLE]
            if not isinstance(found, int | str):
                raise ValueError("a reference to a non-value")
            return found
        if tag != _OBJECT:
            raise ValueError(f"unsupported value tag {tag:#x}")
        name = self.class_desc()
        index = len(self.handles)
        self.handles.append(None)
        fmt = {"java.lang.Integer": ">i", "java.lang.Long": ">q", "java.lang.Short": ">h"}[str(name)]
        (number,) = struct.unpack(fmt, self.take(struct.calcsize(fmt)))
        self.handles[index] = number
        return int(number)

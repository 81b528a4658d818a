"""Decode PostgreSQL's ``pgoutput`` logical replication messages (protocol version 1).

The binary messages ``pg_logical_slot_peek_binary_changes(..., 'proto_version', '1',
'publication_names', ...)`` returns, one per row, as documented in PostgreSQL's "Logical
Replication Message Formats". Only what a change-data-capture source needs is decoded: Begin,
Commit, Relation, Insert, Update, Delete and Truncate; Origin, Type and Message are returned as
:class:`Other` so a reader can skip them. Column values stay PostgreSQL's text form
(:mod:`.values` types them), as Debezium's ``PgOutputMessageDecoder`` reads them.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Final, NamedTuple

__all__ = ["CHANGE_KINDS", "UNCHANGED_TOAST", "Begin", "Column", "Commit", "Delete", "Insert", "Message", "Other",
           "Relation", "Truncate", "Update", "decode", "format_lsn", "parse_lsn", "relation_oid"]

UNCHANGED_TOAST: Final = object()
"""A column value pgoutput did not send: an unchanged TOASTed value of an update."""


def parse_lsn(text: str) -> int:
    """``'16/B374D848'`` -> its 64-bit position, as Debezium's ``Lsn.valueOf(String)``."""
    high, _, low = text.partition("/")
    return (int(high, 16) << 32) | int(low, 16)


def format_lsn(lsn: int) -> str:
    """The 64-bit position in PostgreSQL's ``X/X`` text form."""
    return f"{lsn >> 32:X}/{lsn & 0xFFFFFFFF:X}"


def _pg_micros(micros: int) -> int:
    """Microseconds since PostgreSQL's epoch (2000-01-01 UTC) -> since the Unix epoch."""
    return micros + 946_684_800_000_000


# The messages of every transaction and change are named tuples: one is made per WAL message, and
# a tuple is several times cheaper to build than a frozen dataclass (whose fields go through
# object.__setattr__). Relations, truncates and others are rare and stay dataclasses.


class Begin(NamedTuple):
    final_lsn: int
    commit_ts_us: int  # Unix epoch microseconds
    xid: int


class Commit(NamedTuple):
    commit_lsn: int
    end_lsn: int
    commit_ts_us: int


@dataclass(frozen=True)
class Column:
    name: str
    type_oid: int
    type_modifier: int
    is_key: bool


@dataclass(frozen=True)
class Relation:
    oid: int
    namespace: str
    name: str
    replica_identity: str  # d (default), n (nothing), f (full), i (index)
    columns: tuple[Column, ...]


class Insert(NamedTuple):
    relation_oid: int
    new: tuple[object, ...]


class Update(NamedTuple):
    relation_oid: int
    old: tuple[object, ...] | None  # with REPLICA IDENTITY FULL ('O') or a changed key ('K')
    new: tuple[object, ...]
    old_is_key_only: bool = False


class Delete(NamedTuple):
    relation_oid: int
    old: tuple[object, ...]
    old_is_key_only: bool


@dataclass(frozen=True)
class Truncate:
    relation_oids: tuple[int, ...]
    cascade: bool
    restart_identity: bool


@dataclass(frozen=True)
class Other:
    kind: str
    body: bytes = field(repr=False)


Message = Begin | Commit | Relation | Insert | Update | Delete | Truncate | Other


_INT16: Final = struct.Struct("!h")
_INT32: Final = struct.Struct("!i")
_OID: Final = struct.Struct("!I")
_BEGIN: Final = struct.Struct("!qqI")
_COMMIT: Final = struct.Struct("!bqqq")
_TEXT, _NULL, _TOAST = ord("t"), ord("n"), ord("u")


class _Reader:
    __slots__ = ("data", "pos")

    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def unpack(self, fmt: str) -> tuple[int, ...]:
        values = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += struct.calcsize(fmt)
        return values

    def byte(self) -> str:
        value = chr(self.data[self.pos])
        self.pos += 1
        return value

    def string(self) -> str:
        end = self.data.index(b"\0", self.pos)
        text = self.data[self.pos:end].decode()
        self.pos = end + 1
        return text


def _tuple_data(data: bytes, pos: int) -> tuple[tuple[object, ...], int]:
    """The TupleData at ``pos`` and the position after it: one pass with local lookups, the hot loop of
    every change (Debezium's ``PgOutputMessageDecoder.resolveColumnsFromStreamTupleData``). Text
    values, by far the most common, are tested first."""
    (count,) = _INT16.unpack_from(data, pos)
    pos += 2
    values: list[object] = []
    append, length_at = values.append, _INT32.unpack_from
    for _ in range(count):
        kind = data[pos]
        if kind == _TEXT:
            start = pos + 5
            pos = start + length_at(data, pos + 1)[0]
            append(data[start:pos].decode())
        elif kind == _NULL:
            append(None)
            pos += 1
        elif kind == _TOAST:
            append(UNCHANGED_TOAST)
            pos += 1
        else:  # b: binary
            start = pos + 5
            pos = start + length_at(data, pos + 1)[0]
            append(data[start:pos])
    return tuple(values), pos


CHANGE_KINDS: Final = frozenset(b"IUD")
"""The first byte of an Insert, Update or Delete message: a reader tests it before decoding anything."""


def relation_oid(data: bytes) -> int:
    """The relation of an Insert, Update or Delete message, read without decoding its tuples."""
    return _OID.unpack_from(data, 1)[0]


def decode(data: bytes) -> Message:
    """One pgoutput message; :class:`Other` for the kinds a change stream does not need."""
    data = bytes(data)
    kind = data[0]
    if kind == 0x55:  # U: Update, the streaming bench's message; 'K' or 'O' old tuple first, then 'N'
        (oid,) = _OID.unpack_from(data, 1)
        marker, old = data[5], None
        pos = 6
        if marker in (0x4B, 0x4F):
            old, pos = _tuple_data(data, pos)
            pos += 1  # 'N'
        return Update(oid, old, _tuple_data(data, pos)[0], marker == 0x4B)
    if kind == 0x49:  # I: Insert, 'N' then the new tuple
        return Insert(_OID.unpack_from(data, 1)[0], _tuple_data(data, 6)[0])
    if kind == 0x44:  # D: Delete, 'K' or 'O' then the old tuple
        return Delete(_OID.unpack_from(data, 1)[0], _tuple_data(data, 6)[0], data[5] == 0x4B)
    if kind == 0x42:  # B
        final_lsn, ts, xid = _BEGIN.unpack_from(data, 1)
        return Begin(final_lsn, _pg_micros(ts), xid)
    if kind == 0x43:  # C
        _flags, commit_lsn, end_lsn, ts = _COMMIT.unpack_from(data, 1)
        return Commit(commit_lsn, end_lsn, _pg_micros(ts))
    reader = _Reader(data)
    reader.byte()
    if kind == 0x52:  # R
        return _relation(reader)
    if kind == 0x54:  # T
        count, options = reader.unpack("!ib")
        oids = reader.unpack(f"!{count}I")
        return Truncate(tuple(oids), bool(options & 1), bool(options & 2))
    return Other(chr(kind), data[1:])


def _relation(reader: _Reader) -> Relation:
    (oid,) = reader.unpack("!I")
    namespace, name = reader.string(), reader.string()
    identity = reader.byte()
    (count,) = reader.unpack("!h")
    columns = []
    for _ in range(count):
        (flags,) = reader.unpack("!b")
        column = reader.string()
        type_oid, modifier = reader.unpack("!Ii")
        columns.append(Column(column, type_oid, modifier, bool(flags & 1)))
    return Relation(oid, namespace or "pg_catalog", name, identity, tuple(columns))

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
from typing import Final

__all__ = ["UNCHANGED_TOAST", "Begin", "Column", "Commit", "Delete", "Insert", "Message", "Other", "Relation",
           "Truncate", "Update", "decode", "format_lsn", "parse_lsn"]

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


@dataclass(frozen=True)
class Begin:
    final_lsn: int
    commit_ts_us: int  # Unix epoch microseconds
    xid: int


@dataclass(frozen=True)
class Commit:
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


@dataclass(frozen=True)
class Insert:
    relation_oid: int
    new: tuple[object, ...]


@dataclass(frozen=True)
class Update:
    relation_oid: int
    old: tuple[object, ...] | None  # with REPLICA IDENTITY FULL ('O') or a changed key ('K')
    new: tuple[object, ...]
    old_is_key_only: bool = False


@dataclass(frozen=True)
class Delete:
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

    def tuple_data(self) -> tuple[object, ...]:
        (count,) = self.unpack("!h")
        values: list[object] = []
        for _ in range(count):
            kind = self.byte()
            if kind == "n":
                values.append(None)
            elif kind == "u":
                values.append(UNCHANGED_TOAST)
            else:
                (length,) = self.unpack("!i")
                raw = self.data[self.pos:self.pos + length]
                self.pos += length
                values.append(raw.decode() if kind == "t" else raw)
        return tuple(values)


def decode(data: bytes) -> Message:
    """One pgoutput message; :class:`Other` for the kinds a change stream does not need."""
    reader = _Reader(bytes(data))
    kind = reader.byte()
    if kind == "B":
        final_lsn, ts, xid = reader.unpack("!qqI")
        return Begin(final_lsn, _pg_micros(ts), xid)
    if kind == "C":
        _flags, commit_lsn, end_lsn, ts = reader.unpack("!bqqq")
        return Commit(commit_lsn, end_lsn, _pg_micros(ts))
    if kind == "R":
        return _relation(reader)
    if kind == "I":
        (oid,) = reader.unpack("!I")
        reader.byte()  # 'N'
        return Insert(oid, reader.tuple_data())
    if kind == "U":
        (oid,) = reader.unpack("!I")
        marker, old = reader.byte(), None
        if marker in ("K", "O"):
            old = reader.tuple_data()
            reader.byte()  # 'N'
        return Update(oid, old, reader.tuple_data(), marker == "K")
    if kind == "D":
        (oid,) = reader.unpack("!I")
        marker = reader.byte()
        return Delete(oid, reader.tuple_data(), marker == "K")
    if kind == "T":
        count, options = reader.unpack("!ib")
        oids = reader.unpack(f"!{count}I")
        return Truncate(tuple(oids), bool(options & 1), bool(options & 2))
    return Other(kind, reader.data[1:])


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

"""pgoutput messages decode as PostgreSQL's "Logical Replication Message Formats" lays them out."""

from __future__ import annotations

import struct

from kopycat.connectors.postgres_cdc.pgoutput import (
    UNCHANGED_TOAST,
    Begin,
    Commit,
    Delete,
    Insert,
    Other,
    Relation,
    Truncate,
    Update,
    decode,
    format_lsn,
    parse_lsn,
)

PG_EPOCH_US = 946_684_800_000_000


def tuple_data(*values: str | None | object) -> bytes:
    out = struct.pack("!h", len(values))
    for value in values:
        if value is None:
            out += b"n"
        elif value is UNCHANGED_TOAST:
            out += b"u"
        else:
            raw = str(value).encode()
            out += b"t" + struct.pack("!i", len(raw)) + raw
    return out


def test_lsns_read_and_print_as_postgresql_writes_them() -> None:
    assert parse_lsn("16/B374D848") == (0x16 << 32) | 0xB374D848
    assert format_lsn(parse_lsn("16/B374D848")) == "16/B374D848"
    assert format_lsn(0) == "0/0"


def test_begin_and_commit_carry_positions_xid_and_unix_commit_time() -> None:
    assert decode(b"B" + struct.pack("!qqI", 100, 5, 742)) == Begin(100, PG_EPOCH_US + 5, 742)
    assert decode(b"C" + struct.pack("!bqqq", 0, 100, 120, 7)) == Commit(100, 120, PG_EPOCH_US + 7)


def test_a_relation_lists_its_columns_with_types_and_key_flags() -> None:
    body = struct.pack("!I", 16384) + b"public\0items\0" + b"d" + struct.pack("!h", 2)
    body += struct.pack("!b", 1) + b"id\0" + struct.pack("!Ii", 23, -1)
    body += struct.pack("!b", 0) + b"amount\0" + struct.pack("!Ii", 1700, (10 << 16 | 2) + 4)
    relation = decode(b"R" + body)
    assert isinstance(relation, Relation)
    assert (relation.oid, relation.namespace, relation.name, relation.replica_identity) == (
        16384, "public", "items", "d")
    assert [(c.name, c.type_oid, c.is_key) for c in relation.columns] == [("id", 23, True), ("amount", 1700, False)]


def test_changes_keep_text_values_nulls_and_unchanged_toast_apart() -> None:
    oid = struct.pack("!I", 7)
    assert decode(b"I" + oid + b"N" + tuple_data("1", None)) == Insert(7, ("1", None))
    update = decode(b"U" + oid + b"O" + tuple_data("1", "a") + b"N" + tuple_data("1", UNCHANGED_TOAST))
    assert update == Update(7, ("1", "a"), ("1", UNCHANGED_TOAST), False)
    assert decode(b"U" + oid + b"N" + tuple_data("2", "b")) == Update(7, None, ("2", "b"), False)
    assert decode(b"D" + oid + b"K" + tuple_data("1", None)) == Delete(7, ("1", None), True)


def test_a_key_change_binary_values_truncate_and_other_kinds_decode_from_any_buffer() -> None:
    oid = struct.pack("!I", 7)
    key_change = memoryview(b"U" + oid + b"K" + tuple_data("1", None) + b"N" + tuple_data("2", "é"))
    assert decode(key_change) == Update(7, ("1", None), ("2", "é"), True)
    binary = struct.pack("!h", 1) + b"b" + struct.pack("!i", 3) + b"\x00\xff\x01"
    assert decode(b"I" + oid + b"N" + binary) == Insert(7, (b"\x00\xff\x01",))
    assert decode(b"D" + oid + b"O" + tuple_data("", "x")) == Delete(7, ("", "x"), False)
    assert decode(b"T" + struct.pack("!ib", 2, 3) + struct.pack("!II", 7, 9)) == Truncate((7, 9), True, True)
    assert decode(b"O" + struct.pack("!q", 5) + b"origin\0") == Other("O", struct.pack("!q", 5) + b"origin\0")

"""CDC's columnar path writes the same bytes and offsets as its record path, and falls back where it cannot.

The same WAL goes through a ChangeStream with columns and one without; every change's key and
value bytes (JsonConverter with schemas, as Kafka Connect's) and the offsets the runner would
commit must be equal. The envelopes' ``ts_*`` (the time an event is made) are pinned.
"""

from __future__ import annotations

import hashlib
import struct
import time
from collections.abc import Sequence
from itertools import accumulate
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from kopycat.api.errors import DataError
from kopycat.api.record_batch import SourceRecordBatch
from kopycat.api.records import SourceRecord
from kopycat.connectors.postgres_cdc.change_stream import COLUMNAR_MIN, RUN_TARGET, ChangeStream
from kopycat.connectors.postgres_cdc.events import ColumnInfo, TableEvents
from kopycat.connectors.postgres_cdc.pgoutput import Relation
from kopycat.connectors.postgres_cdc.source_task import PostgresCdcTask
from kopycat.converters.json import JsonConverter

PARTITION = {"server": "shop"}
NUMERIC_12_2 = ((12 << 16) | 2) + 4
# name, type oid, modifier, optional: every type the columnar path parses, and one it reads as text (interval)
COLUMNS = [("id", 20, -1, False), ("small", 21, -1, True), ("count", 23, -1, False), ("oid", 26, -1, True),
           ("flag", 16, -1, True), ("name", 25, -1, True), ("code", 1043, 20, True), ("fixed", 1042, 3, True),
           ("uid", 2950, -1, True), ("doc", 3802, -1, True), ("amount", 1700, NUMERIC_12_2, True),
           ("day", 1082, -1, True), ("at", 1114, -1, True), ("span", 1186, -1, True), ("ratio4", 700, -1, True),
           ("ratio8", 701, -1, True), ("at_tz", 1184, -1, True), ("at_tz3", 1184, 3, True), ("clock", 1083, -1, True),
           ("clock3", 1083, 3, True), ("clock_tz", 1266, -1, True)]
FLOAT4S = ["0", "-0", "1", "0.1", "3.4028235e+38", "-1.1754944e-38", "1e-45", "123456.79", "0.33333334"]
TEXTS = ['plain', 'a "quoted" \\ back\\slash', 'tab\there\nnewline \x01', 'é ü 漢字', 'astral 😀 𝄞', '',
         '{"k": [1, 2]}']


@pytest.fixture(autouse=True)
def pinned_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(time, "time_ns", lambda: 1_764_300_000_123_456_789)


def relation(oid: int, columns: Sequence[tuple[str, int, int, bool]]) -> bytes:
    body = b"".join(struct.pack("!b", 1 if name == "id" else 0) + name.encode() + b"\0" + struct.pack("!Ii", kind, mod)
                    for name, kind, mod, _ in columns)
    name = b"public\0" + f"t{oid}".encode() + b"\0d"
    return b"R" + struct.pack("!I", oid) + name + struct.pack("!h", len(columns)) + body


def tuple_data(values: Sequence[str | bytes | None]) -> bytes:
    out = struct.pack("!h", len(values))
    for value in values:
        if value is None:
            out += b"n"
        elif value is _TOAST:
            out += b"u"
        else:
            data = value if isinstance(value, bytes) else value.encode()
            out += b"t" + struct.pack("!i", len(data)) + data
    return out


_TOAST: Any = b"\xff"  # a marker: tuple_data writes an unchanged TOASTed value


def change(kind: bytes, oid: int, values: Sequence[str | bytes | None]) -> bytes:
    marker = b"O" if kind == b"D" else b"N"
    return kind + struct.pack("!I", oid) + marker + tuple_data(values)


def begin(final_lsn: int, xid: int) -> bytes:
    return b"B" + struct.pack("!qqI", final_lsn, 797_000_000_000_000 + xid, xid)


def commit(commit_lsn: int, end_lsn: int) -> bytes:
    return b"C" + struct.pack("!bqqq", 0, commit_lsn, end_lsn, 797_000_000_000_000)


def row(i: int) -> list[str | None]:
    """Row ``i``: every value varies, optional columns are NULL now and then."""
    def sometimes(text: str, every: int) -> str | None:
        return None if i % every == 0 else text
    return [str(i * 7919), sometimes(str(i % 30000 - 15000), 5), str(-i), sometimes(str(i * 3), 6),
            sometimes("t" if i % 2 else "f", 7), sometimes(TEXTS[i % len(TEXTS)] + str(i), 8), sometimes(f"c{i}", 9),
            sometimes(f"{i % 1000:<3}", 10), sometimes(f"00000000-0000-0000-0000-{i:012d}", 11),
            sometimes(f'{{"n": {i}, "s": "{TEXTS[i % 3]!r}"}}'.replace("\\", ""), 12),
            sometimes(f"{i - 10_000}.{i % 100:02d}", 13),
            sometimes(f"{1900 + i % 300:04d}-{1 + i % 12:02d}-{1 + i % 28:02d}", 14),
            sometimes(f"{1950 + i % 100}-{1 + i % 12:02d}-{1 + i % 28:02d} {i % 24:02d}:{i % 60:02d}:{i % 59:02d}"
                      + ("" if i % 4 == 0 else f".{i % 1_000_000:06d}".rstrip("0")), 15),
            sometimes(f"{i % 50} days", 16), sometimes(FLOAT4S[i % len(FLOAT4S)] if i % 3 else repr(float(
                np.float32(i / 7))), 17), sometimes(repr((i - 500) / 7 * 10.0 ** (i % 40 - 20)), 18),
            sometimes(f"{1000 + i % 9000:04d}-{1 + i % 12:02d}-{1 + i % 28:02d} {i % 24:02d}:{i % 60:02d}:{i % 59:02d}"
                      + ("" if i % 4 == 0 else f".{i % 1_000_000:06d}".rstrip("0")) + "+00", 19),
            sometimes(f"2026-11-{1 + i % 28:02d} 07:{i % 60:02d}:00" + ("" if i % 3 == 0 else f".{i % 1000:03d}"
                                                                         .rstrip("0")) + "+00", 20),
            sometimes(f"{i % 24:02d}:{i % 60:02d}:{i % 59:02d}" + ("" if i % 5 == 0 else f".{i % 1_000_000:06d}"
                                                                  .rstrip("0")), 21),
            sometimes(f"{i % 24:02d}:{i % 60:02d}:{i % 59:02d}" + ("" if i % 5 == 0 else f".{i % 1000:03d}"
                                                                  .rstrip("0")), 22),
            sometimes(f"{i % 24:02d}:{i % 60:02d}:00+{i % 12:02d}", 23)]


def small_transactions(sizes: Sequence[int], oid: int = 7) -> list[tuple[int, int, bytes]]:
    """One transaction per size in ``sizes``, of that many inserts and updates (OLTP's traffic)."""
    out = [(10, 1, relation(oid, COLUMNS))]
    lsn, i = 100, 0
    for xid, size in enumerate(sizes, start=1000):
        out.append((lsn, xid, begin(lsn + size * 10 + 5, xid)))
        for _ in range(size):
            lsn += 10
            out.append((lsn, xid, change(b"I" if i % 3 else b"U", oid, row(i))))
            i += 1
        out.append((lsn + 5, xid, commit(lsn + 5, lsn + 6)))
        lsn += 10
    return out


def wal(transactions: int, changes: int, oid: int = 7, columns: Sequence[tuple[str, int, int, bool]] = COLUMNS,
        edit: Any = None) -> list[tuple[int, int, bytes]]:
    """``transactions`` of ``changes`` inserts and updates each (``edit(i, kind, values)`` may change one)."""
    out = [(10, 1, relation(oid, columns))]
    lsn = 100
    for tx in range(transactions):
        xid = 1000 + tx
        out.append((lsn, xid, begin(lsn + changes * 10 + 5, xid)))
        for index in range(changes):
            i = tx * changes + index
            kind, values = (b"I" if i % 3 else b"U"), row(i)[:len(columns)]
            if edit is not None:
                kind, values = edit(i, kind, values)
            lsn += 10
            out.append((lsn, xid, change(kind, oid, values)))
        out.append((lsn + 5, xid, commit(lsn + 5, lsn + 6)))
        lsn += 10
    return out


def lookup_for(key: Sequence[str] = ("id",)) -> Any:
    """The catalog's view: each relation's columns, the key ``key``, NOT NULL as :data:`COLUMNS` says."""
    optional = {name: flag for name, _, _, flag in COLUMNS}

    def lookup(message: Relation) -> TableEvents:
        infos = [ColumnInfo(c.name, c.type_oid, c.type_modifier, optional.get(c.name, True)) for c in message.columns]
        return TableEvents("shop", "db", message.namespace, message.name, infos, list(key), decimal_mode="precise",
                           time_mode="adaptive")
    return lookup


def converter(is_key: bool) -> JsonConverter:
    json = JsonConverter()
    json.configure({"schemas.enable": "true"}, is_key=is_key)
    return json


Sent = list[tuple[bytes | None, bytes | None]]


def sent(items: Sequence[SourceRecord | SourceRecordBatch]) -> tuple[Sent, list[Any]]:
    """Each change's key and value bytes as the runner sends them (a batch as columns), and the
    offset the runner notes after each item."""
    keys, values = converter(True), converter(False)
    out: Sent = []
    offsets = []
    for item in items:
        if isinstance(item, SourceRecordBatch):
            key_bytes = keys.from_arrow_array(item.topic, item.key_schema, item.keys)
            value_bytes = values.from_arrow_array(item.topic, item.value_schema, item.values)
            assert key_bytes is not None and value_bytes is not None, "the column path refused the batch"
            out += zip(key_bytes.to_pylist(), value_bytes.to_pylist(), strict=True)
        else:
            out.append((keys.from_connect_data(item.topic, item.key_schema, item.key),
                        values.from_connect_data(item.topic, item.value_schema, item.value)))
        offsets.append(item.source_offset)
    return out, offsets


def both(messages: list[tuple[int, int, bytes]], lookup: Any) -> tuple[list[Any], list[Any]]:
    """The items of a columnar stream and of a record stream over ``messages``."""
    columnar = list(ChangeStream(PARTITION, None, lookup, tombstones=True, columnar=True).records(messages))
    records = list(ChangeStream(PARTITION, None, lookup, tombstones=True).records(messages))
    return columnar, records


def last_offsets(items: Sequence[Any]) -> list[Any]:
    return [item.source_offset for item in items]


def digest(pairs: Sent) -> str:
    return hashlib.sha256(b"".join((key or b"-") + b"\n" + (value or b"-") + b"\n" for key, value in pairs)).hexdigest()


def test_twenty_thousand_changes_as_columns_are_byte_identical_to_records() -> None:
    columnar, records = both(wal(20, 1000), lookup_for())
    per_batch = -(-RUN_TARGET // 1000) * 1000  # a run closes at the first commit that brings it to RUN_TARGET
    assert [type(item) for item in columnar] == [SourceRecordBatch] * (20_000 // per_batch)
    assert sum(len(item) for item in columnar) == len(records) == 20_000
    batch_bytes, batch_offsets = sent(columnar)
    record_bytes, record_offsets = sent(records)
    assert digest(batch_bytes) == digest(record_bytes)
    assert batch_bytes == record_bytes
    assert batch_offsets == record_offsets[per_batch - 1::per_batch]  # each batch commits at a transaction's commit
    assert batch_offsets[-1]["messageType"] == "COMMIT" and batch_offsets[-1]["lsn_commit"] == batch_offsets[-1]["lsn"]


def test_many_small_transactions_join_batches_with_the_record_paths_bytes_and_offsets() -> None:
    """1-5 changes per transaction: runs span transactions up to RUN_TARGET, each batch's offset is
    the one the record path stores after the same last record, its records keep their own offsets."""
    sizes = [1 + (n * 7) % 5 for n in range(1500)]
    columnar, records = both(small_transactions(sizes), lookup_for())
    assert all(isinstance(item, SourceRecordBatch) for item in columnar)
    assert len(columnar) < len(sizes) // 50  # transactions joined
    assert all(len(item) >= RUN_TARGET for item in columnar[:-1]) and sum(map(len, columnar)) == sum(sizes)
    (batch_bytes, batch_offsets), (record_bytes, record_offsets) = sent(columnar), sent(records)
    assert batch_bytes == record_bytes and digest(batch_bytes) == digest(record_bytes)
    ends = list(accumulate(len(item) for item in columnar))
    assert batch_offsets == [record_offsets[end - 1] for end in ends]
    assert all(offset["messageType"] == "COMMIT" for offset in batch_offsets)  # closed at commits only
    rebuilt = [record for item in columnar for record in item.records()]
    assert [r.source_offset for r in rebuilt] == record_offsets
    assert sent(rebuilt)[0] == record_bytes
    assert len({r.source_offset["txId"] for r in rebuilt}) == len(sizes)


def test_a_run_across_transactions_closes_at_another_table_a_delete_and_the_end() -> None:
    messages = small_transactions([3] * 40)
    messages.insert(1, (11, 1, relation(8, [("id", 20, -1, False)])))
    commit_at = [index for index, (_, _, data) in enumerate(messages) if data[:1] == b"C"]
    lsn, xid, _ = messages[commit_at[29] - 1]  # the 30th transaction: a delete of table 7, then table 8's row
    messages[commit_at[29]:commit_at[29]] = [(lsn + 1, xid, change(b"D", 7, row(0))),
                                             (lsn + 2, xid, change(b"I", 8, ["5"]))]
    columnar, records = both(messages, lookup_for())
    assert [type(item).__name__ for item in columnar] == ["SourceRecordBatch"] + ["SourceRecord"] * 3 + \
        ["SourceRecord"] * 30  # 90 new rows; the delete, its tombstone, table 8's row; 10 x 3 short
    assert len(columnar[0]) == 90
    assert sent(columnar)[0] == sent(records)[0]
    offset = columnar[0].source_offset  # closed inside the 30th transaction: its own offset, not the commit's
    assert offset == records[89].source_offset and offset["messageType"] == "INSERT" and offset["lsn"] == lsn
    assert last_offsets(columnar[1:]) == last_offsets(records[90:])


def old_and_new(kind: bytes, oid: int, marker: bytes, old: Sequence[str | None], new: Sequence[str | None]) -> bytes:
    """An update carrying its old row (``O``) or old key (``K``), or a delete (``old`` alone)."""
    head = kind + struct.pack("!I", oid) + marker + tuple_data(old)
    return head if kind == b"D" else head + b"N" + tuple_data(new)


def key_only(values: Sequence[str | None]) -> list[str | None]:
    """The old key tuple: the key column (id) alone, NULL for the others (required ones too)."""
    return [values[0]] + [None] * (len(values) - 1)


@pytest.mark.parametrize("tombstones", [False, True])
def test_deletes_and_updates_with_old_rows_are_column_rows_byte_identical_to_records(tombstones: bool) -> None:
    """Deletes (old key or whole old row: ``before``, after null, the key from the old row) and updates
    with an old row (``before``) or an old key (key changed: no ``before``) join the run; a delete
    followed by its tombstone stays a record (one event per row of a batch)."""
    messages = small_transactions([1 + n % 5 for n in range(400)])
    for index, (lsn, xid, data) in enumerate(messages):
        if data[:1] not in (b"I", b"U"):
            continue
        values, shape = row(index), index % 7
        if shape == 1:
            messages[index] = (lsn, xid, old_and_new(b"D", 7, b"K", key_only(values), ()))
        elif shape == 2:
            messages[index] = (lsn, xid, old_and_new(b"D", 7, b"O", row(index + 1), ()))
        elif shape == 3:
            messages[index] = (lsn, xid, old_and_new(b"U", 7, b"O", row(index + 2), values))
        elif shape == 4:
            messages[index] = (lsn, xid, old_and_new(b"U", 7, b"K", key_only(row(index + 3)), values))
    columnar = list(ChangeStream(PARTITION, None, lookup_for(), tombstones=tombstones, columnar=True)
                    .records(messages))
    records = list(ChangeStream(PARTITION, None, lookup_for(), tombstones=tombstones).records(messages))
    changes = sum(1 for _, _, data in messages if data[:1] in (b"I", b"U", b"D"))
    deletes = sum(1 for _, _, data in messages if data[:1] == b"D")
    assert len(records) == changes + (deletes if tombstones else 0)
    (column_bytes, column_offsets), (record_bytes, record_offsets) = sent(columnar), sent(records)
    assert column_bytes == record_bytes and digest(column_bytes) == digest(record_bytes)
    rebuilt = [record for item in columnar for record in item.records()] if not tombstones else []
    if tombstones:
        assert sum(1 for item in columnar if isinstance(item, SourceRecordBatch)) == 0  # runs too short between deletes
        assert column_offsets == record_offsets
        return
    assert all(isinstance(item, SourceRecordBatch) for item in columnar) and len(columnar) < 5
    assert column_offsets == [record_offsets[end - 1] for end in accumulate(len(item) for item in columnar)]
    assert [r.source_offset for r in rebuilt] == record_offsets and sent(rebuilt)[0] == record_bytes
    ops = [op for item in columnar for op in item.values.field("op").to_pylist()]
    assert ops.count("d") == deletes > 0 and ops.count("u") > 0 and ops.count("c") > 0
    assert sum(1 for r in records if r.value.get("op") == "d" and r.value.get("after") is None) == deletes


def test_a_batchs_records_are_the_record_paths_with_their_own_offsets() -> None:
    columnar, records = both(wal(2, 200), lookup_for())
    rebuilt = [record for item in columnar for record in item.records()]
    assert sent(rebuilt) == sent(records)
    assert [r.source_offset for r in rebuilt] == [r.source_offset for r in records]


def test_runs_split_at_deletes_and_other_tables_and_short_runs_stay_records() -> None:
    def edit(i: int, kind: bytes, values: list[Any]) -> tuple[bytes, list[Any]]:
        if i == 150:
            return b"D", values
        return kind, values
    messages = wal(1, 300, edit=edit)
    messages[-1:-1] = [(100_000 + i, 1000, change(b"I", 8, [str(i)])) for i in range(COLUMNAR_MIN - 1)]
    messages.insert(1, (11, 1, relation(8, [("id", 20, -1, False)])))
    commit_lsn = struct.unpack("!bqqq", messages[-1][2][1:])[2]
    columnar, records = both(messages, lookup_for())
    kinds = [type(item).__name__ for item in columnar]
    assert kinds == ["SourceRecordBatch", "SourceRecord", "SourceRecord", "SourceRecordBatch"] + ["SourceRecord"] * 63
    assert [len(columnar[0]), len(columnar[3])] == [150, 149]  # the delete and its tombstone between
    assert sent(columnar)[0] == sent(records)[0]
    assert columnar[-1].source_offset == records[-1].source_offset and records[-1].source_offset["lsn"] == commit_lsn


@pytest.mark.parametrize("case", ["toast", "nan", "bc_date", "infinite_timestamp", "old_row", "binary"])
def test_values_columns_cannot_hold_exactly_go_the_record_path(case: str) -> None:
    """The run falls back as a whole; where the record path cannot read a value either, its error stands
    (``old_row``: REPLICA IDENTITY FULL's update, once a fallback, is a column row now)."""
    def edit(i: int, kind: bytes, values: list[Any]) -> tuple[bytes, list[Any]]:
        if i != 70:
            return kind, values
        values = list(values)
        if case == "toast":
            values[5] = _TOAST
        elif case == "nan":
            values[10] = "NaN"
        elif case == "bc_date":
            values[11] = "0044-03-15 BC"
        elif case == "infinite_timestamp":
            values[12] = "infinity"
        return kind, values
    messages = wal(1, 100, edit=edit)
    if case == "old_row":  # REPLICA IDENTITY FULL: an update carries its old row
        lsn, xid, data = messages[72]
        messages[72] = (lsn, xid, b"U" + data[1:5] + b"O" + data[6:] + b"N" + data[6:])
    if case == "binary":
        lsn, xid, data = messages[72]
        messages[72] = (lsn, xid, data[:8] + b"b" + data[9:])
    lookup = lookup_for()
    if case in ("bc_date", "infinite_timestamp"):  # values.py does not read these either (yet)
        for columnar in (True, False):
            with pytest.raises(ValueError):
                list(ChangeStream(PARTITION, None, lookup, tombstones=True, columnar=columnar).records(messages))
        return
    columnar, records = both(messages, lookup)
    if case == "old_row":  # an update with its old row is a column row too (its before struct)
        assert [type(item) for item in columnar] == [SourceRecordBatch]
        assert len(columnar[0]) == 100 and columnar[0].values.field("before").null_count == 99
    else:
        assert all(isinstance(item, SourceRecord) for item in columnar)
    if case == "nan":  # a Connect Decimal cannot hold NaN: the converter refuses it, as Kafka's does
        assert [repr(r.value) for r in columnar] == [repr(r.value) for r in records]  # NaN != NaN
        with pytest.raises(DataError, match="after.amount"):
            sent(columnar)
        return
    (column_bytes, column_offsets), (record_bytes, record_offsets) = sent(columnar), sent(records)
    assert column_bytes == record_bytes
    assert column_offsets == record_offsets[100 - len(columnar):]  # a batch's is its last change's


@pytest.mark.parametrize(("column", "text", "value"), [
    (14, "NaN", "nan"), (15, "Infinity", "inf"), (15, "-Infinity", "-inf"),
    (16, "0999-12-31 23:00:00+00", "'999-12-31T23:00:00.000000Z'"), (18, "24:00:00", "86400000000")])
def test_non_finite_floats_early_years_and_midnight_at_24_go_the_record_path(column: int, text: str,
                                                                            value: str) -> None:
    """Values Arrow reads differently from the record path (or not as Debezium writes them) leave
    the run to the records, whose bytes stand."""
    def edit(i: int, kind: bytes, values: list[Any]) -> tuple[bytes, list[Any]]:
        return kind, [text if i == 70 and index == column else value for index, value in enumerate(values)]
    columnar, records = both(wal(1, 100, edit=edit), lookup_for())
    assert all(isinstance(item, SourceRecord) for item in columnar) and len(columnar) == 100
    assert repr(columnar[70].value.get("after").get(COLUMNS[column][0])) == value
    assert sent(columnar) == sent(records)


def test_tables_without_a_key_or_with_a_type_arrow_does_not_parse_exactly_stay_records() -> None:
    variable = [*COLUMNS[:3], ("ratio", 1700, -1, True)]  # a NUMERIC without a scale: VariableScaleDecimal

    def with_variable(i: int, kind: bytes, values: list[Any]) -> tuple[bytes, list[Any]]:
        return kind, [*values[:3], f"{i / 7}"]
    for columns, key, edit in ((COLUMNS, (), None), (variable, ("id",), with_variable)):
        columnar, records = both(wal(1, 100, columns=columns, edit=edit), lookup_for(key))
        assert all(isinstance(item, SourceRecord) for item in columnar)
        assert sent(columnar) == sent(records)


def test_poll_counts_a_batchs_rows_against_max_batch_size_and_stops_when_caught_up() -> None:
    """``max.batch.size`` bounds the changes of one poll, a batch of columns counting its rows."""
    stream = ChangeStream(PARTITION, None, lookup_for(), tombstones=True, columnar=True, run_target=100)
    items = list(stream.records(wal(3, 100)))  # a run closes at each commit
    record = SourceRecord.of(PARTITION, {"lsn": 1}, "t", None, None, None, None, None)
    task = PostgresCdcTask()
    task.settings = SimpleNamespace(max_batch=150)  # type: ignore[assignment]
    task.bounded = False
    task.items = iter([items[0], items[1], record, None, items[2], None])
    polls = [task.poll(), task.poll(), task.poll(), task.poll()]
    assert polls == [[items[0], items[1]], [record], [items[2]], None]
    assert task.confirmable == items[2].source_offset["lsn_commit"]

"""A committed run of one table's changes as Arrow columns: CDC streaming's columnar path.

Per change the stream only keeps the pgoutput bytes it read. Here the run's messages are joined
once and numpy walks their TupleData a column at a time across all rows (the fields Debezium's
``PgOutputMessageDecoder.resolveColumnsFromStreamTupleData`` reads row by row): the old tuples
(a delete's, an update's under REPLICA IDENTITY FULL or with a changed key) and the new ones. Each
column's texts become one Arrow StringArray, and Arrow kernels type them as :mod:`.values` does one
value at a time (its ``ColumnType.columns`` names the parser). The change events are then one
StructArray of ``<topic>.Envelope`` (Debezium's ``Envelope``: before, after, source, transaction,
op, ts_*), which the runner encodes a column at a time (JsonConverter's column path): no Python
object per change from the WAL to the producer. A run may span transactions: each change's
``source`` carries its own transaction's xid, commit time and previous commit.

Only what is sure to equal the record path goes here. A table with a column type :mod:`.values`
has no parser for or without a primary key, an unchanged TOASTed or binary value, or a text Arrow
does not read as the record path does (NaN, infinity, a BC date, a year before 1000, 24:00:00)
leaves the run to the record path: :meth:`TableColumns.envelopes` answers None.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any, Final

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kopycat.api.arrow import to_arrow_type
from kopycat.arrow_buffers import MAX_OFFSET, bitmap, boolean_array, string_scalar
from kopycat.connectors.postgres_cdc.config import DEBEZIUM_VERSION
from kopycat.connectors.postgres_cdc.events import TableEvents

__all__ = ["Envelopes", "Segment", "TableColumns", "integers", "repeated_text"]

_INSERT, _UPDATE, _DELETE, _TEXT, _NULL = ord("I"), ord("U"), ord("D"), ord("t"), ord("n")
_NEW, _KEY, _OLD = ord("N"), ord("K"), ord("O")  # the tuple markers: new row, old key, old row
_TUPLE_AT: Final = 6  # kind, relation oid, marker: the first tuple
_PAD: Final = b"\0" * 4  # a NULL as a run's last value: its (unused) length is read past the end

Segment = tuple[int, int, int | None, int]
"""One transaction's share of a run: its commit time (µs), xid, the commit before it (None for none
yet) and how many of the run's changes in a row are its."""


def _text(texts: pa.Array, arrow_type: pa.DataType) -> pa.Array:
    return texts


def _cast(texts: pa.Array, arrow_type: pa.DataType) -> pa.Array:
    """Integers and decimals of a fixed scale: Arrow parses the digits PostgreSQL writes exactly."""
    return pc.cast(texts, arrow_type)


def _boolean(texts: pa.Array, arrow_type: pa.DataType) -> pa.Array:
    """pgoutput's t/f (and ``::text``'s true/false)."""
    return pc.or_(pc.equal(texts, string_scalar("t")), pc.equal(texts, string_scalar("true")))


def _date(texts: pa.Array, arrow_type: pa.DataType) -> pa.Array:
    """``io.debezium.time.Date``: days since the epoch, Arrow's date32 as it is stored."""
    return pc.cast(texts, pa.date32()).view(pa.int32())


def _timestamp(texts: pa.Array, arrow_type: pa.DataType) -> pa.Array:
    """``io.debezium.time.MicroTimestamp``: a zone-less ISO text as UTC microseconds since the epoch."""
    return pc.cast(texts, pa.timestamp("us")).view(pa.int64())


def _float(texts: pa.Array, arrow_type: pa.DataType) -> pa.Array:
    """float4/float8: parsed to the double ``float()`` reads (a float4 then rounded once, as the
    record path's encoder rounds it); NaN and infinities are left to the record path."""
    doubles = pc.cast(texts, pa.float64())
    if not pc.all(pc.is_finite(doubles)).as_py():
        raise pa.ArrowInvalid("a non-finite float")
    return doubles if arrow_type == pa.float64() else doubles.cast(arrow_type, safe=False)


def _time(texts: pa.Array, arrow_type: pa.DataType) -> pa.Array:
    """``io.debezium.time.MicroTime`` (µs of the day), or ``Time`` (ms) for a precision up to 3:
    the text read as a time of the epoch's day (24:00:00 is left to the record path)."""
    micros = pc.cast(pc.binary_join_element_wise(string_scalar("1970-01-01 "), texts, string_scalar("")),
                     pa.timestamp("us")).view(pa.int64())
    return micros if arrow_type == pa.int64() else pc.cast(pc.divide(micros, 1000), arrow_type)


_YEAR_1000_US: Final = -30_610_224_000_000_000  # below it Python's strftime writes fewer than 4 year digits


def _zoned(precision: int) -> Callable[[pa.Array, pa.DataType], pa.Array]:
    """``io.debezium.time.ZonedTimestamp``: the instant in UTC as ISO-8601, its fraction as wide as
    the column's precision (Arrow's ``%S`` writes 6 digits for µs, cut to ``precision``)."""
    stop = 19 if precision == 0 else 20 + precision

    def parse(texts: pa.Array, arrow_type: pa.DataType) -> pa.Array:
        instants = pc.cast(texts, pa.timestamp("us", "UTC"))
        earliest = pc.min(instants.view(pa.int64())).as_py()
        if earliest is not None and earliest < _YEAR_1000_US:
            raise pa.ArrowInvalid("a year before 1000")
        iso = pc.utf8_slice_codeunits(pc.strftime(instants, format="%Y-%m-%dT%H:%M:%S"), 0, stop)
        return pc.binary_join_element_wise(iso, string_scalar("Z"), string_scalar(""))
    return parse


_PARSERS: Final[dict[str, Callable[[pa.Array, pa.DataType], pa.Array]]] = {
    "text": _text, "cast": _cast, "boolean": _boolean, "date": _date, "timestamp": _timestamp, "float": _float,
    "time": _time, **{f"zoned{precision}": _zoned(precision) for precision in range(7)}}


class Envelopes:
    """One run's change events as columns: what a :class:`~kopycat.api.record_batch.SourceRecordBatch` takes."""

    __slots__ = ("keys", "last_op", "values")

    def __init__(self, keys: pa.StructArray, values: pa.StructArray, last_op: str) -> None:
        self.keys, self.values, self.last_op = keys, values, last_op


class TableColumns:
    """One table's columnar event builder; :meth:`of` answers None when its columns cannot all be parsed
    by Arrow or it has no key (the record path writes a key with a null payload then)."""

    def __init__(self, table: TableEvents, parsers: list[Callable[[pa.Array, pa.DataType], pa.Array]]) -> None:
        self.table, self.parsers = table, parsers
        self.envelope_type = to_arrow_type(table.envelope_schema)
        self.envelope_fields = list(self.envelope_type)
        self.value_type = self.envelope_type.field("after").type
        self.value_fields = list(self.value_type)
        self.arrow_types = [field.type for field in self.value_fields]
        assert table.key_schema is not None
        self.key_fields = list(to_arrow_type(table.key_schema))
        self.source_fields = list(self.envelope_type.field("source").type)
        self.transaction_type = self.envelope_type.field("transaction").type

    @classmethod
    def of(cls, table: TableEvents) -> TableColumns | None:
        parsers = [_PARSERS.get(kind.columns or "") for kind in table.types]
        if table.key_schema is None or None in parsers:
            return None
        return cls(table, parsers)  # type: ignore[arg-type]

    def envelopes(self, messages: Sequence[bytes], lsns: Sequence[int],
                  transactions: Sequence[Segment]) -> Envelopes | None:
        """The events of ``messages`` (inserts and updates of this table at ``lsns``, committed by
        ``transactions`` in turn), or None where the record path must build them."""
        texts = _column_texts(messages, len(self.parsers))
        if texts is None:
            return None
        try:
            after = self.row(texts.new)
            before = None if texts.old is None else self.row(texts.old)
        except pa.ArrowInvalid:  # NaN, infinity, a BC date, a year past 9999: the record path's converters
            return None
        if after is None or (texts.old is not None and before is None):
            return None
        count, kinds = len(messages), texts.kinds
        delete, insert = kinds == _DELETE, kinds == _INSERT
        key_columns = [after[i] for i in self.table.key_index]
        if before is not None and delete.any():  # a delete's key is its old row's
            key_columns = [pc.if_else(boolean_array(delete), before[i], column)
                           for i, column in zip(self.table.key_index, key_columns, strict=True)]
        keys = pa.StructArray.from_arrays(key_columns, fields=self.key_fields)
        had_old = delete | ((kinds == _UPDATE) & (texts.markers == _OLD))  # an update's old key alone is no before
        now_ns = time.time_ns()
        values = pa.StructArray.from_arrays([
            self._struct(before, had_old, count), self._struct(after, ~delete, count), self._source(lsns, transactions),
            pa.nulls(count, self.transaction_type), _ops(insert, delete),
            integers(now_ns // 1_000_000, count), integers(now_ns // 1000, count), integers(now_ns, count)],
            fields=self.envelope_fields)
        return Envelopes(keys, values, "c" if insert[-1] else "d" if delete[-1] else "u")

    def row(self, texts: list[pa.Array]) -> list[pa.Array] | None:
        """Each column's values of its texts (a run's tuples, or a snapshot chunk's ``::text`` values:
        :mod:`.snapshot_columns`); a required column's NULL (an old key's other columns) as the record
        path's fallback, None where that has no Arrow scalar. Raises ``ArrowInvalid`` for a text
        Arrow does not read as the record path does."""
        columns = [parse(column, arrow_type) for parse, column, arrow_type
                   in zip(self.parsers, texts, self.arrow_types, strict=True)]
        for index, fallback in self.table.fallbacks:
            if columns[index].null_count:
                try:
                    columns[index] = pc.fill_null(columns[index], pa.scalar(fallback, self.arrow_types[index]))
                except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError):
                    return None
        return columns

    def _struct(self, columns: list[pa.Array] | None, present: Any, count: int) -> pa.Array:
        """The row struct where ``present``, null elsewhere."""
        if columns is None or not present.any():
            return pa.nulls(count, self.value_type)
        mask = None if present.all() else boolean_array(~present)
        return pa.StructArray.from_arrays(columns, fields=self.value_fields, mask=mask)

    def _source(self, lsns: Sequence[int], transactions: Sequence[Segment]) -> pa.StructArray:
        """``io.debezium.connector.postgresql.Source`` of each change, as :meth:`TableEvents.source` makes one."""
        table, count = self.table, len(lsns)
        lsn = integers(np.fromiter(lsns, np.int64, count), count)
        sizes = [size for _, _, _, size in transactions]
        ts_us = np.repeat(np.array([ts for ts, _, _, _ in transactions], np.int64), sizes)
        xid = np.repeat(np.array([xid for _, xid, _, _ in transactions], np.int64), sizes)
        text, integer = pa.string(), pa.int64()
        return pa.StructArray.from_arrays([
            repeated_text(DEBEZIUM_VERSION, count), repeated_text("postgresql", count),
            repeated_text(table.prefix, count),
            integers(ts_us // 1000, count), pa.nulls(count, text), repeated_text(table.dbname, count),
            _sequence(lsn, transactions, sizes),
            integers(ts_us, count), integers(ts_us * 1000, count), repeated_text(table.schema_name, count),
            repeated_text(table.table, count), integers(xid, count), lsn,
            pa.nulls(count, integer), pa.nulls(count, text), pa.nulls(count, integer)],
            fields=self.source_fields)


def _ops(insert: Any, delete: Any) -> pa.Array:
    """Each change's ``op``: c, u or d."""
    if insert.all():
        return repeated_text("c", len(insert))
    updates = pc.if_else(boolean_array(delete), string_scalar("d"), string_scalar("u"))
    return pc.if_else(boolean_array(insert), string_scalar("c"), updates)


def _sequence(lsn: pa.Array, transactions: Sequence[Segment], sizes: list[int]) -> pa.Array:
    """Debezium's ``sequence``: ``["<the commit before>","<lsn>"]``, ``[null,"<lsn>"]`` before the first."""
    lsn_text, empty = pc.cast(lsn, pa.string()), string_scalar("")
    without = pc.binary_join_element_wise(string_scalar('[null,"'), lsn_text, string_scalar('"]'), empty)
    commits = [commit for _, _, commit, _ in transactions]
    if all(commit is None for commit in commits):
        return without
    valid = np.repeat(np.array([commit is not None for commit in commits]), sizes)
    before = pa.Array.from_buffers(pa.int64(), len(lsn), [None if valid.all() else bitmap(valid), pa.py_buffer(
        np.repeat(np.array([commit or 0 for commit in commits], np.int64), sizes))])
    with_commit = pc.binary_join_element_wise(string_scalar('["'), pc.cast(before, pa.string()), string_scalar('","'),
                                              lsn_text, string_scalar('"]'), empty)
    return pc.coalesce(with_commit, without)


def integers(values: Any, count: int) -> pa.Array:
    """An int64 array of a numpy array, or of one integer ``count`` times (no ``pa.array``: see
    :mod:`kopycat.arrow_buffers`)."""
    return pa.Array.from_buffers(pa.int64(), count, [None, pa.py_buffer(np.broadcast_to(
        np.asarray(values, np.int64), (count,)).copy())])


def repeated_text(text: str, count: int) -> pa.Array:
    """A StringArray of ``text`` ``count`` times."""
    encoded = text.encode()
    offsets = np.arange(count + 1, dtype=np.int32) * len(encoded)
    return pa.Array.from_buffers(pa.string(), count, [None, pa.py_buffer(offsets), pa.py_buffer(encoded * count)])


class _Texts:
    """A run's tuples as texts: each message's kind byte, and each column's texts of the new rows
    (null for a delete) and of the old rows (null where a message carries none; None for no old row at all)."""

    __slots__ = ("kinds", "markers", "new", "old")

    def __init__(self, kinds: Any, markers: Any, new: list[pa.Array], old: list[pa.Array] | None) -> None:
        self.kinds, self.markers, self.new, self.old = kinds, markers, new, old


def _column_texts(messages: Sequence[bytes], width: int) -> _Texts | None:
    """The texts of ``messages``, or None unless every message is an insert, an update (with or
    without its old row) or a delete of ``width`` text or NULL values (pgoutput's layout: kind,
    relation oid, then ``K``/``O`` and the old tuple, ``N`` and the new tuple, as they apply)."""
    data = np.frombuffer(b"".join(messages) + _PAD, np.uint8)
    lengths = np.fromiter(map(len, messages), np.int64, len(messages))
    ends = np.cumsum(lengths)
    starts = ends - lengths
    kinds, markers = data[starts], data[starts + _TUPLE_AT - 1]
    old_marker = (markers == _KEY) | (markers == _OLD)
    delete = kinds == _DELETE
    if not (((kinds == _INSERT) & (markers == _NEW)) | ((kinds == _UPDATE) & ((markers == _NEW) | old_marker))
            | (delete & old_marker)).all():
        return None
    position = starts + _TUPLE_AT
    old = None
    with_old = np.flatnonzero(old_marker)
    if with_old.size:
        walked = _walk(data, position[with_old], width)
        if walked is None:
            return None
        old, after_old = walked
        if not ((after_old == ends[with_old]) | (data[after_old] == _NEW) & ~delete[with_old]).all():
            return None
        old = [_spread(column, with_old, len(messages)) for column in old]
        position = position.copy()
        position[with_old] = after_old + 1
    with_new = np.flatnonzero(~delete)
    walked = _walk(data, position[with_new], width)
    if walked is None or not (walked[1] == ends[with_new]).all():
        return None
    return _Texts(kinds, markers, [_spread(column, with_new, len(messages)) for column in walked[0]], old)


def _walk(data: Any, position: Any, width: int) -> tuple[list[pa.Array], Any] | None:
    """The TupleData at each ``position``: each column's texts and the position after each tuple, or
    None unless every tuple has ``width`` text or NULL values. A value is a kind byte, then for a
    text its int32 length and its bytes: a column's positions follow from the previous column's
    lengths, so the walk is one numpy step per column for all rows."""
    if not ((data[position].astype(np.int64) << 8 | data[position + 1]) == width).all():
        return None
    position = position + 2
    columns = []
    for _ in range(width):
        kind = data[position]
        text = kind == _TEXT
        if not (text | (kind == _NULL)).all():
            return None  # an unchanged TOASTed value or a binary one
        size = np.where(text, (data[position + 1].astype(np.int64) << 24 | data[position + 2].astype(np.int64) << 16
                               | data[position + 3].astype(np.int64) << 8 | data[position + 4]), 0)
        column = _strings(data, position + 5, size, text)
        if column is None:
            return None
        columns.append(column)
        position = np.where(text, position + 5 + size, position + 1)
    return columns, position


def _spread(column: pa.Array, rows: Any, count: int) -> pa.Array:
    """``column`` (the values of ``rows``) at those rows of ``count``, null at the others."""
    if len(rows) == count:
        return column
    index = np.zeros(count, np.int32)
    index[rows] = np.arange(len(rows), dtype=np.int32)
    present = np.zeros(count, bool)
    present[rows] = True
    return column.take(pa.Array.from_buffers(pa.int32(), count, [bitmap(present), pa.py_buffer(index)]))


def _strings(data: Any, starts: Any, sizes: Any, valid: Any) -> pa.Array | None:
    """A StringArray of the ``sizes[i]`` bytes at ``starts[i]`` (null where not ``valid``), the bytes
    gathered in one index; None beyond int32 offsets or for bytes that are not UTF-8 (the record
    path's ``decode`` then says so)."""
    offsets = np.zeros(len(sizes) + 1, np.int64)
    np.cumsum(sizes, out=offsets[1:])
    total = int(offsets[-1])
    if total > MAX_OFFSET:
        return None
    index = np.repeat(starts - offsets[:-1], sizes) + np.arange(total)
    validity = None if valid.all() else bitmap(valid)
    column = pa.Array.from_buffers(pa.string(), len(sizes), [validity, pa.py_buffer(offsets.astype(np.int32)),
                                                             pa.py_buffer(data[index])])
    try:
        column.validate(full=True)
    except pa.ArrowInvalid:
        return None
    return column

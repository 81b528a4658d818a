"""A chunk of snapshot rows as Arrow columns: the initial (and blocking) snapshot's columnar path.

The snapshot reads each table's ``col::text`` values through a cursor (:mod:`.snapshot`); a
chunk of those rows becomes one Arrow StringArray per column, typed by the kernels CDC streaming
uses (:meth:`.columns.TableColumns.row`, the parsers :mod:`.values` names), and the ``r`` events
one StructArray of ``<topic>.Envelope`` (Debezium's ``Envelope`` with ``op`` "r", ``before`` null
and the ``io.debezium.connector.postgresql.Source`` block of a snapshot: the snapshot's time,
transaction and slot position, and each row's ``snapshot`` mark). The runner encodes it a column at
a time (JsonConverter's column path), so no Python object is made per event.

What streaming leaves to the record path is left to it here too: a table without a primary key or
with a column type Arrow does not parse as :mod:`.values` does (:meth:`SnapshotColumns.of` answers
None), and a chunk holding a text Arrow reads differently (NaN, infinity, a BC date:
:meth:`SnapshotColumns.envelopes` answers None).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Final

import numpy as np
import pyarrow as pa

from kopycat.connectors.postgres_cdc.columns import Envelopes, TableColumns, integers, repeated_text
from kopycat.connectors.postgres_cdc.config import DEBEZIUM_VERSION
from kopycat.connectors.postgres_cdc.events import TableEvents

__all__ = ["MIN_ROWS", "SnapshotColumns"]

MIN_ROWS: Final = 64
"""The fewest rows of a chunk built as columns: below it Arrow's fixed cost per batch (tens of
kernel calls) outweighs the records' cost per row, as for streaming runs."""


class SnapshotColumns:
    """One table's snapshot events as columns; :meth:`of` answers None where the record path must build them."""

    def __init__(self, columns: TableColumns) -> None:
        self.columns = columns
        self.table = columns.table

    @classmethod
    def of(cls, table: TableEvents) -> SnapshotColumns | None:
        columns = TableColumns.of(table)
        return None if columns is None else cls(columns)

    def envelopes(self, rows: Sequence[Sequence[str | None]], first_mark: str, last_mark: str, ts_us: int,
                  tx_id: int, lsn: int) -> Envelopes | None:
        """The ``r`` events of ``rows`` (each column's text, None for NULL, as the cursor gave them):
        the first row's source block marked ``first_mark``, the last row's ``last_mark``, the others
        ``true``; None where the record path must build them."""
        count = len(rows)
        try:
            after = self.columns.row([pa.array(column, pa.string()) for column in zip(*rows, strict=True)])
        except pa.ArrowInvalid:  # NaN, infinity, a BC date, a year past 9999: the record path's converters
            return None
        if after is None:
            return None
        columns, table = self.columns, self.table
        keys = pa.StructArray.from_arrays([after[i] for i in table.key_index], fields=columns.key_fields)
        now_ns = time.time_ns()
        values = pa.StructArray.from_arrays([
            pa.nulls(count, columns.value_type), pa.StructArray.from_arrays(after, fields=columns.value_fields),
            self._source(count, _marks(first_mark, last_mark, count), ts_us, tx_id, lsn),
            pa.nulls(count, columns.transaction_type), repeated_text("r", count),
            integers(now_ns // 1_000_000, count), integers(now_ns // 1000, count), integers(now_ns, count)],
            fields=columns.envelope_fields)
        return Envelopes(keys, values, "r")

    def _source(self, count: int, marks: pa.Array, ts_us: int, tx_id: int, lsn: int) -> pa.StructArray:
        """``io.debezium.connector.postgresql.Source`` of each row, as :meth:`TableEvents.source` makes
        a snapshot's (no commit before it: ``sequence`` is ``[null,"<lsn>"]``)."""
        table, text, integer = self.table, pa.string(), pa.int64()
        return pa.StructArray.from_arrays([
            repeated_text(DEBEZIUM_VERSION, count), repeated_text("postgresql", count),
            repeated_text(table.prefix, count), integers(ts_us // 1000, count), marks,
            repeated_text(table.dbname, count), repeated_text(f'[null,"{lsn}"]', count),
            integers(ts_us, count), integers(ts_us * 1000, count), repeated_text(table.schema_name, count),
            repeated_text(table.table, count), integers(tx_id, count), integers(lsn, count),
            pa.nulls(count, integer), pa.nulls(count, text), pa.nulls(count, integer)],
            fields=self.columns.source_fields)


def _marks(first: str, last: str, count: int) -> pa.Array:
    """The ``snapshot`` marks of ``count`` rows: ``first``, then ``true`` each, then ``last`` (one row: ``last``)."""
    if count == 1:
        return repeated_text(last, 1)
    lengths = np.full(count, 4, np.int32)
    lengths[0], lengths[-1] = len(first), len(last)
    offsets = np.zeros(count + 1, np.int32)
    np.cumsum(lengths, out=offsets[1:])
    data = (first + "true" * (count - 2) + last).encode()
    return pa.Array.from_buffers(pa.string(), count, [None, pa.py_buffer(offsets), pa.py_buffer(data)])

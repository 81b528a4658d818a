"""A JDBC result's rows as Arrow columns, for the source's columnar path (batches from ``poll``).

The rows of one read are transposed once and each column becomes one Arrow array of
:func:`kopycat.api.arrow.to_arrow_type` of its field, by C-level conversions wherever they give
exactly the record path's value:

- integers, floats and booleans through numpy (a value out of the type's range refuses);
- texts joined once (and split by lengths when all ASCII);
- timestamps as the floor of milliseconds ``Timestamp.from_logical`` takes (naive ones as UTC) and
  dates as numpy's ``datetime64`` day count;
- decimals through their text and Arrow's exact decimal parse; one that would need rounding or
  does not fit the precision refuses.

``pa.array`` is not used: converting Python values makes pyarrow import pandas (half a second)
and costs more per value. A column this cannot build exactly (a value of an unexpected class, a
null in a required column) answers None, and the rows go to the engine as records, which
report the bad value as the record path always has.
"""

from __future__ import annotations

import datetime as dt
import decimal
from collections.abc import Sequence
from itertools import chain, repeat
from operator import attrgetter, is_not
from typing import Any, Final

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kopycat.api.arrow import to_arrow_type
from kopycat.api.data import Date, Decimal, Schema, Time, Timestamp, Type
from kopycat.api.errors import DataError
from kopycat.arrow_buffers import bitmap, variable_array
from kopycat.connectors.jdbc.source_schema import PASS_THROUGH, RowMapping

__all__ = ["arrow_columns", "values_and_keys"]

_NUMPY: Final = {Type.INT8: np.int8, Type.INT16: np.int16, Type.INT32: np.int32, Type.INT64: np.int64,
                 Type.FLOAT32: np.float32, Type.FLOAT64: np.float64}
_CLASSES: Final = {Type.INT8: int, Type.INT16: int, Type.INT32: int, Type.INT64: int, Type.FLOAT32: float,
                   Type.FLOAT64: float, Type.BOOLEAN: bool, Type.STRING: str, Type.BYTES: bytes,
                   Timestamp.LOGICAL_NAME: dt.datetime, Date.LOGICAL_NAME: dt.date, Time.LOGICAL_NAME: dt.time,
                   Decimal.LOGICAL_NAME: decimal.Decimal}
_FILLERS: Final[dict[type, Any]] = {int: 0, float: 0.0, bool: False, str: "", bytes: b"",
                                    dt.datetime: dt.datetime(1970, 1, 1), dt.date: dt.date(1970, 1, 1),
                                    dt.time: dt.time(0), decimal.Decimal: decimal.Decimal(0)}
_EPOCH: Final = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_EPOCH_NAIVE: Final = dt.datetime(1970, 1, 1)
_DELTA_PARTS: Final = attrgetter("days", "seconds", "microseconds")
_NONE: Final = type(None)
_TZINFO: Final = attrgetter("tzinfo")


def arrow_columns(mapping: RowMapping, rows: Sequence[Sequence[Any]]
                  ) -> tuple[pa.StructArray, pa.StructArray | None] | None:
    """The rows' values (and keys, made of the same arrays) as StructArrays; None if a column cannot
    be built exactly."""
    schema = mapping.schema
    if not rows or not schema.fields:
        return None
    converters = dict(mapping.converters)
    arrays = []
    for index, (field, column) in enumerate(zip(schema.fields, zip(*rows, strict=True), strict=True)):
        built = _column(field.schema, column, converters.get(index))
        if built is None:
            return None
        arrays.append(built)
    return values_and_keys(mapping, arrays)


def values_and_keys(mapping: RowMapping, arrays: list[pa.Array]) -> tuple[pa.StructArray, pa.StructArray | None]:
    """The value StructArray of the field arrays, and the key one of the key columns' same arrays."""
    values = _struct(mapping.schema, arrays)
    if mapping.key_schema is None:
        return values, None
    return values, _struct(mapping.key_schema, [arrays[i] for i in mapping.key_indexes])


def _struct(schema: Schema, arrays: list[pa.Array]) -> pa.StructArray:
    fields = [pa.field(field.name, array.type, nullable=field.schema.optional)
              for field, array in zip(schema.fields, arrays, strict=True)]
    return pa.StructArray.from_arrays(arrays, fields=fields)


def _column(schema: Schema, column: Sequence[Any], convert: Any) -> pa.Array | None:
    """One column as Arrow, converted as :meth:`RowMapping.values` converts (skipped when the
    converter would return every value unchanged)."""
    classes = set(map(type, column))
    classes.discard(_NONE)
    if convert is not None and not (convert in PASS_THROUGH and classes <= {PASS_THROUGH[convert]}):
        column = [None if value is None else convert(value) for value in column]
        classes = set(map(type, column))
        classes.discard(_NONE)
    kind = _CLASSES.get(schema.name if schema.name in _CLASSES else schema.type)
    if kind is None or len(classes) > 1 or (classes and kind not in classes):
        return None
    validity = None
    if len(classes) < len(column) and None in column:  # nulls: a bitmap, and a filler in their slots
        if not schema.optional:
            return None  # the record path reports the missing value
        validity = bitmap(np.fromiter(map(is_not, column, repeat(None)), np.bool_, len(column)))
        filler = _FILLERS[kind]
        column = [filler if value is None else value for value in column]
    try:
        return _build(schema, kind, column, validity)
    except (TypeError, ValueError, OverflowError, AttributeError, DataError):  # out of range, inexact
        return None


def _build(schema: Schema, kind: type, column: Sequence[Any], validity: pa.Buffer | None) -> pa.Array | None:
    arrow_type, count = to_arrow_type(schema), len(column)
    if kind is dt.datetime:
        return _fixed(arrow_type, _timestamp_millis(column), validity)
    if kind is dt.date:
        return _fixed(arrow_type, np.array(column, "datetime64[D]").astype(np.int32), validity)
    if kind is dt.time:
        return _fixed(arrow_type, np.array([Time.from_logical(schema, value) for value in column], np.int32),
                      validity)
    if kind is decimal.Decimal:
        return _decimal(schema, arrow_type, column, validity)
    if schema.type in _NUMPY:
        return _fixed(arrow_type, np.array(column, _NUMPY[schema.type]), validity)
    if kind is bool:
        return pa.Array.from_buffers(arrow_type, count, [validity, bitmap(np.array(column, np.bool_))])
    if kind is str:
        joined = "".join(column)
        data = joined.encode()
        lengths = map(len, column) if len(data) == len(joined) else (len(value.encode()) for value in column)
        return variable_array(arrow_type, data, lengths, count, validity)
    return variable_array(arrow_type, b"".join(column), map(len, column), count, validity)


def _timestamp_millis(column: Sequence[dt.datetime]) -> Any:
    """Milliseconds since the epoch, floored as ``Timestamp.from_logical``; naive values are UTC.

    ``value - epoch`` is a timedelta whose seconds and microseconds are never negative, so
    ``days, seconds, microseconds // 1000`` is the floor; numpy adds them up (``datetime64`` from
    datetime objects and ``timedelta // timedelta`` both cost several times more per value).
    """
    aware = set(map(_TZINFO, column)) != {None}
    if aware:
        column = [value if value.tzinfo is not None else value.replace(tzinfo=dt.UTC) for value in column]
    deltas = map((_EPOCH if aware else _EPOCH_NAIVE).__rsub__, column)
    parts = np.fromiter(chain.from_iterable(map(_DELTA_PARTS, deltas)), np.int64, 3 * len(column)).reshape(-1, 3)
    return parts[:, 0] * 86_400_000 + parts[:, 1] * 1000 + parts[:, 2] // 1000


def _fixed(arrow_type: pa.DataType, data: Any, validity: pa.Buffer | None) -> pa.Array:
    return pa.Array.from_buffers(arrow_type, len(data), [validity, pa.py_buffer(data)])


def _decimal(schema: Schema, arrow_type: pa.DataType, column: Sequence[decimal.Decimal],
             validity: pa.Buffer | None) -> pa.Array | None:
    """Arrow's exact parse of each decimal's text; it refuses rounding and values beyond the precision."""
    if not pa.types.is_decimal128(arrow_type):
        return None
    texts = list(map(str, column))  # ASCII: a decimal's text is digits, sign, point and exponent
    strings = variable_array(pa.string(), "".join(texts).encode(), map(len, texts), len(texts))
    if strings is None:
        return None
    try:
        parsed = pc.cast(strings, arrow_type)
    except pa.ArrowInvalid:
        return None  # not finite, more digits than the scale, beyond the precision
    words = parsed.buffers()[1]
    return pa.Array.from_buffers(arrow_type, len(column), [validity, words])

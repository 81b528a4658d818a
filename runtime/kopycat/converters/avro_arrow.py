"""Confluent-framed Avro values to Arrow columns and back: the columnar paths of the AvroConverter.

Beyond Confluent's ``AvroConverter`` (DESIGN.md §2, columnar fast path). A batch of payloads of one
writer schema is decoded by fastavro's compiled reader from one buffer (no stream, no Connect
``Struct`` per record), the decoded records are cut into one list per field and each list becomes
the Arrow column of its Connect schema (:func:`kopycat.api.arrow.to_arrow_schema`) in one
``pa.array`` call: logical types from their Avro encodings (days, milliseconds, unscaled bytes) by
casts, with the range checks the record path makes. Writing goes the other way: each Arrow column
becomes the list of its Avro encodings, the rows are written by fastavro into one buffer behind the
5-byte header, and the buffer and its offsets are the ``BinaryArray``.

Nested fields follow the same plan recursively: a record's dicts become a StructArray of its
fields' columns, arrays and string-keyed maps one column of every element (keys, values) behind
their offsets, and back; a null at any level is the validity bit. No library at hand decodes
schemaless (Confluent-framed) Avro payloads to Arrow without a Python object per record: pyarrow has
no Avro reader, and polars' Rust ``read_avro`` and fastavro's block readers take container files,
so fastavro's dicts stay the intermediate.

The rule is *identical or nothing*, as for the JSON columns (:mod:`kopycat.converters.json_arrow`):
a value schema that is not a STRUCT, a map whose keys are not required strings (an array of
``MapEntry`` records in Avro), an element or map value with a default, a payload whose record does
not end where the next begins, a value a column type cannot hold or a logical value outside what
the data model holds makes these answer None, and the caller takes the record path, which also
names a bad record.
"""

from __future__ import annotations

import io
from array import array
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import accumulate, chain
from typing import Any, Final

import pyarrow as pa
import pyarrow.compute as pc

from kopycat.api.arrow import to_arrow_schema
from kopycat.api.data import LOGICAL_TYPES, Date, Decimal, Schema, Time, Timestamp, Type
from kopycat.api.errors import DataError

__all__ = ["AvroColumns", "avro_columns"]

_PLAIN: Final = frozenset({Type.INT8, Type.INT16, Type.INT32, Type.INT64, Type.FLOAT32, Type.FLOAT64,
                           Type.BOOLEAN, Type.STRING, Type.BYTES})
_EPOCH_ORDINAL: Final = 719_163
_MAX_ORDINAL: Final = 3_652_059
_MS_PER_DAY: Final = 86_400_000
_RANGES: Final = {
    Date.LOGICAL_NAME: (1 - _EPOCH_ORDINAL, _MAX_ORDINAL - _EPOCH_ORDINAL),
    Time.LOGICAL_NAME: (0, _MS_PER_DAY - 1),
    Timestamp.LOGICAL_NAME: (-_EPOCH_ORDINAL * _MS_PER_DAY + _MS_PER_DAY,
                             (_MAX_ORDINAL - _EPOCH_ORDINAL + 1) * _MS_PER_DAY - 1),
}
"""The encodings the Connect logical types hold (years 1-9999, a day's milliseconds)."""
_RAW: Final = {Date.LOGICAL_NAME: pa.int32(), Time.LOGICAL_NAME: pa.int32(), Timestamp.LOGICAL_NAME: pa.int64()}

Finish = Callable[[list[Any]], pa.Array | None]
"""A field's decoded Avro values -> its Arrow column; None: not this path."""
Encode = Callable[[pa.Array], list[Any] | None]
"""A field's Arrow column -> the values fastavro writes; None: not this path."""

Read = Callable[[io.BytesIO, Any, Any], Any]
Write = Callable[[io.BytesIO, Any, Any], None]


@dataclass(frozen=True)
class AvroColumns:
    """How the values of one STRUCT schema move between Avro payloads and Arrow columns."""

    schema: Schema
    arrow_fields: tuple[pa.Field, ...]
    names: tuple[str, ...]
    finishes: tuple[Finish, ...]
    encodes: tuple[Encode, ...]

    def decode(self, data: bytes, starts: Sequence[int], ends: Sequence[int], read: Read,
               parsed: Any) -> pa.StructArray | None:
        """The records at ``data[starts[i]:ends[i]]`` (read by ``read`` with fastavro's ``parsed``
        schema) as a StructArray; None when one does not end exactly at its end."""
        stream = io.BytesIO(data)
        seek, tell = stream.seek, stream.tell
        records = []
        append = records.append
        try:
            for start, end in zip(starts, ends, strict=True):
                seek(start)
                append(read(stream, parsed, None))
                if tell() != end:
                    return None
        except (EOFError, ValueError, TypeError, IndexError, KeyError, UnicodeDecodeError):
            return None
        columns = list(zip(*[tuple(record.values()) for record in records], strict=True))
        if len(columns) != len(self.finishes):
            return None
        arrays = []
        for finish, column in zip(self.finishes, columns, strict=True):
            arrow = finish(list(column))
            if arrow is None:
                return None
            arrays.append(arrow)
        return pa.StructArray.from_arrays(arrays, fields=list(self.arrow_fields))

    def encode(self, values: pa.StructArray, header: bytes, write: Write, parsed: Any) -> pa.BinaryArray | None:
        """``header`` and each row's Avro encoding (fastavro's ``write`` with ``parsed``); None when a
        row is null or a column is not one this path writes as the record path would."""
        if values.null_count or not pa.types.is_struct(values.type):
            return None
        columns = []
        for encode, field in zip(self.encodes, self.names, strict=True):
            column = encode(values.field(field))
            if column is None:
                return None
            columns.append(column)
        stream = io.BytesIO()
        put, tell = stream.write, stream.tell
        offsets = array("q", [0])
        mark = offsets.append
        names = self.names
        try:
            for row in zip(*columns, strict=True):
                put(header)
                write(stream, parsed, dict(zip(names, row, strict=True)))
                mark(tell())
        except (TypeError, ValueError, AttributeError, KeyError, OverflowError):
            return None
        if len(offsets) == 1:
            offsets.extend([0] * len(values))
        return pa.Array.from_buffers(pa.large_binary(), len(values),
                                     [None, pa.py_buffer(offsets), pa.py_buffer(stream.getvalue())]).cast(pa.binary())


def avro_columns(schema: Schema) -> AvroColumns | None:
    """The columns plan of ``schema``; None when it is not a STRUCT of fields this path handles."""
    if schema.type is not Type.STRUCT:
        return None
    arrow_schema = to_arrow_schema(schema)
    finishes, encodes = [], []
    for field, arrow_field in zip(schema.fields, arrow_schema, strict=True):
        plan = _field_plan(field.schema, arrow_field.type)
        if plan is None:
            return None
        finishes.append(plan[0])
        encodes.append(plan[1])
    return AvroColumns(schema, tuple(arrow_schema), tuple(f.name for f in schema.fields), tuple(finishes),
                       tuple(encodes))


def _field_plan(schema: Schema, arrow_type: pa.DataType) -> tuple[Finish, Encode] | None:
    logical = LOGICAL_TYPES.get(schema.name) if schema.name else None
    default = schema.default
    if schema.type in _NESTED and logical is None:
        plan = _NESTED[schema.type](schema, arrow_type)
        return None if plan is None else (_defaulted(default, plan[0]), _defaulted_encode(default, plan[1]))
    if logical is not None:
        raw_default = None if default is None else logical.from_logical(schema, default)
        if schema.name == Decimal.LOGICAL_NAME:
            return _decimal_plan(schema, arrow_type, raw_default)
        if schema.name not in _RANGES:
            return None
        low, high = _RANGES[schema.name]
        return (_defaulted(raw_default, _ranged(low, high, _RAW[schema.name], arrow_type)),
                _defaulted_encode(raw_default, _raw_encode(_RAW[schema.name])))
    if schema.type not in _PLAIN:
        return None
    return _defaulted(default, _plain_finish(arrow_type)), _defaulted_encode(default, _pylist)


def _defaulted(default: Any, finish: Finish) -> Finish:
    """Nulls take the field's default, as ``Struct.get`` answers on the record path."""
    if default is None:
        return finish
    return lambda column: finish([default if value is None else value for value in column])


def _defaulted_encode(default: Any, encode: Encode) -> Encode:
    if default is None:
        return encode

    def encoded(column: pa.Array) -> list[Any] | None:
        values = encode(column)
        return None if values is None else [default if value is None else value for value in values]
    return encoded


def _plain_finish(arrow_type: pa.DataType) -> Finish:
    def finish(column: list[Any]) -> pa.Array | None:
        try:
            return pa.array(column, type=arrow_type, from_pandas=False)
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
            return None
    return finish


def _ranged(low: int, high: int, raw_type: pa.DataType, arrow_type: pa.DataType) -> Finish:
    """Days or milliseconds inside ``[low, high]`` cast to the logical type's column."""
    def finish(column: list[Any]) -> pa.Array | None:
        try:
            raw = pa.array(column, type=pa.int64(), from_pandas=False)
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
            return None
        bounds = pc.min_max(raw)
        smallest, largest = bounds["min"].as_py(), bounds["max"].as_py()
        if smallest is not None and (smallest < low or largest > high):
            return None
        return raw.cast(raw_type).cast(arrow_type)
    return finish


def _pylist(column: pa.Array) -> list[Any]:
    return column.to_pylist()


def _raw_encode(raw_type: pa.DataType) -> Encode:
    """A date, time or timestamp column as its Avro encoding (days or milliseconds)."""
    return lambda column: column.cast(raw_type).to_pylist()


def _decimal_plan(schema: Schema, arrow_type: pa.DataType, raw_default: Any) -> tuple[Finish, Encode]:
    to_logical, from_logical = Decimal.to_logical, Decimal.from_logical

    def finish(column: list[Any]) -> pa.Array | None:
        try:
            decimals = [None if value is None else to_logical(schema, value) for value in column]
            return pa.array(decimals, type=arrow_type, from_pandas=False)
        except (DataError, pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
            return None

    def encode(column: pa.Array) -> list[Any] | None:
        try:
            return [None if value is None else from_logical(schema, value) for value in column.to_pylist()]
        except DataError:
            return None
    return _defaulted(raw_default, finish), _defaulted_encode(raw_default, encode)


def _struct_plan(schema: Schema, arrow_type: pa.DataType) -> tuple[Finish, Encode] | None:
    """A nested record: fastavro's dicts (None when null) <-> a StructArray of the fields' columns."""
    names = tuple(field.name for field in schema.fields)
    arrow_fields = [arrow_type.field(i) for i in range(arrow_type.num_fields)]
    plans = [_field_plan(field.schema, arrow_field.type) for field, arrow_field in zip(
        schema.fields, arrow_fields, strict=True)]
    if any(plan is None for plan in plans):
        return None
    finishes = [plan[0] for plan in plans if plan is not None]
    encodes = [plan[1] for plan in plans if plan is not None]
    empties = [_empty(field.schema) for field in schema.fields]

    def finish(column: list[Any]) -> pa.Array | None:
        try:
            children = [child([empty if record is None else record[name] for record in column])
                        for name, child, empty in zip(names, finishes, empties, strict=True)]
        except (KeyError, TypeError):
            return None
        if any(child is None for child in children):
            return None
        return pa.StructArray.from_arrays(children, fields=arrow_fields, mask=_nulls(column))

    def encode(column: pa.Array) -> list[Any] | None:
        children = [child(column.field(name)) for name, child in zip(names, encodes, strict=True)]
        if any(child is None for child in children):
            return None
        rows = zip(*children, strict=True) if children else ((),) * len(column)
        return [dict(zip(names, row, strict=True)) if valid else None
                for valid, row in zip(column.is_valid().to_pylist(), rows, strict=True)]
    return finish, encode


def _array_plan(schema: Schema, arrow_type: pa.DataType) -> tuple[Finish, Encode] | None:
    """An array: fastavro's lists <-> a ListArray over one column of every element."""
    item = _element_plan(schema.value_schema, arrow_type.value_type)
    if item is None:
        return None
    finish_item, encode_item = item

    def finish(column: list[Any]) -> pa.Array | None:
        if not all(value is None or isinstance(value, list) for value in column):
            return None
        items = finish_item(list(chain.from_iterable(value for value in column if value is not None)))
        if items is None:
            return None
        return pa.ListArray.from_arrays(_offsets(column), items, type=arrow_type, mask=_nulls(column))

    def encode(column: pa.Array) -> list[Any] | None:
        start, ends = _spans(column)
        items = encode_item(column.values.slice(start, ends[-1] - start))
        if items is None:
            return None
        return [items[low - start:high - start] if valid else None
                for valid, low, high in zip(column.is_valid().to_pylist(), ends, ends[1:], strict=False)]
    return finish, encode


def _map_plan(schema: Schema, arrow_type: pa.DataType) -> tuple[Finish, Encode] | None:
    """A map of required string keys (an Avro map; others are arrays of MapEntry records: not this path)."""
    key = schema.key_schema
    if key is None or key.type is not Type.STRING or key.optional or key.name is not None:
        return None
    item = _element_plan(schema.value_schema, arrow_type.item_type)
    if item is None:
        return None
    finish_item, encode_item = item
    key_type = arrow_type.key_type

    def finish(column: list[Any]) -> pa.Array | None:
        if not all(value is None or isinstance(value, dict) for value in column):
            return None
        present = [value for value in column if value is not None]
        items = finish_item(list(chain.from_iterable(value.values() for value in present)))
        if items is None:
            return None
        keys = pa.array(list(chain.from_iterable(present)), type=key_type, from_pandas=False)
        return pa.MapArray.from_arrays(_offsets(column), keys, items, type=arrow_type, mask=_nulls(column))

    def encode(column: pa.Array) -> list[Any] | None:
        start, ends = _spans(column)
        keys = column.keys.slice(start, ends[-1] - start).to_pylist()
        items = encode_item(column.items.slice(start, ends[-1] - start))
        if items is None:
            return None
        return [dict(zip(keys[low - start:high - start], items[low - start:high - start], strict=True))
                if valid else None
                for valid, low, high in zip(column.is_valid().to_pylist(), ends, ends[1:], strict=False)]
    return finish, encode


def _element_plan(schema: Schema | None, arrow_type: pa.DataType) -> tuple[Finish, Encode] | None:
    """An array element or map value: no ``Struct.get`` answers its default, so one with a default is not
    this path (the record path keeps its nulls as they are)."""
    if schema is None or schema.default is not None:
        return None
    return _field_plan(schema, arrow_type)


def _empty(schema: Schema) -> Any:
    """What a field holds under a null struct, as fastavro would read it: the empty value Arrow's
    struct builder gives the children of a null (zero, "", epoch, []), so a required child stays
    valid as on the record path, and Parquet takes the column."""
    if schema.name == Decimal.LOGICAL_NAME:
        return b"\x00"
    if schema.type is Type.STRUCT:
        return {field.name: _empty(field.schema) for field in schema.fields}
    return _EMPTY[schema.type]()


_EMPTY: Final[dict[Type, Callable[[], Any]]] = {
    Type.INT8: int, Type.INT16: int, Type.INT32: int, Type.INT64: int, Type.FLOAT32: float, Type.FLOAT64: float,
    Type.BOOLEAN: bool, Type.STRING: str, Type.BYTES: bytes, Type.ARRAY: list, Type.MAP: dict}


def _nulls(column: list[Any]) -> pa.Array | None:
    """The validity mask of a nested column: None when every value is there."""
    nulls = [value is None for value in column]
    return pa.array(nulls, type=pa.bool_()) if any(nulls) else None


def _offsets(column: list[Any]) -> pa.Array:
    """Where each list or map starts in the flattened column (a null one takes no room)."""
    return pa.array(accumulate((0 if value is None else len(value) for value in column), initial=0),
                    type=pa.int32())


def _spans(column: pa.Array) -> tuple[int, list[int]]:
    """The first offset and every offset of a (perhaps sliced) list or map column into its children."""
    ends = column.offsets.to_pylist()
    return ends[0], ends


_NESTED: Final[dict[Type, Callable[[Schema, pa.DataType], tuple[Finish, Encode] | None]]] = {
    Type.STRUCT: _struct_plan, Type.ARRAY: _array_plan, Type.MAP: _map_plan}

"""How a record becomes one row of statement parameters: a tuple built by a per-plan function.

Confluent's ``PreparedStatementBinder`` walks the fields of every record by name. Doing that in
Python is several calls per column and record (``Struct.get`` looks the field up, then its default),
so a plan compiles its row function once: columns taken from a struct value are picked by field
position in one ``itemgetter`` call over ``Struct.values()``, Kafka coordinates and key fields by
small getters, and only the columns that need it get a default, a conversion or a check.

Column order in a row is the plan's: the getter columns first, then the picked value columns.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kopycat.api.data import Schema, Struct
from kopycat.api.errors import DataError
from kopycat.api.records import SinkRecord
from kopycat.connectors.jdbc.sink_schema import TableId, fits, value_family

__all__ = ["Column", "Row", "describe_record", "row_function", "short"]

Row = tuple[Any, ...]
Getter = Callable[[SinkRecord], Any]


def short(value: Any, limit: int = 40) -> str:
    """A value for an error message, cut to ``limit`` characters."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def describe_record(record: SinkRecord) -> str:
    tp = record.topic_partition
    return f"topic '{tp.topic}' partition {tp.partition} offset {record.original_kafka_offset}"


@dataclass(frozen=True)
class Column:
    """One statement parameter: where its value comes from and what happens to it on the way.

    ``position`` is the field's index in the value struct (picked positionally); otherwise
    ``get`` reads it from the record. ``default`` replaces None (Kafka's ``Struct.get``),
    ``convert`` adapts it to the column, ``not_null`` refuses None, and ``family`` (schemaless
    values only) checks the Python value against the column's type family.
    """

    bind: str
    position: int | None = None
    get: Getter | None = None
    default: Any = None
    convert: Callable[[Any], Any] | None = None
    not_null: bool = False
    family: str | None = None


def value_field(bind: str, value_schema: Schema, name: str, **extra: Any) -> Column:
    """A column filled from field ``name`` of struct values of ``value_schema``, by position."""
    field = value_schema.field(name)
    assert field is not None  # extract_fields took the name from this schema
    return Column(bind, position=field.index, default=field.schema.default, **extra)


def ordered(columns: Sequence[Column]) -> list[Column]:
    """The order of a row: getter columns, then positional ones (the row function builds it so)."""
    return [c for c in columns if c.position is None] + [c for c in columns if c.position is not None]


def row_function(columns: Sequence[Column], table_id: TableId) -> Callable[[SinkRecord], Row]:
    """A function making one row per record, in ``ordered(columns)`` order."""
    columns = ordered(columns)
    base = _base_row(columns)
    fixes = [(i, c) for i, c in enumerate(columns)
             if c.default is not None or c.convert is not None or c.not_null or c.family is not None]
    if not fixes:
        return base

    def row(record: SinkRecord) -> Row:
        values = list(base(record))
        for i, column in fixes:
            values[i] = _fixed(values[i], column, record, table_id)
        return tuple(values)
    return row


def _base_row(columns: Sequence[Column]) -> Callable[[SinkRecord], Row]:
    getters = [c.get for c in columns if c.position is None]
    positions = [c.position for c in columns if c.position is not None]
    if not positions:
        return lambda record: tuple(get(record) for get in getters)  # type: ignore[misc]
    pick = _picker(positions)
    if not getters:
        return lambda record: pick(record.value.values())
    return lambda record: (*(get(record) for get in getters), *pick(record.value.values()))  # type: ignore[misc]


def _picker(positions: Sequence[int | None]) -> Callable[[Sequence[Any]], Row]:
    """``itemgetter`` over the positions, always returning a tuple (it returns a bare item for one)."""
    if len(positions) == 1:
        [only] = positions
        return lambda values: (values[only],)
    return operator.itemgetter(*positions)  # type: ignore[arg-type]


def _fixed(value: Any, column: Column, record: SinkRecord, table_id: TableId) -> Any:
    if value is None:
        value = column.default
    if column.convert is not None and value is not None:
        value = column.convert(value)
    if value is None:
        if column.not_null:
            raise DataError(f"Column '{column.bind}' of table '{table_id}' is NOT NULL, but the record at "
                            f"{describe_record(record)} has no value for it. Fill the field, or make "
                            f"the column nullable")
    elif column.family is not None and not fits(value_family(value), column.family):
        raise DataError(f"Value {short(value)} of the record at {describe_record(record)} does not "
                        f"fit column '{column.bind}' ({column.family}) of table '{table_id}'. Fix the records, "
                        f"or send them with a schema (value.converter.schemas.enable=true)")
    return value


def field_getter(source: str, name: str) -> Getter:
    """A getter for a column that is not picked by position.

    ``kafka`` reads Kafka coordinate ``name`` (0 topic, 1 partition, 2 offset); ``primitive-key``
    the whole key; ``key`` / ``value`` field ``name`` of a struct or map (None otherwise).
    """
    if source == "kafka":
        return {0: lambda r: r.original_topic, 1: lambda r: r.original_kafka_partition,
                2: lambda r: r.original_kafka_offset}[int(name)]
    if source == "primitive-key":
        return lambda r: r.key
    attr = "key" if source == "key" else "value"

    def get(record: SinkRecord) -> Any:
        container = getattr(record, attr)
        return container.get(name) if isinstance(container, Struct | Mapping) else None
    return get

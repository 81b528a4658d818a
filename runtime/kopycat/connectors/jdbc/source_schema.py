"""Table columns -> Kafka Connect schemas, and rows -> Structs (Confluent's ``DataConverter``).

Follows ``GenericDatabaseDialect.addFieldToSchema`` over SQLAlchemy's reflected types: integers
by width (SMALLINT INT16, INTEGER INT32, BIGINT INT64; SQLite's INTEGER is 64-bit so INT64),
REAL FLOAT32 (SQLite's REAL is a double: FLOAT64), DOUBLE/FLOAT FLOAT64, NUMERIC/DECIMAL the
Decimal logical type with the column's scale and a ``connect.decimal.precision`` parameter
(an unconstrained NUMERIC gets scale 127, as Confluent's PostgreSQL dialect), or with
``numeric.mapping`` ``best_fit`` an INT8..INT64 or FLOAT64 where that loses nothing; text
STRING, binary BYTES, DATE/TIME/TIMESTAMP the Date/Time/Timestamp logical types; a nullable
column is optional. The value schema is named after the table, as Confluent names it.

Beyond Confluent: UUID and JSON columns become STRING (their text), and a column type with no
mapping is an error naming the table, the column and the fix (Confluent drops the column).

Rows become Structs over the row's own values: most types need no per-value work; the few
converters (best_fit casts, UUID/JSON text, naive timestamps in a non-UTC ``db.timezone``)
run only on their columns.
"""

from __future__ import annotations

import datetime as dt
import decimal
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

import orjson
import sqlalchemy.types as sat
from sqlalchemy import Column

from kopycat.api.data import Date, Decimal, Schema, SchemaBuilder, Struct, Time, Timestamp, Type
from kopycat.api.errors import ConfigError

__all__ = ["PASS_THROUGH", "PRECISION_PARAMETER", "RowMapping", "column_schema", "infer_query_mapping", "table_mapping",
           "to_bytes", "to_decimal"]

PRECISION_PARAMETER: Final = "connect.decimal.precision"
MAX_INTEGER_TYPE_PRECISION: Final = 18
NUMERIC_SCALE_HIGH: Final = 127
NUMERIC_SCALE_LOW: Final = -84

Converter = Callable[[Any], Any]


class UnmappedTypeError(ConfigError):
    """A column whose type has no Kafka Connect schema."""


@dataclass(frozen=True)
class RowMapping:
    """How one table's (or query's) rows become record values and keys.

    ``schema`` is shared by every record of the table; ``converters`` are (column index,
    function) pairs for the columns whose values need work; ``key_indexes`` pick the primary
    key columns for ``key_schema`` (None: records have no key).
    """

    schema: Schema
    converters: tuple[tuple[int, Converter], ...] = ()
    key_schema: Schema | None = None
    key_indexes: tuple[int, ...] = ()

    def values(self, rows: Sequence[Sequence[Any]]) -> list[list[Any]]:
        """Each row's values as the schema wants them (one list per row, reused by the Struct)."""
        values = [list(row) for row in rows]
        for index, convert in self.converters:
            for row_values in values:
                value = row_values[index]
                if value is not None:
                    row_values[index] = convert(value)
        return values

    def structs(self, values: list[list[Any]]) -> list[Struct]:
        """Structs over already-converted values; no copy, no per-field validation."""
        trusted, schema = Struct.of_values, self.schema
        return [trusted(schema, row_values) for row_values in values]

    def keys(self, values: list[list[Any]]) -> list[Struct | None]:
        if self.key_schema is None:
            return [None] * len(values)
        trusted, schema, indexes = Struct.of_values, self.key_schema, self.key_indexes
        return [trusted(schema, [row_values[i] for i in indexes]) for row_values in values]


def table_mapping(table: str, columns: Sequence[Column[Any]], *, numeric_mapping: str,
                  timezone: dt.tzinfo | None, sqlite: bool, key_columns: Sequence[str] = ()
                  ) -> RowMapping:
    """The mapping of a reflected table's columns; raises UnmappedTypeError for a column without one.

    ``timezone`` is db.timezone when it is not UTC (naive timestamps are read in it).
    """
    builder = SchemaBuilder.struct().name(table)
    converters: list[tuple[int, Converter]] = []
    for index, column in enumerate(columns):
        schema, convert = column_schema(table, column.name, column.type, bool(column.nullable),
                                        numeric_mapping=numeric_mapping, timezone=timezone,
                                        sqlite=sqlite)
        builder.field(column.name, schema)
        if convert is not None:
            converters.append((index, convert))
    value_schema = builder.build()
    key_schema: Schema | None = None
    key_indexes: tuple[int, ...] = ()
    if key_columns:
        names = [column.name for column in columns]
        key_indexes = tuple(names.index(name) for name in key_columns)
        key_builder = SchemaBuilder.struct()
        for index in key_indexes:
            key_builder.field(names[index], value_schema.fields[index].schema)
        key_schema = key_builder.build()
    return RowMapping(value_schema, tuple(converters), key_schema, key_indexes)


def column_schema(table: str, column: str, column_type: sat.TypeEngine[Any], nullable: bool, *,
                  numeric_mapping: str = "none", timezone: dt.tzinfo | None = None,
                  sqlite: bool = False) -> tuple[Schema, Converter | None]:
    """One column's field schema and value converter (None: values are used as they are)."""
    schema, convert = _mapped(column_type, numeric_mapping, timezone, sqlite)
    if schema is None:
        raise UnmappedTypeError(
            f"Column {column!r} of table {table!r} has type {column_type!r}, which has no Kafka "
            f"Connect mapping: leave the table out (table.blacklist / table.exclude.list) or copy "
            f"it with a query that casts the column (query=SELECT ..., CAST({column} AS TEXT) AS "
            f"{column} FROM {table})")
    if nullable:
        schema = _optional(schema)
    return schema, convert


def _mapped(column_type: sat.TypeEngine[Any], numeric_mapping: str, timezone: dt.tzinfo | None,
            sqlite: bool) -> tuple[Schema | None, Converter | None]:
    if isinstance(column_type, sat.Boolean):
        return Schema.BOOLEAN_SCHEMA, None
    if isinstance(column_type, sat.SmallInteger):
        return Schema.INT16_SCHEMA, None
    if isinstance(column_type, sat.BigInteger) or (sqlite and isinstance(column_type, sat.Integer)):
        return Schema.INT64_SCHEMA, None
    if isinstance(column_type, sat.Integer):
        return Schema.INT32_SCHEMA, None
    if isinstance(column_type, sat.Float):  # before Numeric: Float is a Numeric in SQLAlchemy
        single = isinstance(column_type, sat.REAL) or (column_type.precision or 53) <= 24
        if sqlite:  # dynamic typing: a REAL column may hold integers
            return Schema.FLOAT64_SCHEMA, _to_float
        return (Schema.FLOAT32_SCHEMA if single else Schema.FLOAT64_SCHEMA), None
    if isinstance(column_type, sat.Numeric):
        return _numeric(column_type.precision, column_type.scale, numeric_mapping)
    if isinstance(column_type, sat.String):
        return Schema.STRING_SCHEMA, None
    if isinstance(column_type, sat._Binary):
        return Schema.BYTES_SCHEMA, to_bytes
    if isinstance(column_type, sat.DateTime):
        return Timestamp.SCHEMA, None if timezone is None else _in_zone(timezone)
    if isinstance(column_type, sat.Date):
        return Date.SCHEMA, None
    if isinstance(column_type, sat.Time):
        return Time.SCHEMA, None
    if isinstance(column_type, sat.Uuid):
        return Schema.STRING_SCHEMA, str
    if isinstance(column_type, sat.JSON):
        return Schema.STRING_SCHEMA, _json_text
    return None, None


def _numeric(precision: int | None, scale: int | None, mapping: str
             ) -> tuple[Schema, Converter | None]:
    """Confluent's NUMERIC/DECIMAL cases, numeric.mapping included."""
    if precision is not None and precision > 0:
        integral = scale is not None and NUMERIC_SCALE_LOW <= scale < 1
        fits = precision <= MAX_INTEGER_TYPE_PRECISION
        if mapping == "precision_only" and scale == 0 and fits:
            return _integer_schema(precision), _to_int
        if mapping == "best_fit" and fits:
            if integral:
                return _integer_schema(precision), _to_int
            if scale is not None and scale > 0:
                return Schema.FLOAT64_SCHEMA, _to_float
        if mapping == "best_fit_eager_double":
            if integral and fits:
                return _integer_schema(precision), _to_int
            if scale is not None and scale > 0:
                return Schema.FLOAT64_SCHEMA, _to_float
    decimal_scale = NUMERIC_SCALE_HIGH if scale is None or (scale == 0 and not precision) else scale
    schema = Decimal.builder(decimal_scale).parameter(PRECISION_PARAMETER, str(precision or 0)).build()
    return schema, to_decimal


def _integer_schema(precision: int) -> Schema:
    if precision > 9:
        return Schema.INT64_SCHEMA
    if precision > 4:
        return Schema.INT32_SCHEMA
    if precision > 2:
        return Schema.INT16_SCHEMA
    return Schema.INT8_SCHEMA


def _optional(schema: Schema) -> Schema:
    return Schema(schema.type, True, None, schema.name, schema.version, schema.doc,
                  schema.parameters)


def _to_int(value: Any) -> int:
    return int(value)


def _to_float(value: Any) -> float:
    return float(value)


def to_decimal(value: Any) -> decimal.Decimal:
    """A NUMERIC column's value as the Decimal logical type holds it (drivers may give floats or text)."""
    return value if isinstance(value, decimal.Decimal) else decimal.Decimal(str(value))


def to_bytes(value: Any) -> bytes:
    """A binary column's value as bytes (drivers may give memoryview or bytearray)."""
    return value if isinstance(value, bytes) else bytes(value)


def _json_text(value: Any) -> str:
    return value if isinstance(value, str) else orjson.dumps(value).decode()


def _in_zone(zone: dt.tzinfo) -> Converter:
    def convert(value: dt.datetime) -> dt.datetime:
        return value.replace(tzinfo=zone) if value.tzinfo is None else value
    return convert


PASS_THROUGH: Final[dict[Converter, type]] = {to_decimal: decimal.Decimal, _to_float: float, _to_int: int,
                                               to_bytes: bytes, _json_text: str, str: str}
"""Converters that return a value of this class unchanged: a column all of it needs no converting."""

_PYTHON_TYPES: Final[tuple[tuple[type, Schema, Converter | None], ...]] = (
    (bool, Schema.OPTIONAL_BOOLEAN_SCHEMA, None),
    (int, Schema.OPTIONAL_INT64_SCHEMA, None),
    (float, Schema.OPTIONAL_FLOAT64_SCHEMA, None),
    (str, Schema.OPTIONAL_STRING_SCHEMA, None),
    (bytes, Schema.OPTIONAL_BYTES_SCHEMA, None),
    (memoryview, Schema.OPTIONAL_BYTES_SCHEMA, to_bytes),
    (dt.datetime, _optional(Timestamp.SCHEMA), None),
    (dt.date, _optional(Date.SCHEMA), None),
    (dt.time, _optional(Time.SCHEMA), None),
    (uuid.UUID, Schema.OPTIONAL_STRING_SCHEMA, str),
    (dict, Schema.OPTIONAL_STRING_SCHEMA, _json_text),
    (list, Schema.OPTIONAL_STRING_SCHEMA, _json_text),
)


def infer_query_mapping(names: Sequence[str], rows: Sequence[Sequence[Any]],
                        timezone: dt.tzinfo | None) -> RowMapping:
    """A mapping for a ``query``'s result, from the first non-null value of each column.

    A query has no reflected columns; every field is optional, a column with only nulls is
    an optional STRING, and decimals take the largest scale seen in the first batch.
    """
    builder = SchemaBuilder.struct()
    converters: list[tuple[int, Converter]] = []
    for index, name in enumerate(names):
        sample = next((row[index] for row in rows if row[index] is not None), None)
        schema, convert = _python_schema(sample, [row[index] for row in rows], timezone)
        builder.field(name, schema)
        if convert is not None:
            converters.append((index, convert))
    return RowMapping(builder.build(), tuple(converters))


def _python_schema(sample: Any, column: Sequence[Any], timezone: dt.tzinfo | None
                   ) -> tuple[Schema, Converter | None]:
    if sample is None:
        return Schema.OPTIONAL_STRING_SCHEMA, None
    if isinstance(sample, decimal.Decimal):
        exponents = [v.as_tuple().exponent for v in column if isinstance(v, decimal.Decimal)]
        scale = max([-e for e in exponents if isinstance(e, int)] + [0])
        return _optional(Decimal.schema(scale)), to_decimal
    for python_type, schema, convert in _PYTHON_TYPES:
        if isinstance(sample, python_type):
            if schema.type is Type.INT64 and schema.name == Timestamp.LOGICAL_NAME and timezone:
                return schema, _in_zone(timezone)
            return schema, convert
    return Schema.OPTIONAL_STRING_SCHEMA, str

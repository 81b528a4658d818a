"""PostgreSQL column types -> Connect schemas and values, as Debezium's ``PostgresValueConverter``.

Values arrive in PostgreSQL's text form (pgoutput sends text; the snapshot selects ``col::text``),
read in a session with ``TimeZone=UTC``, ``DateStyle=ISO`` and ``bytea_output=hex`` so the forms
are fixed. Schemas follow Debezium 3.x with ``binary.handling.mode=bytes``:

- ``decimal.handling.mode``: precise (Connect Decimal with ``connect.decimal.precision``;
  ``io.debezium.data.VariableScaleDecimal`` for NUMERIC without a precision), double, string;
- ``time.precision.mode``: adaptive (``io.debezium.time.Date``, ``Time``/``MicroTime``,
  ``Timestamp``/``MicroTimestamp`` by the column's precision) or connect (Kafka's logical types).
  ``timestamptz`` is ``io.debezium.time.ZonedTimestamp`` (ISO-8601 text in UTC) in both.
Types not listed here are sent as their text (STRING), where Debezium may differ.
"""

from __future__ import annotations

import datetime as dt
import decimal
from collections.abc import Callable
from typing import Any, Final

from kopycat.api.data import Date, Decimal, Schema, SchemaBuilder, Struct, Time, Timestamp

__all__ = ["ColumnType", "column_type"]

BOOL, BYTEA, INT8, INT2, INT4, TEXT, OID, JSON = 16, 17, 20, 21, 23, 25, 26, 114
FLOAT4, FLOAT8, BPCHAR, VARCHAR, DATE, TIME, TIMESTAMP, TIMESTAMPTZ = 700, 701, 1042, 1043, 1082, 1083, 1114, 1184
NUMERIC, UUID, JSONB = 1700, 2950, 3802

_EPOCH: Final = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_NAIVE_EPOCH: Final = dt.datetime(1970, 1, 1)  # a TIMESTAMP's text has no zone: UTC, no tzinfo to attach
_EPOCH_DAY: Final = dt.date(1970, 1, 1).toordinal()
PRECISION_PARAMETER: Final = "connect.decimal.precision"


def _variable_scale_builder() -> SchemaBuilder:
    """Debezium's ``VariableScaleDecimal``: a NUMERIC without a declared precision and scale."""
    return (SchemaBuilder.struct().name("io.debezium.data.VariableScaleDecimal").version(1)
            .doc("Variable scaled decimal").field("scale", Schema.INT32_SCHEMA).field("value", Schema.BYTES_SCHEMA))


_VARIABLE_SCALE_SCHEMA: Final = _variable_scale_builder().build()

Converter = Callable[[str], Any]


class ColumnType:
    """A column's Connect schema builder (not yet optional), its text -> value function, and how
    Arrow parses a whole column of those texts to the same values (``columns`` names a parser of
    :mod:`.columns`; None where only ``convert`` gives them exactly)."""

    __slots__ = ("builder", "columns", "convert")

    def __init__(self, builder: Callable[[], SchemaBuilder], convert: Converter, columns: str | None = None) -> None:
        self.builder, self.convert, self.columns = builder, convert, columns


def _timestamp_us(text: str) -> int:
    value = dt.datetime.fromisoformat(text)
    delta = value - (_NAIVE_EPOCH if value.tzinfo is None else _EPOCH)
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def _time_us(text: str) -> int:
    value = dt.time.fromisoformat(text) if not text.startswith("24:") else None
    if value is None:
        return 86_400_000_000
    return ((value.hour * 60 + value.minute) * 60 + value.second) * 1_000_000 + value.microsecond


def _zoned(precision: int) -> Converter:
    """``2024-01-01 10:00:00.5+00`` -> ``2024-01-01T10:00:00.500000Z``: UTC, the fraction as wide as the
    column's precision (Debezium's ``ZonedTimestamp`` with its fractional width)."""
    def convert(text: str) -> str:
        value = dt.datetime.fromisoformat(text).astimezone(dt.UTC)
        out = value.strftime("%Y-%m-%dT%H:%M:%S")
        if precision > 0:
            out += "." + f"{value.microsecond:06d}"[:precision]
        return out + "Z"
    return convert


def _bytea(text: str) -> bytes:
    return bytes.fromhex(text[2:]) if text.startswith("\\x") else text.encode()


def _variable_decimal(text: str) -> Struct:
    value = decimal.Decimal(text).normalize()  # trailing zeros go, as Debezium's value has them stripped
    if value.as_tuple().exponent > 0:  # type: ignore[operator]
        value = value.quantize(decimal.Decimal(1))
    scale = max(0, -value.as_tuple().exponent)  # type: ignore[operator]
    unscaled = Decimal.unscaled(value, scale)
    bits = unscaled.bit_length() if unscaled >= 0 else (~unscaled).bit_length()
    raw = unscaled.to_bytes(bits // 8 + 1, "big", signed=True)
    return Struct(_VARIABLE_SCALE_SCHEMA).put("scale", scale).put("value", raw)


def _named(builder: Callable[[], SchemaBuilder], name: str) -> Callable[[], SchemaBuilder]:
    return lambda: builder().name(name).version(1)


def _numeric(modifier: int, mode: str) -> ColumnType:
    if mode == "double":
        return ColumnType(SchemaBuilder.float64, float)
    if mode == "string":
        return ColumnType(SchemaBuilder.string, str, "text")
    if modifier < 4:
        return ColumnType(_variable_scale_builder, _variable_decimal)
    precision, scale = (modifier - 4) >> 16, (modifier - 4) & 0xFFFF
    return ColumnType(lambda: Decimal.builder(scale).parameter(PRECISION_PARAMETER, str(precision)),
                      decimal.Decimal, "cast")


def _temporal(type_oid: int, modifier: int, mode: str) -> ColumnType:
    precision = 6 if modifier < 0 else modifier
    if type_oid == DATE:
        if mode == "connect":
            return ColumnType(Date.builder, dt.date.fromisoformat)
        return ColumnType(_named(SchemaBuilder.int32, "io.debezium.time.Date"),
                          lambda t: dt.date.fromisoformat(t).toordinal() - _EPOCH_DAY, "date")
    if type_oid == TIME:
        if mode == "connect":
            return ColumnType(Time.builder, lambda t: dt.time.fromisoformat(t))
        if precision <= 3:
            return ColumnType(_named(SchemaBuilder.int32, "io.debezium.time.Time"), lambda t: _time_us(t) // 1000,
                              "time")
        return ColumnType(_named(SchemaBuilder.int64, "io.debezium.time.MicroTime"), _time_us, "time")
    if mode == "connect":
        return ColumnType(Timestamp.builder,
                          lambda t: dt.datetime.fromisoformat(t).replace(tzinfo=dt.UTC))
    if precision <= 3:
        return ColumnType(_named(SchemaBuilder.int64, "io.debezium.time.Timestamp"),
                          lambda t: _timestamp_us(t) // 1000)
    return ColumnType(_named(SchemaBuilder.int64, "io.debezium.time.MicroTimestamp"), _timestamp_us, "timestamp")


_SIMPLE: Final[dict[int, ColumnType]] = {
    # pgoutput's t/f, ::text's true/false
    BOOL: ColumnType(SchemaBuilder.bool, lambda t: t in ("t", "true"), "boolean"),
    BYTEA: ColumnType(SchemaBuilder.bytes, _bytea),
    INT2: ColumnType(SchemaBuilder.int16, int, "cast"),
    INT4: ColumnType(SchemaBuilder.int32, int, "cast"),
    INT8: ColumnType(SchemaBuilder.int64, int, "cast"),
    OID: ColumnType(SchemaBuilder.int64, int, "cast"),
    FLOAT4: ColumnType(SchemaBuilder.float32, float, "float"),
    FLOAT8: ColumnType(SchemaBuilder.float64, float, "float"),
    TEXT: ColumnType(SchemaBuilder.string, str, "text"),
    BPCHAR: ColumnType(SchemaBuilder.string, str, "text"),
    VARCHAR: ColumnType(SchemaBuilder.string, str, "text"),
    UUID: ColumnType(_named(SchemaBuilder.string, "io.debezium.data.Uuid"), str, "text"),
    JSON: ColumnType(_named(SchemaBuilder.string, "io.debezium.data.Json"), str, "text"),
    JSONB: ColumnType(_named(SchemaBuilder.string, "io.debezium.data.Json"), str, "text"),
}


_TEXT: Final = ColumnType(SchemaBuilder.string, str, "text")


def column_type(type_oid: int, modifier: int, *, decimal_mode: str, time_mode: str) -> ColumnType:
    """The schema and converter of a column of type ``type_oid`` with type modifier ``modifier``."""
    if type_oid == NUMERIC:
        return _numeric(modifier, decimal_mode)
    if type_oid in (DATE, TIME, TIMESTAMP):
        return _temporal(type_oid, modifier, time_mode)
    if type_oid == TIMESTAMPTZ:
        precision = 6 if modifier < 0 else modifier
        return ColumnType(_named(SchemaBuilder.string, "io.debezium.time.ZonedTimestamp"), _zoned(precision),
                          f"zoned{precision}")
    return _SIMPLE.get(type_oid, _TEXT)

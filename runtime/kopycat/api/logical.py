"""Kafka Connect's logical types: Decimal, Date, Time and Timestamp (``org.apache.kafka.connect.data``).

A logical type is a named schema over a primitive one (BYTES, INT32, INT64) with a Python class
for its values and the two conversions Kafka's classes define (``fromLogical`` / ``toLogical``).
:mod:`kopycat.api.data` re-exports every name here (``from kopycat.api.data import Decimal``);
each class registers itself in :mod:`kopycat.api.logical_registry`, where
:func:`kopycat.api.schema.validate_value` finds it by schema name.
"""

from __future__ import annotations

import datetime as _dt
import decimal as _decimal
from typing import Any, ClassVar, Final

from kopycat.api.errors import DataError
from kopycat.api.logical_registry import LOGICAL_TYPES, register_logical_type
from kopycat.api.schema import Schema, at_field, short_repr
from kopycat.api.schema_builder import SchemaBuilder

__all__ = ["LOGICAL_TYPES", "MILLIS_PER_DAY", "Date", "Decimal", "Time", "Timestamp"]


class _Logical:
    """What a logical type shares: its name, the Python class of its values, and conversions."""

    LOGICAL_NAME: ClassVar[str]
    PYTHON_TYPE: ClassVar[tuple[type, ...]]

    @classmethod
    def accepts(cls, value: Any) -> bool:
        """True when ``value`` is of the Python class this logical type uses."""
        return isinstance(value, cls.PYTHON_TYPE)

    @classmethod
    def validate(cls, schema: Schema, value: Any, path: str) -> None:
        if not cls.accepts(value):
            raise DataError(f"Invalid value{at_field(path)}: expected {cls.PYTHON_TYPE[0].__name__} for "
                            f"schema \"{cls.LOGICAL_NAME}\", got {type(value).__name__} {short_repr(value)}")
        try:
            cls.from_logical(schema, value)
        except DataError as exc:
            raise DataError(f"Invalid value{at_field(path)}: {exc}") from None

    @classmethod
    def from_logical(cls, schema: Schema, value: Any) -> Any:
        """The value as its schema's underlying type (Kafka's ``fromLogical``)."""
        raise NotImplementedError

    @classmethod
    def to_logical(cls, schema: Schema, value: Any) -> Any:
        """The logical value of an underlying value (Kafka's ``toLogical``)."""
        raise NotImplementedError


_EXACT: Final = _decimal.Context(prec=_decimal.MAX_PREC, Emax=_decimal.MAX_EMAX, Emin=_decimal.MIN_EMIN)


class Decimal(_Logical):
    """Arbitrary-precision decimals as BYTES: the unscaled value, two's complement big-endian.

    Kafka's ``Decimal``; the ``scale`` parameter fixes the scale. Values are ``decimal.Decimal``;
    one with fewer fractional digits than the scale is accepted, one with more is rejected
    rather than rounded.
    """

    LOGICAL_NAME = "org.apache.kafka.connect.data.Decimal"
    SCALE_FIELD = "scale"
    PYTHON_TYPE = (_decimal.Decimal,)

    @staticmethod
    def builder(scale: int) -> SchemaBuilder:
        return SchemaBuilder.bytes().name(Decimal.LOGICAL_NAME).parameter(Decimal.SCALE_FIELD, str(scale)).version(1)

    @staticmethod
    def schema(scale: int) -> Schema:
        return Decimal.builder(scale).build()

    @staticmethod
    def scale(schema: Schema) -> int:
        """The schema's scale parameter."""
        text = (schema.parameters or {}).get(Decimal.SCALE_FIELD)
        if text is None:
            raise DataError("Invalid Decimal schema: scale parameter not found.")
        try:
            return int(text)
        except ValueError:
            raise DataError(f"Invalid scale parameter found in Decimal schema: {text!r}") from None

    @staticmethod
    def unscaled(value: _decimal.Decimal, scale: int) -> int:
        """The integer ``value * 10**scale``; raises when that would need rounding.

        Through the exact ratio (C arithmetic): five times faster than joining the digits of
        ``as_tuple()``, and decimals are converted once per row on JDBC paths.
        """
        try:
            numerator, denominator = value.as_integer_ratio()
        except (ValueError, OverflowError):
            raise DataError(f"Decimal value {value} is not finite") from None
        if scale >= 0:
            number, rest = divmod(numerator * 10**scale, denominator)
        else:  # a negative scale (1E+3 at scale -3 is 1): divide instead of a float power
            number, rest = divmod(numerator, denominator * 10**-scale)
        if rest:
            raise DataError(f"Decimal value {value} has more digits than the schema's scale {scale}")
        return number

    @staticmethod
    def from_logical(schema: Schema, value: _decimal.Decimal) -> bytes:
        number = Decimal.unscaled(value, Decimal.scale(schema))
        bits = number.bit_length() if number >= 0 else (~number).bit_length()
        return number.to_bytes(bits // 8 + 1, "big", signed=True)

    @staticmethod
    def to_logical(schema: Schema, value: bytes) -> _decimal.Decimal:
        if not value:
            raise DataError("Invalid Decimal bytes: zero length")
        return Decimal.from_unscaled(int.from_bytes(value, "big", signed=True), Decimal.scale(schema))

    @staticmethod
    def from_unscaled(number: int, scale: int) -> _decimal.Decimal:
        """``number * 10**-scale`` exactly, keeping the scale as the exponent.

        ``scaleb`` in a context too wide to round: a third faster than parsing ``f"{n}E{-s}"``.
        """
        return _decimal.Decimal(number).scaleb(-scale, _EXACT)


_EPOCH_DATE: Final = _dt.date(1970, 1, 1).toordinal()
_EPOCH: Final = _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)
_EPOCH_NAIVE: Final = _dt.datetime(1970, 1, 1)
_MS: Final = _dt.timedelta(milliseconds=1)
MILLIS_PER_DAY: Final = 86_400_000


class Date(_Logical):
    """A calendar date as INT32 days since 1970-01-01 (Kafka's ``Date``); values are ``datetime.date``."""

    LOGICAL_NAME = "org.apache.kafka.connect.data.Date"
    PYTHON_TYPE = (_dt.date,)

    @staticmethod
    def builder() -> SchemaBuilder:
        return SchemaBuilder.int32().name(Date.LOGICAL_NAME).version(1)

    SCHEMA: ClassVar[Schema]

    @classmethod
    def accepts(cls, value: Any) -> bool:
        return isinstance(value, _dt.date) and not isinstance(value, _dt.datetime)

    @staticmethod
    def from_logical(schema: Schema, value: _dt.date) -> int:
        return value.toordinal() - _EPOCH_DATE

    @staticmethod
    def to_logical(schema: Schema, value: int) -> _dt.date:
        try:
            return _dt.date.fromordinal(value + _EPOCH_DATE)
        except (ValueError, OverflowError):
            raise DataError(f"Date value {value} (days since epoch) is outside years 1-9999") from None


class Time(_Logical):
    """A time of day as INT32 milliseconds since midnight (Kafka's ``Time``).

    Values are ``datetime.time``, naive or UTC; microseconds below a millisecond are dropped
    when written, since Kafka's ``java.util.Date`` holds milliseconds.
    """

    LOGICAL_NAME = "org.apache.kafka.connect.data.Time"
    PYTHON_TYPE = (_dt.time,)
    SCHEMA: ClassVar[Schema]

    @staticmethod
    def builder() -> SchemaBuilder:
        return SchemaBuilder.int32().name(Time.LOGICAL_NAME).version(1)

    @staticmethod
    def from_logical(schema: Schema, value: _dt.time) -> int:
        offset = value.utcoffset()
        if offset:
            raise DataError(f"Time value {value} must be naive or UTC, not at offset {offset}")
        return ((value.hour * 60 + value.minute) * 60 + value.second) * 1000 + value.microsecond // 1000

    @staticmethod
    def to_logical(schema: Schema, value: int) -> _dt.time:
        if not 0 <= value < MILLIS_PER_DAY:
            raise DataError(f"Time values must be milliseconds from 0 to 86399999, got {value}")
        seconds, millis = divmod(value, 1000)
        minutes, second = divmod(seconds, 60)
        return _dt.time(minutes // 60, minutes % 60, second, millis * 1000)


class Timestamp(_Logical):
    """An instant as INT64 milliseconds since the epoch (Kafka's ``Timestamp``).

    Values are ``datetime.datetime``: naive ones are taken as UTC; decoded ones are UTC-aware.
    Microseconds below a millisecond are dropped (floor) when written.
    """

    LOGICAL_NAME = "org.apache.kafka.connect.data.Timestamp"
    PYTHON_TYPE = (_dt.datetime,)
    SCHEMA: ClassVar[Schema]
    EXACT_FLOAT_MS: Final = 2**33 * 1000
    """Below 2**33 s (year 2242) ms / 1000 as a double is exact to the microsecond."""

    @staticmethod
    def builder() -> SchemaBuilder:
        return SchemaBuilder.int64().name(Timestamp.LOGICAL_NAME).version(1)

    @staticmethod
    def from_logical(schema: Schema, value: _dt.datetime) -> int:
        return (value - (_EPOCH_NAIVE if value.tzinfo is None else _EPOCH)) // _MS

    @staticmethod
    def to_logical(schema: Schema, value: int) -> _dt.datetime:
        if -Timestamp.EXACT_FLOAT_MS < value < Timestamp.EXACT_FLOAT_MS:  # faster than timedelta
            return _dt.datetime.fromtimestamp(value / 1000, _dt.UTC)
        try:
            return _EPOCH + _dt.timedelta(milliseconds=value)
        except OverflowError:
            raise DataError(f"Timestamp value {value} ms is outside years 1-9999") from None


Date.SCHEMA = Date.builder().build()
Time.SCHEMA = Time.builder().build()
Timestamp.SCHEMA = Timestamp.builder().build()

for _logical in (Decimal, Date, Time, Timestamp):
    register_logical_type(_logical)

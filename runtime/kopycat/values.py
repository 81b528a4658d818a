"""Connect values as text and back: Kafka's ``org.apache.kafka.connect.data.Values``
``parseString`` and ``convertToString``, for header values and literal configs.

``SimpleHeaderConverter`` writes every header value with :func:`convert_to_string` and reads it
back with :func:`parse_string`; ``InsertHeader`` parses its ``value.literal`` the same way, so a
header inserted by Kopycat reads as the same typed value in a Kafka Connect worker.

:func:`parse_string` reads what Kafka's parser reads from a single token: ``null``, ``true`` /
``false``, integers as the narrowest of INT8/INT16/INT32/INT64 (``1e3`` and ``1.0`` are integral
too), other numbers as FLOAT32 when finite there, else FLOAT64 or a Decimal, and ISO-8601 dates
(``2024-01-31``), times (``10:15:30.000Z``) and timestamps (``2024-01-31T10:15:30.000Z``) as
Date, Time and Timestamp. Anything else is a STRING holding the text unchanged. Left out for now:
Kafka also parses ``[...]`` and ``{...}`` into arrays and maps (with merged element schemas);
here that text stays a STRING. :func:`convert_to_string` writes every Connect value, nested ones
included, as Kafka does.
"""

from __future__ import annotations

import base64
import datetime as _dt
import decimal
import math
import re
import struct
from collections.abc import Mapping
from typing import Any, Final

from kopycat.api.converter import SchemaAndValue
from kopycat.api.data import Date, Decimal, Schema, Struct, Time, Timestamp, Type
from kopycat.api.errors import DataError
from kopycat.java_numbers import java_big_decimal, java_double, java_float

__all__ = ["convert_to_string", "parse_string"]

_NUMBER: Final = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_DATE: Final = re.compile(r"(\d{4})-(\d{2})-(\d{2})")
_TIME: Final = re.compile(r"(\d{2}):(\d{2}):(\d{2})\.(\d{3})Z")
_TIMESTAMP: Final = re.compile(r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})\.(\d{3})Z")
_MS_PER_DAY: Final = 86_400_000
_INT_SCHEMAS: Final = ((8, Schema.INT8_SCHEMA), (16, Schema.INT16_SCHEMA), (32, Schema.INT32_SCHEMA),
                       (64, Schema.INT64_SCHEMA))


def _as_integral(number: decimal.Decimal) -> SchemaAndValue | None:
    """The narrowest int schema holding ``number`` when it is integral and fits a long (``parseAsExactDecimal``)."""
    if number != number.to_integral_value():
        return None
    integral = int(number)
    for bits, schema in _INT_SCHEMAS:
        if -(1 << (bits - 1)) <= integral < (1 << (bits - 1)):
            return SchemaAndValue(schema, integral)
    return None


def _as_number(token: str) -> SchemaAndValue | None:
    """Kafka's ``parseAsNumber`` of a ``BigDecimal`` token; None when the token is no number."""
    if not _NUMBER.fullmatch(token):
        return None
    number = decimal.Decimal(token)
    exact = _as_integral(number)
    if exact is not None:
        return exact
    scale = -number.as_tuple().exponent  # type: ignore[operator]
    if scale != 0:
        try:
            return SchemaAndValue(Schema.FLOAT32_SCHEMA, struct.unpack(">f", struct.pack(">f", float(number)))[0])
        except OverflowError:
            pass
        as_double = float(number)
        if not math.isinf(as_double):
            return SchemaAndValue(Schema.FLOAT64_SCHEMA, as_double)
    return SchemaAndValue(Decimal.schema(scale), number)


def _as_temporal(token: str) -> SchemaAndValue | None:
    """Date, Time or Timestamp by the token's length, as ``parseAsTemporal`` tries them (UTC)."""
    token = token.replace("\\:", ":")
    try:
        if len(token) == 13 and (match := _TIME.fullmatch(token)):
            hour, minute, second, millis = map(int, match.groups())
            return SchemaAndValue(Time.SCHEMA, _dt.time(hour, minute, second, millis * 1000))
        if len(token) == 24 and (match := _TIMESTAMP.fullmatch(token)):
            *fields, millis = map(int, match.groups())
            return SchemaAndValue(Timestamp.SCHEMA, _dt.datetime(*fields, millis * 1000, tzinfo=_dt.UTC))
        if len(token) == 10 and (match := _DATE.fullmatch(token)):
            return SchemaAndValue(Date.SCHEMA, _dt.date(*map(int, match.groups())))
    except ValueError:  # 2024-13-45: not a date, so the token is text
        return None
    return None


def parse_string(value: str | None) -> SchemaAndValue:
    """The typed Connect value ``value`` spells (Kafka's ``Values.parseString``); see the module doc."""
    if value is None:
        return SchemaAndValue(None, None)
    token = value.strip()
    if not token:
        return SchemaAndValue(Schema.STRING_SCHEMA, value)
    if token == "null":
        return SchemaAndValue(None, None)
    if token in ("true", "false"):
        return SchemaAndValue(Schema.BOOLEAN_SCHEMA, token == "true")
    if token[0].isdigit():
        temporal = _as_temporal(token)
        if temporal is not None:
            return temporal
    if token[0].isdigit() or token[0] in "+-":
        number = _as_number(token)
        if number is not None:
            return number
    return SchemaAndValue(Schema.STRING_SCHEMA, value)


def _epoch_ms(value: _dt.date | _dt.time) -> int:
    if isinstance(value, _dt.datetime):
        return int(Timestamp.from_logical(Timestamp.SCHEMA, value))
    if isinstance(value, _dt.date):
        return int(Date.from_logical(Date.SCHEMA, value)) * _MS_PER_DAY
    return int(Time.from_logical(Time.SCHEMA, value))


def _date_text(millis: int) -> str:
    """``Values.dateFormatFor(d).format(d)`` in UTC: a time under a day, a date on whole days."""
    moment = _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC) + _dt.timedelta(milliseconds=millis)
    if millis < _MS_PER_DAY:
        return f"{moment:%H:%M:%S}.{moment.microsecond // 1000:03d}Z"
    if millis % _MS_PER_DAY == 0:
        return f"{moment.year:04d}-{moment:%m-%d}"
    return f"{moment.year:04d}-{moment:%m-%dT%H:%M:%S}.{moment.microsecond // 1000:03d}Z"


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def _append(out: list[str], schema: Schema | None, value: Any, embedded: bool) -> None:
    """Kafka's ``Values.append``: one value, quoted and escaped when inside an array, map or struct."""
    if value is None:
        out.append("null")
    elif isinstance(value, bool):
        out.append("true" if value else "false")
    elif isinstance(value, int):
        out.append(str(value))
    elif isinstance(value, float):
        out.append(java_float(value) if schema is not None and schema.type is Type.FLOAT32 else java_double(value))
    elif isinstance(value, decimal.Decimal):
        exponent = value.as_tuple().exponent
        scale = -exponent if isinstance(exponent, int) else 0
        out.append(java_big_decimal(int(value.scaleb(scale)), scale))
    elif isinstance(value, str):
        out.append(f'"{_escape(value)}"' if embedded else value)
    elif isinstance(value, bytes | bytearray | memoryview):
        text = base64.b64encode(bytes(value)).decode("ascii")
        out.append(f'"{text}"' if embedded else text)
    elif isinstance(value, list | tuple):
        element = schema.value_schema if schema is not None and schema.type is Type.ARRAY else None
        _append_items(out, "[]", [(None, element, item) for item in value])
    elif isinstance(value, Mapping):
        is_map = schema is not None and schema.type is Type.MAP
        key_schema = schema.key_schema if is_map else None  # type: ignore[union-attr]
        value_schema = schema.value_schema if is_map else None  # type: ignore[union-attr]
        _append_items(out, "{}", [((key_schema, k), value_schema, v) for k, v in value.items()])
    elif isinstance(value, Struct):
        _append_items(out, "{}", [((Schema.STRING_SCHEMA, f.name), f.schema, value.get(f))
                                  for f in value.schema.fields])
    elif isinstance(value, _dt.date | _dt.time):
        out.append(_date_text(_epoch_ms(value)))
    else:
        raise DataError(f"Failed to serialize unexpected value type {type(value).__name__}: {value!r}")


def _append_items(out: list[str], brackets: str, items: list[tuple[Any, Schema | None, Any]]) -> None:
    out.append(brackets[0])
    for index, (key, schema, item) in enumerate(items):
        if index:
            out.append(",")
        if key is not None:
            _append(out, key[0], key[1], True)
            out.append(":")
        _append(out, schema, item, True)
    out.append(brackets[1])


def convert_to_string(schema: Schema | None, value: Any) -> str | None:
    """``value`` as text (Kafka's ``Values.convertToString``): None stays None, bytes are base64,
    floats print as Java's ``toString``, dates as ``dateFormatFor``, nested strings quoted."""
    if value is None:
        return None
    out: list[str] = []
    _append(out, schema, value, False)
    return "".join(out)

"""Connect values as text and back: Kafka's ``org.apache.kafka.connect.data.Values``
``parseString`` and ``convertToString``, for header values and literal configs.

``SimpleHeaderConverter`` writes every header value with :func:`convert_to_string` and reads it
back with :func:`parse_string`; ``InsertHeader`` parses its ``value.literal`` the same way, so a
header inserted by Kopycat reads as the same typed value in a Kafka Connect worker.

:func:`parse_string` reads what Kafka's parser reads from a single token: ``null``, ``true`` /
``false``, integers as the narrowest of INT8/INT16/INT32/INT64 (``1e3`` and ``1.0`` are integral
too), other numbers as FLOAT32 when finite there, else FLOAT64 or a Decimal, and ISO-8601 dates
(``2024-01-31``), times (``10:15:30.000Z``) and timestamps (``2024-01-31T10:15:30.000Z``) as
Date, Time and Timestamp; ``[...]`` and ``{...}`` as arrays and maps whose element schema is the
elements' common one (numbers widen: ``[1, 2.5]`` is an array of FLOAT32; mixed kinds give an
array without an element schema) and whose strings are quoted. Anything else (``true}``, a
broken array) is a STRING holding the text unchanged. :func:`convert_to_string` writes every
Connect value, nested ones included, as Kafka does.
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
from kopycat.api.data import Date, Decimal, Schema, SchemaBuilder, Struct, Time, Timestamp, Type
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


class _Tokens:
    """Kafka's ``Values.Parser``: text split at unescaped ``: , { } [ ] "`` (each its own token),
    with one token of look-ahead; ``mark``/``rewind_to`` let a parse attempt be undone."""

    _DELIMITERS: Final = frozenset(':,{}[]"')

    def __init__(self, original: str) -> None:
        self.original = original
        self._index = 0
        self._next: str | None = None
        self.previous: str | None = None

    def mark(self) -> int:
        return self._index - (len(self._next) if self._next is not None else 0)

    def rewind_to(self, position: int) -> None:
        self._index, self._next, self.previous = position, None, None

    def has_next(self) -> bool:
        return self._next is not None or self._index < len(self.original)

    def _consume(self) -> str:
        text, start, escaped = self.original, self._index, False
        while self._index < len(text):
            char = text[self._index]
            if char == "\\":
                escaped = not escaped
            elif char in self._DELIMITERS and not escaped:
                if start < self._index:
                    return text[start:self._index]
                self._index += 1
                return char
            else:
                escaped = False
            self._index += 1
        return text[start:self._index]

    def next(self) -> str:
        if self._next is not None:
            self.previous, self._next = self._next, None
        else:
            self.previous = self._consume()
        return self.previous

    def next_n(self, count: int) -> str | None:
        """The text of the next ``count`` tokens, or None (nothing consumed) if there are fewer."""
        start = self.mark()
        for _ in range(count):
            if not self.has_next():
                self.rewind_to(start)
                return None
            self.next()
        return self.original[start:self._index]

    def can_consume(self, expected: str) -> bool:
        """Consume the next token if, blanks skipped and trimmed, it is ``expected``."""
        if self._next is None:
            if not self.has_next():
                return False
            self._next = self._consume()
        while not self._next.strip() and self._index < len(self.original):
            self._next = self._consume()
        if self._next.strip() == expected:
            self._next = None
            return True
        return False


_WIDENING: Final = (Type.INT8, Type.INT16, Type.INT32, Type.INT64, Type.FLOAT32, Type.FLOAT64)


def _merge(previous: Schema | None, latest: Schema | None) -> tuple[Schema | None, bool]:
    """Kafka's ``SchemaMerger.merge``: (common schema, still compatible); numbers widen."""
    if latest is None:
        return previous, True
    if previous is None:
        return latest, True
    if previous.type is not latest.type:
        if previous.type in _WIDENING and latest.type in _WIDENING:
            wider = _WIDENING.index(latest.type) > _WIDENING.index(previous.type)
            return (latest if wider else previous), True
        return None, False
    if previous.optional == latest.optional:
        return previous, True
    return (previous, True) if previous == latest else (None, False)


class _Merger:
    def __init__(self) -> None:
        self.common: Schema | None = None
        self._compatible = True

    def merge(self, parsed: SchemaAndValue | None) -> None:
        if parsed is not None and self._compatible:
            self.common, self._compatible = _merge(self.common, parsed.schema)


def _align(schema: Schema | None, value: Any) -> Any:
    """A value as the common element schema holds it (an int in a FLOAT64 array is a float)."""
    if schema is None or value is None or isinstance(value, bool) or not isinstance(value, int):
        return value
    if schema.type is Type.FLOAT32:
        return struct.unpack(">f", struct.pack(">f", float(value)))[0]
    return float(value) if schema.type is Type.FLOAT64 else value


class _ValueParser:
    """Kafka's ``Values.ValueParser``: literals, numbers, temporals, quoted strings, arrays and maps."""

    def __init__(self, text: str) -> None:
        self.tokens = _Tokens(text)

    def _single_literal(self, embedded: bool, literal: str) -> bool:
        start = self.tokens.mark()
        if self.tokens.can_consume(literal) and (embedded or not self.tokens.has_next()):
            return True
        self.tokens.rewind_to(start)
        return False

    def parse(self, embedded: bool) -> SchemaAndValue | None:
        tokens = self.tokens
        if not tokens.has_next():
            return None
        if embedded and tokens.can_consume('"'):
            return self._quoted()
        if self._single_literal(embedded, "null"):
            return None
        for literal, flag in (("true", True), ("false", False)):
            if self._single_literal(embedded, literal):
                return SchemaAndValue(Schema.BOOLEAN_SCHEMA, flag)
        start = tokens.mark()
        try:
            if tokens.can_consume("["):
                return self._array()
            if tokens.can_consume("{"):
                return self._map()
        except DataError:
            tokens.rewind_to(start)
        token = tokens.next()
        if not token.strip():
            return SchemaAndValue(Schema.STRING_SCHEMA, token)
        return self._token(embedded, token.strip())

    def _token(self, embedded: bool, token: str) -> SchemaAndValue:
        if token[0].isdigit():
            position = self.tokens.mark()
            remainder = self.tokens.next_n(4)  # a time's colons split it into five tokens
            temporal = _as_temporal(token + remainder) if remainder is not None else None
            if temporal is not None:
                return temporal
            self.tokens.rewind_to(position)
            temporal = _as_temporal(token)
            if temporal is not None:
                return temporal
        if token[0].isdigit() or token[0] in "+-":
            number = _as_number(token)
            if number is not None:
                return number
        if embedded:
            raise DataError("Failed to parse embedded value")
        return SchemaAndValue(Schema.STRING_SCHEMA, self.tokens.original)

    def _quoted(self) -> SchemaAndValue:
        parts = []
        while self.tokens.has_next() and not self.tokens.can_consume('"'):
            parts.append(self.tokens.next())
        content = "".join(parts)
        return _as_temporal(content) or SchemaAndValue(Schema.STRING_SCHEMA, content)

    def _array(self) -> SchemaAndValue:
        tokens, items, elements = self.tokens, [], _Merger()
        while tokens.has_next():
            if tokens.can_consume("]"):
                if elements.common is None:
                    return SchemaAndValue(Schema(Type.ARRAY), items)
                return SchemaAndValue(SchemaBuilder.array(elements.common).build(),
                                      [_align(elements.common, item) for item in items])
            if tokens.can_consume(","):
                raise DataError(f"Unable to parse an empty array element: {tokens.original}")
            element = self.parse(True)
            elements.merge(element)
            items.append(None if element is None else element.value)
            position = tokens.mark()
            if tokens.can_consume("]"):
                tokens.rewind_to(position)
            elif not tokens.can_consume(","):
                raise DataError("Array elements missing ',' delimiter")
        if tokens.previous == ",":
            raise DataError(f"Array is missing element after ',': {tokens.original}")
        raise DataError(f"Array is missing terminating ']': {tokens.original}")

    def _map(self) -> SchemaAndValue:
        tokens, entries, keys, values = self.tokens, {}, _Merger(), _Merger()
        while tokens.has_next():
            if tokens.can_consume("}"):
                return self._map_result(entries, keys.common, values.common)
            if tokens.can_consume(","):
                raise DataError(f"Unable to parse a map entry with no key or value: {tokens.original}")
            key = self.parse(True)
            if key is None or key.value is None:
                raise DataError(f"Map entry may not have a null key: {tokens.original}")
            if not tokens.can_consume(":"):
                raise DataError(f"Map entry is missing ':' in {tokens.original}")
            value = self.parse(True)
            try:
                entries[key.value] = None if value is None else value.value
            except TypeError:  # a list as a key: Java allows it, a dict does not
                raise DataError(f"Map keys must be scalars: {tokens.original}") from None
            tokens.can_consume(",")
            keys.merge(key)
            values.merge(value)
        if tokens.previous == ",":
            raise DataError(f"Map is missing element after ',': {tokens.original}")
        raise DataError(f"Map is missing terminating '}}': {tokens.original}")

    @staticmethod
    def _map_result(entries: dict[Any, Any], key: Schema | None, value: Schema | None) -> SchemaAndValue:
        if key is None:
            return SchemaAndValue(Schema(Type.MAP), entries)
        aligned = {_align(key, k): _align(value, v) for k, v in entries.items()}
        if value is None:
            return SchemaAndValue(Schema(Type.MAP, key_schema=key), aligned)
        return SchemaAndValue(SchemaBuilder.map(key, value).build(), aligned)


def parse_string(value: str | None) -> SchemaAndValue:
    """The typed Connect value ``value`` spells (Kafka's ``Values.parseString``); see the module doc."""
    if value is None:
        return SchemaAndValue(None, None)
    if not value:
        return SchemaAndValue(Schema.STRING_SCHEMA, value)
    parsed = _ValueParser(value).parse(False)
    return SchemaAndValue(None, None) if parsed is None else parsed


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

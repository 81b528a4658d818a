"""Column DEFAULTs as field schema defaults, as Debezium 3.6's ``PostgresDefaultValueConverter``.

Debezium reads each column's default expression (``pg_get_expr(adbin, adrelid)``, what the JDBC
driver reports as ``COLUMN_DEF``) and, for the types it has a mapper for, turns it into the
field's ``default``: the text inside the first pair of single quotes (``'abc'::text`` -> ``abc``),
or the bare expression (``42``); a function call (``now()``, ``nextval(...)``,
``gen_random_uuid()``) or ``CURRENT_DATE``/``CURRENT_TIMESTAMP``... gives a placeholder (0, the
epoch, the empty string, ``{}``, the zero UUID); ``NULL::type`` and anything that does not parse
give no default. The text then goes through the column's value converter, so the default has the
field's own form (epoch days, microseconds, a Decimal at the column's scale...). Types without a
mapper (bytea, oid, ...) and NUMERIC without a precision (a struct) get no default.
"""

from __future__ import annotations

import datetime as dt
import decimal
import re
import uuid
from collections.abc import Callable
from typing import Any, Final

from kopycat.api.data import Struct
from kopycat.connectors.postgres_cdc.values import (
    BOOL,
    BPCHAR,
    DATE,
    FLOAT4,
    FLOAT8,
    INT2,
    INT4,
    INT8,
    JSON,
    JSONB,
    NUMERIC,
    TEXT,
    TIME,
    TIMESTAMP,
    TIMESTAMPTZ,
    UUID,
    VARCHAR,
    ColumnType,
)

__all__ = ["default_value"]

_LITERAL: Final = re.compile(r"'(.*?)'")
_FUNCTION: Final = re.compile(r"^[(]?[A-Za-z0-9_.]+\((?:.+(?:, ?.+)*)?\)")
_CURRENT: Final = frozenset({"current_timestamp", "current_time", "current_date", "localtime", "localtimestamp"})
_TRIMMED: Final = frozenset({BOOL, NUMERIC, FLOAT4, FLOAT8, INT2, INT4, INT8, UUID, DATE, TIME, TIMESTAMP,
                             TIMESTAMPTZ})


def _extract(expression: str, placeholder: str) -> str | None:
    """Debezium's ``extractDefault``: the placeholder for a generated value, else the literal."""
    if _FUNCTION.search(expression) or expression.lower() in _CURRENT:
        return placeholder
    if "'" not in expression:
        return None if expression.startswith("NULL::") else expression
    match = _LITERAL.search(expression)
    return match.group(1) if match else None


def _plain(placeholder: str) -> Callable[[str], str | None]:
    return lambda expression: _extract(expression, placeholder)


def _null_aware(placeholder: str, parse: Callable[[str], str] = str) -> Callable[[str], str | None]:
    """``parseNullDefault``: ``NULL::type`` is no default; else the literal, read by ``parse``."""
    def mapper(expression: str) -> str | None:
        text = None if expression.startswith("NULL::") else _extract(expression, placeholder)
        return None if text is None else parse(text)
    return mapper


def _boolean(text: str) -> str:
    """``Boolean.parseBoolean``: anything but "true" (any case) is false."""
    return "true" if text.lower() == "true" else "false"


def _zoned(expression: str) -> str | None:
    """A timestamptz literal; without an offset it is UTC (Debezium's JVM runs in UTC)."""
    text = _extract(expression, "1970-01-01")
    if text is None or dt.datetime.fromisoformat(text).tzinfo is not None:
        return text
    return text + "+00:00"


_MAPPERS: Final[dict[int, Callable[[str], str | None]]] = {
    BOOL: _null_aware("false", _boolean),
    BPCHAR: _plain(""), VARCHAR: _plain(""), TEXT: _plain(""),
    NUMERIC: _null_aware("0.0"), FLOAT4: _null_aware("0.0"), FLOAT8: _null_aware("0.0"),
    INT2: _null_aware("0"), INT4: _null_aware("0"), INT8: _null_aware("0"),
    JSON: _plain("{}"), JSONB: _plain("{}"),
    UUID: lambda e: None if (t := _extract(e, "00000000-0000-0000-0000-000000000000")) is None else str(uuid.UUID(t)),
    DATE: _plain("1970-01-01"), TIME: _plain("00:00"), TIMESTAMP: _plain("1970-01-01"), TIMESTAMPTZ: _zoned,
}


def default_value(type_oid: int, modifier: int, expression: str | None, kind: ColumnType) -> Any:
    """The field default of a column of ``type_oid`` whose DEFAULT is ``expression``; None for none."""
    mapper = _MAPPERS.get(type_oid)
    if expression is None or mapper is None:
        return None
    if type_oid in _TRIMMED:
        expression = expression.strip()
    try:
        text = mapper(expression)
        if text is not None and type_oid == NUMERIC and modifier >= 4:
            text = _at_scale(text, (modifier - 4) & 0xFFFF)
        value = None if text is None else kind.convert(text)
    except (ValueError, ArithmeticError):  # Debezium logs "Expression evaluation is not supported"
        return None
    return None if isinstance(value, Struct) else value  # KAFKA-12694: a struct cannot be a default


def _at_scale(text: str, scale: int) -> str:
    """A NUMERIC(p, s) default widened to the column's scale, in every decimal.handling.mode ("1.5" -> "1.500")."""
    value = decimal.Decimal(text)
    if scale > -value.as_tuple().exponent:  # type: ignore[operator]
        value = value.quantize(decimal.Decimal(1).scaleb(-scale), rounding=decimal.ROUND_HALF_EVEN)
    return str(value)

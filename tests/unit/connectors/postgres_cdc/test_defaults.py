"""Column DEFAULT expressions -> field defaults, as Debezium's PostgresDefaultValueConverter maps them."""

from __future__ import annotations

import decimal
from typing import Any

import pytest

from kopycat.connectors.postgres_cdc.defaults import default_value
from kopycat.connectors.postgres_cdc.values import (
    BOOL,
    BYTEA,
    DATE,
    INT4,
    INT8,
    NUMERIC,
    TEXT,
    TIMESTAMP,
    TIMESTAMPTZ,
    UUID,
    column_type,
)

NUMERIC_8_3 = ((8 << 16) | 3) + 4


@pytest.mark.parametrize(("oid", "modifier", "expression", "mode", "expected"), [
    (INT4, -1, "7", "precise", 7),
    (INT8, -1, "'-3'::integer", "precise", -3),
    (INT4, -1, "nextval('items_id_seq'::regclass)", "precise", 0),  # a generated value: the placeholder
    (INT4, -1, "NULL::integer", "precise", None),
    (TEXT, -1, "'hi'::text", "precise", "hi"),
    (TEXT, -1, "upper('x'::text)", "precise", ""),
    (BOOL, -1, "true", "precise", True),
    (NUMERIC, NUMERIC_8_3, "1.5", "precise", decimal.Decimal("1.500")),
    (NUMERIC, NUMERIC_8_3, "1.5", "string", "1.500"),
    (NUMERIC, NUMERIC_8_3, "1.5", "double", 1.5),
    (NUMERIC, -1, "2.25", "precise", None),  # VariableScaleDecimal is a struct: no default
    (TIMESTAMP, -1, "now()", "precise", 0),
    (TIMESTAMP, 3, "'2024-01-02 03:04:05.678'::timestamp without time zone", "precise", 1_704_164_645_678),
    (TIMESTAMPTZ, -1, "'2024-05-01 08:00:00+00'::timestamp with time zone", "precise", "2024-05-01T08:00:00.000000Z"),
    (DATE, -1, "CURRENT_DATE", "precise", 0),
    (DATE, -1, "'2024-02-29'::date", "precise", 19_782),
    (UUID, -1, "'A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11'::uuid", "precise", "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"),
    (BYTEA, -1, "'\\x01'::bytea", "precise", None),  # no mapper for bytea
    (INT4, -1, "'abc'::integer", "precise", None),  # does not parse: no default, as Debezium
])
def test_default_expressions_map_as_debeziums(oid: int, modifier: int, expression: str, mode: str,
                                              expected: Any) -> None:
    kind = column_type(oid, modifier, decimal_mode=mode, time_mode="adaptive")
    value = default_value(oid, modifier, expression, kind)
    assert value == expected and type(value) is type(expected)
    if isinstance(expected, decimal.Decimal):
        assert value.as_tuple().exponent == expected.as_tuple().exponent

"""Reading a test database back: the rows a query returns, as plain tuples."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa


def query_rows(url: str, sql: str) -> list[tuple[Any, ...]]:
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            return [tuple(row) for row in conn.execute(sa.text(sql))]
    finally:
        engine.dispose()

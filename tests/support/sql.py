"""Test databases: tables of rows stamped a minute apart, and reading rows back as plain tuples."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa


def query_rows(url: str, sql: str) -> list[tuple[Any, ...]]:
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            return [tuple(row) for row in conn.execute(sa.text(sql))]
    finally:
        engine.dispose()


def create_stamped_tables(url: str, names: Sequence[str], rows: int, t0: dt.datetime
                          ) -> tuple[sa.Engine, sa.MetaData]:
    """Tables ``(id, label, updated_at)`` holding ids 1..rows, ``updated_at = t0 + id minutes``.

    The shape of a timestamp+incrementing JDBC import; the caller disposes of the engine.
    """
    engine = sa.create_engine(url)
    metadata = sa.MetaData()
    for name in names:
        sa.Table(name, metadata, sa.Column("id", sa.Integer, primary_key=True), sa.Column("label", sa.String(40)),
                 sa.Column("updated_at", sa.DateTime, nullable=False))
    metadata.create_all(engine)
    for name in names:
        insert_stamped(engine, metadata.tables[name], 1, rows, t0)
    return engine, metadata


def insert_stamped(engine: sa.Engine, table: sa.Table, first: int, count: int, t0: dt.datetime) -> None:
    """Rows ``first .. first + count - 1`` of :func:`create_stamped_tables`' shape."""
    with engine.begin() as conn:
        conn.execute(sa.insert(table), [{"id": i, "label": f"{table.name}-{i}",
                                         "updated_at": t0 + dt.timedelta(minutes=i)}
                                        for i in range(first, first + count)])

"""PostgreSQL bulk writes: COPY a batch into a temporary table, then apply it in one statement.

Confluent's sink sends JDBC batches (``executeBatch``), which the PostgreSQL driver can
rewrite into multi-row inserts. Through psycopg an ``executemany`` is one bind and execute
per row, and SQLAlchemy adds its per-parameter processing: about 25,000 rows/s. COPY is the
server's bulk path (about 5x that for the same upsert), so a batch is:

1. ``CREATE TEMP TABLE IF NOT EXISTS <stage> ON COMMIT DROP AS SELECT <columns> FROM <table>
   WITH NO DATA``: the stage has the table's column types, so COPY parses each value as the
   column would, and it disappears with the transaction (commit or rollback);
2. ``COPY <stage> (<columns>) FROM STDIN`` of the rows;
3. ``INSERT INTO <table> SELECT .. FROM <stage>`` (with the upsert's ``ON CONFLICT``), or
   ``UPDATE <table> .. FROM <stage>`` for updates;
4. ``TRUNCATE <stage>`` for the next batch of the same transaction.

Everything runs on the caller's connection inside its transaction, so the rows and the
``kopycat_offsets`` row still commit together. Rows must be unique per key (the writer keeps
the last row per key), as a single INSERT .. ON CONFLICT may not touch a row twice.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

__all__ = ["StagedWrite"]

_stage_numbers = itertools.count(1)


@dataclass(frozen=True)
class StagedWrite:
    """The four statements of one plan's staged batch (see the module docstring)."""

    create: str
    copy: str
    apply: Any
    clear: str

    @classmethod
    def of(cls, conn: Connection, table: sa.Table, columns: Sequence[str],
           apply: Callable[[sa.TableClause], Any]) -> StagedWrite:
        """A stage for ``columns`` of ``table``; ``apply`` makes the statement reading the stage."""
        name = f"kopycat_stage_{next(_stage_numbers)}"
        quote = conn.dialect.identifier_preparer.quote
        listed = ", ".join(quote(c) for c in columns)
        target = conn.dialect.identifier_preparer.format_table(table)
        create = (f"CREATE TEMP TABLE IF NOT EXISTS {quote(name)} ON COMMIT DROP AS "
                  f"SELECT {listed} FROM {target} WITH NO DATA")
        return cls(create, f"COPY {quote(name)} ({listed}) FROM STDIN",
                   apply(sa.table(name, *(sa.column(c) for c in columns))), f"TRUNCATE {quote(name)}")

    def write(self, conn: Connection, rows: Sequence[tuple[Any, ...]]) -> None:
        """Stage ``rows`` (in ``columns`` order) and apply them; DBAPIError as SQLAlchemy raises it."""
        conn.exec_driver_sql(self.create)
        self._copy(conn, rows)
        conn.execute(self.apply)
        conn.exec_driver_sql(self.clear)

    def _copy(self, conn: Connection, rows: Sequence[tuple[Any, ...]]) -> None:
        raw = conn.connection.driver_connection
        try:
            with raw.cursor() as cursor, cursor.copy(self.copy) as copy:  # type: ignore[union-attr]
                write_row = copy.write_row
                for row in rows:
                    write_row(row)
        except conn.dialect.loaded_dbapi.Error as exc:
            raise sa.exc.DBAPIError.instance(self.copy, None, exc, conn.dialect.loaded_dbapi.Error,
                                             dialect=conn.dialect) from exc


"""The PostgreSQL side of CDC over a normal connection: checks, slot, publication, WAL reads.

Changes are read with ``pg_logical_slot_peek_binary_changes`` (pgoutput, protocol 1) up to a
fixed end LSN through a server-side cursor, and the slot is moved with
``pg_replication_slot_advance`` only once Kafka holds the changes and their offsets. Reading
over SQL instead of the streaming replication protocol needs no extra client (psycopg 3 has no
replication support) and makes "copy to this LSN, then confirm" two exact statements; the price
is that a peek starts again from the slot's confirmed position, so a continuous run skips what
it already returned. Each failure that has a known fix raises :class:`ConnectError` naming it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from typing import Any

import psycopg

from kopycat.api.errors import ConnectError
from kopycat.connectors.postgres_cdc.config import CdcSettings
from kopycat.connectors.postgres_cdc.events import ColumnInfo
from kopycat.connectors.postgres_cdc.pgoutput import format_lsn, parse_lsn

__all__ = ["FIRST_PEEK", "PEEK_FETCH", "PostgresSource", "connect"]

log = logging.getLogger(__name__)

PEEK_FETCH = 5000
"""Rows per ``FETCH`` of the peek's cursor: 2,000 took 50 round trips per 100,000 changes; the
function's result is complete on the server before the first, so larger ones only save trips."""

FIRST_PEEK = 20_000
"""Messages of the first of a range's two peeks (:meth:`PostgresSource.peek`): the first events come
after decoding these instead of the whole range (PostgreSQL decodes ~600,000 changes/s here, a task
builds and sends ~100,000), and building them takes about as long as decoding 100,000 more."""

_SESSION = "SET TimeZone = 'UTC'; SET DateStyle = 'ISO, YMD'; SET bytea_output = 'hex'; SET IntervalStyle = 'iso_8601'"


def connect(settings: CdcSettings) -> psycopg.Connection[Any]:
    """An autocommit connection in the session settings the value converters expect."""
    try:
        conn = psycopg.connect(**settings.conninfo(), autocommit=True)
    except psycopg.Error as exc:
        raise ConnectError(f"Cannot connect to PostgreSQL at {settings.host}:{settings.port} database "
                           f"{settings.dbname} as {settings.user}: {exc}".strip()) from exc
    conn.execute(_SESSION)
    return conn


class PostgresSource:
    """One connection's view of the captured database (not thread-safe: one per task or connector)."""

    def __init__(self, settings: CdcSettings) -> None:
        self.settings = settings
        self.conn = connect(settings)

    def close(self) -> None:
        self.conn.close()

    def scalar(self, sql: str, *params: Any) -> Any:
        row = self.conn.execute(sql, params).fetchone()
        return None if row is None else row[0]

    # ------------------------------------------------------------------ checks with the fix

    def check_ready(self) -> None:
        """wal_level and privileges: each missing piece raises with the setting or SQL that fixes it."""
        level = self.scalar("SHOW wal_level")
        if level != "logical":
            raise ConnectError(f"PostgreSQL has wal_level={level}; logical decoding needs wal_level=logical: run "
                               f"ALTER SYSTEM SET wal_level = logical; and restart the server")
        replication = self.scalar("SELECT rolreplication OR rolsuper FROM pg_roles WHERE rolname = current_user")
        if not replication:
            raise ConnectError(f"User {self.settings.user} may not use replication slots: run "
                               f"ALTER ROLE \"{self.settings.user}\" WITH REPLICATION;")

    def ensure_publication(self, tables: list[tuple[str, str]]) -> None:
        """Create the publication per ``publication.autocreate.mode`` or fail saying how to create it."""
        name, mode = self.settings.publication, self.settings.publication_mode
        if self.scalar("SELECT 1 FROM pg_publication WHERE pubname = %s", name):
            return
        listed = ", ".join(f'"{s}"."{t}"' for s, t in tables)
        if mode == "disabled":
            raise ConnectError(f"Publication {name} does not exist and publication.autocreate.mode=disabled: run "
                               f"CREATE PUBLICATION \"{name}\" FOR ALL TABLES; (or FOR TABLE ...), or set "
                               f"publication.autocreate.mode=all_tables")
        if mode == "filtered":
            if not tables:
                raise ConnectError(f"No table matches the table filters, so publication {name} cannot be created "
                                   f"filtered: check table.include.list/table.exclude.list")
            self.conn.execute(f'CREATE PUBLICATION "{name}" FOR TABLE {listed}')
        else:
            self.conn.execute(f'CREATE PUBLICATION "{name}" FOR ALL TABLES')
        log.info("Created publication %s (%s)", name, mode)

    def slot_position(self) -> int | None:
        """The slot's confirmed_flush_lsn; None when the slot does not exist."""
        row = self.conn.execute("SELECT confirmed_flush_lsn::text, plugin, database FROM pg_replication_slots "
                                "WHERE slot_name = %s", (self.settings.slot,)).fetchone()
        if row is None:
            return None
        if row[1] != "pgoutput" or row[2] != self.settings.dbname:
            raise ConnectError(f"Replication slot {self.settings.slot} decodes database {row[2]} with {row[1]}, "
                               f"not {self.settings.dbname} with pgoutput: set slot.name to another slot, or run "
                               f"SELECT pg_drop_replication_slot('{self.settings.slot}');")
        return parse_lsn(row[0]) if row[0] else None

    def create_slot(self) -> int:
        """Create the logical slot; its consistent point, from which every commit is decoded."""
        try:
            row = self.conn.execute("SELECT lsn::text FROM pg_create_logical_replication_slot(%s, 'pgoutput')",
                                    (self.settings.slot,)).fetchone()
        except psycopg.Error as exc:
            raise self.explain(exc) from exc
        assert row is not None
        log.info("Created replication slot %s at %s", self.settings.slot, row[0])
        return parse_lsn(row[0])

    def explain(self, exc: psycopg.Error) -> ConnectError:
        """A PostgreSQL error of slot use, with the fix when one is known."""
        text = str(exc).strip()
        slot, publication = self.settings.slot, self.settings.publication
        if "is active for PID" in text:
            return ConnectError(f"Replication slot {slot} is in use by another reader ({text}): stop the other "
                                f"connector, or give this one its own slot.name")
        if "publication" in text and "does not exist" in text:
            return ConnectError(f"Publication {publication} does not exist ({text}): run CREATE PUBLICATION "
                                f"\"{publication}\" FOR ALL TABLES; or set publication.autocreate.mode=all_tables")
        if "permission denied" in text or "must be superuser or replication" in text:
            return ConnectError(f"{text}: run ALTER ROLE \"{self.settings.user}\" WITH REPLICATION;")
        if "wal_level" in text:
            return ConnectError(f"{text}: run ALTER SYSTEM SET wal_level = logical; and restart the server")
        return ConnectError(f"PostgreSQL failed reading replication slot {slot}: {text}")

    # ------------------------------------------------------------------ the WAL

    def current_lsn(self) -> int:
        """Where the WAL ends now: ``pg_current_wal_insert_lsn()``, past every commit made so far.

        Not ``pg_current_wal_lsn()`` (the write position): with ``synchronous_commit=off`` a commit
        may already be visible while its record is not yet written there.
        """
        return parse_lsn(self.scalar("SELECT pg_current_wal_insert_lsn()::text"))

    def wait_flushed(self, lsn: int, timeout_s: float = 60.0) -> None:
        """Wait until the WAL is flushed to ``lsn``: logical decoding reads only flushed WAL.

        The WAL writer flushes asynchronous commits within ``wal_writer_delay``; when it has not
        after a second, a synchronous commit of our own flushes everything before it."""
        began = time.monotonic()
        deadline, forced = began + timeout_s, False
        while parse_lsn(self.scalar("SELECT pg_current_wal_flush_lsn()::text")) < lsn:
            if not forced and time.monotonic() > began + 1.0:
                with self.conn.transaction():
                    self.conn.execute("SET LOCAL synchronous_commit = on")
                    self.conn.execute("SELECT pg_current_xact_id()")
                forced = True
            if time.monotonic() > deadline:
                raise ConnectError(f"PostgreSQL did not flush its WAL to {format_lsn(lsn)} within {timeout_s:.0f} s")
            time.sleep(0.05)

    def peek(self, end_lsn: int, fetch: int = PEEK_FETCH,
             first: int = FIRST_PEEK) -> Iterator[list[tuple[int, int, bytes]]]:
        """(lsn, xid, pgoutput message) of every decoded change up to ``end_lsn``, in commit order,
        ``fetch`` at a time (one ``FETCH`` round trip each: :mod:`kopycat.read_ahead` runs them on a thread).

        PostgreSQL returns whole transactions: those whose commit ends at or before the end. It
        decodes a peek's whole range before it returns the first row, so the range is peeked twice:
        first up to the transaction holding the ``first``-th message, whose events are built while
        the second peek, of the whole range, is decoded. The second returns those transactions
        again; the reader skips them, as every peek after a confirmation that has not moved the
        slot yet (their commit lies behind the reader's position: :class:`.change_stream.ChangeStream`).
        """
        self.wait_flushed(end_lsn)
        returned = 0
        for rows in self._peek_once(end_lsn, fetch, first):
            returned += len(rows)
            yield rows
        if returned >= first:  # stopped at ``first``, not at the end
            yield from self._peek_once(end_lsn, fetch, None)

    def _peek_once(self, end_lsn: int, fetch: int, limit: int | None) -> Iterator[list[tuple[int, int, bytes]]]:
        """One ``pg_logical_slot_peek_binary_changes`` to ``end_lsn``, up to ``limit`` messages (None: all)."""
        # binary results: the messages arrive as their bytes, not as hex text to decode (half the client CPU)
        cursor = self.conn.cursor(name="kopycat_cdc_peek", binary=True)
        try:
            with self.conn.transaction():
                # positions as 64-bit integers computed by the server: each row is the tuple to yield
                cursor.execute(
                    "SELECT (lsn - '0/0'::pg_lsn)::bigint, xid::text::bigint, data "
                    "FROM pg_logical_slot_peek_binary_changes("
                    "%s, %s::pg_lsn, %s::int, 'proto_version', '1', 'publication_names', %s)",
                    (self.settings.slot, format_lsn(end_lsn), limit, self.settings.publication))
                while rows := cursor.fetchmany(fetch):
                    yield rows
        except psycopg.Error as exc:
            raise self.explain(exc) from exc
        finally:
            cursor.close()

    def advance(self, lsn: int) -> None:
        """Confirm the slot to ``lsn``: PostgreSQL may recycle the WAL before it."""
        try:
            self.conn.execute("SELECT pg_replication_slot_advance(%s, %s::pg_lsn)",
                              (self.settings.slot, format_lsn(lsn)))
        except psycopg.Error as exc:
            raise self.explain(exc) from exc

    # ------------------------------------------------------------------ the catalog

    def captured_tables(self) -> list[tuple[str, str]]:
        """(schema, table) of every ordinary or partitioned table the filters select."""
        rows = self.conn.execute(
            "SELECT n.nspname, c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE c.relkind IN ('r', 'p') AND n.nspname NOT IN ('pg_catalog', 'information_schema') "
            "AND n.nspname NOT LIKE 'pg_toast%%' ORDER BY 1, 2").fetchall()
        return [(s, t) for s, t in rows if self.settings.captures(s, t)]

    def table_columns(self, schema: str, table: str) -> tuple[list[ColumnInfo], list[str]]:
        """The table's columns in order (type, modifier, nullability, DEFAULT) and its primary key columns."""
        rows = self.conn.execute(
            "SELECT a.attname, a.atttypid::int, a.atttypmod, NOT a.attnotnull, "
            "CASE WHEN a.attgenerated = '' THEN pg_get_expr(d.adbin, d.adrelid) END FROM pg_attribute a "
            "LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum "
            "WHERE a.attrelid = format('%%I.%%I', %s::text, %s::text)::regclass AND a.attnum > 0 "
            "AND NOT a.attisdropped ORDER BY a.attnum", (schema, table)).fetchall()
        key = self.conn.execute(
            "SELECT a.attname FROM pg_index i JOIN LATERAL unnest(i.indkey) WITH ORDINALITY k(attnum, n) ON true "
            "JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum "
            "WHERE i.indrelid = format('%%I.%%I', %s::text, %s::text)::regclass AND i.indisprimary ORDER BY k.n",
            (schema, table)).fetchall()
        return [ColumnInfo(*row) for row in rows], [r[0] for r in key]

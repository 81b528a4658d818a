"""Helpers of the PostgreSQL CDC tests: SQL on the test database, connector configs, topics as JSON."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import orjson
import psycopg
import pytest

from kopycat.connectors.postgres_cdc.pgoutput import parse_lsn
from tests.support.kafka import consume_records

JSON = {"key.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter": "org.apache.kafka.connect.json.JsonConverter"}


def dsn(url: str) -> str:
    """The libpq URL of a SQLAlchemy ``postgresql+psycopg://`` URL."""
    return url.replace("postgresql+psycopg://", "postgresql://")


def execute(url: str, *statements: str) -> None:
    """Each statement in its own transaction (autocommit), in order."""
    with psycopg.connect(dsn(url), autocommit=True) as conn:
        for statement in statements:
            conn.execute(statement)


def transaction(url: str, *statements: str) -> None:
    """All statements in one transaction: one commit, one BEGIN/END pair in the transaction metadata."""
    with psycopg.connect(dsn(url)) as conn, conn.transaction():
        for statement in statements:
            conn.execute(statement)


def wal_position(url: str) -> int:
    """``pg_current_wal_insert_lsn()`` now: past every commit made so far."""
    with psycopg.connect(dsn(url), autocommit=True) as conn:
        row = conn.execute("SELECT pg_current_wal_insert_lsn()::text").fetchone()
    assert row is not None
    return parse_lsn(row[0])


def consume_json(bootstrap: str, topic: str) -> list[tuple[Any, Any]]:
    """Every (key, value) of ``topic`` read to its end, JSON-decoded (None stays None)."""
    return [(orjson.loads(m.key()) if m.key() else None, orjson.loads(m.value()) if m.value() else None)
            for m in consume_records(bootstrap, topic)]


def last_offset(bootstrap: str, topic: str, connector: str, prefix: str) -> dict[str, Any]:
    """The last offset ``connector`` stored under Debezium's partition ``{"server": prefix}``."""
    key = [connector, {"server": prefix}]
    return [value for found, value in consume_json(bootstrap, topic) if found == key][-1]


def confirmed_flush(url: str, slot: str) -> int:
    """The slot's confirmed_flush_lsn as a 64-bit position."""
    with psycopg.connect(dsn(url), autocommit=True) as conn:
        row = conn.execute("SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = %s",
                           (slot,)).fetchone()
    assert row is not None, f"no slot {slot}"
    return parse_lsn(row[0])


def connector_props(url: str, name: str, prefix: str, slot: str) -> dict[str, str]:
    """A PostgresConnector config on the test database capturing public.items, JSON with schemas."""
    info = psycopg.conninfo.conninfo_to_dict(dsn(url))
    return {"name": name, "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
            "database.hostname": str(info["host"]), "database.port": str(info["port"]),
            "database.user": str(info["user"]), "database.dbname": str(info["dbname"]),
            "topic.prefix": prefix, "plugin.name": "pgoutput", "slot.name": slot, "publication.name": f"pub_{slot}",
            "table.include.list": "public.items", **JSON}


def slot_names(url: str) -> set[str]:
    with psycopg.connect(dsn(url), autocommit=True) as conn:
        return {row[0] for row in conn.execute("SELECT slot_name FROM pg_replication_slots")}


def drop_slots_since(url: str, before: set[str], timeout_s: float = 60) -> None:
    """Drop the slots made since ``before`` once nothing reads them: the session's server has a
    fixed max_replication_slots, and every CDC test holds one or two."""
    deadline = time.monotonic() + timeout_s
    with psycopg.connect(dsn(url), autocommit=True) as conn:
        for slot in slot_names(url) - before:
            while conn.execute("SELECT active FROM pg_replication_slots WHERE slot_name = %s",
                               (slot,)).fetchone() == (True,) and time.monotonic() < deadline:
                time.sleep(0.5)
            conn.execute("SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots "
                         "WHERE slot_name = %s AND NOT active", (slot,))


@pytest.fixture
def released_slots(postgres_url: str) -> Iterator[None]:
    """Drops the slots a test created after it: the session's server has a fixed number of them."""
    before = slot_names(postgres_url)
    yield
    drop_slots_since(postgres_url, before)

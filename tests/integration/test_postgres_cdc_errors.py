"""Each setup mistake of a CDC source fails with one message that carries the SQL that fixes it."""

from __future__ import annotations

import uuid

import psycopg
import pytest

from kopycat.api.errors import ConnectError
from kopycat.connectors.postgres_cdc.config import CdcSettings
from kopycat.connectors.postgres_cdc.heartbeat import Heartbeat
from kopycat.connectors.postgres_cdc.replication import PostgresSource
from tests.support.cdc import connector_props, dsn, execute

pytestmark = pytest.mark.timeout(300)


def settings(url: str, **overrides: str) -> CdcSettings:
    run = uuid.uuid4().hex[:8]
    return CdcSettings.parse({**connector_props(url, f"cdc-{run}", f"pg{run}", f"slot_{run}"), **overrides})


def test_a_user_without_replication_is_told_to_alter_the_role(postgres_url: str) -> None:
    role = f"plain_{uuid.uuid4().hex[:8]}"
    execute(postgres_url, f"CREATE ROLE {role} LOGIN")
    source = PostgresSource(settings(postgres_url, **{"database.user": role}))
    try:
        with pytest.raises(ConnectError, match=f'ALTER ROLE "{role}" WITH REPLICATION;'):
            source.check_ready()
    finally:
        source.close()


def test_a_missing_publication_with_autocreate_disabled_names_the_create_statement(postgres_url: str) -> None:
    cdc = settings(postgres_url, **{"publication.autocreate.mode": "disabled"})
    source = PostgresSource(cdc)
    try:
        with pytest.raises(ConnectError, match=f'CREATE PUBLICATION "{cdc.publication}" FOR ALL TABLES;'):
            source.ensure_publication([])
    finally:
        source.close()


def test_a_slot_another_reader_holds_is_reported_in_use(postgres_url: str) -> None:
    cdc = settings(postgres_url)
    source = PostgresSource(cdc)
    try:
        source.ensure_publication([])
        source.create_slot()
        holder = psycopg.connect(dsn(postgres_url), autocommit=True, replication="database")
        try:
            holder.execute(f"START_REPLICATION SLOT {cdc.slot} LOGICAL 0/0 "  # the walsender now holds it
                           f"(proto_version '1', publication_names '{cdc.publication}')")
            with pytest.raises(ConnectError, match="in use by another reader"):
                list(source.peek(source.current_lsn()))
        finally:
            holder.close()
    finally:
        source.close()


def test_a_failing_heartbeat_action_query_names_the_key_the_statement_and_the_fix(postgres_url: str) -> None:
    query = "INSERT INTO no_such_table DEFAULT VALUES"
    cdc = settings(postgres_url, **{"heartbeat.interval.ms": "1000", "heartbeat.action.query": query})
    heartbeat = Heartbeat(cdc, {"server": cdc.prefix})
    try:
        with pytest.raises(ConnectError, match="heartbeat.action.query failed") as error:
            heartbeat.beat({"lsn": 1})
        assert "no_such_table" in str(error.value) and repr(query) in str(error.value)
        assert "unset heartbeat.action.query" in str(error.value)
    finally:
        heartbeat.close()

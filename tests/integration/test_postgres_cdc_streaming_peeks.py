"""A WAL range is peeked twice (a short first peek, then the whole range) on a read-ahead thread:
the change stream's records and offsets equal one whole peek's, the replayed transactions skipped."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from kopycat.connectors.postgres_cdc.change_stream import ChangeStream, table_events_for
from kopycat.connectors.postgres_cdc.config import CdcSettings
from kopycat.connectors.postgres_cdc.pgoutput import Relation
from kopycat.connectors.postgres_cdc.replication import PostgresSource
from kopycat.read_ahead import read_ahead
from tests.support.cdc import connector_props, execute, transaction, wal_position

pytestmark = pytest.mark.timeout(600)


def stream_of(source: PostgresSource, settings: CdcSettings) -> ChangeStream:
    def lookup(relation: Relation) -> Any:
        return table_events_for(relation, source.table_columns(relation.namespace, relation.name), settings.prefix,
                                settings.dbname, settings.decimal_mode, settings.time_mode)
    return ChangeStream({"server": settings.prefix}, None, lookup, settings.tombstones)


def read(source: PostgresSource, settings: CdcSettings, end: int, first: int) -> tuple[list[Any], int]:
    """(key, value, offset) of every record, and how many messages the peeks returned."""
    returned = 0

    def counted() -> Any:
        nonlocal returned
        for rows in source.peek(end, fetch=7, first=first):
            returned += len(rows)
            yield rows
    records = stream_of(source, settings).records(read_ahead(counted(), f"{settings.slot}-read-ahead", 3))
    return [(r.key, r.value and [r.value.get(name) for name in ("before", "after", "source", "op")],  # not ts_*
             r.source_offset) for r in records], returned


def test_a_short_first_peek_then_the_whole_range_gives_the_records_and_offsets_of_one_peek(
        postgres_url: str) -> None:
    run = uuid.uuid4().hex[:8]
    settings = CdcSettings.parse(connector_props(postgres_url, f"cdc-{run}", f"pg{run}", f"slot_{run}"))
    # no autoanalyze: its relcache invalidation makes pgoutput send the RELATION again, one message more
    execute(postgres_url, "CREATE TABLE items (id INT PRIMARY KEY, label TEXT) WITH (autovacuum_enabled = false)",
            f'CREATE PUBLICATION "{settings.publication}" FOR TABLE items')
    source = PostgresSource(settings)
    try:
        source.create_slot()
        for n in range(40):  # 40 transactions of 3 changes: inserts, updates, a delete (and its tombstone)
            transaction(postgres_url, f"INSERT INTO items VALUES ({2 * n}, 'a{n}'), ({2 * n + 1}, 'b{n}')",
                        f"UPDATE items SET label = 'c{n}' WHERE id = {2 * n}" if n % 4 else
                        f"DELETE FROM items WHERE id = {2 * n + 1}")
        end = wal_position(postgres_url)
        whole, whole_messages = read(source, settings, end, first=1_000_000)
        twice, twice_messages = read(source, settings, end, first=25)
    finally:
        execute(postgres_url, f"SELECT pg_drop_replication_slot('{settings.slot}')")
        source.close()
    assert whole_messages == 1 + 40 * 5  # the table's RELATION; BEGIN, three changes, COMMIT
    assert 25 <= twice_messages - whole_messages <= 30  # the first peek's whole transactions, replayed
    assert len(whole) == 40 * 3 + 10  # every delete's tombstone
    assert twice == whole
    assert [value[3] if value else None for _, value, _ in whole[:7]] == ["c", "c", "d", None, "c", "c", "u"]
    assert whole[-1][2]["lsn"] == whole[-1][2]["lsn_commit"] and whole[-1][2]["messageType"] == "COMMIT"

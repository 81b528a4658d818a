"""The CDC snapshot's columnar path writes the record path's bytes, offsets and marks (real PostgreSQL).

The same tables are snapshotted with columns and without; every ``r`` event's key and value bytes
(JsonConverter with schemas, as Kafka Connect's) and every record's offset must be equal, a batch
carrying its last record's offset and rebuilding exactly the record path's records. The tables
hold every type :mod:`kopycat.connectors.postgres_cdc.columns` parses (NULLs in each optional
column), and the ones it leaves to the record path around them: an empty table, one without a key,
one with a NaN, one of a single row. The envelopes' ``ts_*`` and the snapshot time are pinned;
each snapshot is its own transaction, so ``txId`` is compared apart.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
import time
import uuid
from collections.abc import Iterator, Sequence
from typing import Any

import pytest

from kopycat.api.record_batch import SourceRecordBatch
from kopycat.api.records import SourceRecord
from kopycat.connectors.postgres_cdc import snapshot
from kopycat.connectors.postgres_cdc.blocking_snapshot import COLLECTIONS_KEY, PRIMARY_KEY, BlockingSnapshot
from kopycat.connectors.postgres_cdc.config import CdcSettings
from kopycat.connectors.postgres_cdc.events import TableEvents
from kopycat.connectors.postgres_cdc.java_keys import read_keys
from kopycat.connectors.postgres_cdc.replication import PostgresSource
from kopycat.connectors.postgres_cdc.snapshot import BLOCKING, snapshot_records
from kopycat.converters.json import JsonConverter
from tests.support.cdc import connector_props, execute

pytestmark = pytest.mark.timeout(600)

PARTITION = {"server": "shop"}
TYPES = ("id BIGINT PRIMARY KEY, small SMALLINT, count INTEGER NOT NULL, oid_ OID, flag BOOLEAN, name TEXT, "
         "code VARCHAR(20), fixed CHAR(3), uid UUID, doc JSONB, amount NUMERIC(12, 2), day DATE, at TIMESTAMP, "
         "span INTERVAL, ratio4 REAL, ratio8 DOUBLE PRECISION, at_tz TIMESTAMPTZ, at_tz3 TIMESTAMPTZ(3), "
         "clock TIME, clock3 TIME(3), clock_tz TIMETZ")
ROWS = """SELECT n, CASE WHEN n % 5 > 0 THEN n % 30000 - 15000 END, -n, CASE WHEN n % 6 > 0 THEN n * 3 END,
    CASE WHEN n % 7 > 0 THEN n % 2 = 1 END,
    CASE WHEN n % 8 > 0 THEN (ARRAY['plain', 'a "quoted" \\ back\\slash', E'tab\\there\\nnewline',
                                    'é ü 漢字', 'astral 😀 𝄞', ''])[n % 6 + 1] || n END,
    CASE WHEN n % 9 > 0 THEN 'c' || n END, CASE WHEN n % 10 > 0 THEN (n % 1000)::text END,
    CASE WHEN n % 11 > 0 THEN ('00000000-0000-0000-0000-' || lpad(n::text, 12, '0'))::uuid END,
    CASE WHEN n % 12 > 0 THEN jsonb_build_object('n', n, 's', 'x"y') END,
    CASE WHEN n % 13 > 0 THEN (n - 10000) + (n % 100) / 100.0 END,
    CASE WHEN n % 14 > 0 THEN DATE '1900-01-01' + n * 37 END,
    CASE WHEN n % 15 > 0 THEN TIMESTAMP '1950-01-01' + n * INTERVAL '1 day 1 hour 1.000123 second' END,
    CASE WHEN n % 16 > 0 THEN (n % 50) * INTERVAL '1 day' END,
    CASE WHEN n % 17 > 0 THEN (n / 7.0)::real END, CASE WHEN n % 18 > 0 THEN (n - 500) / 7.0 * 10.0 ^ (n % 40 - 20) END,
    CASE WHEN n % 19 > 0 THEN TIMESTAMPTZ '1000-01-01 00:00:00+00' + n * INTERVAL '97 days 3.5001 second' END,
    CASE WHEN n % 20 > 0 THEN TIMESTAMPTZ '2026-11-01 07:00:00+00' + n * INTERVAL '1.001 second' END,
    CASE WHEN n % 21 > 0 THEN TIME '00:00:00' + n * INTERVAL '17.000321 second' END,
    CASE WHEN n % 22 > 0 THEN TIME '00:00:00' + n * INTERVAL '17.321 second' END,
    CASE WHEN n % 23 > 0 THEN (TIME '00:00:00' + n * INTERVAL '1 minute')::timetz END
    FROM generate_series({first}, {last}) n"""


@pytest.fixture(autouse=True)
def pinned_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(time, "time_ns", lambda: 1_764_300_000_123_456_789)


@pytest.fixture
def source(postgres_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[PostgresSource]:
    """The test database's tables, read 500 rows a batch: a table of 2,100 rows is 5 batches."""
    monkeypatch.setattr(snapshot, "COLUMN_ROWS", 500)
    execute(postgres_url,
            f"CREATE TABLE a_types ({TYPES})", f"INSERT INTO a_types {ROWS.format(first=1, last=2100)}",
            "CREATE TABLE b_empty (id INT PRIMARY KEY)",
            "CREATE TABLE c_keyless (id INT, label TEXT)",
            "INSERT INTO c_keyless SELECT n, 'k' || n FROM generate_series(1, 100) n",
            f"CREATE TABLE d_nan ({TYPES})", f"INSERT INTO d_nan {ROWS.format(first=1, last=300)}",
            "UPDATE d_nan SET ratio8 = 'NaN' WHERE id = 150",
            f"CREATE TABLE e_single ({TYPES})", f"INSERT INTO e_single {ROWS.format(first=7, last=7)}",
            f"CREATE TABLE f_tail ({TYPES})", f"INSERT INTO f_tail {ROWS.format(first=3001, last=3130)}")
    run = uuid.uuid4().hex[:8]
    source = PostgresSource(CdcSettings.parse(connector_props(postgres_url, f"cdc-{run}", "shop", f"slot_{run}")))
    yield source
    source.close()


def tables(source: PostgresSource) -> list[TableEvents]:
    names = ["a_types", "b_empty", "c_keyless", "d_nan", "e_single", "f_tail"]
    return [TableEvents("shop", source.settings.dbname, "public", name, *source.table_columns("public", name),
                        decimal_mode="precise", time_mode="adaptive") for name in names]


def converter(is_key: bool) -> JsonConverter:
    json = JsonConverter()
    json.configure({"schemas.enable": "true"}, is_key=is_key)
    return json


def sent(items: Sequence[SourceRecord | SourceRecordBatch]) -> tuple[list[bytes], list[Any]]:
    """Each event's key and value bytes as the runner sends them (a batch as columns), and the offset
    the runner notes after each item."""
    keys, values = converter(True), converter(False)
    out: list[bytes] = []
    for item in items:
        if isinstance(item, SourceRecordBatch):
            key_bytes = keys.from_arrow_array(item.topic, item.key_schema, item.keys)
            value_bytes = values.from_arrow_array(item.topic, item.value_schema, item.values)
            assert key_bytes is not None and value_bytes is not None, "the column path refused the batch"
            out += [k + b"\n" + v for k, v in zip(key_bytes.to_pylist(), value_bytes.to_pylist(), strict=True)]
        else:
            out.append((keys.from_connect_data(item.topic, item.key_schema, item.key) or b"-") + b"\n"
                       + values.from_connect_data(item.topic, item.value_schema, item.value))
    return out, [item.source_offset for item in items]


def without_tx_id(events: list[bytes]) -> list[bytes]:
    return [re.sub(rb'"txId":\d+', b'"txId":0', event) for event in events]


def offsets_without_tx_id(offsets: list[Any]) -> list[Any]:
    return [{key: value for key, value in offset.items() if key != "txId"} for offset in offsets]


def digest(events: list[bytes]) -> str:
    return hashlib.sha256(b"\n".join(events)).hexdigest()


@pytest.mark.parametrize("streamed", [None, {"lsn": 4242, "lsn_commit": 4242, "txId": 77, "ts_usec": 5,
                                             "messageType": "COMMIT"}], ids=["initial", "blocking"])
def test_snapshot_batches_are_byte_identical_to_records_with_the_same_offsets_and_marks(
        source: PostgresSource, streamed: dict[str, Any] | None) -> None:
    columnar = list(snapshot_records(source, tables(source), PARTITION, 4242, [], streamed, columnar=True))
    records = list(snapshot_records(source, tables(source), PARTITION, 4242, [], streamed))
    kinds = [(item.topic.split(".")[-1], len(item)) for item in columnar if isinstance(item, SourceRecordBatch)]
    assert kinds == [("a_types", 500)] * 4 + [("a_types", 100), ("f_tail", 130)]
    assert all(isinstance(item, SourceRecord) for item in columnar[6:-1])  # keyless, NaN, single row: records
    assert len(records) == len(columnar) - 6 + 2100 + 130 == 2100 + 100 + 300 + 1 + 130

    (column_bytes, column_offsets), (record_bytes, record_offsets) = sent(columnar), sent(records)
    assert digest(without_tx_id(column_bytes)) == digest(without_tx_id(record_bytes))
    assert without_tx_id(column_bytes) == without_tx_id(record_bytes)
    ends = [sum(len(item) if isinstance(item, SourceRecordBatch) else 1 for item in columnar[:i + 1])
            for i in range(len(columnar))]
    assert offsets_without_tx_id(column_offsets) == offsets_without_tx_id([record_offsets[end - 1] for end in ends])

    rebuilt = [record for item in columnar
               for record in (item.records() if isinstance(item, SourceRecordBatch) else [item])]
    assert sent(rebuilt)[0] == column_bytes  # the same snapshot: txId too
    rebuilt_offsets = [record.source_offset for record in rebuilt]
    assert offsets_without_tx_id(rebuilt_offsets) == offsets_without_tx_id(record_offsets)
    assert [offset["last_snapshot_record"] for offset in rebuilt_offsets] == [False] * (len(rebuilt) - 1) + [True]
    assert rebuilt_offsets[-1]["snapshot"] == rebuilt_offsets[0]["snapshot"] == (BLOCKING if streamed else "INITIAL")
    if streamed is not None:
        assert all(offset["lsn_commit"] == 4242 and offset["messageType"] == "COMMIT" for offset in rebuilt_offsets)

    marks = [(r.topic.split(".")[-1], r.value.get("source").get("snapshot")) for r in records]
    assert [mark for mark in marks if mark[1] != "true"] == [
        ("a_types", "first"), ("a_types", "last_in_data_collection"),
        ("c_keyless", "first_in_data_collection"), ("c_keyless", "last_in_data_collection"),
        ("d_nan", "first_in_data_collection"), ("d_nan", "last_in_data_collection"),
        ("e_single", "first_in_data_collection"),
        ("f_tail", "first_in_data_collection"), ("f_tail", "last")]
    nulls = {field: sum(1 for r in records[:2100] if r.value.get("after").get(field) is None)
             for field in ("small", "name", "amount", "at_tz3", "clock_tz")}
    assert nulls == {"small": 420, "name": 262, "amount": 161, "at_tz3": 105, "clock_tz": 91}


def test_max_batch_size_caps_a_batchs_rows_and_below_64_rows_a_snapshot_is_records(source: PostgresSource) -> None:
    """A poll holds no more events with columns than without: ``max.batch.size`` caps a batch."""
    records = sent(list(snapshot_records(source, tables(source), PARTITION, 4242, [])))[0]
    for batch_rows, sizes in ((300, [300] * 7 + [130]), (63, [])):
        items = list(snapshot_records(source, tables(source), PARTITION, 4242, [], columnar=True,
                                      batch_rows=batch_rows))
        assert [len(item) for item in items if isinstance(item, SourceRecordBatch)] == sizes
        assert without_tx_id(sent(items)[0]) == without_tx_id(records)


def test_a_blocking_snapshots_progress_keys_are_each_rows_own_across_tables(source: PostgresSource) -> None:
    """A chunk is held until the next is read, so a table's last chunk is sent after the next table's
    query: its records must still carry their own table's progress (tables left, their own key)."""
    blocking = BlockingSnapshot(dt.UTC)
    blocking.queue(["public.a_types", "public.f_tail"])
    events = {f"public.{table.table}": table for table in tables(source)}
    streamed = {"lsn": 4242, "lsn_commit": 4242, "txId": 77, "ts_usec": 5, "messageType": "COMMIT"}
    items = list(blocking.records(source, events.__getitem__, PARTITION, streamed, columnar=True, batch_rows=500))
    assert [len(item) for item in items if isinstance(item, SourceRecordBatch)] == [500] * 4 + [100, 130]
    rebuilt = [record for item in items
               for record in (item.records() if isinstance(item, SourceRecordBatch) else [item])]
    assert len(rebuilt) == 2100 + 130
    for record in rebuilt[:-1]:
        table = record.topic.split(".")[-1]
        offset = record.source_offset
        left = ["public.a_types", "public.f_tail"] if table == "a_types" else ["public.f_tail"]
        assert json.loads(offset[COLLECTIONS_KEY]) == left, (table, offset)
        assert read_keys(offset[PRIMARY_KEY]) == [record.key.get("id")]
    assert COLLECTIONS_KEY not in rebuilt[-1].source_offset and rebuilt[-1].source_offset["snapshot_completed"]
    batch_offsets = [item.source_offset for item in items if isinstance(item, SourceRecordBatch)]
    assert [read_keys(offset[PRIMARY_KEY]) for offset in batch_offsets[:5]] == [[500], [1000], [1500], [2000], [2100]]

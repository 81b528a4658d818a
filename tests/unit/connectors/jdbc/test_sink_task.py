"""JdbcSinkTask on SQLite: auto.create, write modes, tombstones, auto.evolve, exactly-once offsets."""

from __future__ import annotations

import datetime as dt
import decimal
import logging
import sqlite3
from pathlib import Path

import pytest
import sqlalchemy as sa

from kopycat.api.data import Schema, SchemaBuilder, Struct, Timestamp
from kopycat.api.errors import ConnectError, DataError, RetriableError
from kopycat.api.records import TopicPartition
from tests.unit.connectors.jdbc.sink_helpers import (
    ALL_TYPES_SCHEMA,
    KEY_SCHEMA,
    VALUE_SCHEMA,
    all_types_value,
    execute,
    key,
    order,
    record,
    rows,
    sqlite_url,
    start_task,
)

TP0 = TopicPartition("orders", 0)
UPSERT = {"auto_create": True, "insert_mode": "upsert", "pk_mode": "record_key"}


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Each test on SQLite (executemany) and on PostgreSQL (the COPY staging path)."""
    if request.param == "sqlite":
        return sqlite_url(tmp_path)
    return str(request.getfixturevalue("postgres_url"))


def test_auto_create_makes_a_table_from_a_struct_schema_and_values_round_trip(url: str) -> None:
    task, _ = start_task(url, auto_create=True)
    task.put([record(n, all_types_value(n)) for n in range(3)])
    engine = sa.create_engine(url)
    with engine.connect() as conn:
        table = sa.Table("orders", sa.MetaData(), autoload_with=conn)
        read = [dict(row._mapping) for row in conn.execute(sa.select(table).order_by(table.c.i32))]
    engine.dispose()
    postgres = url.startswith("postgresql")
    assert {c.name: (type(c.type).__name__, c.nullable) for c in table.columns} == {
        "i8": ("SMALLINT", False), "i16": ("SMALLINT", False), "i32": ("INTEGER", False),
        "i64": ("BIGINT", False), "f32": ("REAL", False), "f64": ("DOUBLE_PRECISION" if postgres else "DOUBLE", False),
        "flag": ("BOOLEAN", False), "text": ("TEXT", False), "raw": ("BYTEA" if postgres else "BLOB", False),
        "price": ("NUMERIC", False), "day": ("DATE", False), "at": ("TIME", False),
        "ts": ("TIMESTAMP" if postgres else "DATETIME", False), "maybe": ("TEXT", True)}
    expected = []
    for n in range(3):
        value = all_types_value(n)
        row = {field.name: value.get(field.name) for field in ALL_TYPES_SCHEMA.fields}
        row["ts"] = row["ts"].replace(tzinfo=None)  # UTC wall time (db.timezone=UTC)
        expected.append(row)
    assert [{**row, "price": decimal.Decimal(str(row["price"]))} for row in read] == expected
    task.stop()


def test_insert_mode_appends_every_record_with_kafka_coordinates_as_key(url: str) -> None:
    task, _ = start_task(url, auto_create=True, pk_mode="kafka")
    task.put([record(n, order(n, f"c{n}"), partition=n % 2) for n in range(4)])
    assert rows(url, "SELECT __connect_topic, __connect_partition, __connect_offset, id, customer FROM orders "
                     "ORDER BY __connect_offset") == [
        ("orders", 0, 0, 0, "c0"), ("orders", 1, 1, 1, "c1"), ("orders", 0, 2, 2, "c2"), ("orders", 1, 3, 3, "c3")]
    task.stop()


def test_upsert_keeps_the_last_value_per_key_and_a_replay_leaves_the_same_table(url: str) -> None:
    batch = [record(n, order(n % 3, f"v{n}", float(n)), key_value=key(n % 3)) for n in range(10)]
    task, _ = start_task(url, **UPSERT, batch_size=4)
    task.put(batch)
    first = rows(url, "SELECT * FROM orders ORDER BY id")
    assert first == [(0, "v9", 9.0), (1, "v7", 7.0), (2, "v8", 8.0)]
    task.stop()
    replay, _ = start_task(url, **UPSERT, name="replaying-sink")  # other offsets: the batch is written again
    replay.put(batch)
    replay.put(batch)
    assert rows(url, "SELECT * FROM orders ORDER BY id") == first
    replay.stop()


def test_text_with_copy_format_characters_arrives_unchanged(url: str) -> None:
    # PostgreSQL's path is COPY text format: tabs, newlines, backslashes and a literal \\N (its NULL
    # marker) must be escaped, and None must stay NULL.
    texts = ["tab\there", "line\nbreak\r", "back\\slash", "\\N", "", "caf\u00e9 \U0001F600", "a|b,c\"d'"]
    task, _ = start_task(url, **UPSERT)
    task.put([record(n, order(n, text, None if n % 2 else 0.5), key_value=key(n)) for n, text in enumerate(texts)])
    assert rows(url, "SELECT id, customer, amount FROM orders ORDER BY id") == [
        (n, text, None if n % 2 else 0.5) for n, text in enumerate(texts)]
    task.stop()


def test_update_mode_changes_existing_rows_only(url: str) -> None:
    execute(url, "CREATE TABLE orders (id BIGINT PRIMARY KEY, customer TEXT, amount DOUBLE PRECISION)",
            "INSERT INTO orders VALUES (1, 'old', 1.0), (2, 'two', 2.0)")
    task, _ = start_task(url, insert_mode="update", pk_mode="record_value", pk_fields="id")
    task.put([record(0, order(1, "new", 10.0)), record(1, order(3, "nobody", 3.0))])
    assert rows(url, "SELECT * FROM orders ORDER BY id") == [(1, "new", 10.0), (2, "two", 2.0)]
    task.stop()


def test_tombstones_delete_by_key_in_topic_order(url: str) -> None:
    task, _ = start_task(url, **UPSERT, delete_enabled=True)
    task.put([record(0, order(1, "a"), key_value=key(1)), record(1, order(2, "b"), key_value=key(2)),
              record(2, None, key_value=key(1)),                     # upsert then delete: deleted
              record(3, None, key_value=key(2)), record(4, order(2, "again"), key_value=key(2))])  # back
    assert rows(url, "SELECT id, customer FROM orders ORDER BY id") == [(2, "again")]
    task.put([record(5, None, key_value=key(2))])
    assert rows(url, "SELECT id FROM orders") == []
    task.stop()


def test_tombstones_are_skipped_with_one_warning_per_table_when_deletes_are_off(
        url: str, caplog: pytest.LogCaptureFixture) -> None:
    task, _ = start_task(url, **UPSERT)
    with caplog.at_level(logging.WARNING, logger="kopycat.connectors.jdbc.sink_writer"):
        task.put([record(0, order(1, "a"), key_value=key(1)), record(1, None, key_value=key(1)),
                  record(2, None, key_value=key(1))])
    assert rows(url, "SELECT id, customer FROM orders") == [(1, "a")]
    # A set: once Airflow's logging is configured in the same pytest process, caplog can see a
    # record twice (and can see INFO lines, whose tmp path names this test); two tombstones must
    # still give one distinct warning from the writer.
    warnings = sorted({r.getMessage() for r in caplog.records
                       if r.levelno == logging.WARNING and r.name == "kopycat.connectors.jdbc.sink_writer"})
    assert len(warnings) == 1 and "orders" in warnings[0] and "delete.enabled=true" in warnings[0]
    assert rows(url, "SELECT \"offset\" FROM kopycat_offsets") == [(3,)]
    task.stop()


def test_auto_evolve_adds_a_nullable_column_for_a_new_field(url: str) -> None:
    task, _ = start_task(url, **UPSERT, auto_evolve=True)
    task.put([record(0, order(1, "a", 1.0), key_value=key(1))])
    wider = (SchemaBuilder.struct().name("order").field("id", Schema.INT64_SCHEMA)
             .field("customer", Schema.STRING_SCHEMA).field("amount", Schema.OPTIONAL_FLOAT64_SCHEMA)
             .field("note", Schema.STRING_SCHEMA).build())
    task.put([record(1, order(2, "b", 2.0, schema=wider).put("note", "hello"), key_value=key(2))])
    assert rows(url, "SELECT id, customer, amount, note FROM orders ORDER BY id") == [
        (1, "a", 1.0, None), (2, "b", 2.0, "hello")]
    engine = sa.create_engine(url)
    with engine.connect() as conn:
        assert [c["nullable"] for c in sa.inspect(conn).get_columns("orders") if c["name"] == "note"] == [True]
    engine.dispose()
    task.stop()


def test_a_new_field_without_auto_evolve_fails_naming_table_column_and_fix(url: str) -> None:
    execute(url, "CREATE TABLE orders (id BIGINT PRIMARY KEY, customer TEXT)")
    task, _ = start_task(url, insert_mode="upsert", pk_mode="record_key")
    with pytest.raises(DataError) as failure:
        task.put([record(7, order(1, "a"), key_value=key(1))])
    message = str(failure.value)
    assert all(text in message for text in ("'orders'", "['amount']", "auto.evolve=true",
                                            "topic 'orders' partition 0 offset 7"))
    task.stop()


def test_a_missing_table_without_auto_create_names_the_table_and_the_fix(url: str) -> None:
    task, _ = start_task(url)
    with pytest.raises(DataError, match=r"Table 'orders' does not exist .*auto.create=true"):
        task.put([record(0, order(1, "a"))])
    task.stop()


def test_a_bad_record_rolls_back_the_whole_put_and_writes_no_offset(url: str) -> None:
    execute(url, "CREATE TABLE orders (id BIGINT PRIMARY KEY, customer TEXT NOT NULL, amount DOUBLE PRECISION)")
    task, _ = start_task(url, insert_mode="insert", batch_size=2)
    task.open([TP0])
    task.put([record(0, order(1, "first"))])
    optional_customer = (SchemaBuilder.struct().name("order").field("id", Schema.INT64_SCHEMA)
                         .field("customer", Schema.OPTIONAL_STRING_SCHEMA)
                         .field("amount", Schema.OPTIONAL_FLOAT64_SCHEMA).build())
    batch = [record(1, order(2, "ok")), record(2, order(3, "ok")),
             record(3, Struct(optional_customer).put("id", 4).put("amount", 4.5)), record(4, order(5, "ok"))]
    with pytest.raises(DataError) as failure:
        task.put(batch)
    message = str(failure.value)
    assert all(text in message for text in ("'customer'", "'orders'", "topic 'orders' partition 0 offset 3",
                                            "NOT NULL"))
    assert rows(url, "SELECT id FROM orders") == [(1,)]
    assert rows(url, "SELECT topic, partition, \"offset\" FROM kopycat_offsets") == [("orders", 0, 1)]
    assert task.pre_commit({TP0: 5}) == {TP0: 5}  # the runner would not commit after a failed put
    task.stop()


def test_a_value_the_database_refuses_is_found_and_named_with_its_column_and_value(url: str) -> None:
    execute(url, "CREATE TABLE orders (id BIGINT PRIMARY KEY, customer TEXT CHECK (length(customer) < 8), "
                 "amount DOUBLE PRECISION)")
    task, _ = start_task(url)
    batch = [record(n, order(n, "short")) for n in range(5)] + [record(5, order(5, "much too long"))]
    with pytest.raises(DataError) as failure:
        task.put(batch)
    message = str(failure.value)
    assert "topic 'orders' partition 0 offset 5" in message and "much too long" in message
    assert "rolled back" in message
    assert rows(url, "SELECT count(*) FROM orders") == [(0,)]
    assert rows(url, "SELECT count(*) FROM kopycat_offsets") == [(0,)]
    task.stop()


def test_a_field_of_the_wrong_type_for_the_column_fails_before_writing(url: str) -> None:
    execute(url, "CREATE TABLE orders (id BIGINT PRIMARY KEY, customer INTEGER, amount DOUBLE PRECISION)")
    task, _ = start_task(url)
    with pytest.raises(DataError, match=r"Field 'customer' \(str\) .* column 'customer' \(INTEGER\) of table "
                                        r"'orders'.*Cast"):
        task.put([record(0, order(1, "text"))])
    task.stop()


def test_open_seeks_to_stored_offsets_and_older_records_are_not_written_twice(url: str) -> None:
    task, _ = start_task(url, auto_create=True)
    task.open([TP0, TopicPartition("orders", 1)])
    task.put([record(n, order(n, "x"), partition=n % 2) for n in range(6)])
    task.stop()
    again, context = start_task(url, auto_create=True)
    again.open([TP0, TopicPartition("orders", 1), TopicPartition("orders", 2)])
    assert context.seeks == {TP0: 5, TopicPartition("orders", 1): 6}
    again.put([record(n, order(n, "x"), partition=n % 2) for n in range(4, 8)])  # 4 and 5 were written
    assert rows(url, "SELECT id FROM orders ORDER BY id") == [(n,) for n in range(8)]
    assert again.pre_commit({TP0: 7, TopicPartition("orders", 1): 8}) == {TP0: 7, TopicPartition("orders", 1): 8}
    again.stop()


def test_pre_commit_stores_offsets_of_records_that_produced_no_rows(url: str) -> None:
    task, _ = start_task(url, auto_create=True)
    task.open([TP0])
    task.put([record(0, order(0, "x"))])
    assert task.pre_commit({TP0: 10}) == {TP0: 10}  # offsets 1-9 were filtered by transforms
    assert rows(url, "SELECT \"offset\" FROM kopycat_offsets") == [(10,)]
    task.stop()


def test_schemaless_maps_go_into_an_existing_table_only(url: str) -> None:
    task, _ = start_task(url, insert_mode="upsert", pk_mode="record_value", pk_fields="id")
    with pytest.raises(DataError, match="does not exist"):
        task.put([record(0, {"id": 1, "customer": "a"})])
    execute(url, "CREATE TABLE orders (id BIGINT PRIMARY KEY, customer TEXT, amount DOUBLE PRECISION)")
    task.put([record(1, {"id": 1, "customer": "a"}), record(2, {"id": 1, "customer": "b", "amount": 2.5})])
    assert rows(url, "SELECT * FROM orders") == [(1, "b", 2.5)]
    with pytest.raises(DataError, match=r"Value 'text' .* column 'amount'"):
        task.put([record(3, {"id": 2, "customer": "c", "amount": "text"})])
    task.stop()


def test_a_value_without_struct_schema_names_the_converter_fix(url: str) -> None:
    task, _ = start_task(url, auto_create=True)
    with pytest.raises(DataError, match=r"offset 4 has a STRING value.*schemas.enable=true"):
        task.put([record(4, "plain text", value_schema=Schema.STRING_SCHEMA)])
    task.stop()


def test_a_primitive_key_fills_the_one_pk_field(url: str) -> None:
    task, _ = start_task(url, insert_mode="upsert", pk_mode="record_key", pk_fields="order_id", auto_create=True,
                         delete_enabled=True)
    task.put([record(0, order(9, "a"), key_value="k1", key_schema=Schema.STRING_SCHEMA),
              record(1, order(9, "b"), key_value="k1", key_schema=Schema.STRING_SCHEMA),
              record(2, order(8, "c"), key_value="k2", key_schema=Schema.STRING_SCHEMA),
              record(3, None, key_value="k2", key_schema=Schema.STRING_SCHEMA)])
    assert rows(url, "SELECT order_id, id, customer FROM orders") == [("k1", 9, "b")]
    task.stop()


def test_timestamps_are_written_as_wall_time_in_db_timezone(url: str) -> None:
    schema = SchemaBuilder.struct().field("id", Schema.INT64_SCHEMA).field("at", Timestamp.SCHEMA).build()
    task, _ = start_task(url, auto_create=True, db_timezone="Europe/Berlin")
    at = dt.datetime(2024, 7, 1, 10, 0, tzinfo=dt.UTC)
    task.put([record(0, Struct(schema).put("id", 1).put("at", at))])
    assert rows(url, "SELECT CAST(at AS TEXT) FROM orders")[0][0] in ("2024-07-01 12:00:00.000000",
                                                                     "2024-07-01 12:00:00")
    task.stop()


def test_timestamps_in_any_zone_are_written_as_utc_wall_time_by_default(url: str) -> None:
    schema = SchemaBuilder.struct().field("id", Schema.INT64_SCHEMA).field("at", Timestamp.SCHEMA).build()
    task, _ = start_task(url, auto_create=True)
    plus_two = dt.timezone(dt.timedelta(hours=2))
    task.put([record(n, Struct(schema).put("id", n).put("at", at)) for n, at in enumerate([
        dt.datetime(2024, 7, 1, 12, 0, tzinfo=plus_two), dt.datetime(2024, 7, 1, 12, 0, tzinfo=dt.UTC),
        dt.datetime(2024, 7, 1, 12, 0)])])
    stored = [text[:19] for (text,) in rows(url, "SELECT CAST(at AS TEXT) FROM orders ORDER BY id")]
    assert stored == ["2024-07-01 10:00:00", "2024-07-01 12:00:00", "2024-07-01 12:00:00"]
    task.stop()


def test_a_locked_database_is_a_retriable_error_with_the_configured_backoff(tmp_path: Path) -> None:
    url = sqlite_url(tmp_path)
    task, context = start_task(url + "?timeout=0.05", auto_create=True, retry_backoff_ms=1234, max_retries=1)
    task.put([record(0, order(0, "a"))])
    blocker = sqlite3.connect(tmp_path / "sink.db")
    blocker.execute("BEGIN EXCLUSIVE")
    with pytest.raises(RetriableError, match="locked"):
        task.put([record(1, order(1, "b"))])
    assert context.timeouts == [1234]
    with pytest.raises(ConnectError, match="max.retries=1") as exhausted:
        task.put([record(1, order(1, "b"))])
    assert not isinstance(exhausted.value, RetriableError)
    blocker.rollback()
    blocker.close()
    task.put([record(1, order(1, "b"))])  # the engine's redelivery
    assert rows(url, "SELECT id FROM orders ORDER BY id") == [(0,), (1,)]
    task.stop()


def test_key_struct_and_value_share_key_columns_in_schema_order(url: str) -> None:
    task, _ = start_task(url, **UPSERT)
    task.put([record(0, order(1, "a", 1.0), key_value=key(1))])
    assert KEY_SCHEMA.field("id") is not None and VALUE_SCHEMA.field("id") is not None
    engine = sa.create_engine(url)
    try:
        inspector = sa.inspect(engine)
        columns = [c["name"] for c in inspector.get_columns("orders")]
        keys = inspector.get_pk_constraint("orders")["constrained_columns"]
    finally:
        engine.dispose()
    assert (columns, keys) == (["id", "customer", "amount"], ["id"])
    task.stop()

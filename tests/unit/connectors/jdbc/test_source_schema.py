"""Column types -> Kafka Connect schemas and rows -> Structs, as Confluent's DataConverter maps them."""

from __future__ import annotations

import datetime as dt
import decimal
import uuid
from pathlib import Path

import pytest
import sqlalchemy.types as sat
from sqlalchemy.dialects import postgresql as pg

from kopycat.api.data import Date, Decimal, Schema, Time, Timestamp, Type
from kopycat.api.errors import ConfigError
from kopycat.connectors.jdbc.source_schema import PRECISION_PARAMETER, column_schema
from tests.unit.connectors.jdbc.source_helpers import Database, drain, plan, start_task


def schema_of(column_type: sat.TypeEngine, nullable: bool = False, **kwargs: object) -> Schema:
    return column_schema("t", "c", column_type, nullable, **kwargs)[0]  # type: ignore[arg-type]


@pytest.mark.parametrize(("column_type", "expected"), [
    (sat.Boolean(), Schema.BOOLEAN_SCHEMA),
    (sat.SmallInteger(), Schema.INT16_SCHEMA),
    (sat.Integer(), Schema.INT32_SCHEMA),
    (sat.BigInteger(), Schema.INT64_SCHEMA),
    (pg.REAL(), Schema.FLOAT32_SCHEMA),
    (pg.DOUBLE_PRECISION(), Schema.FLOAT64_SCHEMA),
    (sat.String(20), Schema.STRING_SCHEMA),
    (sat.Text(), Schema.STRING_SCHEMA),
    (pg.BYTEA(), Schema.BYTES_SCHEMA),
    (sat.LargeBinary(), Schema.BYTES_SCHEMA),
    (sat.Date(), Date.SCHEMA),
    (sat.Time(), Time.SCHEMA),
    (sat.DateTime(), Timestamp.SCHEMA),
    (pg.TIMESTAMP(timezone=True), Timestamp.SCHEMA),
    (pg.UUID(), Schema.STRING_SCHEMA),
    (pg.JSONB(), Schema.STRING_SCHEMA),
], ids=lambda value: repr(value))
def test_each_postgresql_type_maps_to_the_schema_confluent_gives_it(column_type: sat.TypeEngine,
                                                                  expected: Schema) -> None:
    assert schema_of(column_type) == expected


def test_a_nullable_column_is_an_optional_field_keeping_its_logical_type() -> None:
    schema = schema_of(sat.DateTime(), nullable=True)
    assert schema.optional and schema.name == Timestamp.LOGICAL_NAME and schema.type is Type.INT64


def test_decimals_keep_the_column_scale_and_carry_the_precision_parameter() -> None:
    schema = schema_of(sat.Numeric(12, 3))
    assert schema.name == Decimal.LOGICAL_NAME
    assert dict(schema.parameters or {}) == {"scale": "3", PRECISION_PARAMETER: "12"}


def test_an_unconstrained_numeric_gets_scale_127_as_confluents_postgresql_dialect() -> None:
    assert Decimal.scale(schema_of(sat.Numeric())) == 127


@pytest.mark.parametrize(("precision", "scale", "expected"), [
    (2, 0, Schema.INT8_SCHEMA), (4, 0, Schema.INT16_SCHEMA), (9, 0, Schema.INT32_SCHEMA),
    (18, 0, Schema.INT64_SCHEMA), (10, 2, Schema.FLOAT64_SCHEMA),
])
def test_best_fit_maps_numerics_that_fit_to_primitive_types(precision: int, scale: int,
                                                            expected: Schema) -> None:
    schema, convert = column_schema("t", "c", sat.Numeric(precision, scale), False, numeric_mapping="best_fit")
    assert schema == expected
    assert convert is not None and type(convert(decimal.Decimal(12))) is (float if scale else int)


def test_best_fit_keeps_a_numeric_too_wide_for_int64_as_decimal() -> None:
    assert schema_of(sat.Numeric(20, 0), numeric_mapping="best_fit").name == Decimal.LOGICAL_NAME


def test_a_type_without_mapping_names_table_column_type_and_the_fix() -> None:
    with pytest.raises(ConfigError) as caught:
        column_schema("orders", "period", pg.INTERVAL(), False)
    message = str(caught.value)
    assert "'period'" in message and "'orders'" in message and "INTERVAL" in message
    assert "table.blacklist" in message and "CAST(period AS TEXT)" in message


def test_sqlite_columns_become_fields_with_their_values(tmp_path: Path) -> None:
    db = Database(tmp_path / "types.db")
    db.run("""CREATE TABLE items (id INTEGER PRIMARY KEY, small SMALLINT NOT NULL, big BIGINT,
              price DECIMAL(10,2), ratio REAL, name VARCHAR(20) NOT NULL, body BLOB,
              day DATE, at TIME, stamp TIMESTAMP, flag BOOLEAN)""")
    db.run("INSERT INTO items VALUES (?,?,?,?,?,?,?,?,?,?,?)",
           [(1, 7, 2**40, "12.50", 0.5, "a", b"\x00\x01", "2024-02-29", "13:14:15.250000",
             "2024-03-01 10:00:00.123456", 1),
            (2, 8, None, None, None, "b", None, None, None, None, None)])
    _, configs = plan({"connection.url": db.url, "mode": "bulk", "topic.prefix": "db-"})
    records = drain(start_task(configs[0]))
    schema = records[0].value_schema
    assert schema.name == "items"
    assert [(f.name, f.schema.type, f.schema.name, f.schema.optional) for f in schema.fields] == [
        ("id", Type.INT64, None, True), ("small", Type.INT16, None, False),
        ("big", Type.INT64, None, True), ("price", Type.BYTES, Decimal.LOGICAL_NAME, True),
        ("ratio", Type.FLOAT64, None, True), ("name", Type.STRING, None, False),
        ("body", Type.BYTES, None, True), ("day", Type.INT32, Date.LOGICAL_NAME, True),
        ("at", Type.INT32, Time.LOGICAL_NAME, True), ("stamp", Type.INT64, Timestamp.LOGICAL_NAME, True),
        ("flag", Type.BOOLEAN, None, True)]
    first = records[0].value
    assert [first.get(f.name) for f in schema.fields] == [
        1, 7, 2**40, decimal.Decimal("12.50"), 0.5, "a", b"\x00\x01", dt.date(2024, 2, 29),
        dt.time(13, 14, 15, 250000), dt.datetime(2024, 3, 1, 10, 0, 0, 123456), True]
    assert [records[1].value.get(f.name) for f in schema.fields] == [
        2, 8, None, None, None, "b", None, None, None, None, None]
    assert all(record.value_schema is schema for record in records)  # one schema per table


def test_naive_timestamps_are_read_in_db_timezone(tmp_path: Path) -> None:
    db = Database(tmp_path / "tz.db")
    db.run("CREATE TABLE t (id INTEGER PRIMARY KEY, stamp TIMESTAMP NOT NULL)")
    db.run("INSERT INTO t VALUES (?, ?)", [(1, "2024-06-01 12:00:00.000000")])
    _, configs = plan({"connection.url": db.url, "mode": "bulk", "db.timezone": "Europe/Berlin"})
    stamp = drain(start_task(configs[0]))[0].value.get("stamp")
    assert stamp.astimezone(dt.UTC) == dt.datetime(2024, 6, 1, 10, 0, tzinfo=dt.UTC)


def test_record_key_mode_primary_key_keys_records_by_their_primary_key(tmp_path: Path) -> None:
    db = Database(tmp_path / "key.db")
    db.run("CREATE TABLE t (a INTEGER NOT NULL, b TEXT NOT NULL, v TEXT, PRIMARY KEY (a, b))")
    db.run("INSERT INTO t VALUES (?, ?, ?)", [(1, "x", "one"), (2, "y", "two")])
    _, configs = plan({"connection.url": db.url, "mode": "bulk", "record.key.mode": "primary_key"})
    records = drain(start_task(configs[0]))
    assert [(r.key.get("a"), r.key.get("b")) for r in records] == [(1, "x"), (2, "y")]
    assert [f.name for f in records[0].key_schema.fields] == ["a", "b"]


def test_uuid_and_json_values_become_their_text() -> None:
    _, to_text = column_schema("t", "c", pg.UUID(), False)
    _, to_json = column_schema("t", "c", pg.JSONB(), False)
    key = uuid.UUID("12345678-1234-5678-1234-567812345678")
    assert to_text is not None and to_text(key) == "12345678-1234-5678-1234-567812345678"
    assert to_json is not None and to_json({"a": [1, 2]}) == '{"a":[1,2]}'

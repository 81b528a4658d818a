"""How one kind of record becomes one SQL statement: a compiled-once plan per schema pair.

A :class:`WritePlan` is made when a (table, key schema, value schema) is first seen, as
Confluent's ``BufferedRecords`` re-initialises on a schema change: it extracts the columns
(``FieldsMetadata``), creates or alters the table (``DbStructure``), checks that the record
fits the table, and builds the statement (``buildInsertStatement`` / ``buildUpsertQueryStatement``
/ ``buildUpdateStatement`` / ``buildDeleteStatement``) and a row function. Rows are dicts, so a
batch is one ``executemany``; the statement object is reused, and SQLAlchemy caches its
compiled form, so nothing is compiled per record.

Upserts are ``INSERT .. ON CONFLICT (pk) DO UPDATE SET col = excluded.col`` on PostgreSQL and
SQLite (``DO NOTHING`` when every column is a key), ``ON DUPLICATE KEY UPDATE`` on MySQL.
"""

from __future__ import annotations

import datetime as dt
import zoneinfo
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from kopycat.api.data import Schema, Struct, Time, Timestamp
from kopycat.api.errors import ConnectError, DataError
from kopycat.api.records import SinkRecord
from kopycat.connectors.jdbc.sink_config import INSERT_MODE_CONFIG, PK_MODE_CONFIG, JdbcSinkSettings
from kopycat.connectors.jdbc.sink_schema import (
    DbStructure,
    FieldsMetadata,
    TableId,
    column_family,
    extract_fields,
    find_column,
    fits,
    required_columns,
    schema_family,
    value_family,
)

__all__ = ["WritePlan", "delete_plan", "describe_record", "short", "upsert_statement", "write_plan"]

Row = dict[str, Any]
_UTC = dt.UTC


def short(value: Any, limit: int = 40) -> str:
    """A value for an error message, cut to ``limit`` characters."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def describe_record(record: SinkRecord) -> str:
    tp = record.topic_partition
    return f"topic '{tp.topic}' partition {tp.partition} offset {record.original_kafka_offset}"


@dataclass
class WritePlan:
    """One statement and how to make its parameters from a record.

    ``dedupe_key`` is set for upserts: one multi-row INSERT may not touch a key twice, so a
    batch keeps the last row per key (the same end state as running them in order).
    """

    table_id: TableId
    table: sa.Table
    statement: Any
    row: Callable[[SinkRecord], Row]
    dedupe_key: Callable[[Row], tuple[Any, ...]] | None = None


def upsert_statement(table: sa.Table, key_columns: list[str], other_columns: list[str], dialect: str) -> Any:
    """``INSERT .. ON CONFLICT (keys) DO UPDATE`` in the database's own syntax."""
    if dialect in ("postgresql", "sqlite"):
        if dialect == "postgresql":
            from sqlalchemy.dialects.postgresql import insert
        else:
            from sqlalchemy.dialects.sqlite import insert
        stmt = insert(table)
        keys = [table.c[name] for name in key_columns]
        if not other_columns:
            return stmt.on_conflict_do_nothing(index_elements=keys)
        return stmt.on_conflict_do_update(index_elements=keys,
                                          set_={name: stmt.excluded[name] for name in other_columns})
    if dialect in ("mysql", "mariadb"):
        from sqlalchemy.dialects.mysql import insert as mysql_insert

        stmt = mysql_insert(table)
        updates = {name: stmt.inserted[name] for name in other_columns or key_columns[:1]}
        return stmt.on_duplicate_key_update(updates)
    raise ConnectError(f"{INSERT_MODE_CONFIG}=upsert is not supported on {dialect} databases; use "
                       f"{INSERT_MODE_CONFIG}=insert or update")


def _timestamp_writer(zone: zoneinfo.ZoneInfo) -> Callable[[Any], Any]:
    """Timestamps go to columns without a time zone as wall-clock time in ``db.timezone``."""
    def convert(value: Any) -> Any:
        if value is None:
            return None
        aware = value if value.tzinfo is not None else value.replace(tzinfo=_UTC)
        return aware.astimezone(zone).replace(tzinfo=None)
    return convert


def _time_writer(value: Any) -> Any:
    return value.replace(tzinfo=None) if value is not None and value.tzinfo is not None else value


def _converter(schema: Schema | None, settings: JdbcSinkSettings) -> Callable[[Any], Any] | None:
    if schema is None:
        return None
    if schema.name == Timestamp.LOGICAL_NAME:
        return _timestamp_writer(settings.db_timezone)
    if schema.name == Time.LOGICAL_NAME:
        return _time_writer
    return None


def _getter(source: str, name: str, mode: str) -> Callable[[SinkRecord], Any]:
    """Where a column's value comes from: Kafka coordinates, the key, or the value."""
    if source == "kafka":
        return {0: lambda r: r.original_topic, 1: lambda r: r.original_kafka_partition,
                2: lambda r: r.original_kafka_offset}[int(name)]
    if source == "key" and mode == "primitive":
        return lambda r: r.key
    attr = "key" if source == "key" else "value"

    def get(record: SinkRecord) -> Any:
        container = getattr(record, attr)
        return container.get(name) if isinstance(container, Struct | Mapping) else None
    return get


def _sources(settings: JdbcSinkSettings, fields: FieldsMetadata, record: SinkRecord
             ) -> dict[str, Callable[[SinkRecord], Any]]:
    key_schema = record.key_schema
    primitive = (key_schema.type.is_primitive if key_schema is not None
                 else not isinstance(record.key, Struct | Mapping))
    getters: dict[str, Callable[[SinkRecord], Any]] = {}
    for name in fields.schemas:
        if settings.pk_mode == "kafka" and name in fields.key_fields:
            getters[name] = _getter("kafka", str(settings.pk_fields.index(name)), "")
        elif settings.pk_mode == "record_key" and name in fields.key_fields:
            getters[name] = _getter("key", name, "primitive" if primitive else "struct")
        else:
            getters[name] = _getter("value", name, "struct")
    return getters


def _check_fits(table: sa.Table, table_id: TableId, fields: FieldsMetadata, where: str) -> dict[str, str]:
    """Field name -> column name; DataError when a field's type or a NOT NULL column does not fit."""
    columns = {}
    for name, schema in fields.schemas.items():
        column = find_column(table, name)
        assert column is not None  # create_or_amend added or refused it
        if not fits(schema_family(schema), column_family(column)):
            raise DataError(f"Field '{name}' ({schema_family(schema)}) of the record at {where} does not fit "
                            f"column '{column.name}' ({column.type}) of table '{table_id}'. Change the "
                            f"column's type, or convert the field (the Cast transform)")
        columns[name] = column.name
    unfilled = [c for c in required_columns(table) if c not in columns.values()]
    if unfilled:
        raise DataError(f"Table '{table_id}' has NOT NULL column(s) {unfilled} without a default that the "
                        f"record at {where} does not fill. Add the field(s) to the records, give the "
                        f"column(s) a DEFAULT, or make them nullable")
    return columns


def _row_function(plan_columns: list[tuple[str, Callable[[SinkRecord], Any], Callable[[Any], Any] | None]],
                  not_null: set[str], families: dict[str, str | None], table_id: TableId
                  ) -> Callable[[SinkRecord], Row]:
    """A function making one statement parameter dict per record, checking what the DB would refuse."""
    def row(record: SinkRecord) -> Row:
        out: Row = {}
        for bind, get, convert in plan_columns:
            value = get(record)
            if convert is not None:
                value = convert(value)
            out[bind] = value
        for bind in not_null:
            if out[bind] is None:
                raise DataError(f"Column '{bind}' of table '{table_id}' is NOT NULL, but the record at "
                                f"{describe_record(record)} has no value for it. Fill the field, or make "
                                f"the column nullable")
        for bind, family in families.items():
            value = out[bind]
            if value is not None and not fits(value_family(value), family):
                raise DataError(f"Value {short(value)} of the record at {describe_record(record)} does not "
                                f"fit column '{bind}' ({family}) of table '{table_id}'. Fix the records, or "
                                f"send them with a schema (value.converter.schemas.enable=true)")
        return out
    return row


def write_plan(conn: Connection, structure: DbStructure, settings: JdbcSinkSettings, table_id: TableId,
               record: SinkRecord) -> WritePlan:
    """The insert/upsert/update plan for records shaped like ``record``."""
    where = describe_record(record)
    schemaless = record.value_schema is None
    fields = extract_fields(table_id, settings, record.key_schema, record.value_schema,
                            schemaless_value=record.value if schemaless else None,
                            schemaless_key=record.key if record.key_schema is None else None)
    table = structure.create_or_amend(conn, table_id, fields, where)
    columns = _check_fits(table, table_id, fields, where)
    getters = _sources(settings, fields, record)
    keys = [columns[name] for name in fields.key_fields]
    others = [columns[name] for name in fields.non_key_fields]
    if settings.insert_mode == "update":
        binds = {columns[name]: f"p{i}" for i, name in enumerate(fields.schemas)}
        statement: Any = table.update().where(
            sa.and_(*[table.c[k] == sa.bindparam(binds[k]) for k in keys])
        ).values({table.c[c]: sa.bindparam(binds[c]) for c in others})
        if not others:
            raise DataError(f"{INSERT_MODE_CONFIG}=update on table '{table_id}' needs columns besides the "
                            f"key, but the record at {where} has none")
    else:
        binds = {columns[name]: columns[name] for name in fields.schemas}
        statement = (upsert_statement(table, keys, others, conn.dialect.name)
                     if settings.insert_mode == "upsert" else table.insert())
    plan_columns = [(binds[columns[name]], getters[name], _converter(fields.schemas[name], settings))
                    for name in fields.schemas]
    not_null = {binds[columns[name]] for name, schema in fields.schemas.items()
                if not table.c[columns[name]].nullable and (schema is None or schema.optional)}
    families = ({binds[columns[name]]: column_family(table.c[columns[name]]) for name in fields.schemas}
                if any(s is None for s in fields.schemas.values()) else {})
    key_binds = [binds[k] for k in keys]
    dedupe = (lambda row: tuple(row[b] for b in key_binds)) if settings.insert_mode == "upsert" else None
    return WritePlan(table_id, table, statement, _row_function(plan_columns, not_null, families, table_id),
                     dedupe)


def delete_plan(conn: Connection, structure: DbStructure, settings: JdbcSinkSettings, table_id: TableId,
                record: SinkRecord) -> WritePlan | None:
    """``DELETE .. WHERE pk = key`` for tombstones; None when the table does not exist (nothing to delete)."""
    table = structure.table(conn, table_id)
    if table is None:
        return None
    fields = extract_fields(table_id, settings, record.key_schema, None,
                            schemaless_key=record.key if record.key_schema is None else None)
    missing = [name for name in fields.key_fields if find_column(table, name) is None]
    if missing:
        raise DataError(f"Cannot delete from table '{table_id}' for the tombstone at {describe_record(record)}: "
                        f"the table has no key column(s) {missing}. Check {PK_MODE_CONFIG} and the table")
    getters = _sources(settings, fields, record)
    columns = {name: find_column(table, name).name for name in fields.key_fields}  # type: ignore[union-attr]
    binds = {name: f"k{i}" for i, name in enumerate(fields.key_fields)}
    statement = table.delete().where(sa.and_(*[table.c[columns[n]] == sa.bindparam(binds[n]) for n in binds]))
    plan_columns = [(binds[name], getters[name], _converter(fields.schemas[name], settings))
                    for name in fields.key_fields]
    return WritePlan(table_id, table, statement, _row_function(plan_columns, set(), {}, table_id))

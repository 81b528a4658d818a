"""How one kind of record becomes one SQL statement: a compiled-once plan per schema pair.

A :class:`WritePlan` is made when a (table, key schema, value schema) is first seen, as
Confluent's ``BufferedRecords`` re-initialises on a schema change: it extracts the columns
(``FieldsMetadata``), creates or alters the table (``DbStructure``), checks that the record
fits the table, and builds the statement (``buildInsertStatement`` / ``buildUpsertQueryStatement``
/ ``buildUpdateStatement`` / ``buildDeleteStatement``) and a row function (:mod:`.sink_rows`).

A batch of rows is one ``executemany`` of the statement (SQLAlchemy caches its compiled form),
except on PostgreSQL, where inserts, upserts and updates go through :class:`StagedWrite`: one
COPY into a temporary table and one statement applying it, about 5x the rows per second.

Upserts are ``INSERT .. ON CONFLICT (pk) DO UPDATE SET col = excluded.col`` on PostgreSQL and
SQLite (``DO NOTHING`` when every column is a key), ``ON DUPLICATE KEY UPDATE`` on MySQL.
"""

from __future__ import annotations

import datetime as dt
import zoneinfo
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from kopycat.api.data import Schema, Struct, Time, Timestamp, Type
from kopycat.api.errors import ConnectError, DataError
from kopycat.api.records import SinkRecord
from kopycat.connectors.jdbc.sink_config import INSERT_MODE_CONFIG, PK_MODE_CONFIG, JdbcSinkSettings
from kopycat.connectors.jdbc.sink_rows import (
    Column,
    Row,
    describe_record,
    field_getter,
    ordered,
    row_function,
    value_field,
)
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
)
from kopycat.connectors.jdbc.sink_staging import StagedWrite

__all__ = ["WritePlan", "delete_plan", "upsert_statement", "write_plan"]

_UTC = dt.UTC


@dataclass
class WritePlan:
    """One statement and how to make its parameters from a record.

    ``row`` makes a tuple in ``binds`` order. ``key_positions`` (upserts and updates) picks a
    row's key: one multi-row statement may not touch a key twice, so a batch keeps the last
    row per key (the same end state as running them in order). ``staged`` replaces
    ``statement`` on PostgreSQL.
    """

    table_id: TableId
    table: sa.Table
    statement: Any
    binds: tuple[str, ...]
    row: Callable[[SinkRecord], Row]
    key_positions: tuple[int, ...] | None = None
    staged: StagedWrite | None = None


def upsert_statement(table: sa.Table, key_columns: Sequence[str], other_columns: Sequence[str], dialect: str,
                     rows_from: sa.Select[Any] | None = None) -> Any:
    """``INSERT .. ON CONFLICT (keys) DO UPDATE`` in the database's own syntax.

    ``rows_from`` makes it an ``INSERT .. SELECT`` of every column (keys first) from that query.
    """
    if dialect in ("postgresql", "sqlite"):
        if dialect == "postgresql":
            from sqlalchemy.dialects.postgresql import insert
        else:
            from sqlalchemy.dialects.sqlite import insert
        stmt = insert(table)
        if rows_from is not None:
            stmt = stmt.from_select([*key_columns, *other_columns], rows_from)
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


def _staged(conn: Connection, table: sa.Table, order: Sequence[str], keys: Sequence[str], others: Sequence[str],
            mode: str) -> StagedWrite | None:
    """PostgreSQL's COPY path for inserts, upserts and updates (:mod:`.sink_staging`); None elsewhere."""
    if conn.dialect.name != "postgresql":
        return None

    def apply(stage: sa.TableClause) -> Any:
        if mode == "update":
            return (table.update().where(sa.and_(*[table.c[k] == stage.c[k] for k in keys]))
                    .values({table.c[c]: stage.c[c] for c in others}))
        if mode == "upsert":
            return upsert_statement(table, keys, others, "postgresql",
                                    sa.select(*[stage.c[c] for c in (*keys, *others)]))
        return table.insert().from_select(list(order), sa.select(*[stage.c[c] for c in order]))
    return StagedWrite.of(conn, table, order, apply)


def _timestamp_writer(zone: zoneinfo.ZoneInfo) -> Callable[[Any], Any]:
    """Timestamps go to columns without a time zone as wall-clock time in ``db.timezone``."""
    def convert(value: Any) -> Any:
        if value is None:
            return None
        aware = value if value.tzinfo is not None else value.replace(tzinfo=_UTC)
        return aware.astimezone(zone).replace(tzinfo=None)
    if zone.key not in ("UTC", "Etc/UTC"):
        return convert

    def convert_to_utc(value: Any) -> Any:  # the default zone: no zoneinfo lookup per value
        if value is None or value.tzinfo is None:
            return value
        return (value if value.tzinfo is _UTC else value.astimezone(_UTC)).replace(tzinfo=None)
    return convert_to_utc


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


def _columns(settings: JdbcSinkSettings, fields: FieldsMetadata, record: SinkRecord, binds: Mapping[str, str],
             names: Sequence[str], not_null: Collection[str] = (),
             families: Mapping[str, str | None] | None = None) -> list[Column]:
    """Where each field of ``names`` comes from: Kafka coordinates, the key, or the value (by position).

    ``binds`` maps field names to parameter names; ``not_null`` and ``families`` name the
    fields to check (see :class:`Column`).
    """
    key_schema, value_schema = record.key_schema, record.value_schema
    primitive = (key_schema.type.is_primitive if key_schema is not None
                 else not isinstance(record.key, Struct | Mapping))
    struct_value = value_schema if value_schema is not None and value_schema.type is Type.STRUCT else None
    columns = []
    for name in names:
        bind = binds[name]
        extra: dict[str, Any] = {"convert": _converter(fields.schemas[name], settings),
                                 "not_null": name in not_null, "family": (families or {}).get(name)}
        if settings.pk_mode == "kafka" and name in fields.key_fields:
            columns.append(Column(bind, get=field_getter("kafka", str(settings.pk_fields.index(name))), **extra))
        elif settings.pk_mode == "record_key" and name in fields.key_fields:
            columns.append(Column(bind, get=field_getter("primitive-key" if primitive else "key", name), **extra))
        elif struct_value is not None:
            columns.append(value_field(bind, struct_value, name, **extra))
        else:
            columns.append(Column(bind, get=field_getter("value", name), **extra))
    return columns


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
    keys = [columns[name] for name in fields.key_fields]
    others = [columns[name] for name in fields.non_key_fields]
    mode = settings.insert_mode
    if mode == "update" and not others:
        raise DataError(f"{INSERT_MODE_CONFIG}=update on table '{table_id}' needs columns besides the "
                        f"key, but the record at {where} has none")
    binds = ({name: f"p{i}" for i, name in enumerate(fields.schemas)} if mode == "update"
             else {name: columns[name] for name in fields.schemas})
    not_null = {name for name, schema in fields.schemas.items()
                if not table.c[columns[name]].nullable and (schema is None or schema.optional)}
    families = ({name: column_family(table.c[columns[name]]) for name in fields.schemas}
                if any(s is None for s in fields.schemas.values()) else {})
    row_columns = ordered(_columns(settings, fields, record, binds, list(fields.schemas), not_null, families))
    column_of = {binds[name]: columns[name] for name in fields.schemas}
    order = [column_of[c.bind] for c in row_columns]
    key_positions = tuple(order.index(k) for k in keys) if mode in ("upsert", "update") else None
    staged = _staged(conn, table, order, keys, others, mode)
    if staged is None and mode == "update":
        statement: Any = table.update().where(
            sa.and_(*[table.c[columns[n]] == sa.bindparam(binds[n]) for n in fields.key_fields])
        ).values({table.c[columns[n]]: sa.bindparam(binds[n]) for n in fields.non_key_fields})
    elif staged is None:
        statement = upsert_statement(table, keys, others, conn.dialect.name) if mode == "upsert" else table.insert()
    else:
        statement = None
    return WritePlan(table_id, table, statement, tuple(c.bind for c in row_columns),
                     row_function(row_columns, table_id), key_positions, staged)


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
    columns = {name: find_column(table, name).name for name in fields.key_fields}  # type: ignore[union-attr]
    binds = {name: f"k{i}" for i, name in enumerate(fields.key_fields)}
    statement = table.delete().where(sa.and_(*[table.c[columns[n]] == sa.bindparam(binds[n]) for n in binds]))
    row_columns = ordered(_columns(settings, fields, record, binds, list(fields.key_fields)))
    return WritePlan(table_id, table, statement, tuple(c.bind for c in row_columns),
                     row_function(row_columns, table_id))

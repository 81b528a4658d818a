"""Record schemas to tables: which columns a record fills, their SQL types, CREATE and ALTER.

Follows Confluent's ``FieldsMetadata`` (which fields form the key and which the rest, in what
column order) and ``DbStructure`` (create a missing table when ``auto.create``, add missing
columns when ``auto.evolve``, otherwise fail naming what is missing). Types are SQLAlchemy's
generic ones, so each database gets its own spelling (``PostgreSqlDatabaseDialect.getSqlType``
gives the same: SMALLINT, INT, BIGINT, REAL, DOUBLE PRECISION, BOOLEAN, TEXT, BYTEA, NUMERIC,
DATE, TIME, TIMESTAMP).

Differences from Confluent, on purpose: added columns are always nullable (rows already in the
table have no value for them) and schema defaults are not written as column DEFAULTs; a field
whose type cannot go into an existing column (a string into an integer column) is refused here
with its table, column and topic named, instead of by the database at the first row.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import decimal
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final

import sqlalchemy as sa
from sqlalchemy.engine import Connection
from sqlalchemy.schema import CreateColumn
from sqlalchemy.types import TypeEngine

from kopycat.api.data import Date, Decimal, Schema, Time, Timestamp, Type
from kopycat.api.errors import DataError, RetriableError
from kopycat.connectors.jdbc.sink_config import (
    AUTO_CREATE_CONFIG,
    AUTO_EVOLVE_CONFIG,
    FIELDS_WHITELIST_CONFIG,
    PK_FIELDS_CONFIG,
    PK_MODE_CONFIG,
    JdbcSinkSettings,
)

__all__ = [
    "DbStructure", "FieldsMetadata", "TableId", "column_family", "extract_fields", "find_column", "fits",
    "required_columns", "schema_family", "sql_type", "value_family",
]

_INT_TYPES: Final = {Type.INT8: sa.SmallInteger, Type.INT16: sa.SmallInteger, Type.INT32: sa.Integer,
                     Type.INT64: sa.BigInteger}


@dataclass(frozen=True)
class TableId:
    """A destination table: optional schema and name (Confluent's ``TableId``)."""

    schema: str | None
    name: str

    @classmethod
    def parse(cls, text: str) -> TableId:
        """``orders`` or ``sales.orders`` (the schema before the last dot)."""
        schema, dot, name = text.rpartition(".")
        return cls(schema if dot and schema else None, name)

    def __str__(self) -> str:
        return f"{self.schema}.{self.name}" if self.schema else self.name


@dataclass(frozen=True)
class FieldsMetadata:
    """The columns one (key schema, value schema) pair fills (Confluent's ``FieldsMetadata``).

    ``schemas`` holds every column in table order: Kafka coordinate keys first, then the value's
    fields in schema order, then other key fields sorted. ``None`` schemas mark columns of a
    schemaless value, whose types are those of the existing table.
    """

    key_fields: tuple[str, ...]
    non_key_fields: tuple[str, ...]
    schemas: Mapping[str, Schema | None]


def sql_type(schema: Schema, *, column: str, table: TableId) -> TypeEngine[Any]:
    """The SQLAlchemy type of a column holding ``schema`` values; DataError for ARRAY/MAP/STRUCT."""
    if schema.name == Decimal.LOGICAL_NAME:
        return sa.Numeric(scale=Decimal.scale(schema), asdecimal=True)
    if schema.name == Date.LOGICAL_NAME:
        return sa.Date()
    if schema.name == Time.LOGICAL_NAME:
        return sa.Time()
    if schema.name == Timestamp.LOGICAL_NAME:
        return sa.DateTime(timezone=False)
    kind = schema.type
    if kind in _INT_TYPES:
        return _INT_TYPES[kind]()
    simple: dict[Type, TypeEngine[Any]] = {
        Type.FLOAT32: sa.REAL(), Type.FLOAT64: sa.Double(), Type.BOOLEAN: sa.Boolean(create_constraint=False),
        Type.STRING: sa.Text(), Type.BYTES: sa.LargeBinary()}
    if kind in simple:
        return simple[kind]
    raise DataError(f"Column '{column}' of table '{table}' would hold {kind.name} values, which have no SQL "
                    f"type here. Flatten the record (the Flatten transform), drop the field (ReplaceField "
                    f"with exclude, or {FIELDS_WHITELIST_CONFIG}), or create the table yourself")


def schema_family(schema: Schema | None) -> str | None:
    """The kind of Python value a schema carries: int, float, decimal, bool, str, bytes, date, ..."""
    if schema is None:
        return None
    logical = {Decimal.LOGICAL_NAME: "decimal", Date.LOGICAL_NAME: "date", Time.LOGICAL_NAME: "time",
               Timestamp.LOGICAL_NAME: "datetime"}.get(schema.name or "")
    if logical:
        return logical
    return {Type.INT8: "int", Type.INT16: "int", Type.INT32: "int", Type.INT64: "int", Type.FLOAT32: "float",
            Type.FLOAT64: "float", Type.BOOLEAN: "bool", Type.STRING: "str", Type.BYTES: "bytes"}.get(schema.type)


def value_family(value: Any) -> str | None:
    """The family of one Python value (schemaless records)."""
    if isinstance(value, bool):
        return "bool"
    for kind, family in ((int, "int"), (float, "float"), (decimal.Decimal, "decimal"), (str, "str"),
                         (bytes | bytearray, "bytes"), (dt.datetime, "datetime"), (dt.date, "date"),
                         (dt.time, "time")):
        if isinstance(value, kind):
            return family
    return None


_COLUMN_FAMILIES: Final = ((bool, "bool"), (int, "int"), (float, "float"), (decimal.Decimal, "decimal"),
                           (str, "str"), (bytes, "bytes"), (dt.datetime, "datetime"), (dt.date, "date"),
                           (dt.time, "time"))
_FITS: Final = {"int": {"int", "float", "decimal"}, "float": {"float", "decimal"}, "decimal": {"decimal", "float"},
                "bool": {"bool", "int"}, "str": {"str"}, "bytes": {"bytes"}, "date": {"date", "datetime"},
                "time": {"time"}, "datetime": {"datetime"}}


def column_family(column: sa.Column[Any]) -> str | None:
    """The family of values a table column takes, None when unknown (JSON, arrays ...)."""
    try:
        python_type = column.type.python_type
    except NotImplementedError:
        return None
    for kind, family in _COLUMN_FAMILIES:
        if python_type is kind:
            return family
    return None


def fits(value_kind: str | None, column_kind: str | None) -> bool:
    """Whether values of one family can be written to a column of another."""
    return value_kind is None or column_kind is None or column_kind in _FITS.get(value_kind, {column_kind})


def extract_fields(table: TableId, settings: JdbcSinkSettings, key_schema: Schema | None,
                   value_schema: Schema | None, *, schemaless_value: Mapping[str, Any] | None = None,
                   schemaless_key: Any = None) -> FieldsMetadata:
    """Key and non-key columns for one schema pair (Confluent's ``FieldsMetadata.extract``)."""
    schemas: dict[str, Schema | None] = {}
    keys: list[str] = []
    mode = settings.pk_mode
    if mode == "kafka":
        for name, schema in zip(settings.pk_fields, (Schema.STRING_SCHEMA, Schema.INT32_SCHEMA,
                                                     Schema.INT64_SCHEMA), strict=True):
            keys.append(name)
            schemas[name] = schema
    elif mode == "record_key":
        _record_key_fields(table, settings, key_schema, schemaless_key, keys, schemas)
    elif mode == "record_value":
        _record_value_fields(table, settings, value_schema, schemaless_value, keys, schemas)
    value_fields: dict[str, Schema | None] = (
        {f.name: f.schema for f in value_schema.fields} if value_schema is not None
        else {name: None for name in schemaless_value or {}})
    non_keys = [name for name in value_fields if name not in keys
                and (not settings.fields_whitelist or name in settings.fields_whitelist)]
    if not keys and not non_keys:
        raise DataError(f"No columns for table '{table}': the record key and value give no fields (after "
                        f"{FIELDS_WHITELIST_CONFIG}). Check {PK_MODE_CONFIG}, {PK_FIELDS_CONFIG} and "
                        f"{FIELDS_WHITELIST_CONFIG}, and that values are structs with fields")
    ordered = {name: schemas[name] for name in settings.pk_fields if mode == "kafka" and name in schemas}
    for name, field_schema in value_fields.items():
        if name in keys:
            ordered[name] = schemas[name]
        elif name in non_keys:
            ordered[name] = field_schema
    for name in sorted(set(schemas) - set(ordered)):
        ordered[name] = schemas[name]
    return FieldsMetadata(tuple(keys), tuple(non_keys), ordered)


def _record_key_fields(table: TableId, settings: JdbcSinkSettings, key_schema: Schema | None, key: Any,
                       keys: list[str], schemas: dict[str, Schema | None]) -> None:
    if key_schema is None and isinstance(key, Mapping):  # schemaless struct-like key
        names = list(settings.pk_fields) or list(key)
        keys.extend(names)
        schemas.update({name: None for name in names})
        return
    if key_schema is None and key is None:
        raise DataError(f"{PK_MODE_CONFIG}=record_key for table '{table}', but the record has no key. "
                        f"Give records keys, or choose another {PK_MODE_CONFIG}")
    if key_schema is None or key_schema.type.is_primitive:
        if len(settings.pk_fields) != 1:
            raise DataError(f"Table '{table}': the record key is a primitive, so {PK_FIELDS_CONFIG} must name "
                            f"exactly one column for it (got {list(settings.pk_fields)}). Set e.g. "
                            f"{PK_FIELDS_CONFIG}=id")
        keys.append(settings.pk_fields[0])
        schemas[settings.pk_fields[0]] = key_schema
        return
    if key_schema.type is not Type.STRUCT:
        raise DataError(f"Table '{table}': the record key schema is {key_schema.type.name}; "
                        f"{PK_MODE_CONFIG}=record_key needs a primitive or a struct key")
    names = list(settings.pk_fields) or [f.name for f in key_schema.fields]
    for name in names:
        field = key_schema.field(name)
        if field is None:
            raise DataError(f"Table '{table}': {PK_FIELDS_CONFIG} names '{name}', which the record key has "
                            f"not (key fields: {[f.name for f in key_schema.fields]})")
        keys.append(name)
        schemas[name] = field.schema


def _record_value_fields(table: TableId, settings: JdbcSinkSettings, value_schema: Schema | None,
                         value: Mapping[str, Any] | None, keys: list[str],
                         schemas: dict[str, Schema | None]) -> None:
    available: dict[str, Schema | None]
    if value_schema is not None:
        available = {f.name: f.schema for f in value_schema.fields}
    else:
        available = {name: None for name in value or {}}
    names = list(settings.pk_fields) or list(available)
    for name in names:
        if name not in available:
            raise DataError(f"Table '{table}': {PK_FIELDS_CONFIG} names '{name}', which the record value has "
                            f"not (value fields: {list(available)})")
        keys.append(name)
        schemas[name] = available[name]


class DbStructure:
    """Knows the destination tables; creates and alters them (Confluent's ``DbStructure``).

    Table definitions are reflected once and cached; :meth:`forget` drops the cache after a
    rolled-back transaction, since DDL inside it may be gone (PostgreSQL's DDL is transactional).
    Not thread-safe: one per task.
    """

    def __init__(self, settings: JdbcSinkSettings) -> None:
        self.settings = settings
        self._tables: dict[TableId, sa.Table | None] = {}

    def forget(self) -> None:
        self._tables.clear()

    def table(self, conn: Connection, table_id: TableId) -> sa.Table | None:
        """The table as the database has it, or None when it does not exist."""
        if table_id not in self._tables:
            exists = sa.inspect(conn).has_table(table_id.name, schema=table_id.schema)
            self._tables[table_id] = sa.Table(
                table_id.name, sa.MetaData(), schema=table_id.schema, autoload_with=conn) if exists else None
        return self._tables[table_id]

    def create_or_amend(self, conn: Connection, table_id: TableId, fields: FieldsMetadata,
                        where: str) -> sa.Table:
        """The table, created or given missing columns as configured; ``where`` names the record."""
        table = self.table(conn, table_id)
        if table is None:
            if not self.settings.auto_create or any(s is None for s in fields.schemas.values()):
                raise DataError(f"Table '{table_id}' does not exist ({where}). Create it, or set "
                                f"{AUTO_CREATE_CONFIG}=true to have it created from the record schema (records "
                                f"need schemas for that: value.converter.schemas.enable=true)")
            return self._create(conn, table_id, fields)
        missing = [name for name in fields.schemas if find_column(table, name) is None]
        if not missing:
            return table
        if any(fields.schemas[name] is None for name in missing):
            raise DataError(f"Table '{table_id}' has no column(s) {missing} for fields of a record without a "
                            f"schema ({where}). Add the columns, drop the fields, or send records with "
                            f"schemas (value.converter.schemas.enable=true) and set {AUTO_EVOLVE_CONFIG}=true")
        if not self.settings.auto_evolve:
            raise DataError(f"Table '{table_id}' has no column(s) {missing} for fields of the record at {where}, "
                            f"and {AUTO_EVOLVE_CONFIG} is false. Set {AUTO_EVOLVE_CONFIG}=true to add them, "
                            f"add them yourself (ALTER TABLE ... ADD COLUMN), or leave the fields out with "
                            f"{FIELDS_WHITELIST_CONFIG}")
        keys_missing = [name for name in missing if name in fields.key_fields]
        if keys_missing:
            raise DataError(f"Table '{table_id}' lacks primary key column(s) {keys_missing} ({where}); "
                            f"{AUTO_EVOLVE_CONFIG} adds only nullable columns, not key columns. Alter the "
                            f"table's primary key yourself or write to a new table")
        return self._amend(conn, table_id, table, {name: fields.schemas[name] for name in missing})

    def _column(self, name: str, schema: Schema, table_id: TableId, *, key: bool) -> sa.Column[Any]:
        quote = True if self.settings.quote_identifiers else None
        return sa.Column(name, sql_type(schema, column=name, table=table_id), primary_key=key,
                         nullable=not key and schema.optional, autoincrement=False, quote=quote)

    def _create(self, conn: Connection, table_id: TableId, fields: FieldsMetadata) -> sa.Table:
        columns = [self._column(name, schema, table_id, key=name in fields.key_fields)
                   for name, schema in fields.schemas.items() if schema is not None]
        quote = True if self.settings.quote_identifiers else None
        table = sa.Table(table_id.name, sa.MetaData(), *columns, schema=table_id.schema, quote=quote)
        with _ddl_race(table_id, "Creating"):
            table.create(conn, checkfirst=True)
        self._tables.pop(table_id, None)
        created = self.table(conn, table_id)
        assert created is not None
        return created

    def _amend(self, conn: Connection, table_id: TableId, table: sa.Table,
               missing: Mapping[str, Schema | None]) -> sa.Table:
        preparer = conn.dialect.identifier_preparer
        for name, schema in missing.items():
            assert schema is not None
            column = self._column(name, schema, table_id, key=False)
            column.nullable = True
            ddl = CreateColumn(column).compile(dialect=conn.dialect)
            with _ddl_race(table_id, "Altering"):
                conn.execute(sa.text(f"ALTER TABLE {preparer.format_table(table)} ADD COLUMN {ddl}"))
        self._tables.pop(table_id, None)
        amended = self.table(conn, table_id)
        assert amended is not None
        return amended


@contextlib.contextmanager
def _ddl_race(table_id: TableId, doing: str) -> Iterator[None]:
    """DDL failing in the database is most likely another task's same DDL: retry the batch."""
    try:
        yield
    except sa.exc.DBAPIError as exc:
        raise RetriableError(f"{doing} table '{table_id}' failed, probably because another task did the same "
                             f"at the same time; the batch is retried: {str(exc.orig).strip()}") from exc


def find_column(table: sa.Table, name: str) -> sa.Column[Any] | None:
    """The column for a field: same name, else the same name ignoring case (unquoted DDL folds case)."""
    column = table.columns.get(name)
    if column is not None:
        return column
    lowered = name.lower()
    for candidate in table.columns:
        if candidate.name.lower() == lowered:
            return candidate
    return None


def required_columns(table: sa.Table) -> list[str]:
    """NOT NULL columns without a default that a row must fill."""
    single_int_pk = [c for c in table.primary_key.columns if column_family(c) == "int"]
    auto = single_int_pk[0].name if len(table.primary_key.columns) == 1 and single_int_pk else None
    return [c.name for c in table.columns
            if not c.nullable and c.server_default is None and c.name != auto]


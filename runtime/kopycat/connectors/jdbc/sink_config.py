"""The JDBC sink's configuration: Confluent's ``JdbcSinkConfig`` keys, names and defaults.

The connection keys come from :mod:`kopycat.connectors.jdbc.connection` (shared with the
source); the rest are Confluent's Writes, Data Mapping, DDL and Retries groups. Keys Kopycat
does not act on (``dialect.name``, ``table.types``, ``timestamp.fields.list`` ...) are not
defined, so a Confluent config with them still starts: undefined keys are ignored.

:func:`parse_sink_config` also checks what spans keys, as ``JdbcSinkConfig``'s constructor does
(``delete.enabled`` needs ``pk.mode=record_key``), and a little more that Confluent only finds
at the first record (upsert and update need a primary key; kafka mode takes 0 or 3 names).
"""

from __future__ import annotations

import zoneinfo
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from kopycat.api.config import (
    CaseInsensitiveValidString,
    ConfigDef,
    ConfigType,
    ConfigValue,
    Importance,
    LambdaValidator,
    NonEmptyString,
    Range,
)
from kopycat.api.errors import ConfigError
from kopycat.connectors.jdbc.connection import CONNECTION_CONFIG

__all__ = [
    "AUTO_CREATE_CONFIG", "AUTO_EVOLVE_CONFIG", "BATCH_SIZE_CONFIG", "DB_TIMEZONE_CONFIG",
    "DEFAULT_KAFKA_PK_NAMES", "DELETE_ENABLED_CONFIG", "FIELDS_WHITELIST_CONFIG",
    "INSERT_MODE_CONFIG", "MAX_RETRIES_CONFIG", "PK_FIELDS_CONFIG", "PK_MODE_CONFIG",
    "QUOTE_SQL_IDENTIFIERS_CONFIG", "RETRY_BACKOFF_MS_CONFIG", "SINK_CONFIG",
    "TABLE_NAME_FORMAT_CONFIG", "JdbcSinkSettings", "cross_key_errors", "parse_sink_config",
    "validate_sink_config",
]

INSERT_MODE_CONFIG: Final = "insert.mode"
BATCH_SIZE_CONFIG: Final = "batch.size"
DELETE_ENABLED_CONFIG: Final = "delete.enabled"
TABLE_NAME_FORMAT_CONFIG: Final = "table.name.format"
PK_MODE_CONFIG: Final = "pk.mode"
PK_FIELDS_CONFIG: Final = "pk.fields"
FIELDS_WHITELIST_CONFIG: Final = "fields.whitelist"
DB_TIMEZONE_CONFIG: Final = "db.timezone"
AUTO_CREATE_CONFIG: Final = "auto.create"
AUTO_EVOLVE_CONFIG: Final = "auto.evolve"
QUOTE_SQL_IDENTIFIERS_CONFIG: Final = "quote.sql.identifiers"
MAX_RETRIES_CONFIG: Final = "max.retries"
RETRY_BACKOFF_MS_CONFIG: Final = "retry.backoff.ms"

DEFAULT_KAFKA_PK_NAMES: Final = ("__connect_topic", "__connect_partition", "__connect_offset")
"""The primary key columns of ``pk.mode=kafka`` when ``pk.fields`` is empty (Confluent's)."""

INSERT_MODES: Final = ("insert", "upsert", "update")
PK_MODES: Final = ("none", "kafka", "record_key", "record_value")
QUOTE_METHODS: Final = ("always", "never")


def _check_timezone(name: str, value: Any) -> None:
    try:
        zoneinfo.ZoneInfo(str(value))
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise ConfigError.for_key(name, value, "is not a time zone: use an IANA name such as UTC "
                                               "or Europe/Berlin") from None


_WRITES, _MAPPING, _DDL, _RETRIES = "Writes", "Data Mapping", "DDL Support", "Retries"

SINK_CONFIG: Final = CONNECTION_CONFIG.merge(
    ConfigDef()
    .define(INSERT_MODE_CONFIG, ConfigType.STRING, "insert", CaseInsensitiveValidString.in_(*INSERT_MODES),
            Importance.HIGH,
            "How rows are written: insert (plain INSERT), upsert (INSERT .. ON CONFLICT (pk) DO UPDATE "
            "on PostgreSQL and SQLite; needs a primary key), update (UPDATE .. WHERE pk = ..).",
            group=_WRITES, order_in_group=1, display_name="Insert Mode")
    .define(BATCH_SIZE_CONFIG, ConfigType.INT, 3000, Range(min=1), Importance.MEDIUM,
            "How many rows one executemany() sends to a table at most.",
            group=_WRITES, order_in_group=2, display_name="Batch Size")
    .define(DELETE_ENABLED_CONFIG, ConfigType.BOOLEAN, False, None, Importance.MEDIUM,
            "Whether a null record value (tombstone) deletes the row with the record's key. "
            "Requires pk.mode=record_key.", group=_WRITES, order_in_group=3, display_name="Enable deletes")
    .define(TABLE_NAME_FORMAT_CONFIG, ConfigType.STRING, "${topic}", NonEmptyString(), Importance.MEDIUM,
            "The destination table's name; '${topic}' stands for the record's topic, e.g. "
            "kafka_${topic} writes topic 'orders' to table 'kafka_orders'. 'schema.table' names a schema.",
            group=_MAPPING, order_in_group=1, display_name="Table Name Format")
    .define(PK_MODE_CONFIG, ConfigType.STRING, "none", CaseInsensitiveValidString.in_(*PK_MODES),
            Importance.HIGH,
            "Where the primary key comes from: none, kafka (topic, partition, offset), record_key "
            "(the key, a primitive or a struct), record_value (fields of the value struct).",
            group=_MAPPING, order_in_group=2, display_name="Primary Key Mode")
    .define(PK_FIELDS_CONFIG, ConfigType.LIST, "", None, Importance.MEDIUM,
            "Primary key column names. kafka: none (defaults __connect_topic,__connect_partition,"
            "__connect_offset) or exactly 3; record_key: the key struct's fields (empty: all), or the "
            "one column name of a primitive key; record_value: the value's fields (empty: all).",
            group=_MAPPING, order_in_group=3, display_name="Primary Key Fields")
    .define(FIELDS_WHITELIST_CONFIG, ConfigType.LIST, "", None, Importance.MEDIUM,
            "Value fields written as columns besides the key; empty: all of them.",
            group=_MAPPING, order_in_group=4, display_name="Fields Whitelist")
    .define(DB_TIMEZONE_CONFIG, ConfigType.STRING, "UTC", LambdaValidator(_check_timezone, "IANA time zone"),
            Importance.MEDIUM,
            "The time zone timestamps are written in to columns without a time zone.",
            group=_MAPPING, order_in_group=5, display_name="DB Time Zone")
    .define(AUTO_CREATE_CONFIG, ConfigType.BOOLEAN, False, None, Importance.MEDIUM,
            "Whether to CREATE a missing destination table from the record schema.",
            group=_DDL, order_in_group=1, display_name="Auto-Create")
    .define(AUTO_EVOLVE_CONFIG, ConfigType.BOOLEAN, False, None, Importance.MEDIUM,
            "Whether to ALTER the table to ADD (nullable) columns for record fields it lacks.",
            group=_DDL, order_in_group=2, display_name="Auto-Evolve")
    .define(QUOTE_SQL_IDENTIFIERS_CONFIG, ConfigType.STRING, "always",
            CaseInsensitiveValidString.in_(*QUOTE_METHODS), Importance.MEDIUM,
            "Whether to quote table and column names in SQL: always (names keep their case) or never.",
            group=_DDL, order_in_group=3, display_name="Quote Identifiers")
    .define(MAX_RETRIES_CONFIG, ConfigType.INT, 10, Range(min=0), Importance.MEDIUM,
            "How many times a put() failing on a transient database error is retried before the "
            "task fails.", group=_RETRIES, order_in_group=1, display_name="Maximum Retries")
    .define(RETRY_BACKOFF_MS_CONFIG, ConfigType.INT, 3000, Range(min=0), Importance.MEDIUM,
            "Milliseconds to wait after a transient database error before the batch is retried.",
            group=_RETRIES, order_in_group=2, display_name="Retry Backoff (millis)")
)
"""Every key of the JDBC sink, connection keys first."""


@dataclass(frozen=True)
class JdbcSinkSettings:
    """The parsed sink configuration, modes lower-cased (Confluent's ``JdbcSinkConfig`` fields)."""

    values: Mapping[str, Any]
    connector_name: str
    insert_mode: str
    pk_mode: str
    pk_fields: tuple[str, ...]
    fields_whitelist: frozenset[str]
    table_name_format: str
    batch_size: int
    delete_enabled: bool
    auto_create: bool
    auto_evolve: bool
    quote_identifiers: bool
    db_timezone: zoneinfo.ZoneInfo
    max_retries: int
    retry_backoff_ms: int


def cross_key_errors(values: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(key, message) for every rule that spans keys; empty when the combination is fine."""
    errors: list[tuple[str, str]] = []
    pk_mode = str(values[PK_MODE_CONFIG]).lower()
    insert_mode = str(values[INSERT_MODE_CONFIG]).lower()
    pk_fields = list(values[PK_FIELDS_CONFIG] or [])
    if values[DELETE_ENABLED_CONFIG] and pk_mode != "record_key":
        errors.append((DELETE_ENABLED_CONFIG,
                       (f"{DELETE_ENABLED_CONFIG}=true requires {PK_MODE_CONFIG}=record_key (it is "
                        f"{pk_mode}): a tombstone has only its key to say which row to delete. Set "
                        f"{PK_MODE_CONFIG}=record_key or {DELETE_ENABLED_CONFIG}=false")))
    if insert_mode in ("upsert", "update") and pk_mode == "none":
        errors.append((INSERT_MODE_CONFIG,
                       (f"{INSERT_MODE_CONFIG}={insert_mode} needs a primary key to find rows, but "
                        f"{PK_MODE_CONFIG}=none. Set {PK_MODE_CONFIG} to record_key, record_value or kafka, "
                        f"or use {INSERT_MODE_CONFIG}=insert")))
    if pk_mode == "kafka" and len(pk_fields) not in (0, 3):
        errors.append((PK_FIELDS_CONFIG,
                       (f"{PK_MODE_CONFIG}=kafka takes no {PK_FIELDS_CONFIG} (defaults "
                        f"{','.join(DEFAULT_KAFKA_PK_NAMES)}) or exactly 3 names for topic, partition and "
                        f"offset; got {pk_fields}")))
    return errors


def validate_sink_config(props: Mapping[str, str]) -> list[ConfigValue]:
    """Per-key validation plus the rules across keys, reported against their keys."""
    results = SINK_CONFIG.validate(props)
    by_name = {value.name: value for value in results}
    if all(not value.errors for value in results):
        for key, message in cross_key_errors(SINK_CONFIG.parse(props)):
            by_name[key].add_error_message(message)
    return results


def parse_sink_config(props: Mapping[str, str]) -> JdbcSinkSettings:
    """Parse and check a sink config; raises ConfigError naming the key(s) and the fix."""
    values = SINK_CONFIG.parse(props)
    errors = cross_key_errors(values)
    if errors:
        key, message = errors[0]
        raise ConfigError(message, key=key)
    name = str(props.get("name") or "").strip()
    if not name:
        raise ConfigError("The JDBC sink needs the connector's 'name': its offsets are stored under it in "
                          "the kopycat_offsets table. Set name=<connector name>", key="name")
    pk_mode = str(values[PK_MODE_CONFIG]).lower()
    pk_fields = tuple(str(f).strip() for f in values[PK_FIELDS_CONFIG] or () if str(f).strip())
    if pk_mode == "kafka" and not pk_fields:
        pk_fields = DEFAULT_KAFKA_PK_NAMES
    return JdbcSinkSettings(
        values=values, connector_name=name, insert_mode=str(values[INSERT_MODE_CONFIG]).lower(),
        pk_mode=pk_mode, pk_fields=pk_fields,
        fields_whitelist=frozenset(str(f).strip() for f in values[FIELDS_WHITELIST_CONFIG] or () if str(f).strip()),
        table_name_format=str(values[TABLE_NAME_FORMAT_CONFIG]).strip(),
        batch_size=int(values[BATCH_SIZE_CONFIG]), delete_enabled=bool(values[DELETE_ENABLED_CONFIG]),
        auto_create=bool(values[AUTO_CREATE_CONFIG]), auto_evolve=bool(values[AUTO_EVOLVE_CONFIG]),
        quote_identifiers=str(values[QUOTE_SQL_IDENTIFIERS_CONFIG]).lower() == "always",
        db_timezone=zoneinfo.ZoneInfo(str(values[DB_TIMEZONE_CONFIG])),
        max_retries=int(values[MAX_RETRIES_CONFIG]), retry_backoff_ms=int(values[RETRY_BACKOFF_MS_CONFIG]))

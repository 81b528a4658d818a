"""The JDBC source's configuration: Confluent's ``JdbcSourceConnectorConfig`` keys and defaults.

Key names, types and defaults are those of Confluent's ``JdbcSourceConnectorConfig`` (and
``JdbcSourceTaskConfig`` for ``tables``), so a Confluent config runs unchanged. Where Kopycat
differs it says so in the key's doc:

- no table filter at all copies every table the connection sees ("the whole database"), as
  Confluent's connector does when started directly (its newer ``validate`` demands a filter);
- ``table.include.list``/``table.exclude.list`` are Confluent's regular expressions over the
  unquoted fully qualified name; a plain name is a regex that matches itself;
- ``record.key.mode`` is Kopycat's: ``primary_key`` keys each record by its primary key.

:class:`SourceSettings` is the parsed, cross-checked form both the connector and the task use.
"""

from __future__ import annotations

import datetime as dt
import re
import zoneinfo
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from kopycat.api.config import (
    ConfigDef,
    ConfigType,
    Importance,
    LambdaValidator,
    Range,
    ValidString,
)
from kopycat.api.errors import ConfigError
from kopycat.connectors.jdbc.connection import CONNECTION_CONFIG

__all__ = [
    "BATCH_MAX_ROWS_CONFIG",
    "CATALOG_PATTERN_CONFIG",
    "CONFIG",
    "DB_TIMEZONE_CONFIG",
    "INCREMENTING_COLUMN_NAME_CONFIG",
    "MODE_BULK",
    "MODE_CONFIG",
    "MODE_INCREMENTING",
    "MODE_TIMESTAMP",
    "MODE_TIMESTAMP_INCREMENTING",
    "NUMERIC_MAPPING_CONFIG",
    "POLL_INTERVAL_MS_CONFIG",
    "QUERY_CONFIG",
    "QUERY_SUFFIX_CONFIG",
    "QUOTE_SQL_IDENTIFIERS_CONFIG",
    "RECORD_KEY_MODE_CONFIG",
    "SCHEMA_PATTERN_CONFIG",
    "TABLES_CONFIG",
    "TABLES_FETCHED_CONFIG",
    "TABLE_BLACKLIST_CONFIG",
    "TABLE_EXCLUDE_LIST_CONFIG",
    "TABLE_INCLUDE_LIST_CONFIG",
    "TABLE_POLL_INTERVAL_MS_CONFIG",
    "TABLE_TYPES_CONFIG",
    "TABLE_WHITELIST_CONFIG",
    "TIMESTAMP_COLUMN_NAME_CONFIG",
    "TIMESTAMP_DELAY_INTERVAL_MS_CONFIG",
    "TIMESTAMP_INITIAL_CONFIG",
    "TIMESTAMP_INITIAL_CURRENT",
    "TOPIC_PREFIX_CONFIG",
    "VALIDATE_NON_NULL_CONFIG",
    "SourceSettings",
]

MODE_CONFIG: Final = "mode"
MODE_UNSPECIFIED: Final = ""
MODE_BULK: Final = "bulk"
MODE_INCREMENTING: Final = "incrementing"
MODE_TIMESTAMP: Final = "timestamp"
MODE_TIMESTAMP_INCREMENTING: Final = "timestamp+incrementing"
MODES: Final = (MODE_BULK, MODE_INCREMENTING, MODE_TIMESTAMP, MODE_TIMESTAMP_INCREMENTING)

TABLE_WHITELIST_CONFIG: Final = "table.whitelist"
TABLE_BLACKLIST_CONFIG: Final = "table.blacklist"
TABLE_INCLUDE_LIST_CONFIG: Final = "table.include.list"
TABLE_EXCLUDE_LIST_CONFIG: Final = "table.exclude.list"
TABLE_TYPES_CONFIG: Final = "table.types"
SCHEMA_PATTERN_CONFIG: Final = "schema.pattern"
CATALOG_PATTERN_CONFIG: Final = "catalog.pattern"
NUMERIC_PRECISION_MAPPING_CONFIG: Final = "numeric.precision.mapping"
NUMERIC_MAPPING_CONFIG: Final = "numeric.mapping"
INCREMENTING_COLUMN_NAME_CONFIG: Final = "incrementing.column.name"
TIMESTAMP_COLUMN_NAME_CONFIG: Final = "timestamp.column.name"
TIMESTAMP_INITIAL_CONFIG: Final = "timestamp.initial"
TIMESTAMP_INITIAL_CURRENT: Final = -1
VALIDATE_NON_NULL_CONFIG: Final = "validate.non.null"
QUERY_CONFIG: Final = "query"
QUOTE_SQL_IDENTIFIERS_CONFIG: Final = "quote.sql.identifiers"
QUERY_SUFFIX_CONFIG: Final = "query.suffix"
POLL_INTERVAL_MS_CONFIG: Final = "poll.interval.ms"
BATCH_MAX_ROWS_CONFIG: Final = "batch.max.rows"
TABLE_POLL_INTERVAL_MS_CONFIG: Final = "table.poll.interval.ms"
TOPIC_PREFIX_CONFIG: Final = "topic.prefix"
TIMESTAMP_DELAY_INTERVAL_MS_CONFIG: Final = "timestamp.delay.interval.ms"
DB_TIMEZONE_CONFIG: Final = "db.timezone"
RECORD_KEY_MODE_CONFIG: Final = "record.key.mode"
TABLES_CONFIG: Final = "tables"
TABLES_FETCHED_CONFIG: Final = "tables.fetched"

NUMERIC_MAPPINGS: Final = ("none", "precision_only", "best_fit", "best_fit_eager_double")
KEY_MODES: Final = ("none", "primary_key")
_TOPIC_PREFIX_CHARS: Final = re.compile(r"[^a-zA-Z0-9._-]")


def _check_topic_prefix(name: str, value: Any) -> None:
    """Confluent's topic.prefix validator: legal topic characters, at most 249 of them."""
    text = str(value or "").strip()
    if len(text) > 249:
        raise ConfigError.for_key(name, value, "Topic prefix length must not exceed max topic name "
                                  "length, 249 chars")
    if _TOPIC_PREFIX_CHARS.search(text):
        raise ConfigError.for_key(name, value, "Topic prefix must not contain any character other "
                                  "than ASCII alphanumerics, '.', '_' and '-'.")


def _check_regexes(name: str, value: Any) -> None:
    for pattern in value or []:
        try:
            re.compile(pattern.strip())
        except re.error as exc:
            raise ConfigError.for_key(name, value, f"Must be a valid comma-separated list of "
                                      f"regular expression patterns: {exc}") from None


def _check_timezone(name: str, value: Any) -> None:
    try:
        zoneinfo.ZoneInfo(str(value))
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise ConfigError.for_key(name, value, "Invalid time zone identifier; use an IANA name "
                                  "such as UTC or Europe/Berlin") from None


def _check_numeric_mapping(name: str, value: Any) -> None:
    if value is not None and str(value).lower() not in NUMERIC_MAPPINGS:
        raise ConfigError.for_key(name, value, "String must be one of: " + ", ".join(NUMERIC_MAPPINGS))


def _check_table_types(name: str, value: Any) -> None:
    unknown = [entry for entry in value or [] if entry.strip().upper() not in ("TABLE", "VIEW")]
    if unknown:
        raise ConfigError.for_key(name, value, f"unsupported table types {unknown}: use TABLE "
                                  "and/or VIEW")


_DB, _MODE, _CONNECTOR = "Database", "Mode", "Connector"

CONFIG: Final = CONNECTION_CONFIG.merge(
    ConfigDef()
    .define(TABLE_WHITELIST_CONFIG, ConfigType.LIST, "", None, Importance.MEDIUM,
            "Tables to copy, by name (orders), fully qualified name (public.orders) or quoted "
            "name; every one must exist. Empty (the default) copies every table. May not be "
            "set with table.blacklist.", group=_DB, order_in_group=10)
    .define(TABLE_BLACKLIST_CONFIG, ConfigType.LIST, "", None, Importance.MEDIUM,
            "Tables not to copy, named as in table.whitelist. May not be set with "
            "table.whitelist.", group=_DB, order_in_group=11)
    .define(TABLE_INCLUDE_LIST_CONFIG, ConfigType.LIST, "", LambdaValidator(
                _check_regexes, "a list of regular expressions"), Importance.MEDIUM,
            "Regular expressions matching the fully qualified names (public.orders) of the "
            "tables to copy (Confluent's newer form of table.whitelist). Not with "
            "table.whitelist/table.blacklist.", group=_DB, order_in_group=12)
    .define(TABLE_EXCLUDE_LIST_CONFIG, ConfigType.LIST, "", LambdaValidator(
                _check_regexes, "a list of regular expressions"), Importance.MEDIUM,
            "Regular expressions matching fully qualified names of tables not to copy. Not with "
            "table.whitelist/table.blacklist.", group=_DB, order_in_group=13)
    .define(CATALOG_PATTERN_CONFIG, ConfigType.STRING, None, None, Importance.MEDIUM,
            "Catalog pattern to fetch table metadata from the database. PostgreSQL and SQLite "
            "have no catalogs, so it is accepted and ignored.", group=_DB, order_in_group=14)
    .define(SCHEMA_PATTERN_CONFIG, ConfigType.STRING, None, None, Importance.HIGH,
            "Schema pattern (SQL LIKE: % and _) to fetch table metadata from the database; "
            "null (default) looks in every schema.", group=_DB, order_in_group=15)
    .define(NUMERIC_PRECISION_MAPPING_CONFIG, ConfigType.BOOLEAN, False, None, Importance.LOW,
            "Deprecated: numeric.mapping=precision_only.", group=_DB, order_in_group=16)
    .define(NUMERIC_MAPPING_CONFIG, ConfigType.STRING, None, LambdaValidator(
                _check_numeric_mapping, "one of " + ", ".join(NUMERIC_MAPPINGS)), Importance.LOW,
            "How NUMERIC/DECIMAL columns map: none (Decimal), best_fit (INT8..INT64 for "
            "precision <= 18 and scale <= 0, FLOAT64 for a positive scale, else Decimal), "
            "best_fit_eager_double, precision_only.", group=_DB, order_in_group=17)
    .define(MODE_CONFIG, ConfigType.STRING, MODE_UNSPECIFIED, ValidString.in_(MODE_UNSPECIFIED, *MODES),
            Importance.HIGH,
            "How each table is polled: bulk (the whole table each time), incrementing (new "
            "rows by a strictly incrementing column), timestamp (new and updated rows by a "
            "timestamp column), timestamp+incrementing (both: every change exactly once). "
            "Required, as in Confluent's connector.", group=_MODE, order_in_group=1)
    .define(INCREMENTING_COLUMN_NAME_CONFIG, ConfigType.STRING, "", None, Importance.MEDIUM,
            "The strictly incrementing, non-null column; empty uses the table's auto-incremented "
            "primary key.", group=_MODE, order_in_group=2)
    .define(TIMESTAMP_COLUMN_NAME_CONFIG, ConfigType.LIST, "", None, Importance.MEDIUM,
            "Timestamp columns, compared as COALESCE(a, b, ...) in this order.", group=_MODE,
            order_in_group=3)
    .define(TIMESTAMP_INITIAL_CONFIG, ConfigType.LONG, None, None, Importance.LOW,
            "Epoch ms to start timestamp modes from when no offset is stored; -1 is the "
            "database's current time; unset reads everything.", group=_MODE, order_in_group=4)
    .define(VALIDATE_NON_NULL_CONFIG, ConfigType.BOOLEAN, True, None, Importance.LOW,
            "Fail when the incrementing column, or every timestamp column, is nullable.",
            group=_MODE, order_in_group=5)
    .define(QUERY_CONFIG, ConfigType.STRING, "", None, Importance.MEDIUM,
            "Copy the result of this query instead of tables (one task, topic = topic.prefix). "
            "Incremental modes append their WHERE clause to it, so it must not have one.",
            group=_MODE, order_in_group=6)
    .define(QUOTE_SQL_IDENTIFIERS_CONFIG, ConfigType.STRING, "always",
            ValidString.in_("always", "never", "ALWAYS", "NEVER"), Importance.MEDIUM,
            "When to quote identifiers. SQLAlchemy quotes every name that needs it (mixed case, "
            "reserved words), which is what 'always' protects; both values behave alike.",
            group=_MODE, order_in_group=7)
    .define(QUERY_SUFFIX_CONFIG, ConfigType.STRING, "", None, Importance.LOW,
            "Suffix to append at the end of the generated query.", group=_MODE, order_in_group=8)
    .define(TABLE_TYPES_CONFIG, ConfigType.LIST, "TABLE", LambdaValidator(_check_table_types, "TABLE, VIEW"),
            Importance.LOW, "Table types to copy: TABLE, VIEW.", group=_CONNECTOR,
            order_in_group=1)
    .define(POLL_INTERVAL_MS_CONFIG, ConfigType.INT, 5000, Range.at_least(0), Importance.HIGH,
            "Frequency in ms to poll for new data in each table.", group=_CONNECTOR,
            order_in_group=2)
    # Confluent's default is 100. Building a poll's columns costs a fixed set of Arrow calls whatever
    # its size, so larger polls spread that cost over more rows.
    .define(BATCH_MAX_ROWS_CONFIG, ConfigType.INT, 10_000, Range.at_least(1), Importance.LOW,
            "Maximum rows a single poll() returns; the task holds about this many rows in memory "
            "at a time, so lower it for very wide rows.", group=_CONNECTOR, order_in_group=3)
    .define(TABLE_POLL_INTERVAL_MS_CONFIG, ConfigType.LONG, 60_000, Range.at_least(0),
            Importance.LOW, "Frequency in ms to look for new or removed tables; a change asks "
            "for new task configs.", group=_CONNECTOR, order_in_group=4)
    .define(TOPIC_PREFIX_CONFIG, ConfigType.STRING, "", LambdaValidator(
                _check_topic_prefix, "legal topic characters"), Importance.HIGH,
            "Prefix of the topic names: <prefix><table>; with query, the topic itself.",
            group=_CONNECTOR, order_in_group=5)
    .define(TIMESTAMP_DELAY_INTERVAL_MS_CONFIG, ConfigType.LONG, 0, Range.at_least(0),
            Importance.HIGH, "How long after a timestamp a row is read, so transactions "
            "with earlier timestamps can commit first.", group=_CONNECTOR, order_in_group=6)
    .define(DB_TIMEZONE_CONFIG, ConfigType.STRING, "UTC", LambdaValidator(
                _check_timezone, "an IANA time zone"), Importance.MEDIUM,
            "Time zone of timestamp columns without one.", group=_CONNECTOR, order_in_group=7)
    .define(RECORD_KEY_MODE_CONFIG, ConfigType.STRING, "none", ValidString.in_(*KEY_MODES),
            Importance.MEDIUM, "Kopycat's: none (no key, as Confluent) or primary_key (a Struct "
            "of the primary key columns, as ValueToKey would make).", group=_CONNECTOR,
            order_in_group=8)
    .define(TABLES_CONFIG, ConfigType.STRING, "", None, Importance.LOW,
            "Tables of this task, quoted and comma separated (set by task_configs).",
            internal=True)
    .define(TABLES_FETCHED_CONFIG, ConfigType.BOOLEAN, False, None, Importance.LOW,
            "Set by task_configs once the tables were listed.", internal=True)
)


@dataclass(frozen=True)
class SourceSettings:
    """Parsed source settings, checked across keys as Confluent's validation does.

    ``values`` keeps every parsed value (``connect_engine`` takes it as is).
    """

    values: Mapping[str, Any]
    mode: str
    incrementing_column: str
    timestamp_columns: tuple[str, ...]
    whitelist: tuple[str, ...]
    blacklist: tuple[str, ...]
    include_regexes: tuple[str, ...]
    exclude_regexes: tuple[str, ...]
    table_types: tuple[str, ...]
    schema_pattern: str | None
    query: str
    query_suffix: str
    topic_prefix: str
    poll_interval_ms: int
    batch_max_rows: int
    table_poll_interval_ms: int
    timestamp_delay_ms: int
    timestamp_initial: int | None
    validate_non_null: bool
    timezone: dt.tzinfo
    numeric_mapping: str
    key_mode: str
    tables: str

    @property
    def uses_timestamp(self) -> bool:
        return self.mode in (MODE_TIMESTAMP, MODE_TIMESTAMP_INCREMENTING)

    @property
    def uses_incrementing(self) -> bool:
        return self.mode in (MODE_INCREMENTING, MODE_TIMESTAMP_INCREMENTING)

    @property
    def timezone_is_utc(self) -> bool:
        return self.timezone is dt.UTC

    @classmethod
    def parse(cls, props: Mapping[str, Any]) -> SourceSettings:
        """Parse and cross-check; raises ConfigError naming the key and the fix."""
        values = CONFIG.parse(props)
        settings = cls(
            values=values, mode=values[MODE_CONFIG],
            incrementing_column=values[INCREMENTING_COLUMN_NAME_CONFIG] or "",
            timestamp_columns=_entries(values[TIMESTAMP_COLUMN_NAME_CONFIG]),
            whitelist=_entries(values[TABLE_WHITELIST_CONFIG]),
            blacklist=_entries(values[TABLE_BLACKLIST_CONFIG]),
            include_regexes=_entries(values[TABLE_INCLUDE_LIST_CONFIG]),
            exclude_regexes=_entries(values[TABLE_EXCLUDE_LIST_CONFIG]),
            table_types=tuple(t.upper() for t in _entries(values[TABLE_TYPES_CONFIG])) or ("TABLE",),
            schema_pattern=values[SCHEMA_PATTERN_CONFIG], query=values[QUERY_CONFIG] or "",
            query_suffix=(values[QUERY_SUFFIX_CONFIG] or "").strip(),
            topic_prefix=(values[TOPIC_PREFIX_CONFIG] or "").strip(),
            poll_interval_ms=values[POLL_INTERVAL_MS_CONFIG],
            batch_max_rows=values[BATCH_MAX_ROWS_CONFIG],
            table_poll_interval_ms=values[TABLE_POLL_INTERVAL_MS_CONFIG],
            timestamp_delay_ms=values[TIMESTAMP_DELAY_INTERVAL_MS_CONFIG],
            timestamp_initial=values[TIMESTAMP_INITIAL_CONFIG],
            validate_non_null=values[VALIDATE_NON_NULL_CONFIG],
            timezone=_zone(values[DB_TIMEZONE_CONFIG]),
            numeric_mapping=_numeric_mapping(values), key_mode=values[RECORD_KEY_MODE_CONFIG],
            tables=values[TABLES_CONFIG] or "")
        settings._check()
        return settings

    def _check(self) -> None:
        if self.mode == MODE_UNSPECIFIED:
            raise ConfigError.for_key(MODE_CONFIG, "", "Query mode must be specified: set it to one "
                                      "of " + ", ".join(MODES))
        if self.whitelist and self.blacklist:
            raise ConfigError(f"{TABLE_WHITELIST_CONFIG} and {TABLE_BLACKLIST_CONFIG} may not both "
                              "be set: keep one of them", key=TABLE_BLACKLIST_CONFIG)
        legacy = [key for key, value in ((TABLE_WHITELIST_CONFIG, self.whitelist),
                                         (TABLE_BLACKLIST_CONFIG, self.blacklist)) if value]
        regexes = [key for key, value in ((TABLE_INCLUDE_LIST_CONFIG, self.include_regexes),
                                          (TABLE_EXCLUDE_LIST_CONFIG, self.exclude_regexes)) if value]
        if legacy and regexes:
            raise ConfigError(f"{' and '.join(legacy)} cannot be combined with {' and '.join(regexes)}"
                              f": use either exact table names or regular expressions",
                              key=regexes[0])
        if self.query and (legacy or regexes):
            raise ConfigError(f"{QUERY_CONFIG} may not be combined with whole-table copying "
                              f"settings: remove {', '.join(legacy + regexes)} or the query",
                              key=QUERY_CONFIG)
        if self.uses_timestamp and not self.timestamp_columns:
            raise ConfigError.for_key(TIMESTAMP_COLUMN_NAME_CONFIG, "", f"mode {self.mode} needs the "
                                      "timestamp column(s): set timestamp.column.name")
        if self.query and self.uses_incrementing and not self.incrementing_column:
            raise ConfigError.for_key(INCREMENTING_COLUMN_NAME_CONFIG, "", f"mode {self.mode} with "
                                      "a query needs the incrementing column named: it cannot be "
                                      "found without a table")


def _zone(name: str) -> dt.tzinfo:
    """db.timezone; UTC as ``datetime.UTC`` so the hot path can tell it apart cheaply."""
    if name in ("UTC", "Etc/UTC", "GMT", "Etc/GMT", "Z", "Zulu", "Etc/Zulu", "UCT", "Etc/UCT"):
        return dt.UTC
    return zoneinfo.ZoneInfo(name)


def _entries(value: Any) -> tuple[str, ...]:
    return tuple(entry.strip() for entry in value or [] if entry.strip())


def _numeric_mapping(values: Mapping[str, Any]) -> str:
    """Confluent's ``NumericMapping.get``: numeric.mapping, else the deprecated boolean."""
    if values[NUMERIC_MAPPING_CONFIG] is not None:
        return str(values[NUMERIC_MAPPING_CONFIG]).lower()
    return "precision_only" if values[NUMERIC_PRECISION_MAPPING_CONFIG] else "none"

"""The PostgreSQL CDC connector's keys: Debezium 3.x ``PostgresConnectorConfig`` names and defaults.

A Debezium PostgreSQL connector config runs unchanged for the keys defined here; keys Kopycat
does not implement yet are accepted and ignored (Kafka Connect passes unknown keys through).
:class:`CdcSettings` is the parsed form the connector and the task share.
"""

from __future__ import annotations

import datetime as dt
import re
import zoneinfo
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from kopycat.api.config import ConfigDef, ConfigType, Importance, Range, ValidString
from kopycat.api.errors import ConfigError

__all__ = ["CONFIG", "DEBEZIUM_VERSION", "END_LSN_CONFIG", "JVM_TIME_ZONE", "CdcSettings"]

DEBEZIUM_VERSION: Final = "3.6.1.Final"
"""The Debezium release whose events, schemas and offsets this connector reproduces."""

TOPIC_PREFIX: Final = "topic.prefix"
HOSTNAME: Final = "database.hostname"
PORT: Final = "database.port"
USER: Final = "database.user"
PASSWORD: Final = "database.password"  # noqa: S105 - the key's name, not a secret
DBNAME: Final = "database.dbname"
PLUGIN_NAME: Final = "plugin.name"
SLOT_NAME: Final = "slot.name"
PUBLICATION_NAME: Final = "publication.name"
PUBLICATION_AUTOCREATE: Final = "publication.autocreate.mode"
TABLE_INCLUDE: Final = "table.include.list"
TABLE_EXCLUDE: Final = "table.exclude.list"
SNAPSHOT_MODE: Final = "snapshot.mode"
TOMBSTONES_ON_DELETE: Final = "tombstones.on.delete"
DECIMAL_HANDLING: Final = "decimal.handling.mode"
TIME_PRECISION: Final = "time.precision.mode"
TRANSACTION_METADATA: Final = "provide.transaction.metadata"
MAX_BATCH_SIZE: Final = "max.batch.size"
POLL_INTERVAL_MS: Final = "poll.interval.ms"
HEARTBEAT_INTERVAL_MS: Final = "heartbeat.interval.ms"
HEARTBEAT_ACTION_QUERY: Final = "heartbeat.action.query"
HEARTBEAT_TOPIC_PREFIX: Final = "topic.heartbeat.prefix"
TRANSACTION_TOPIC: Final = "topic.transaction"
SIGNAL_DATA_COLLECTION: Final = "signal.data.collection"
SIGNAL_ENABLED_CHANNELS: Final = "signal.enabled.channels"
INCREMENTAL_CHUNK_SIZE: Final = "incremental.snapshot.chunk.size"
WATERMARKING_STRATEGY: Final = "incremental.snapshot.watermarking.strategy"
JVM_TIME_ZONE: Final = "kopycat.cdc.jvm.time.zone"
"""Kopycat's key: the zone of the Debezium JVM sharing the offsets, for java.sql.Date keys (see java_keys)."""
END_LSN_CONFIG: Final = "kopycat.cdc.end.lsn"
"""Task config key: the WAL position the plan read (``pg_current_wal_lsn()``), where a bounded run ends."""

CONFIG = (
    ConfigDef()
    .define(TOPIC_PREFIX, ConfigType.STRING, importance=Importance.HIGH,
            doc="Prefix of every topic name (<prefix>.<schema>.<table>) and the offsets' server name.")
    .define(HOSTNAME, ConfigType.STRING, importance=Importance.HIGH, doc="PostgreSQL server host.")
    .define(PORT, ConfigType.INT, default=5432, validator=Range.between(1, 65535), importance=Importance.HIGH,
            doc="PostgreSQL server port.")
    .define(USER, ConfigType.STRING, importance=Importance.HIGH,
            doc="The user to connect as: it needs the REPLICATION attribute (or superuser).")
    .define(PASSWORD, ConfigType.PASSWORD, default=None, importance=Importance.HIGH, doc="The user's password.")
    .define(DBNAME, ConfigType.STRING, importance=Importance.HIGH, doc="The database whose changes are captured.")
    .define(PLUGIN_NAME, ConfigType.STRING, default="pgoutput", validator=ValidString.in_("pgoutput"),
            importance=Importance.MEDIUM,
            doc="The logical decoding plugin: only pgoutput (built into PostgreSQL). Debezium defaults to "
                "decoderbufs: set plugin.name=pgoutput in a config both run.")
    .define(SLOT_NAME, ConfigType.STRING, default="debezium", importance=Importance.MEDIUM,
            doc="The logical replication slot; one reader at a time. Created when missing.")
    .define(PUBLICATION_NAME, ConfigType.STRING, default="dbz_publication", importance=Importance.LOW,
            doc="The publication pgoutput streams.")
    .define(PUBLICATION_AUTOCREATE, ConfigType.STRING, default="all_tables",
            validator=ValidString.in_("all_tables", "filtered", "disabled"), importance=Importance.LOW,
            doc="Create a missing publication FOR ALL TABLES (all_tables), for the tables the filters "
                "select (filtered), or never (disabled: it must exist).")
    .define(TABLE_INCLUDE, ConfigType.LIST, default="", importance=Importance.MEDIUM,
            doc="Regular expressions over <schema>.<table>: only matching tables are captured.")
    .define(TABLE_EXCLUDE, ConfigType.LIST, default="", importance=Importance.MEDIUM,
            doc="Regular expressions over <schema>.<table>: matching tables are not captured.")
    .define(SNAPSHOT_MODE, ConfigType.STRING, default="initial",
            validator=ValidString.in_("initial", "no_data", "never"), importance=Importance.MEDIUM,
            doc="initial: read every captured table once ('r' events) when no offset is stored, then "
                "stream; no_data/never: stream only.")
    .define(TOMBSTONES_ON_DELETE, ConfigType.BOOLEAN, default=True, importance=Importance.MEDIUM,
            doc="Follow each delete event with a tombstone (null value) for log compaction.")
    .define(DECIMAL_HANDLING, ConfigType.STRING, default="precise",
            validator=ValidString.in_("precise", "double", "string"), importance=Importance.MEDIUM,
            doc="NUMERIC as Connect Decimal (precise), FLOAT64 (double) or STRING (string).")
    .define(TIME_PRECISION, ConfigType.STRING, default="adaptive",
            validator=ValidString.in_("adaptive", "connect"), importance=Importance.MEDIUM,
            doc="Temporal columns as Debezium's io.debezium.time types at the column's precision "
                "(adaptive) or as Kafka Connect's Date/Time/Timestamp, milliseconds (connect).")
    .define(TRANSACTION_METADATA, ConfigType.BOOLEAN, default=False, importance=Importance.LOW,
            doc="Send a BEGIN and an END event per transaction to <topic.prefix>.<topic.transaction> and fill "
                "each change event's transaction block (id, total_order, data_collection_order).")
    .define(TRANSACTION_TOPIC, ConfigType.STRING, default="transaction", importance=Importance.LOW,
            doc="Name of the transaction metadata topic after <topic.prefix>.")
    .define(HEARTBEAT_INTERVAL_MS, ConfigType.INT, default=0, validator=Range.at_least(0),
            importance=Importance.MEDIUM,
            doc="Send a heartbeat record carrying the current offset at most this often (0: never), so an "
                "idle slot is confirmed past WAL that has no captured change. A bounded run also ends with "
                "one when the WAL moved past its last offset.")
    .define(HEARTBEAT_ACTION_QUERY, ConfigType.STRING, default="", importance=Importance.LOW,
            doc="A statement run (autocommit, own connection) after each heartbeat, e.g. an UPDATE of a captured "
                "heartbeat table so the slot sees changes of this database. A failing statement stops the task.")
    .define(HEARTBEAT_TOPIC_PREFIX, ConfigType.STRING, default="__debezium-heartbeat", importance=Importance.LOW,
            doc="Heartbeats go to <topic.heartbeat.prefix>.<topic.prefix>.")
    .define(MAX_BATCH_SIZE, ConfigType.INT, default=2048, validator=Range.at_least(1), importance=Importance.LOW,
            doc="Most change events one poll() returns.")
    .define(POLL_INTERVAL_MS, ConfigType.LONG, default=500, validator=Range.at_least(1), importance=Importance.LOW,
            doc="How long a continuous run waits for new changes before looking again.")
    .define(SIGNAL_DATA_COLLECTION, ConfigType.STRING, default="", importance=Importance.MEDIUM,
            doc="The signal table <schema>.<table>, with columns id VARCHAR(42) PRIMARY KEY, type VARCHAR(32) and "
                "data VARCHAR(2048): a row inserted there is a signal read from the WAL (the source channel), e.g. "
                "type execute-snapshot with data {\"data-collections\": [\"public.t\"], \"type\": \"incremental\"}. "
                "The incremental snapshot also writes its chunk watermarks there. Empty: no signals.")
    .define(SIGNAL_ENABLED_CHANNELS, ConfigType.LIST, default="source", importance=Importance.LOW,
            doc="Where signals are read: only source (rows of signal.data.collection in the WAL).")
    .define(INCREMENTAL_CHUNK_SIZE, ConfigType.INT, default=1024, validator=Range.at_least(1),
            importance=Importance.MEDIUM,
            doc="Rows an incremental snapshot reads per chunk (one primary key range between two watermarks).")
    .define(WATERMARKING_STRATEGY, ConfigType.STRING, default="insert_insert",
            validator=ValidString.in_("insert_insert"), importance=Importance.LOW,
            doc="How chunk watermarks are written: insert_insert (an open and a close row per chunk, kept in "
                "the signal table), Debezium's default.")
    .define(JVM_TIME_ZONE, ConfigType.STRING, default="UTC", importance=Importance.LOW,
            doc="Kopycat's own key: the time zone (an IANA id such as America/New_York, the user.timezone or TZ) of "
                "the JVM of a Debezium worker that takes over these offsets or hands them over. An incremental "
                "snapshot stores a date primary key as java.sql.Date, whose milliseconds are that day's local "
                "midnight in the writing JVM's zone, and Debezium binds it back as the local date in its own zone. "
                "Kopycat writes and reads such keys as a JVM in this zone, and refuses a stored date that is not a "
                "midnight there, naming the UTC offset its writer ran at.")
    .define(END_LSN_CONFIG, ConfigType.STRING, default="", importance=Importance.LOW, internal=True,
            doc="Set by the plan: the WAL position a bounded run copies to.")
)


@dataclass(frozen=True)
class CdcSettings:
    """The parsed keys, with the table filters compiled."""

    prefix: str
    host: str
    port: int
    user: str
    password: str | None
    dbname: str
    slot: str
    publication: str
    publication_mode: str
    include: tuple[re.Pattern[str], ...]
    exclude: tuple[re.Pattern[str], ...]
    snapshot_mode: str
    tombstones: bool
    decimal_mode: str
    time_mode: str
    max_batch: int
    poll_interval_s: float
    end_lsn: str
    transaction_metadata: bool = False
    transaction_topic: str = "transaction"
    heartbeat_interval_ms: int = 0
    heartbeat_query: str = ""
    heartbeat_prefix: str = "__debezium-heartbeat"
    signal_table: tuple[str, str] | None = None
    chunk_size: int = 1024
    jvm_zone: dt.tzinfo = dt.UTC

    @classmethod
    def parse(cls, props: Mapping[str, Any]) -> CdcSettings:
        values = CONFIG.parse(props)
        if values[TABLE_INCLUDE] and values[TABLE_EXCLUDE]:
            raise ConfigError(f"Set {TABLE_INCLUDE} or {TABLE_EXCLUDE}, not both (as Debezium)", key=TABLE_EXCLUDE)
        _check_channels(values[SIGNAL_ENABLED_CHANNELS])
        password = values[PASSWORD]
        return cls(values[TOPIC_PREFIX], values[HOSTNAME], values[PORT], values[USER],
                   password.value if password is not None else None, values[DBNAME], values[SLOT_NAME],
                   values[PUBLICATION_NAME], values[PUBLICATION_AUTOCREATE],
                   _patterns(TABLE_INCLUDE, values[TABLE_INCLUDE]), _patterns(TABLE_EXCLUDE, values[TABLE_EXCLUDE]),
                   values[SNAPSHOT_MODE], values[TOMBSTONES_ON_DELETE], values[DECIMAL_HANDLING],
                   values[TIME_PRECISION], values[MAX_BATCH_SIZE], values[POLL_INTERVAL_MS] / 1000.0,
                   values[END_LSN_CONFIG], values[TRANSACTION_METADATA], values[TRANSACTION_TOPIC],
                   values[HEARTBEAT_INTERVAL_MS], values[HEARTBEAT_ACTION_QUERY].strip(),
                   values[HEARTBEAT_TOPIC_PREFIX], _signal_table(values[SIGNAL_DATA_COLLECTION]),
                   values[INCREMENTAL_CHUNK_SIZE], _zone(values[JVM_TIME_ZONE]))

    def captures(self, schema: str, table: str) -> bool:
        """Whether ``schema.table`` passes the filters (Debezium matches the whole name)."""
        name = f"{schema}.{table}"
        if self.include:
            return any(p.fullmatch(name) for p in self.include)
        return not any(p.fullmatch(name) for p in self.exclude)

    def conninfo(self) -> dict[str, Any]:
        """psycopg connection keywords."""
        info: dict[str, Any] = {"host": self.host, "port": self.port, "user": self.user, "dbname": self.dbname}
        if self.password:
            info["password"] = self.password
        return info


def _patterns(key: str, items: list[str]) -> tuple[re.Pattern[str], ...]:
    try:
        return tuple(re.compile(item.strip()) for item in items if item.strip())
    except re.error as exc:
        raise ConfigError(f"{key}: {exc}; give regular expressions over <schema>.<table>", key=key) from None


def _signal_table(text: str) -> tuple[str, str] | None:
    """``signal.data.collection`` as (schema, table): Debezium's PostgreSQL form is ``<schema>.<table>``."""
    text = text.strip()
    if not text:
        return None
    parts = text.split(".")
    if len(parts) != 2 or not all(parts):
        raise ConfigError.for_key(SIGNAL_DATA_COLLECTION, text, "give the signal table as <schema>.<table>, "
                                  "e.g. public.debezium_signal")
    return parts[0], parts[1]


def _zone(name: str) -> dt.tzinfo:
    """``kopycat.cdc.jvm.time.zone`` as a zone; UTC needs no time zone database."""
    if name.strip() in ("UTC", "Z", "Etc/UTC"):
        return dt.UTC
    try:
        return zoneinfo.ZoneInfo(name.strip())
    except (zoneinfo.ZoneInfoNotFoundError, ValueError) as exc:
        raise ConfigError.for_key(JVM_TIME_ZONE, name, f"not a time zone this machine knows ({exc}); give an IANA "
                                  f"id such as UTC or America/New_York: the Debezium worker's JVM zone "
                                  f"(java -XshowSettings:properties -version prints user.timezone)") from None


def _check_channels(channels: list[str]) -> None:
    """Only the source channel exists here: a kafka, file or jmx channel would silently never signal."""
    for channel in channels:
        if channel.strip() and channel.strip() != "source":
            raise ConfigError.for_key(SIGNAL_ENABLED_CHANNELS, ",".join(channels),
                                      f"channel {channel.strip()!r} is not supported; Kopycat reads signals only "
                                      f"from the signal table in the WAL: set {SIGNAL_ENABLED_CHANNELS}=source")

"""Which tables the JDBC source copies, and a thread that notices new and dropped ones.

Follows Confluent's ``TableMonitorThread`` and ``GenericDatabaseDialect.tableIds``: tables come
from the database's metadata (SQLAlchemy's inspector here), filtered by ``table.whitelist`` /
``table.blacklist`` (exact names: bare, unquoted qualified, or quoted qualified) or by the
``table.include.list`` / ``table.exclude.list`` regexes over the unquoted qualified name. A
:class:`TableId` holds what Confluent's ``TableId`` holds for the database: PostgreSQL has no
catalog (``public.orders``), SQLite neither catalog nor schema (``orders``), and
:attr:`TableId.unquoted` is ``TableId.toUnquotedString()``, the name in source partitions.

Beyond Confluent: a whitelisted table that does not exist is an error listing the tables found.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable, Iterable, Sequence
from typing import NamedTuple

from sqlalchemy import Engine, inspect

from kopycat.api.errors import ConfigError, ConnectError
from kopycat.connectors.jdbc.source_config import (
    TABLE_BLACKLIST_CONFIG,
    TABLE_WHITELIST_CONFIG,
    SourceSettings,
)

__all__ = ["TableId", "TableMonitor", "format_tables", "list_tables", "parse_tables", "select_tables"]

log = logging.getLogger(__name__)

_SYSTEM_SCHEMAS = ("information_schema", "pg_catalog", "pg_toast")


class TableId(NamedTuple):
    """A table's catalog, schema and name; None where the database has no such level."""

    catalog: str | None
    schema: str | None
    table: str

    @property
    def unquoted(self) -> str:
        """``public.orders`` (Confluent's ``toUnquotedString``: the offsets' table name)."""
        return ".".join(part for part in self if part)

    @property
    def quoted(self) -> str:
        """``"public"."orders"``: the form task configs carry, as Confluent's do."""
        return ".".join('"' + part.replace('"', '""') + '"' for part in self if part)

    def __str__(self) -> str:
        return self.quoted


def format_tables(tables: Iterable[TableId]) -> str:
    """The ``tables`` task config value: quoted names, comma separated."""
    return ",".join(table.quoted for table in tables)


def parse_tables(text: str) -> list[TableId]:
    """Read a ``tables`` value back: quoted or plain parts, ``.`` between parts, ``,`` between tables."""
    tables: list[TableId] = []
    parts: list[str] = []
    current, quoted, index = [], False, 0
    while index <= len(text):
        char = text[index] if index < len(text) else ","
        if quoted:
            if char == '"' and text[index + 1:index + 2] == '"':
                current.append('"')
                index += 1
            elif char == '"':
                quoted = False
            else:
                current.append(char)
        elif char == '"':
            quoted = True
        elif char in ".,":
            parts.append("".join(current).strip())
            current = []
            if char == ",":
                if any(parts):
                    tables.append(_table_id(parts))
                parts = []
        else:
            current.append(char)
        index += 1
    return tables


def _table_id(parts: Sequence[str]) -> TableId:
    """Confluent's ``parseTableIdentifier``: 1 part table, 2 schema.table, 3 catalog.schema.table."""
    if len(parts) == 1:
        return TableId(None, None, parts[0])
    if len(parts) == 2:
        return TableId(None, parts[0] or None, parts[1])
    return TableId(parts[-3] or None, parts[-2] or None, parts[-1])


def list_tables(engine: Engine, settings: SourceSettings) -> list[TableId]:
    """Every table (and view, if asked) the connection sees, in schema.pattern's schemas."""
    inspector = inspect(engine)
    sqlite = engine.dialect.name == "sqlite"
    schemas: list[str | None] = [None] if sqlite else [
        name for name in inspector.get_schema_names()
        if name not in _SYSTEM_SCHEMAS and not name.startswith("pg_temp")
        and not name.startswith("pg_toast") and _like(settings.schema_pattern, name)]
    found: list[TableId] = []
    for schema in schemas:
        names: list[str] = []
        if "TABLE" in settings.table_types:
            names += inspector.get_table_names(schema=schema)
        if "VIEW" in settings.table_types:
            names += inspector.get_view_names(schema=schema)
        found += [TableId(None, schema, name) for name in names if not name.startswith("sqlite_")]
    return sorted(found, key=lambda t: (t.table, t.schema or "", t.catalog or ""))


def _like(pattern: str | None, name: str) -> bool:
    """JDBC metadata patterns are SQL LIKE: % any run, _ one character; null matches all."""
    if pattern is None:
        return True
    regex = "".join(".*" if c == "%" else "." if c == "_" else re.escape(c) for c in pattern)
    return re.fullmatch(regex, name) is not None


def select_tables(tables: Sequence[TableId], settings: SourceSettings, *, strict: bool = True
                  ) -> list[TableId]:
    """The tables the filters keep (Confluent's ``applyLegacyFiltering`` / ``filterTables``).

    With ``strict`` a whitelist entry matching no table raises, listing the tables found.
    Two kept tables with the same name in different schemas raise too: both would write to
    ``<prefix><name>`` (Confluent refuses the same way).
    """
    if settings.whitelist:
        if strict:
            _check_whitelist(tables, settings.whitelist)
        chosen = [t for t in tables if _names(t) & set(settings.whitelist)]
    elif settings.blacklist:
        chosen = [t for t in tables if not _names(t) & set(settings.blacklist)]
    elif settings.include_regexes or settings.exclude_regexes:
        include = [re.compile(r) for r in settings.include_regexes] or [re.compile(".*")]
        exclude = [re.compile(r) for r in settings.exclude_regexes]
        chosen = [t for t in tables if any(r.fullmatch(t.unquoted) for r in include)
                  and not any(r.fullmatch(t.unquoted) for r in exclude)]
    else:
        chosen = list(tables)
    _check_duplicates(chosen, settings)
    return chosen


def _names(table: TableId) -> set[str]:
    return {table.unquoted, table.quoted, table.table}


def _check_whitelist(tables: Sequence[TableId], whitelist: Sequence[str]) -> None:
    known = set().union(*(_names(t) for t in tables)) if tables else set()
    missing = [name for name in whitelist if name not in known]
    if missing:
        found = ", ".join(t.unquoted for t in tables) or "none"
        raise ConfigError(f"{TABLE_WHITELIST_CONFIG} names {', '.join(repr(m) for m in missing)}, "
                          f"which the database does not have (or not as a table type in "
                          f"table.types, or outside schema.pattern); tables found: {found}",
                          key=TABLE_WHITELIST_CONFIG)


def _check_duplicates(tables: Sequence[TableId], settings: SourceSettings) -> None:
    by_name: dict[str, list[str]] = {}
    for table in tables:
        by_name.setdefault(table.table, []).append(table.unquoted)
    clashes = [names for names in by_name.values() if len(names) > 1]
    if clashes and not settings.query:
        key = TABLE_WHITELIST_CONFIG if settings.whitelist else TABLE_BLACKLIST_CONFIG
        raise ConfigError(f"Tables {clashes} share a name, and the topic is "
                          f"{settings.topic_prefix!r} + the unqualified name: keep one table of "
                          f"each name with {key}, table.include.list or schema.pattern", key=key)


class TableMonitor:
    """Lists the tables every ``table.poll.interval.ms`` and reports changes (``TableMonitorThread``).

    ``on_change`` is called from the monitor's thread (the connector asks for reconfiguration
    there); ``on_error`` gets the exception that stops it. :meth:`tables` is thread-safe.
    """

    def __init__(self, engine: Engine, settings: SourceSettings, initial: Sequence[TableId],
                 on_change: Callable[[], None], on_error: Callable[[Exception], None]) -> None:
        self._engine = engine
        self._settings = settings
        self._tables = list(initial)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._on_change = on_change
        self._on_error = on_error
        self._thread = threading.Thread(target=self._run, name="jdbc-table-monitor", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def tables(self) -> list[TableId]:
        with self._lock:
            return list(self._tables)

    def refresh(self) -> bool:
        """List the tables now; True when they changed."""
        current = select_tables(list_tables(self._engine, self._settings), self._settings, strict=False)
        with self._lock:
            changed, self._tables = current != self._tables, current
        if changed:
            log.info("Tables to copy changed: now %s", ", ".join(t.unquoted for t in current))
        return changed

    def _run(self) -> None:
        interval_s = self._settings.table_poll_interval_ms / 1000
        while not self._stop.wait(interval_s):
            try:
                if self.refresh():
                    self._on_change()
            except ConfigError as exc:
                self._on_error(exc)
                return
            except Exception as exc:  # noqa: BLE001 - the database may be down for a while
                log.warning("Could not list tables, trying again in %d ms: %s",
                            self._settings.table_poll_interval_ms, exc)

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(10)
            if self._thread.is_alive():
                raise ConnectError("The JDBC table monitor did not stop within 10 s")

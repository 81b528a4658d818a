"""The database connection of the JDBC connectors: Confluent's keys, SQLAlchemy underneath.

``connection.url`` takes a SQLAlchemy URL (``postgresql+psycopg://host/db``, ``sqlite:///x.db``)
or the JDBC URL a Confluent config already has (``jdbc:postgresql://host:5432/db``,
``jdbc:sqlite:/path/x.db``), translated here so configs move over unchanged.
``connection.user`` / ``connection.password`` override what the URL holds; the password is a
PASSWORD key, so it never appears in errors, logs or the REST API (Confluent's
``JdbcSourceConnectorConfig`` connection group). A password written into the URL itself
(``user:pw@host`` or ``?password=pw``) is hidden the same way wherever the URL is shown.

A SQLite URL naming a file that does not exist: the SQLite driver would create an empty
database, so a source would find no tables and copy nothing without saying why. Sources refuse
it, naming the path; sinks create it and log that they did.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from sqlalchemy import Engine, create_engine
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError, OperationalError

from kopycat.api.config import ConfigDef, ConfigType, Importance, NonEmptyString, Range
from kopycat.api.config_types import Password
from kopycat.api.errors import ConfigError, ConnectError

__all__ = [
    "CONNECTION_ATTEMPTS_CONFIG", "CONNECTION_BACKOFF_MS_CONFIG", "CONNECTION_CONFIG",
    "CONNECTION_PASSWORD_CONFIG", "CONNECTION_URL_CONFIG", "CONNECTION_USER_CONFIG",
    "connect_engine", "database_url", "redacted_url",
]

log = logging.getLogger(__name__)

CONNECTION_URL_CONFIG = "connection.url"
CONNECTION_USER_CONFIG = "connection.user"
CONNECTION_PASSWORD_CONFIG = "connection.password"
CONNECTION_ATTEMPTS_CONFIG = "connection.attempts"
CONNECTION_BACKOFF_MS_CONFIG = "connection.backoff.ms"

_GROUP = "Database"

CONNECTION_CONFIG = (
    ConfigDef()
    .define(CONNECTION_URL_CONFIG, ConfigType.STRING, validator=NonEmptyString(), importance=Importance.HIGH,
            doc="The database: a SQLAlchemy URL (postgresql+psycopg://host:5432/db, sqlite:///path/x.db) "
                "or a JDBC URL (jdbc:postgresql://host:5432/db, jdbc:sqlite:/path/x.db).",
            group=_GROUP, order_in_group=1, display_name="JDBC URL")
    .define(CONNECTION_USER_CONFIG, ConfigType.STRING, default=None, importance=Importance.HIGH,
            doc="The database user; overrides a user in the URL.", group=_GROUP, order_in_group=2,
            display_name="JDBC User")
    .define(CONNECTION_PASSWORD_CONFIG, ConfigType.PASSWORD, default=None, importance=Importance.HIGH,
            doc="The database password; overrides one in the URL. Never logged.", group=_GROUP,
            order_in_group=3, display_name="JDBC Password")
    .define(CONNECTION_ATTEMPTS_CONFIG, ConfigType.INT, default=3, validator=Range(min=1),
            importance=Importance.LOW, doc="How many times to try to connect before failing.",
            group=_GROUP, order_in_group=4, display_name="JDBC connection attempts")
    .define(CONNECTION_BACKOFF_MS_CONFIG, ConfigType.LONG, default=10_000, validator=Range(min=0),
            importance=Importance.LOW, doc="Milliseconds to wait between connection attempts.",
            group=_GROUP, order_in_group=5, display_name="JDBC connection backoff (ms)")
)

# JDBC subprotocol -> SQLAlchemy dialect+driver.
_JDBC_DIALECTS = {"postgresql": "postgresql+psycopg", "sqlite": "sqlite", "mysql": "mysql+pymysql"}
_HIDDEN: Final = "***"
_SECRET_IN_TEXT: Final = re.compile(r"([?&;][^=&;]*(?:pass|pwd|secret|token|key)[^=&;]*=)[^&;]*", re.IGNORECASE)
"""A query parameter of a database URL that holds a secret (password, sslpassword, pwd...) and its value."""


def database_url(values: Mapping[str, Any]) -> URL:
    """The SQLAlchemy URL of parsed connection values (user/password applied)."""
    text = str(values[CONNECTION_URL_CONFIG]).strip()
    try:
        url = make_url(_from_jdbc(text) if text.startswith("jdbc:") else text)
    except ArgumentError:
        raise ConfigError.for_key(
            CONNECTION_URL_CONFIG, _redacted_text(text),
            "is not a database URL: use a SQLAlchemy URL such as postgresql+psycopg://host:5432/db or "
            "sqlite:///path/x.db, or a JDBC URL such as jdbc:postgresql://host:5432/db") from None
    if url.drivername in ("postgresql", "postgres"):  # "postgres" is what Airflow connection URIs say
        url = url.set(drivername="postgresql+psycopg")
    if url.get_backend_name() == "sqlite":  # a file: no user, no password
        return url
    user, password = values.get(CONNECTION_USER_CONFIG), values.get(CONNECTION_PASSWORD_CONFIG)
    if user:
        url = url.set(username=str(user))
    if password is not None:
        url = url.set(password=password.value() if isinstance(password, Password) else str(password))
    return url


def redacted_url(values: Mapping[str, Any]) -> str:
    """The URL as logs and errors show it: no password, in the user part or the query string."""
    return _shown(database_url(values))


def _shown(url: URL) -> str:
    return _hide_query_secrets(url.render_as_string(hide_password=True))


def _hide_query_secrets(text: str) -> str:
    """``text`` with the values of secret query parameters (password, sslpassword, pwd...) hidden."""
    return _SECRET_IN_TEXT.sub(lambda match: match.group(1) + _HIDDEN, text)


def _sqlite_file(url: URL) -> Path | None:
    """The file a SQLite URL names; None for an in-memory database or a ``file:`` URI."""
    database = url.database or ""
    if url.get_backend_name() != "sqlite" or database in ("", ":memory:") or database.startswith("file:"):
        return None
    return Path(database)


def connect_engine(values: Mapping[str, Any], *, create_sqlite_file: bool = True, **engine_kwargs: Any) -> Engine:
    """An Engine whose first connection succeeded, after ``connection.attempts`` tries.

    A SQLite file that does not exist is created (and logged) with ``create_sqlite_file``, else
    refused with ConfigError naming the path (module doc).
    """
    url = database_url(values)
    sqlite_file = _sqlite_file(url)
    created = sqlite_file is not None and not sqlite_file.exists()
    if sqlite_file is not None and created and not create_sqlite_file:
        raise ConfigError(
            f"{CONNECTION_URL_CONFIG} names the SQLite database {sqlite_file.resolve()}, which does not exist: "
            f"fix the path (sqlite:///x.db is relative to the working directory {Path.cwd()}, sqlite:////abs/x.db "
            f"is absolute) or create the database first", key=CONNECTION_URL_CONFIG)
    engine = create_engine(url, **engine_kwargs)
    attempts, backoff_s = int(values[CONNECTION_ATTEMPTS_CONFIG]), int(values[CONNECTION_BACKOFF_MS_CONFIG]) / 1000
    for attempt in range(1, attempts + 1):
        try:
            with engine.connect():
                if created:
                    log.info("Created the SQLite database %s named by %s", sqlite_file, CONNECTION_URL_CONFIG)
                return engine
        except OperationalError as exc:
            if attempt == attempts:
                engine.dispose()
                raise ConnectError(
                    f"Cannot connect to {_shown(url)} after {attempts} "
                    f"attempt(s): {exc.orig}. Check {CONNECTION_URL_CONFIG}, {CONNECTION_USER_CONFIG} and "
                    f"{CONNECTION_PASSWORD_CONFIG}, and that the database accepts connections") from None
            time.sleep(backoff_s)
    raise AssertionError("unreachable")


def _from_jdbc(text: str) -> str:
    """``jdbc:postgresql://h:p/db?user=u`` -> ``postgresql+psycopg://h:p/db?user=u``."""
    rest = text[len("jdbc:"):]
    protocol, _, target = rest.partition(":")
    dialect = _JDBC_DIALECTS.get(protocol)
    if dialect is None:
        raise ConfigError.for_key(CONNECTION_URL_CONFIG, _redacted_text(text),
                                  f"the JDBC subprotocol {protocol!r} is not supported; use one of "
                                  f"{', '.join(sorted(_JDBC_DIALECTS))} or a SQLAlchemy URL")
    if protocol == "sqlite":  # jdbc:sqlite:/abs/x.db, jdbc:sqlite:rel.db, jdbc:sqlite::memory:
        return "sqlite://" if target in ("", ":memory:") else f"sqlite:///{target}"
    return f"{dialect}:{target}"


def _redacted_text(text: str) -> str:
    """A URL for an error message when it did not parse: drop anything after '//user:'."""
    text = _hide_query_secrets(text)
    head, sep, tail = text.partition("://")
    if sep and "@" in tail:
        return f"{head}://{_HIDDEN}@{tail.split('@', 1)[1]}"
    return text

"""connection.url / user / password: SQLAlchemy and JDBC URLs, the password applied and never shown."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from kopycat.api.errors import ConfigError, ConnectError
from kopycat.connectors.jdbc.connection import CONNECTION_CONFIG, connect_engine, database_url, redacted_url


def _values(**props: str) -> dict[str, object]:
    return CONNECTION_CONFIG.parse({k.replace("_", "."): v for k, v in props.items()})


@pytest.mark.parametrize(("given", "expected"), [
    ("jdbc:postgresql://db:5432/shop", "postgresql+psycopg://db:5432/shop"),
    ("postgres://db/shop", "postgresql+psycopg://db/shop"),
    ("postgresql://db/shop", "postgresql+psycopg://db/shop"),
    ("jdbc:sqlite:/data/shop.db", "sqlite:////data/shop.db"),
    ("sqlite:///rel.db", "sqlite:///rel.db"),
])
def test_jdbc_and_sqlalchemy_urls_become_sqlalchemy_urls(given: str, expected: str) -> None:
    assert database_url(_values(connection_url=given)).render_as_string(hide_password=False) == expected


def test_a_sqlite_file_takes_no_user_or_password() -> None:
    url = database_url(_values(connection_url="sqlite:///x.db", connection_user="u", connection_password="p"))
    assert (url.username, url.password) == (None, None)


def test_user_and_password_override_the_url_and_the_password_is_never_rendered() -> None:
    values = _values(connection_url="postgresql://old:oldpw@db/shop", connection_user="kc",
                     connection_password="s3cret")
    url = database_url(values)
    assert (url.username, url.password) == ("kc", "s3cret")
    assert "s3cret" not in redacted_url(values) and "kc:***@db" in redacted_url(values)


def test_an_unknown_jdbc_subprotocol_names_the_supported_ones() -> None:
    with pytest.raises(ConfigError, match="connection.url.*oracle.*postgresql"):
        database_url(_values(connection_url="jdbc:oracle:thin:@db:1521:x"))


def test_a_failed_connection_names_the_keys_to_check_without_the_password() -> None:
    values = _values(connection_url="postgresql://kc@127.0.0.1:1/shop", connection_attempts="1",
                     connection_password="s3cret")
    with pytest.raises(ConnectError, match="connection.url") as caught:
        connect_engine(values)
    assert "s3cret" not in str(caught.value)


@pytest.mark.parametrize("url", ["postgresql://127.0.0.1:1/shop?user=kopycat&password=s3cret",
                                 "jdbc:postgresql://127.0.0.1:1/shop?user=kopycat&password=s3cret&sslmode=disable"])
def test_a_password_in_the_urls_query_string_is_hidden_like_one_before_the_host(url: str) -> None:
    values = _values(connection_url=url, connection_attempts="1")
    assert "s3cret" not in redacted_url(values) and "password=***" in redacted_url(values)
    with pytest.raises(ConnectError) as caught:
        connect_engine(values)
    assert "s3cret" not in str(caught.value) and "user=kopycat" in str(caught.value)


def test_an_unparseable_url_hides_a_query_string_password() -> None:
    with pytest.raises(ConfigError) as caught:
        database_url(_values(connection_url="jdbc:oracle:thin:@db:1521:x?password=s3cret"))
    assert "s3cret" not in str(caught.value)


def test_a_missing_sqlite_file_is_refused_with_its_path_unless_the_caller_may_create_it(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    missing = tmp_path / "shop.db"
    values = _values(connection_url=f"sqlite:///{missing}")
    with pytest.raises(ConfigError) as caught:
        connect_engine(values, create_sqlite_file=False)
    assert str(missing) in str(caught.value) and "does not exist" in str(caught.value)
    assert not missing.exists()
    with caplog.at_level(logging.INFO, logger="kopycat.connectors.jdbc.connection"):
        connect_engine(values).dispose()
    assert missing.exists() and f"Created the SQLite database {missing}" in caplog.text

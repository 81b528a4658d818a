"""A server without logical decoding is refused with the setting that enables it."""

from __future__ import annotations

from typing import Any

import pytest

from kopycat.api.errors import ConnectError
from kopycat.connectors.postgres_cdc.config import CdcSettings
from kopycat.connectors.postgres_cdc.replication import PostgresSource

BASE = {"topic.prefix": "shop", "database.hostname": "db", "database.user": "cdc", "database.dbname": "shop"}


class Answers(PostgresSource):
    """A PostgresSource whose queries answer from a table instead of a server."""

    def __init__(self, answers: dict[str, Any]) -> None:
        self.settings = CdcSettings.parse(BASE)
        self.answers = answers

    def scalar(self, sql: str, *params: Any) -> Any:
        return next(value for start, value in self.answers.items() if sql.startswith(start))


def test_wal_level_replica_is_refused_with_the_alter_system_statement() -> None:
    with pytest.raises(ConnectError, match="ALTER SYSTEM SET wal_level = logical; and restart the server"):
        Answers({"SHOW wal_level": "replica"}).check_ready()


def test_logical_wal_and_a_replication_role_pass() -> None:
    Answers({"SHOW wal_level": "logical", "SELECT rolreplication": True}).check_ready()

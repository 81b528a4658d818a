"""JdbcSourceConnector on SQLite: which tables, how they are split, and every bad-input message."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from kopycat.api.errors import ConfigError, ConnectError
from kopycat.connectors.jdbc.source_connector import JdbcSourceConnector
from kopycat.connectors.jdbc.table_monitor import TableId, parse_tables
from tests.unit.connectors.jdbc.source_helpers import ConnectorCalls, Database, plan


@pytest.fixture
def db(tmp_path: Path) -> Database:
    database = Database(tmp_path / "many.db")
    database.run("".join(f"CREATE TABLE t{i} (id INTEGER PRIMARY KEY, v TEXT);" for i in range(1, 6)))
    return database


def props(db: Database, **extra: str) -> dict[str, str]:
    return {"connection.url": db.url, "mode": "bulk", "table.poll.interval.ms": "0",
            **{key.replace("_", "."): value for key, value in extra.items()}}


def tables_of(configs: list[dict[str, str]]) -> list[list[str]]:
    return [[t.unquoted for t in parse_tables(config["tables"])] for config in configs]


def test_the_whole_database_is_copied_when_no_table_filter_is_set(db: Database) -> None:
    _, configs = plan(props(db), max_tasks=1)
    assert tables_of(configs) == [["t1", "t2", "t3", "t4", "t5"]]
    assert configs[0]["tables.fetched"] == "true" and configs[0]["tables"] == '"t1","t2","t3","t4","t5"'


def test_five_tables_over_three_tasks_are_dealt_round_robin(db: Database) -> None:
    _, configs = plan(props(db), max_tasks=3)
    assert tables_of(configs) == [["t1", "t4"], ["t2", "t5"], ["t3"]]


def test_more_tasks_than_tables_gives_one_task_per_table(db: Database) -> None:
    _, configs = plan(props(db, table_whitelist="t2,t3"), max_tasks=8)
    assert tables_of(configs) == [["t2"], ["t3"]]


def test_a_query_is_planned_as_one_task(db: Database) -> None:
    _, configs = plan(props(db, query="SELECT * FROM t1", topic_prefix="q"), max_tasks=4)
    assert len(configs) == 1 and configs[0]["tables"] == "" and configs[0]["query"] == "SELECT * FROM t1"


@pytest.mark.parametrize(("extra", "expected"), [
    ({"table_whitelist": "t1, t3"}, ["t1", "t3"]),
    ({"table_blacklist": "t1,t3"}, ["t2", "t4", "t5"]),
    ({"table_include_list": "t[12]"}, ["t1", "t2"]),
    ({"table_include_list": "t.*", "table_exclude_list": "t[45]"}, ["t1", "t2", "t3"]),
])
def test_table_filters_keep_the_tables_they_name(db: Database, extra: dict[str, str],
                                                 expected: list[str]) -> None:
    assert tables_of(plan(props(db, **extra))[1]) == [expected]


def test_a_whitelisted_table_that_does_not_exist_is_named_with_the_tables_found(db: Database) -> None:
    with pytest.raises(ConfigError, match=r"table.whitelist names 't9'.*tables found: t1, t2, t3, t4, t5"):
        plan(props(db, table_whitelist="t1,t9"))


def test_a_missing_incrementing_column_names_table_column_and_the_columns_present(db: Database) -> None:
    with pytest.raises(ConfigError, match=r"incrementing.column.name='seq', but table t1 has no such "
                                          r"column; its columns are id, v"):
        plan(props(db, mode="incrementing", incrementing_column_name="seq"))


def test_a_missing_timestamp_column_names_table_column_and_the_columns_present(db: Database) -> None:
    with pytest.raises(ConfigError, match=r"timestamp.column.name='changed', but table t1 has no "
                                          r"such column; its columns are id, v"):
        plan(props(db, mode="timestamp", timestamp_column_name="changed"))


def test_timestamp_mode_without_a_timestamp_column_says_which_key_to_set(db: Database) -> None:
    with pytest.raises(ConfigError, match="set timestamp.column.name"):
        plan(props(db, mode="timestamp"))


def test_a_nullable_incrementing_column_is_refused_unless_validate_non_null_is_off(tmp_path: Path) -> None:
    db = Database(tmp_path / "nullable.db")
    db.run("CREATE TABLE events (id INTEGER PRIMARY KEY, seq INTEGER, v TEXT)")
    with pytest.raises(ConfigError, match=r"incrementing column seq on events because this column is "
                                          r"nullable.*validate.non.null=false"):
        plan(props(db, mode="incrementing", incrementing_column_name="seq"))
    assert plan(props(db, mode="incrementing", incrementing_column_name="seq",
                      validate_non_null="false"))[1]


def test_a_column_type_without_mapping_names_table_column_and_the_fix(tmp_path: Path) -> None:
    db = Database(tmp_path / "odd.db")
    db.run("CREATE TABLE odd (id INTEGER PRIMARY KEY, anything)")
    with pytest.raises(ConfigError, match=r"Column 'anything' of table 'odd' has type NullType.*"
                                          r"table.blacklist.*CAST\(anything AS TEXT\)"):
        plan(props(db))


def test_the_mode_must_be_set_as_in_confluents_connector(db: Database) -> None:
    with pytest.raises(ConfigError, match="Query mode must be specified.*bulk, incrementing"):
        plan({"connection.url": db.url})


def test_a_query_cannot_be_combined_with_table_filters(db: Database) -> None:
    with pytest.raises(ConfigError, match="query may not be combined.*table.whitelist"):
        plan(props(db, query="SELECT 1", table_whitelist="t1"))


def test_whitelist_and_blacklist_are_exclusive(db: Database) -> None:
    with pytest.raises(ConfigError, match="may not both be set"):
        plan(props(db, table_whitelist="t1", table_blacklist="t2"))


def test_the_password_never_appears_in_a_connection_error() -> None:
    connector = JdbcSourceConnector()
    connector.initialize(ConnectorCalls())
    with pytest.raises(ConnectError) as caught:
        connector.start({"connection.url": "postgresql+psycopg://kopy:s3cret@127.0.0.1:9/db",
                         "connection.attempts": "1", "mode": "bulk"})
    assert "s3cret" not in str(caught.value) and "127.0.0.1:9" in str(caught.value)


def test_validate_reports_database_problems_against_their_key(db: Database) -> None:
    results = {r.name: r for r in JdbcSourceConnector().validate(props(db, table_whitelist="nope"))}
    assert any("tables found" in error for error in results["table.whitelist"].errors)
    assert not results["mode"].errors


def test_a_new_table_is_noticed_and_asks_for_new_task_configs(db: Database) -> None:
    calls = ConnectorCalls()
    connector = JdbcSourceConnector()
    connector.initialize(calls)
    connector.start(props(db, table_poll_interval_ms="50"))
    try:
        db.run("CREATE TABLE t6 (id INTEGER PRIMARY KEY)")
        deadline = time.monotonic() + 5
        while calls.reconfigurations == 0 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert calls.reconfigurations >= 1
        assert ["t6"] in tables_of(connector.task_configs(6))
    finally:
        connector.stop()


def test_task_config_table_names_round_trip_through_quoting() -> None:
    tables = [TableId(None, "public", 'we"ird,name'), TableId(None, None, "plain")]
    text = ",".join(t.quoted for t in tables)
    assert parse_tables(text) == tables
    assert parse_tables("public.orders, other") == [TableId(None, "public", "orders"), TableId(None, None, "other")]


def test_offsets_set_through_the_rest_api_must_have_confluents_fields() -> None:
    connector = JdbcSourceConnector()
    partition = {"protocol": "1", "table": "public.orders"}
    assert connector.alter_offsets({}, {str(partition): {"incrementing": 5, "timestamp": 1, "timestamp_nanos": 0}})
    assert connector.alter_offsets({}, {str(partition): None})
    with pytest.raises(ConfigError, match="not a JDBC source offset"):
        connector.alter_offsets({}, {str(partition): {"position": 5}})
    with pytest.raises(ConfigError, match="not a JDBC source offset"):
        connector.alter_offsets({}, {str(partition): {"incrementing": "5"}})


def test_a_source_on_a_sqlite_file_that_does_not_exist_refuses_naming_the_path(tmp_path: Path) -> None:
    missing = tmp_path / "typo.db"
    with pytest.raises(ConfigError) as caught:
        plan({"connection.url": f"sqlite:///{missing}", "mode": "bulk", "table.poll.interval.ms": "0"}, max_tasks=1)
    assert str(missing) in str(caught.value) and "does not exist" in str(caught.value)
    assert not missing.exists()  # not created empty, which would read as "No tables were found"

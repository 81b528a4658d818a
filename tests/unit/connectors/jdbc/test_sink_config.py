"""JDBC sink configuration and connector: Confluent's keys and defaults, rules across keys."""

from __future__ import annotations

from pathlib import Path

import pytest

from kopycat.api.errors import ConfigError
from kopycat.api.records import TopicPartition
from kopycat.connectors.jdbc.sink_config import SINK_CONFIG, parse_sink_config
from kopycat.connectors.jdbc.sink_connector import JdbcSinkConnector
from kopycat.connectors.jdbc.sink_task import JdbcSinkTask
from tests.unit.connectors.jdbc.sink_helpers import rows, sqlite_url, start_task

BASE = {"name": "sink", "connection.url": "sqlite://"}


def test_defaults_are_confluents() -> None:
    defaults = {name: key.default for name, key in SINK_CONFIG.keys.items() if key.has_default}
    assert {k: defaults[k] for k in ("insert.mode", "pk.mode", "pk.fields", "fields.whitelist",
                                     "table.name.format", "auto.create", "auto.evolve", "delete.enabled",
                                     "batch.size", "max.retries", "retry.backoff.ms", "db.timezone",
                                     "quote.sql.identifiers", "connection.attempts", "connection.backoff.ms")} == {
        "insert.mode": "insert", "pk.mode": "none", "pk.fields": [], "fields.whitelist": [],
        "table.name.format": "${topic}", "auto.create": False, "auto.evolve": False, "delete.enabled": False,
        "batch.size": 3000, "max.retries": 10, "retry.backoff.ms": 3000, "db.timezone": "UTC",
        "quote.sql.identifiers": "always", "connection.attempts": 3, "connection.backoff.ms": 10_000}


def test_kafka_pk_mode_defaults_to_the_three_coordinate_columns() -> None:
    settings = parse_sink_config({**BASE, "pk.mode": "KAFKA", "insert.mode": "Upsert"})
    assert (settings.pk_mode, settings.insert_mode) == ("kafka", "upsert")
    assert settings.pk_fields == ("__connect_topic", "__connect_partition", "__connect_offset")


def test_delete_enabled_needs_record_key_and_the_message_names_both_keys() -> None:
    with pytest.raises(ConfigError, match=r"delete.enabled=true requires pk.mode=record_key \(it is record_value\)"):
        parse_sink_config({**BASE, "delete.enabled": "true", "pk.mode": "record_value"})
    results = {v.name: v.errors for v in JdbcSinkConnector().validate({**BASE, "delete.enabled": "true"})}
    assert len(results["delete.enabled"]) == 1 and "pk.mode=record_key" in results["delete.enabled"][0]
    assert results["pk.mode"] == []


@pytest.mark.parametrize(("props", "key", "text"), [
    ({"insert.mode": "upsert"}, "insert.mode", "needs a primary key"),
    ({"insert.mode": "update", "pk.mode": "none"}, "insert.mode", "pk.mode=none"),
    ({"pk.mode": "kafka", "pk.fields": "a,b"}, "pk.fields", "exactly 3"),
    ({"db.timezone": "Mars/Base"}, "db.timezone", "is not a time zone"),
    ({"insert.mode": "merge"}, "insert.mode", "INSERT, UPSERT, UPDATE"),
], ids=["upsert-without-key", "update-without-key", "kafka-two-fields", "bad-zone", "bad-mode"])
def test_bad_combinations_are_refused_naming_the_key(props: dict[str, str], key: str, text: str) -> None:
    with pytest.raises(ConfigError, match=text) as failure:
        parse_sink_config({**BASE, **props})
    assert failure.value.key == key


def test_the_connector_name_is_required_since_offsets_are_stored_under_it() -> None:
    with pytest.raises(ConfigError, match="kopycat_offsets"):
        parse_sink_config({"connection.url": "sqlite://"})


def test_the_connector_plans_max_tasks_identical_configs() -> None:
    connector = JdbcSinkConnector()
    props = {**BASE, "topics": "a,b", "pk.mode": "record_key", "insert.mode": "upsert"}
    connector.start(props)
    assert connector.task_configs(3) == [props, props, props]
    assert connector.task_class() is JdbcSinkTask


def test_alter_offsets_writes_the_offsets_table_the_tasks_seek_to(tmp_path: Path) -> None:
    url = sqlite_url(tmp_path)
    props = {**BASE, "connection.url": url}
    connector = JdbcSinkConnector()
    assert connector.alter_offsets(props, {TopicPartition("t", 0): 42, TopicPartition("t", 1): 7}) is True
    assert connector.alter_offsets(props, {TopicPartition("t", 1): None}) is True
    assert rows(url, "SELECT topic, partition, \"offset\" FROM kopycat_offsets") == [("t", 0, 42)]
    task, context = start_task(url, name="sink")
    task.open([TopicPartition("t", 0), TopicPartition("t", 1)])
    assert context.seeks == {TopicPartition("t", 0): 42}
    task.stop()

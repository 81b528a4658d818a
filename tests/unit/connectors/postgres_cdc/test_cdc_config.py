"""The CDC connector takes Debezium's keys and explains the ones it cannot use."""

from __future__ import annotations

import pytest

from kopycat.api.errors import ConfigError
from kopycat.connectors.postgres_cdc.config import CdcSettings
from kopycat.connectors.postgres_cdc.source_connector import PostgresConnector
from kopycat.plugins import connector_class

BASE = {"topic.prefix": "shop", "database.hostname": "db", "database.user": "cdc", "database.dbname": "shop"}


def test_debeziums_class_name_resolves_to_the_kopycat_connector() -> None:
    assert connector_class("io.debezium.connector.postgresql.PostgresConnector") is PostgresConnector
    assert connector_class("PostgresConnector") is PostgresConnector


def test_debeziums_defaults_apply() -> None:
    settings = CdcSettings.parse(BASE)
    assert (settings.port, settings.slot, settings.publication, settings.publication_mode) == (
        5432, "debezium", "dbz_publication", "all_tables")
    assert (settings.snapshot_mode, settings.tombstones, settings.decimal_mode, settings.time_mode) == (
        "initial", True, "precise", "adaptive")


def test_table_filters_match_whole_schema_qualified_names() -> None:
    settings = CdcSettings.parse({**BASE, "table.include.list": "public.orders,inventory\\..*"})
    assert settings.captures("public", "orders") and settings.captures("inventory", "stock")
    assert not settings.captures("public", "orders_archive")
    excluding = CdcSettings.parse({**BASE, "table.exclude.list": "public.audit"})
    assert not excluding.captures("public", "audit") and excluding.captures("public", "orders")


@pytest.mark.parametrize(("key", "value"), [("snapshot.mode", "sometimes"), ("decimal.handling.mode", "exact"),
                                            ("plugin.name", "decoderbufs"), ("heartbeat.interval.ms", "-5")])
def test_unsupported_values_fail_naming_the_key(key: str, value: str) -> None:
    with pytest.raises(ConfigError) as error:
        CdcSettings.parse({**BASE, key: value})
    assert key in str(error.value)


@pytest.mark.parametrize(("props", "key", "message"), [
    ({"table.include.list": "public.orders", "table.exclude.list": "public.audit"}, "table.exclude.list",
     "not both"),
    ({"signal.data.collection": "signals"}, "signal.data.collection", "<schema>.<table>"),
    ({"signal.enabled.channels": "source,kafka"}, "signal.enabled.channels", "kafka"),
])
def test_validate_reports_checks_across_keys_under_their_key(props: dict[str, str], key: str, message: str) -> None:
    results = {result.name: result for result in PostgresConnector().validate({**BASE, **props})}

    assert message in " ".join(results[key].errors)
    assert [name for name, result in results.items() if result.errors] == [key]


def test_validate_passes_a_good_config_without_errors() -> None:
    assert not [result for result in PostgresConnector().validate(BASE) if result.errors]

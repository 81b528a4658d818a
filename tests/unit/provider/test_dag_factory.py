"""The DAG factory without services: DAG ids, schedules, paused states, the listing cache, bad schedules."""

from __future__ import annotations

from pathlib import Path

import pytest

from kopycat.runtime.connector_config import validate_connector_config
from kopycat.storage.config_backing_store import MemoryConfigBackingStore, TargetState
from kopycat_airflow import dag_factory
from kopycat_airflow.connector_config import StoredConnector
from kopycat_airflow.dag_factory import (
    ConnectorListing,
    connector_dag_id,
    connector_dags,
    listings_of,
    read_connector_listings,
)

FILE_SOURCE = "FileStreamSource"


def _listing(name: str, schedule: str = "*/5 * * * *", state: str = "STARTED") -> ConnectorListing:
    return ConnectorListing(name, FILE_SOURCE, schedule, state)


def test_dag_ids_keep_legal_names_and_tell_apart_names_that_differ_only_in_illegal_characters() -> None:
    assert connector_dag_id("shop-jdbc.source_1") == "kopycat_connector_shop-jdbc.source_1"
    spaced, underscored = connector_dag_id("a b"), connector_dag_id("a_b")
    assert spaced.startswith("kopycat_connector_a_b_") and underscored == "kopycat_connector_a_b"
    assert spaced != underscored


def test_listings_carry_the_schedule_the_class_and_the_target_state_but_no_config_values() -> None:
    with MemoryConfigBackingStore() as store:
        store.put_connector_config("b", {"name": "b", "connector.class": FILE_SOURCE, "file.password": "s3cret"})
        store.put_connector_config("a", {"name": "a", "connector.class": FILE_SOURCE, "kopycat.schedule": "@hourly"})
        store.put_target_state("b", TargetState.PAUSED)
        listings = listings_of(store.snapshot())
    assert listings == [ConnectorListing("a", FILE_SOURCE, "@hourly", "STARTED"),
                        ConnectorListing("b", FILE_SOURCE, "*/5 * * * *", "PAUSED")]
    assert "s3cret" not in repr(listings)


def test_each_connector_becomes_a_plan_copy_summary_dag_on_its_schedule_paused_unless_started() -> None:
    dags = connector_dags(listings=[_listing("orders"), _listing("hourly", "@hourly", "STOPPED"),
                                    _listing("manual", "none", "PAUSED")])
    assert sorted(dags) == ["kopycat_connector_hourly", "kopycat_connector_manual", "kopycat_connector_orders"]
    orders = dags["kopycat_connector_orders"]
    assert sorted(orders.task_ids) == ["orders.copy", "orders.plan", "orders.summary"]
    assert orders.timetable.summary == "*/5 * * * *" and orders.max_active_runs == 1
    assert orders.is_paused_upon_creation is False
    assert "source" in orders.tags
    assert dags["kopycat_connector_hourly"].is_paused_upon_creation is True
    assert dags["kopycat_connector_manual"].timetable.can_be_scheduled is False
    plan = orders.get_task("orders.plan")
    assert plan.connector_config == StoredConnector("orders")  # the config itself stays in the topic


def test_a_connector_with_a_bad_stored_schedule_is_skipped_and_the_others_still_get_dags(
        caplog: pytest.LogCaptureFixture) -> None:
    dags = connector_dags(listings=[_listing("good"), _listing("bad", "61 * * * *")])
    assert list(dags) == ["kopycat_connector_good"]
    assert "No DAG for connector bad (kopycat.schedule='61 * * * *')" in caplog.text


def test_an_unreachable_config_topic_keeps_the_last_listing_read(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    cache = tmp_path / "kopycat" / "connectors.json"
    dag_factory._write_cache(cache, [_listing("orders", "@daily", "PAUSED")])
    monkeypatch.setattr(dag_factory, "_READ_TIMEOUT_S", 1.0)
    listings = read_connector_listings({"bootstrap.servers": "127.0.0.1:1"}, cache)
    assert listings == [_listing("orders", "@daily", "PAUSED")]


def test_a_schedule_that_is_not_cron_is_refused_naming_the_key_the_value_and_the_forms_accepted() -> None:
    result = validate_connector_config({"name": "x", "connector.class": FILE_SOURCE, "topic": "t",
                                        "file": "/tmp/x", "kopycat.schedule": "every 5 minutes"})
    errors = {c["value"]["name"]: c["value"]["errors"] for c in result["configs"] if c["value"]["errors"]}
    assert list(errors) == ["kopycat.schedule"]
    assert "'every 5 minutes'" in errors["kopycat.schedule"][0]
    assert "cron expression of 5 fields" in errors["kopycat.schedule"][0] and "'none'" in errors["kopycat.schedule"][0]

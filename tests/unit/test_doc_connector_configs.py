"""Every connector config the docs site shows is one Kopycat accepts: a wrong key in a page fails here.

The how-to pages pull include/connectors/*.properties in with snippets, so these files are what
users copy. Each is checked as ``kopycat validate`` checks it (Kafka Connect's validate response
through the connector's ConfigDef, then the converters, transformations and error handling a run
builds) and, beyond Kafka (which passes unknown keys through silently), every key must be one the
connector, the framework or a declared prefix family takes, so a misspelt key is caught too.
Keys the example DAGs set at run time (a database URL, the clusters' addresses) are given as they do.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from kopycat.connectors.dlt.source_config import ARGS_PREFIX as DLT_ARGS_PREFIX
from kopycat.connectors.postgres_cdc.source_connector import PostgresConnector
from kopycat.connectors.singer.sink_config import SETTING_PREFIX as TARGET_SETTING_PREFIX
from kopycat.connectors.singer.source_config import SETTING_PREFIX as TAP_SETTING_PREFIX
from kopycat.properties import load_config_file
from kopycat.runtime.connector_config import (
    CONNECTOR_CLASS_CONFIG,
    connector_class,
    connector_definition,
    validate_connector_config,
)
from kopycat.runtime.task_factory import check_task_parts

REPO = Path(__file__).resolve().parents[2]
CONFIGS = sorted((REPO / "include" / "connectors").glob("*.properties"))

FRAMEWORK_PREFIXES = ("topic.creation.", "producer.override.", "consumer.override.", "admin.override.",
                      "key.converter.", "value.converter.", "header.converter.")
"""Key families Kafka Connect itself reads from a connector config, beyond the keys it declares."""

CONNECTOR_PREFIXES = {
    "kopycat.connectors.singer.SingerSourceConnector": (TAP_SETTING_PREFIX,),
    "kopycat.connectors.singer.SingerSinkConnector": (TARGET_SETTING_PREFIX,),
    "kopycat.connectors.dlt.DltSourceConnector": (DLT_ARGS_PREFIX,),
}
"""A connector's own free-form key families: the settings handed to a Singer plugin or a dlt source."""

MIRROR_CLUSTERS = {"source.cluster.bootstrap.servers": "primary:9092",
                   "target.cluster.bootstrap.servers": "backup:9092"}


def run_time_keys(path: Path, tmp_path: Path) -> dict[str, str]:
    """The keys the example DAG for ``path`` sets from its environment, set as it would."""
    if path.name == "shop-jdbc-source.properties":
        database = tmp_path / "shop.db"
        sqlite3.connect(database).close()
        return {"connection.url": f"sqlite:///{database}"}
    if path.name.startswith("shop-mirror-"):
        return dict(MIRROR_CLUSTERS)
    return {}


def unknown_keys(props: dict[str, str]) -> list[str]:
    """Keys neither the connector's ConfigDef (with the framework's) nor a known prefix family takes."""
    name = props[CONNECTOR_CLASS_CONFIG]
    definition = connector_definition(props, connector_class(name)())
    prefixes = FRAMEWORK_PREFIXES + CONNECTOR_PREFIXES.get(name, ())
    return [key for key in props if key not in definition and not key.startswith(prefixes)]


def test_the_docs_have_connector_configs_to_check() -> None:
    names = {path.name for path in CONFIGS}
    assert {"shop-cdc-source.properties", "shop-singer-source.properties", "shop-singer-sink.properties"} <= names


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.name)
def test_every_doc_config_passes_kopycat_validate(path: Path, tmp_path: Path) -> None:
    props = {**load_config_file(path), **run_time_keys(path, tmp_path)}
    response = validate_connector_config(props)
    errors = {entry["value"]["name"]: entry["value"]["errors"] for entry in response["configs"]
              if entry["value"]["errors"]}
    assert errors == {}
    check_task_parts(props)


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.name)
def test_every_key_of_every_doc_config_is_one_the_connector_takes(path: Path) -> None:
    assert unknown_keys(load_config_file(path)) == []


def test_a_misspelt_key_is_caught() -> None:
    props = {**load_config_file(REPO / "include" / "connectors" / "shop-cdc-source.properties"),
             "slot.nmae": "typo"}
    assert unknown_keys(props) == ["slot.nmae"]


def test_the_cdc_config_starts_the_connector_with_its_cross_key_checks() -> None:
    """PostgresConnector.start parses what the ConfigDef cannot check alone (the signal table's
    <schema>.<table> form, the signal channels, include xor exclude) without connecting."""
    connector = PostgresConnector()
    connector.start(load_config_file(REPO / "include" / "connectors" / "shop-cdc-source.properties"))
    assert connector.settings.signal_table == ("public", "debezium_signal")
    assert connector.settings.slot == "kopycat_shop"
    assert connector.settings.captures("public", "orders") and not connector.settings.captures("public", "audit")

"""Every key a user can set is documented: the docs site's reference pages print these doc strings.

The reference pages (docs/gen_reference.py) render each plugin's and the worker's ConfigDef, as
Kafka's docs render ``ConfigDef.toHtml``; a key without a doc would be a blank row there, in
``kopycat validate`` and in the REST API's ``documentation`` field.
"""

from __future__ import annotations

import pytest

from kopycat.api.config import ConfigDef, ConfigType
from kopycat.plugins import PluginDesc, list_plugins, plugin_config_def
from kopycat.runtime.connector_config import SINK_CONNECTOR_CONFIG, SOURCE_CONNECTOR_CONFIG
from kopycat.runtime.worker_config import WORKER_CONFIG
from kopycat.storage.worker_storage_config import (
    FILE_OFFSET_STORE_CONFIG,
    KAFKA_CONFIG_STORE_CONFIG,
    KAFKA_OFFSET_STORE_CONFIG,
    KAFKA_STATUS_STORE_CONFIG,
)

FRAMEWORK_CONFIGS = {
    "worker": WORKER_CONFIG, "file offset store": FILE_OFFSET_STORE_CONFIG,
    "offsets topic": KAFKA_OFFSET_STORE_CONFIG, "config topic": KAFKA_CONFIG_STORE_CONFIG,
    "status topic": KAFKA_STATUS_STORE_CONFIG, "source connector": SOURCE_CONNECTOR_CONFIG,
    "sink connector": SINK_CONNECTOR_CONFIG,
}


def undocumented(definition: ConfigDef) -> list[str]:
    return [key.name for key in definition.keys.values() if not key.documentation.strip()]


def test_plugins_are_found_for_every_kind() -> None:
    kinds = {plugin.type for plugin in list_plugins()}
    assert {"source", "sink", "converter", "transformation", "predicate"} <= kinds


@pytest.mark.parametrize("plugin", list_plugins(), ids=lambda p: f"{p.type}:{p.class_name}")
def test_every_key_of_every_plugin_has_a_doc_string(plugin: PluginDesc) -> None:
    assert undocumented(plugin_config_def(plugin)) == []


@pytest.mark.parametrize("name", FRAMEWORK_CONFIGS)
def test_every_worker_and_common_connector_key_has_a_doc_string(name: str) -> None:
    assert undocumented(FRAMEWORK_CONFIGS[name]) == []


def test_a_key_without_a_doc_string_is_caught() -> None:
    definition = ConfigDef().define("documented", ConfigType.STRING, "", doc="Says what it does.").define(
        "silent", ConfigType.STRING, "")
    assert undocumented(definition) == ["silent"]

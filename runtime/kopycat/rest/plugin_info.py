"""What the REST API tells of connector plugins: their list, their keys, a validation, their type.

Follows Kafka Connect's ``ConnectorPluginsResource`` and ``AbstractHerder.validateConnectorConfig``
(checks, messages, response shapes). Stateless: :class:`~kopycat.rest.herder.RestHerder` answers
the ``/connector-plugins`` endpoints through these functions, and uses :func:`connector_type` for
the ``type`` of a connector's info and status.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kopycat.api.connector import SinkConnector, SourceConnector
from kopycat.api.errors import ConfigError
from kopycat.plugins import connector_class, list_plugins, plugin_config_def
from kopycat.rest.bodies import config_strings
from kopycat.rest.errors import ConnectRestError
from kopycat.rest.masking import mask_config, mask_text, mask_validation
from kopycat.runtime.connector_config import CONNECTOR_CLASS_CONFIG, connector_definition
from kopycat.runtime.connector_config import validate_connector_config as validate_config
from kopycat.storage.offset_codec import java_ordered

__all__ = ["connector_plugins", "connector_type", "missing_connector_type", "plugin_config",
           "validate_plugin_config"]


def connector_type(config: Mapping[str, Any]) -> str:
    """``source``, ``sink`` or ``unknown`` (Kafka's ``ConnectorType``, lower case in JSON)."""
    try:
        cls = connector_class(config.get(CONNECTOR_CLASS_CONFIG) or "")
    except ConfigError:
        return "unknown"
    return "sink" if issubclass(cls, SinkConnector) else "source" if issubclass(cls, SourceConnector) else "unknown"


def missing_connector_type(props: Mapping[str, Any]) -> ConnectRestError:
    """The 400 Kafka answers for a config without ``connector.class``, the config shown as Java's
    ``Map.toString`` shows it (``{a=b, c=d}``), secrets hidden.

    Kafka prints a ``new HashMap<>(config)`` (the config after its config providers ran), so the keys come in
    that map's order: a table sized for the config's size (``HashMap(Map)``), not the request's order.
    """
    masked = mask_config(props)
    ordered = java_ordered(masked, int(len(masked) / 0.75 + 1.0))
    shown = "{" + ", ".join(f"{k}={v}" for k, v in ordered.items()) + "}"
    return ConnectRestError.bad_request(f"Connector config {shown} contains no connector type")


def connector_plugins(connectors_only: bool = True) -> list[dict[str, str]]:
    """``GET /connector-plugins``: Kafka's ``PluginInfo`` list."""
    return [{"class": p.class_name, "type": p.type, "version": p.version}
            for p in list_plugins(connectors_only=connectors_only)]


def plugin_config(plugin: str) -> list[dict[str, Any]]:
    """``GET /connector-plugins/{plugin}/config``: the plugin's keys as ``ConfigKeyInfo``.

    A connector's own keys come first, then every connector's; converters, header converters,
    transformations and predicates answer their own keys (KIP-769).
    """
    try:
        definition = connector_definition({CONNECTOR_CLASS_CONFIG: plugin})
    except ConfigError as exc:
        for other in list_plugins():
            if other.type not in ("source", "sink") and plugin in (other.class_name,
                                                                   other.class_name.rsplit(".", 1)[-1]):
                return [key.info() for key in plugin_config_def(other).keys.values()]
        raise ConnectRestError.not_found(f"Unknown plugin {plugin}.") from exc
    own = connector_class(plugin)().config().keys
    keys = [*(key for name, key in definition.keys.items() if name in own),
            *(key for name, key in definition.keys.items() if name not in own)]
    return [key.info() for key in keys]  # the plugin's own keys first, as Kafka 4.1 lists them


def validate_plugin_config(plugin: str, config: Any, worker_props: Mapping[str, Any]) -> dict[str, Any]:
    """``PUT /connector-plugins/{plugin}/config/validate``: Kafka's ``ConfigInfos``, secrets hidden."""
    props = config_strings(config, "connector configuration")
    included = props.get(CONNECTOR_CLASS_CONFIG)
    if included is not None and not _alias(included).endswith(_alias(plugin)):
        raise ConnectRestError.bad_request(f"Included connector type {included} does not match request type "
                                           f"{plugin}")
    if included is None:
        raise missing_connector_type(props)
    try:
        return mask_validation(validate_config(props, worker_props), props)
    except ConfigError as exc:
        raise ConnectRestError.bad_request(mask_text(str(exc), props)) from exc


def _alias(plugin: str) -> str:
    """Kafka's ``normalizedPluginName``: ``FileStreamSourceConnector`` -> ``FileStreamSource``."""
    return plugin[:-len("Connector")] if plugin.endswith("Connector") and plugin != "Connector" else plugin

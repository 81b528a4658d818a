"""Which class a ``connector.class`` or ``key.converter`` names, and what plugins exist.

Follows Kafka Connect's ``Plugins`` and ``PluginUtils`` aliases, so a connector config written
for Kafka Connect works unchanged. A built-in plugin answers to:

    org.apache.kafka.connect.file.FileStreamSourceConnector     Kafka's class name
    FileStreamSourceConnector / FileStreamSource                 the simple name, with or without
                                                                 the "Connector" suffix
    kopycat.connectors.files.filestream_source.FileStreamSourceConnector   the Python path

Third-party connectors register under the entry point group ``kopycat.connectors``
(``name = "pkg.module:Class"``) and then answer to the entry point name and the class's simple
names too; any importable class path works without registration. Transformations and predicates
resolve through :mod:`kopycat.transforms.registry`.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from importlib.metadata import entry_points
from typing import Any, Final

from kopycat import __version__
from kopycat.api.config import ConfigDef, resolve_class
from kopycat.api.config_provider import ConfigProvider
from kopycat.api.connector import Connector, SinkConnector, SourceConnector
from kopycat.api.converter import Converter, HeaderConverter
from kopycat.api.errors import ConfigError

__all__ = [
    "CONNECTOR_ENTRY_POINT_GROUP", "PluginDesc", "config_provider_class", "connector_class", "converter_class",
    "header_converter_class", "list_plugins", "new_converter", "new_header_converter", "plugin_class",
    "plugin_class_name", "plugin_config_def",
]

CONNECTOR_ENTRY_POINT_GROUP: Final = "kopycat.connectors"

_BUILTIN_CONNECTORS: Final = {
    "org.apache.kafka.connect.file.FileStreamSourceConnector":
        "kopycat.connectors.files.filestream_source:FileStreamSourceConnector",
    "org.apache.kafka.connect.file.FileStreamSinkConnector":
        "kopycat.connectors.files.filestream_sink:FileStreamSinkConnector",
    "io.confluent.connect.jdbc.JdbcSourceConnector": "kopycat.connectors.jdbc.source_connector:JdbcSourceConnector",
    "io.confluent.connect.jdbc.JdbcSinkConnector": "kopycat.connectors.jdbc.sink_connector:JdbcSinkConnector",
    "io.confluent.connect.hdfs.HdfsSinkConnector": "kopycat.connectors.files.file_sink:FileSinkConnector",
    "io.confluent.connect.hdfs3.Hdfs3SinkConnector": "kopycat.connectors.files.file_sink:FileSinkConnector",
    "io.confluent.connect.s3.S3SinkConnector": "kopycat.connectors.files.file_sink:FileSinkConnector",
    "kopycat.connectors.files.FileSinkConnector": "kopycat.connectors.files.file_sink:FileSinkConnector",
    "org.apache.kafka.connect.mirror.MirrorSourceConnector":
        "kopycat.connectors.mirror.source_connector:MirrorSourceConnector",
    "org.apache.kafka.connect.mirror.MirrorCheckpointConnector":
        "kopycat.connectors.mirror.checkpoint_connector:MirrorCheckpointConnector",
    "io.debezium.connector.postgresql.PostgresConnector":
        "kopycat.connectors.postgres_cdc.source_connector:PostgresConnector",
    "org.apache.kafka.connect.mirror.MirrorHeartbeatConnector":
        "kopycat.connectors.mirror.heartbeat:MirrorHeartbeatConnector",
    "kopycat.connectors.singer.SingerSourceConnector":
        "kopycat.connectors.singer.source_connector:SingerSourceConnector",
    "kopycat.connectors.singer.SingerSinkConnector": "kopycat.connectors.singer.sink_connector:SingerSinkConnector",
    "kopycat.connectors.dlt.DltSourceConnector": "kopycat.connectors.dlt.source_connector:DltSourceConnector",
}
"""Kafka's (or Confluent's) class name -> ours, imported only when asked for."""

_BUILTIN_CONVERTERS: Final = {
    "org.apache.kafka.connect.json.JsonConverter": "kopycat.converters.json:JsonConverter",
    "org.apache.kafka.connect.storage.StringConverter": "kopycat.converters.string:StringConverter",
    "org.apache.kafka.connect.converters.ByteArrayConverter":
        "kopycat.converters.bytes:ByteArrayConverter",
    "io.confluent.connect.avro.AvroConverter": "kopycat.converters.avro:AvroConverter",
    "io.confluent.connect.json.JsonSchemaConverter": "kopycat.converters.json_schema:JsonSchemaConverter",
    "io.confluent.connect.protobuf.ProtobufConverter": "kopycat.converters.protobuf:ProtobufConverter",
    **{f"org.apache.kafka.connect.converters.{kind}Converter": f"kopycat.converters.numbers:{kind}Converter"
       for kind in ("Boolean", "Double", "Float", "Integer", "Long", "Short")},
}

_BUILTIN_HEADER_CONVERTERS: Final = {
    **_BUILTIN_CONVERTERS,
    "org.apache.kafka.connect.storage.SimpleHeaderConverter": "kopycat.converters.simple_header:SimpleHeaderConverter",
}
"""Header converters: every converter, and Kafka's header-only SimpleHeaderConverter."""

_BUILTIN_CONFIG_PROVIDERS: Final = {
    "org.apache.kafka.common.config.provider.FileConfigProvider": "kopycat.config_providers:FileConfigProvider",
    "org.apache.kafka.common.config.provider.EnvVarConfigProvider": "kopycat.config_providers:EnvVarConfigProvider",
    "org.apache.kafka.common.config.provider.DirectoryConfigProvider":
        "kopycat.config_providers:DirectoryConfigProvider",
}


@dataclass(frozen=True)
class PluginDesc:
    """One installed plugin as ``GET /connector-plugins`` shows it (Kafka's ``PluginDesc``)."""

    class_name: str
    type: str  # source, sink, converter, header_converter, transformation, predicate
    version: str


def _load(target: str) -> type:
    module_name, _, attribute = target.partition(":")
    return getattr(importlib.import_module(module_name), attribute)  # type: ignore[no-any-return]


def _simple_names(kafka_name: str) -> list[str]:
    simple = kafka_name.rsplit(".", 1)[-1]
    names = [kafka_name, simple]
    if simple.endswith("Connector") and simple != "Connector":
        names.append(simple[: -len("Connector")])
    return names


@cache
def _connector_aliases() -> dict[str, str]:
    """Every accepted spelling -> "module:Class", built-ins first, then entry points."""
    aliases: dict[str, str] = {}
    for kafka_name, target in _BUILTIN_CONNECTORS.items():
        for name in _simple_names(kafka_name) + [target.replace(":", ".")]:
            aliases[name] = target
    for entry in entry_points(group=CONNECTOR_ENTRY_POINT_GROUP):
        aliases.setdefault(entry.name, entry.value)
        for name in _simple_names(entry.value.replace(":", ".")):
            aliases.setdefault(name, entry.value)
    return aliases


def _builtin_aliases(builtins: Mapping[str, str]) -> dict[str, str]:
    aliases: dict[str, str] = {}
    for kafka_name, target in builtins.items():
        for name in (kafka_name, kafka_name.rsplit(".", 1)[-1], target.replace(":", ".")):
            aliases[name] = target
    return aliases


def _resolve(key: str, value: Any, aliases: Mapping[str, str], base: type, known: Iterable[str]) -> type:
    if isinstance(value, type):
        cls = value
    else:
        name = str(value).strip()
        target = aliases.get(name)
        try:
            cls = _load(target) if target else resolve_class(key, name)
        except ConfigError as exc:
            raise ConfigError(f"{exc} Known {base.__name__} plugins: {', '.join(known)}; or give "
                              f"the import path of a {base.__module__}.{base.__name__} subclass.",
                              key=key) from None
    if not (isinstance(cls, type) and issubclass(cls, base)):
        raise ConfigError.for_key(key, value, f"{cls!r} is not a {base.__module__}.{base.__name__}")
    if inspect.isabstract(cls):
        raise ConfigError.for_key(key, value, f"{cls.__qualname__} is abstract and cannot be created")
    return cls


def connector_class(value: Any, key: str = "connector.class") -> type[Connector]:
    """The Connector class ``value`` names; ConfigError listing the known ones if none."""
    aliases = _connector_aliases()
    known = sorted({name for name in aliases if "." not in name})
    return _resolve(key, value, aliases, Connector, known)  # type: ignore[return-value]


def config_provider_class(value: Any, key: str = "config.providers") -> type[ConfigProvider]:
    """The ConfigProvider class ``value`` names: Kafka's class name, its simple name, or an import path."""
    aliases = _builtin_aliases(_BUILTIN_CONFIG_PROVIDERS)
    known = sorted(name for name in aliases if "." not in name)
    return _resolve(key, value, aliases, ConfigProvider, known)  # type: ignore[return-value]


def converter_class(value: Any, key: str = "value.converter") -> type[Converter]:
    return _resolve(key, value, _builtin_aliases(_BUILTIN_CONVERTERS), Converter,  # type: ignore[return-value]
                    list(_BUILTIN_CONVERTERS))


def header_converter_class(value: Any, key: str = "header.converter") -> type[HeaderConverter]:
    return _resolve(key, value, _builtin_aliases(_BUILTIN_HEADER_CONVERTERS),  # type: ignore[return-value]
                    HeaderConverter, [name for name, target in _BUILTIN_HEADER_CONVERTERS.items()
                                      if issubclass(_load(target), HeaderConverter)])


def new_converter(key: str, value: Any, configs: Mapping[str, Any], *, is_key: bool) -> Converter:
    """Instantiate and configure the converter config ``key`` names with its prefixed keys.

    ``configs`` are the converter's own keys, prefix already stripped (Kafka's
    ``Plugins.newConverter``).
    """
    converter = converter_class(value, key)()
    try:
        converter.configure(dict(configs), is_key)
    except ConfigError as exc:
        raise ConfigError(f"{key}={value}: {exc}", key=f"{key}.{exc.key}" if exc.key else key) from exc
    return converter


def new_header_converter(key: str, value: Any, configs: Mapping[str, Any]) -> HeaderConverter:
    converter = header_converter_class(value, key)()
    converter.configure(dict(configs), False)
    return converter


def list_plugins(*, connectors_only: bool = False) -> list[PluginDesc]:
    """Installed plugins, as ``GET /connector-plugins`` (``?connectorsOnly=false``) lists them."""
    from kopycat.transforms.registry import PREDICATES, TRANSFORMATIONS

    found: dict[str, PluginDesc] = {}
    for target in sorted(set(_connector_aliases().values())):
        cls = _load(target)
        kind = "source" if issubclass(cls, SourceConnector) else "sink" if issubclass(
            cls, SinkConnector) else "unknown"
        found[target] = PluginDesc(plugin_class_name(cls), kind, cls().version())
    plugins = sorted(found.values(), key=lambda p: p.class_name)
    if connectors_only:
        return plugins
    for kafka_name, target in _BUILTIN_CONVERTERS.items():
        cls = _load(target)
        plugins.append(PluginDesc(kafka_name, "converter", __version__))
        if issubclass(cls, HeaderConverter):
            plugins.append(PluginDesc(kafka_name, "header_converter", __version__))
    for kafka_name in _BUILTIN_HEADER_CONVERTERS.keys() - _BUILTIN_CONVERTERS.keys():
        plugins.append(PluginDesc(kafka_name, "header_converter", __version__))
    for kind, registry in (("transformation", TRANSFORMATIONS), ("predicate", PREDICATES)):
        plugins.extend(PluginDesc(name, kind, __version__) for name in registry.kafka_names())
    return plugins


def plugin_class(plugin: PluginDesc) -> type:
    """The class behind one of :func:`list_plugins`' entries."""
    from kopycat.transforms.registry import PREDICATES, TRANSFORMATIONS

    if plugin.type in ("source", "sink"):
        return connector_class(plugin.class_name)
    if plugin.type == "converter":
        return converter_class(plugin.class_name, "converter")
    if plugin.type == "header_converter":
        return header_converter_class(plugin.class_name, "header.converter")
    registry = TRANSFORMATIONS if plugin.type == "transformation" else PREDICATES
    return registry.resolve(plugin.type, plugin.class_name)


def plugin_config_def(plugin: PluginDesc) -> ConfigDef:
    """The plugin's own keys, as ``GET /connector-plugins/{plugin}/config`` answers them for every
    plugin type (KIP-769): what the reference docs print and the doc-string test checks."""
    # Kafka's Converter.config() is a default method; on our Converter SPI it is optional.
    config = getattr(plugin_class(plugin)(), "config", None)
    return config() if config is not None else ConfigDef()


def plugin_class_name(cls: type) -> str:
    """Kafka's name for our built-ins (so REST clients see what they know), else the Python path: the
    ``class`` of ``GET /connector-plugins`` and the ``name`` of a validation."""
    python_name = f"{cls.__module__}:{cls.__qualname__}"
    for kafka_name, target in _BUILTIN_CONNECTORS.items():
        if target == python_name:
            return kafka_name
    return f"{cls.__module__}.{cls.__qualname__}"


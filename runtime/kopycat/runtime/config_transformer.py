"""Resolve ``${provider:[path:]key}`` placeholders in worker and connector configs (KIP-297).

Follows Kafka's ``ConfigTransformer`` (the syntax and the lookups), ``AbstractConfig``'s
``resolveConfigVariables`` (a worker's own properties, resolved with the providers they declare)
and Connect's ``WorkerConfigTransformer`` (a connector's config, resolved with the *worker's*
providers: connector configs declare none) and ``AbstractHerder.reverseTransform`` (task configs
get their placeholders back before anyone stores or shows them).

Resolution happens at the last moment: when a connector starts (:mod:`kopycat.runtime.planning`)
and when a task's runner and Kafka clients are built (:mod:`kopycat.runtime.task_factory`). What
is stored (config topic), shown (REST, ``kopycat validate``), put in XCom and logged keeps the
placeholder. As in Kafka, a placeholder naming an unknown provider or a key its provider does not
have is left as it is; Kopycat logs a warning naming the config key (never a value).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Final

from kopycat.api.config_provider import ConfigProvider
from kopycat.api.errors import ConfigError
from kopycat.plugins import config_provider_class

__all__ = [
    "CONFIG_PROVIDERS_CONFIG", "VARIABLE_PATTERN", "ConfigTransformer", "config_providers", "has_variables",
    "resolve_connector_config", "resolve_task_configs", "resolve_worker_config", "reverse_transform",
    "placeholder_text", "transformer_for", "with_placeholders",
]

log = logging.getLogger(__name__)

CONFIG_PROVIDERS_CONFIG: Final = "config.providers"
"""Kafka's ``AbstractConfig.CONFIG_PROVIDERS_CONFIG``: the provider names, comma-separated."""

VARIABLE_PATTERN: Final = re.compile(r"\$\{([^}]*?):(([^}]*?):)?([^}]*?)\}")
"""Kafka's ``ConfigTransformer.DEFAULT_PATTERN``: ``${provider:[path:]key}``; the path may hold ``:``."""


@dataclass(frozen=True)
class _Variable:
    provider: str
    path: str
    key: str

    @classmethod
    def of(cls, match: re.Match[str]) -> _Variable:
        return cls(match.group(1), match.group(3) or "", match.group(4))


def has_variables(value: Any) -> bool:
    """Whether ``value`` holds a ``${provider:[path:]key}`` placeholder."""
    return isinstance(value, str) and VARIABLE_PATTERN.search(value) is not None


class ConfigTransformer:
    """Replaces placeholders with what the named providers return (Kafka's ``ConfigTransformer``).

    Each provider is asked once per path, with every key wanted there. Not thread-safe: make one
    per resolution (they are cheap; the providers are the shared part).
    """

    def __init__(self, providers: Mapping[str, ConfigProvider]) -> None:
        self.providers = dict(providers)

    def transform(self, configs: Mapping[str, Any]) -> dict[str, Any]:
        """``configs`` with every resolvable placeholder replaced; other values as they are."""
        wanted: dict[str, dict[str, set[str]]] = {}
        for value in configs.values():
            if isinstance(value, str):
                for match in VARIABLE_PATTERN.finditer(value):
                    var = _Variable.of(match)
                    wanted.setdefault(var.provider, {}).setdefault(var.path, set()).add(var.key)
        found: dict[str, dict[str, Mapping[str, str]]] = {}
        for name, keys_by_path in wanted.items():
            provider = self.providers.get(name)
            if provider is not None:
                found[name] = {path: provider.get(path, frozenset(keys)).data for path, keys in keys_by_path.items()}
        return {key: self._replace(key, value, found) if isinstance(value, str) else value
                for key, value in configs.items()}

    def _replace(self, config_key: str, value: str, found: Mapping[str, Mapping[str, Mapping[str, str]]]) -> str:
        def lookup(match: re.Match[str]) -> str:
            var = _Variable.of(match)
            replacement = found.get(var.provider, {}).get(var.path, {}).get(var.key)
            if replacement is not None:
                return replacement
            if self.providers:
                why = ("no provider of that name is in " + CONFIG_PROVIDERS_CONFIG if var.provider not in found
                       else f"provider '{var.provider}' has no key {var.key!r} there")
                log.warning("Config %s keeps its placeholder %s: %s", config_key, match.group(0), why)
            return match.group(0)

        return VARIABLE_PATTERN.sub(lookup, value)


def config_providers(worker_props: Mapping[str, Any]) -> dict[str, ConfigProvider]:
    """The providers ``config.providers`` declares, made and configured (caller closes them).

    Each name needs ``config.providers.<name>.class``; its ``config.providers.<name>.param.*``
    keys (prefix removed) configure it, as in Kafka's ``AbstractConfig.instantiateConfigProviders``.
    """
    names = [n.strip() for n in str(worker_props.get(CONFIG_PROVIDERS_CONFIG) or "").split(",") if n.strip()]
    providers: dict[str, ConfigProvider] = {}
    try:
        for name in names:
            class_key = f"{CONFIG_PROVIDERS_CONFIG}.{name}.class"
            class_name = worker_props.get(class_key)
            if not class_name:
                raise ConfigError(f"{CONFIG_PROVIDERS_CONFIG} names '{name}', but {class_key} is not set: set it "
                                  f"to the provider's class, e.g. {class_key}="
                                  f"org.apache.kafka.common.config.provider.FileConfigProvider", key=class_key)
            provider = config_provider_class(class_name, class_key)()
            prefix = f"{CONFIG_PROVIDERS_CONFIG}.{name}.param."
            params = {k[len(prefix):]: str(v) for k, v in worker_props.items() if k.startswith(prefix)}
            provider.configure({"provider.name": name, **params})
            providers[name] = provider
    except BaseException:
        _close(providers.values())
        raise
    return providers


def _close(providers: Iterable[ConfigProvider]) -> None:
    for provider in providers:
        try:
            provider.close()
        except Exception:  # noqa: BLE001 - closing must not hide the result or the first error
            log.exception("Could not close config provider %s", type(provider).__name__)


@contextmanager
def transformer_for(worker_props: Mapping[str, Any]) -> Iterator[ConfigTransformer]:
    """A transformer with the worker's providers, closed on exit."""
    providers = config_providers(worker_props)
    try:
        yield ConfigTransformer(providers)
    finally:
        _close(providers.values())


def resolve_worker_config(worker_props: Mapping[str, Any]) -> dict[str, Any]:
    """The worker's properties with their placeholders resolved by their own providers.

    Kafka's ``AbstractConfig`` does this when a worker config is made, so client settings such as
    ``sasl.jaas.config`` or ``producer.ssl.key.password`` can come from a provider. The
    ``config.providers.*`` keys themselves are not resolved. Without ``config.providers`` the
    properties are returned as they are.
    """
    if not worker_props.get(CONFIG_PROVIDERS_CONFIG):
        return dict(worker_props)
    own = {k: v for k, v in worker_props.items() if not k.startswith(CONFIG_PROVIDERS_CONFIG)}
    if not any(has_variables(v) for v in own.values()):
        return dict(worker_props)
    with transformer_for(worker_props) as transformer:
        return {**worker_props, **transformer.transform(own)}


def resolve_connector_config(worker_props: Mapping[str, Any], *configs: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Each of ``configs`` (a connector's, a task's) resolved with the worker's providers.

    Kafka's ``WorkerConfigTransformer.transform``: connector configs declare no providers of their
    own. The providers are made once for all ``configs`` and closed before this returns.
    """
    if not worker_props.get(CONFIG_PROVIDERS_CONFIG) or not any(
            has_variables(v) for config in configs for v in config.values()):
        return [dict(config) for config in configs]
    with transformer_for(worker_props) as transformer:
        return [transformer.transform(config) for config in configs]


def resolve_task_configs(worker_props: Mapping[str, Any], connector_props: Mapping[str, Any],
                         task_props: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """The worker, connector and task configs of a task about to start, all resolved.

    The worker's own placeholders first (its clients' settings), then the connector's and the
    task's with the worker's providers, as Kafka's worker does when it starts a task.
    """
    worker = resolve_worker_config(worker_props)
    connector, task = resolve_connector_config(worker, connector_props, task_props)
    return worker, connector, task


def reverse_transform(raw_connector_props: Mapping[str, Any],
                      task_configs: Sequence[Mapping[str, str]]) -> list[dict[str, str]]:
    """Task configs with the connector's placeholders put back (Kafka's ``AbstractHerder.reverseTransform``).

    A connector started with resolved values copies them into its task configs; every key whose
    raw connector value holds a placeholder gets that raw value back, so what is stored, shown
    and put in XCom never holds the secret. Tasks resolve it again when they start.
    """
    raw = {k: str(v) for k, v in raw_connector_props.items() if has_variables(v)}
    return [{k: raw.get(k, v) for k, v in config.items()} for config in task_configs]


_SHORTEST_MASKED = 3
"""Resolved values shorter than this are not searched for in messages (they would mangle words)."""


def with_placeholders(response: dict[str, Any], raw: Mapping[str, Any], resolved: Mapping[str, Any]) -> dict[str, Any]:
    """A validate response computed on ``resolved`` values, shown with ``raw``'s placeholders.

    Kafka's ``AbstractHerder.validateConnectorConfig`` validates the transformed config; what it
    returns must not carry the secrets, so each value with a placeholder is shown as written and
    every resolved value found in an error message is replaced by its placeholder.
    """
    placeholders = {k: str(v) for k, v in raw.items() if has_variables(v)}
    for entry in response.get("configs", []):
        value = entry.get("value", {})
        if value.get("name") in placeholders:
            value["value"] = placeholders[value["name"]]
        value["errors"] = [placeholder_text(message, raw, resolved) for message in value.get("errors", [])]
    return response


def placeholder_text(text: str, raw: Mapping[str, Any], resolved: Mapping[str, Any]) -> str:
    """``text`` (an error message) with every resolved value of ``raw``'s placeholders put back."""
    found = sorted(((str(resolved[k]), str(v)) for k, v in raw.items()
                    if has_variables(v) and resolved.get(k) is not None
                    and len(str(resolved[k])) >= _SHORTEST_MASKED and str(resolved[k]) != str(v)),
                   key=lambda pair: -len(pair[0]))
    for value, placeholder in found:
        text = text.replace(value, placeholder)
    return text

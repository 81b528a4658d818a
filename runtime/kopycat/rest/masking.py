"""Hiding secrets in REST responses: every password shows as ``[hidden]``.

Kafka hides ``PASSWORD`` values the same way in its logs and validate responses
(``Password.toString()``). The REST API hides, in every body it sends (connector configs,
task configs, validate responses, error messages):

- the keys the connector's full definition declares as ``ConfigType.PASSWORD``
  (:func:`kopycat.runtime.connector_config.connector_definition`: the connector's own keys,
  transforms and predicates);
- the PASSWORD keys of Kafka's client configs (``SaslConfigs``, ``SslConfigs``: ``sasl.jaas.config``,
  ``ssl.key.password``, ``ssl.keystore.key``...) and librdkafka's equivalents, under any prefix
  (``producer.``, ``consumer.override.``, ``source.cluster.``...), and the converters' secrets
  (``basic.auth.user.info`` under ``key.converter.``/``value.converter.``);
- any key whose name says it holds a secret (``secret``, ``password``, ``passphrase``, ``token``,
  ``credential``; case-insensitive, anywhere in the name), unless its last part names something
  that is not one (``...token.endpoint.url``, ``...credentials.provider.class``).

:func:`is_secret_name` decides for names, :func:`secret_keys` adds the definition's keys.

Because a GET then shows ``[hidden]``, a config sent back unchanged would overwrite the secret
with that text: :func:`restore_hidden` keeps the stored secret wherever a PUT or PATCH sends
``[hidden]`` for a secret key.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any, Final

from kopycat.api.config import ConfigType
from kopycat.api.config_types import Password
from kopycat.runtime.connector_config import connector_definition

__all__ = ["HIDDEN", "is_secret_name", "mask_config", "mask_text", "mask_validation", "restore_hidden",
           "secret_keys"]

log = logging.getLogger(__name__)

HIDDEN: Final = Password.HIDDEN
_CLIENT_SECRETS: Final = frozenset({
    "sasl.jaas.config", "ssl.key.password", "ssl.keystore.password", "ssl.truststore.password",
    "ssl.keystore.key", "ssl.key.pem", "sasl.oauthbearer.config", "basic.auth.user.info",
})
"""Secrets of Kafka's (and librdkafka's) client and Schema Registry converter configs."""
_SECRET_WORDS: Final = ("secret", "password", "passwd", "passphrase", "token", "credential")
_NOT_SECRET_LAST: Final = frozenset({
    "url", "uri", "urls", "endpoint", "file", "path", "location", "type", "class", "ms", "enable", "enabled",
    "algorithm", "name", "method", "provider", "mechanism", "scope", "source", "header", "field", "format",
})
"""A name's last part that says the value is about a secret, not the secret itself."""


def is_secret_name(key: str) -> bool:
    """Whether a key's name says it holds a secret (module doc): the one rule for undeclared keys.

    ``connection.password``, ``aws.secret.access.key``, ``producer.override.sasl.jaas.config``
    and ``value.converter.basic.auth.user.info`` do; ``sasl.oauthbearer.token.endpoint.url`` does not.
    """
    lower = key.lower()
    if any(lower == name or lower.endswith("." + name) for name in _CLIENT_SECRETS):
        return True
    return any(word in lower for word in _SECRET_WORDS) and lower.rsplit(".", 1)[-1] not in _NOT_SECRET_LAST


def secret_keys(config: Mapping[str, Any]) -> frozenset[str]:
    """The keys of ``config``'s connector to hide: PASSWORD keys and secret-looking names.

    A config whose definition cannot be built (unknown class, a plugin failing in ``config()``)
    still has its secret-looking names hidden: masking never fails a response.
    """
    keys = {key for key in config if is_secret_name(key)}
    try:
        definition = connector_definition(config)
    except Exception as exc:  # noqa: BLE001 - plugin code may raise anything; hide by name then
        log.debug("No definition for connector class %s, hiding secrets by name only: %s",
                  config.get("connector.class"), exc)
        return frozenset(keys)
    keys.update(name for name, key in definition.keys.items() if key.type is ConfigType.PASSWORD)
    return frozenset(keys)


def mask_config(config: Mapping[str, Any], keys: Iterable[str] | None = None) -> dict[str, Any]:
    """A copy of ``config`` with the values of secret ``keys`` (default: :func:`secret_keys`) hidden."""
    hidden = secret_keys(config) if keys is None else frozenset(keys)
    return {key: HIDDEN if key in hidden and value is not None else value for key, value in config.items()}


def mask_text(text: str, config: Mapping[str, Any], keys: Iterable[str] | None = None) -> str:
    """``text`` with every secret value of ``config`` replaced by ``[hidden]`` (for error messages)."""
    hidden = secret_keys(config) if keys is None else frozenset(keys)
    secrets = sorted({str(config[key]) for key in hidden if config.get(key) not in (None, "", HIDDEN)},
                     key=len, reverse=True)
    for secret in secrets:
        text = text.replace(secret, HIDDEN)
    return text


def mask_validation(response: Mapping[str, Any], config: Mapping[str, Any]) -> dict[str, Any]:
    """A validate response (``ConfigInfos`` JSON) with secret values and their echoes hidden.

    PASSWORD keys already show ``[hidden]`` (``convert_to_string``); this also hides undefined
    secret-looking keys and secrets quoted inside error messages.
    """
    hidden = secret_keys(config)
    configs = []
    for entry in response.get("configs", []):
        value = dict(entry["value"])
        definition = entry.get("definition") or {}
        if value.get("value") is not None and (
                value["name"] in hidden or definition.get("type") == ConfigType.PASSWORD.name):
            value["value"] = HIDDEN
        value["errors"] = [mask_text(message, config, hidden) for message in value.get("errors", [])]
        configs.append({**entry, "value": value})
    return {**response, "configs": configs}


def restore_hidden(new: Mapping[str, Any], old: Mapping[str, Any] | None) -> dict[str, Any]:
    """``new`` with each ``[hidden]`` secret replaced by the value stored in ``old``.

    Lets a client GET a config, change one key and PUT it back without erasing its passwords.
    """
    if not old:
        return dict(new)
    hidden = secret_keys(old) | {key for key in new if is_secret_name(key)}
    restored = dict(new)
    for key, value in new.items():
        if value == HIDDEN and key in hidden and old.get(key) is not None:
            restored[key] = old[key]
    return restored

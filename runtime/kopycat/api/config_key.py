"""One defined configuration key and the outcome of validating one, after Kafka's ``ConfigDef.ConfigKey``,
``ConfigDef.Recommender`` and ``common.config.ConfigValue``.

:class:`~kopycat.api.config.ConfigDef` holds these and re-exports them: import them from
:mod:`kopycat.api.config`. Kept apart so the definition's container reads on one topic.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from kopycat.api.config_types import (
    MASKED,
    NO_DEFAULT,
    ConfigType,
    Importance,
    Password,
    Width,
    convert_to_string,
    invalid_value,
)
from kopycat.api.config_validators import Validator
from kopycat.api.errors import ConfigError

__all__ = ["ConfigKey", "ConfigValue", "Recommender", "ensure_valid", "missing_message", "validate_across_keys"]


class Recommender(Protocol):
    """Valid values and visibility of a key given the others (``ConfigDef.Recommender``).

    Called by :meth:`ConfigDef.validate` with every key's parsed value (None where missing or
    invalid); raise :class:`ConfigError` to report a problem against the key.
    """

    def valid_values(self, name: str, parsed: Mapping[str, Any]) -> list[Any]: ...

    def visible(self, name: str, parsed: Mapping[str, Any]) -> bool: ...


@dataclass(frozen=True)
class ConfigKey:
    """One defined key: everything :meth:`ConfigDef.define` was told (``ConfigDef.ConfigKey``).

    ``default`` is already parsed to ``type``, or :data:`NO_DEFAULT` for a required key.
    """

    name: str
    type: ConfigType
    default: Any
    validator: Validator | None
    importance: Importance
    documentation: str
    group: str | None = None
    order_in_group: int = -1
    width: Width = Width.NONE
    display_name: str = ""
    dependents: tuple[str, ...] = ()
    recommender: Recommender | None = None
    internal: bool = False

    @property
    def has_default(self) -> bool:
        return self.default is not NO_DEFAULT

    @property
    def doc(self) -> str:
        return self.documentation

    def info(self) -> dict[str, Any]:
        """Kafka Connect's ``ConfigKeyInfo`` JSON: the ``definition`` of a validate response."""
        return {
            "name": self.name,
            "type": self.type.name,
            "required": not self.has_default,
            "default_value": convert_to_string(self.default, self.type) if self.has_default else None,
            "importance": self.importance.name,
            "documentation": self.documentation,
            "group": self.group,
            "width": self.width.name,
            "display_name": self.display_name,
            "dependents": list(self.dependents),
            "order": self.order_in_group,
        }


@dataclass
class ConfigValue:
    """The outcome of validating one key: its value, every error, recommendations, visibility.

    Kafka's ``common.config.ConfigValue``. ``value`` is parsed, so a PASSWORD key holds a
    :class:`Password` and this object's repr shows ``[hidden]``.
    """

    name: str
    value: Any = None
    recommended_values: list[Any] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    visible: bool = True

    def add_error_message(self, message: str) -> None:
        self.errors.append(message)

    def info(self, config_type: ConfigType | None) -> dict[str, Any]:
        """Kafka Connect's ``ConfigValueInfo`` JSON: the ``value`` of a validate response."""
        item_type = ConfigType.STRING if config_type is ConfigType.LIST else config_type
        return {
            "name": self.name,
            "value": convert_to_string(self.value, config_type),
            "recommended_values": [convert_to_string(v, item_type) for v in self.recommended_values],
            "errors": list(self.errors),
            "visible": self.visible,
        }


def missing_message(key: ConfigKey) -> str:
    """Kafka's message for a required key left out, with the key's doc so the reader knows what to give."""
    message = f'Missing required configuration "{key.name}" which has no default value.'
    return f"{message} {key.name}: {key.documentation}" if key.documentation else message


def ensure_valid(key: ConfigKey, value: Any) -> None:
    """Run the key's validator; if a custom validator quoted the secret, withhold its message."""
    if key.validator is None:
        return
    secret = value.value() if isinstance(value, Password) else ""
    try:
        key.validator.ensure_valid(key.name, value)
        return
    except ConfigError as exc:
        if not secret or secret not in str(exc):
            raise
    # Raised outside the except block so the leaking error is not kept as __context__ either.
    raise invalid_value(key.name, MASKED, "Value is not valid (the validator's message "
                              "was withheld because it quoted the secret)")


def validate_across_keys(results: list[ConfigValue], props: Mapping[str, str],
                         parse: Callable[[Mapping[str, str]], object], default_key: str) -> list[ConfigValue]:
    """After clean per-key checks, run ``parse`` (the checks across keys a connector's start makes) and report its
    ConfigError under the key it names, else under ``default_key``, as a Kafka ``Connector.validate`` override
    adds cross-key errors to the per-key results."""
    if any(result.errors for result in results):
        return results
    try:
        parse(props)
    except ConfigError as exc:
        by_name = {result.name: result for result in results}
        (by_name.get(exc.key or default_key) or by_name[default_key]).add_error_message(str(exc))
    return results

"""One declaration of configuration, after Kafka's ``ConfigDef`` and ``AbstractConfig``.

A connector, converter or transform declares its keys once::

    CONFIG = (ConfigDef()
      .define("batch.max.rows", ConfigType.INT, default=100, validator=Range(min=1),
              importance=Importance.LOW, doc="Maximum rows a single poll() returns per table.")
      .define("connection.password", ConfigType.PASSWORD, default=None,
              importance=Importance.HIGH, doc="Password of the database user."))

and that one object serves every consumer: :meth:`ConfigDef.parse` and :class:`Config` for the
engine and the CLI, :meth:`ConfigDef.validate_response` for the REST API's
``PUT /connector-plugins/{plugin}/config/validate``, :meth:`ConfigKey.info` for
``GET /connector-plugins/{plugin}/config`` and operator arguments, :meth:`ConfigDef.to_rst` and
:meth:`ConfigDef.to_markdown` for the docs.

Value types and parsing live in :mod:`kopycat.api.config_types`, validators in
:mod:`kopycat.api.config_validators`, the key and validation outcome in :mod:`kopycat.api.config_key`;
all are re-exported here, the one place to import from.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, KeysView, Mapping
from types import MappingProxyType
from typing import Any, TypeVar, cast

from kopycat.api.config_key import (
    ConfigKey,
    ConfigValue,
    Recommender,
    ensure_valid,
    missing_message,
    validate_across_keys,
)
from kopycat.api.config_types import (
    NO_DEFAULT,
    ConfigType,
    Importance,
    Password,
    Width,
    convert_to_string,
    default_for_docs,
    parse_type,
    resolve_class,
)
from kopycat.api.config_validators import (
    And,
    CaseInsensitiveValidString,
    CompositeValidator,
    LambdaValidator,
    ListSize,
    NonEmptyString,
    NonEmptyStringWithoutControlChars,
    NonNullValidator,
    Range,
    Regex,
    Validator,
    ValidList,
    ValidString,
)
from kopycat.api.errors import ConfigError

__all__ = [
    "NO_DEFAULT", "AbstractConfig", "And", "CaseInsensitiveValidString", "CompositeValidator",
    "Config", "ConfigDef", "ConfigKey", "ConfigType", "ConfigValue", "Importance",
    "LambdaValidator", "ListSize", "NonEmptyString", "NonEmptyStringWithoutControlChars",
    "NonNullValidator", "Password", "Range", "Recommender", "Regex", "ValidList", "ValidString",
    "Validator", "Width", "convert_to_string", "parse_type", "resolve_class", "validate_across_keys",
]

logger = logging.getLogger(__name__)
_T = TypeVar("_T")


class ConfigDef:
    """The set of keys a plugin accepts, with types, defaults, validators and docs.

    Follows Kafka's ``org.apache.kafka.common.config.ConfigDef``. Keys keep their definition
    order; ``define`` returns ``self`` so definitions chain. Not thread-safe while being
    defined; read-only use (parse, validate, docs) from many threads is fine.
    """

    def __init__(self, base: ConfigDef | None = None) -> None:
        """A new definition, empty or holding a copy of ``base``'s keys (Kafka's copy constructor)."""
        self._keys: dict[str, ConfigKey] = {}
        self._groups: list[str] = []
        if base is not None:
            for key in base._keys.values():
                self.define_key(key)

    def define(
        self, name: str, config_type: ConfigType, default: Any = NO_DEFAULT,
        validator: Validator | None = None, importance: Importance = Importance.MEDIUM,
        doc: str = "", *, group: str | None = None, order_in_group: int = -1,
        width: Width = Width.NONE, display_name: str | None = None,
        dependents: Iterable[str] = (), recommender: Recommender | None = None,
        internal: bool = False,
    ) -> ConfigDef:
        """Define a key; without ``default`` it is required. Returns self to chain.

        The default is parsed like a user's value and must pass the validator, so a broken
        definition fails on import rather than in a user's run. ``internal`` keys are left
        out of the docs (Kafka's ``defineInternal``).
        """
        parsed_default = default if default is NO_DEFAULT else parse_type(name, default, config_type)
        if validator is not None and parsed_default is not NO_DEFAULT:
            try:
                validator.ensure_valid(name, parsed_default)
            except ConfigError as exc:
                raise ConfigError(f"The default of {name} is invalid: {exc}", key=name) from None
        return self.define_key(ConfigKey(
            name, config_type, parsed_default, validator, importance, doc, group, order_in_group,
            width, display_name if display_name is not None else name, tuple(dependents),
            recommender, internal))

    def define_key(self, key: ConfigKey) -> ConfigDef:
        """Add a ready-made key (as Kafka's ``define(ConfigKey)``); a name may appear once."""
        if key.name in self._keys:
            raise ConfigError(f"Configuration {key.name} is defined twice.", key=key.name)
        if key.group is not None and key.group not in self._groups:
            self._groups.append(key.group)
        self._keys[key.name] = key
        return self

    def merge(self, other: ConfigDef) -> ConfigDef:
        """A new definition with this one's keys, then ``other``'s; a shared name raises.

        How a connector extends the common connector keys without changing the shared base.
        """
        merged = ConfigDef(self)
        for key in other._keys.values():
            merged.define_key(key)
        return merged

    with_defs = merge

    def embed(self, key_prefix: str, group_prefix: str, starting_order: int, child: ConfigDef) -> ConfigDef:
        """Define ``child``'s keys here under ``key_prefix`` (Kafka's ``ConfigDef.embed``).

        Used for keys like ``transforms.<alias>.*``; the child's recommenders see unprefixed
        names, messages name the prefixed key.
        """
        for order, key in enumerate(child.sorted_keys(), start=starting_order):
            self.define_key(ConfigKey(
                key_prefix + key.name, key.type, key.default, key.validator, key.importance,
                key.documentation, group_prefix + (f": {key.group}" if key.group else ""), order,
                key.width, key.display_name, tuple(key_prefix + d for d in key.dependents),
                _EmbeddedRecommender(key_prefix, key.recommender) if key.recommender else None,
                key.internal))
        return self

    @property
    def keys(self) -> Mapping[str, ConfigKey]:
        """Read-only view of the keys by name, in definition order."""
        return MappingProxyType(self._keys)

    def config_keys(self) -> Mapping[str, ConfigKey]:
        """Same as :attr:`keys` (Kafka's ``configKeys()``)."""
        return self.keys

    def names(self) -> KeysView[str]:
        """The defined names: set-like and in definition order."""
        return self.keys.keys()

    def groups(self) -> list[str]:
        """Group names in the order first used (Kafka's ``groups()``)."""
        return list(self._groups)

    def __contains__(self, name: object) -> bool:
        return name in self._keys

    def __len__(self) -> int:
        return len(self._keys)

    def parse(self, props: Mapping[str, Any]) -> dict[str, Any]:
        """Parse and validate every defined key; raises :class:`ConfigError` at the first problem.

        Keys not defined here are ignored (use :class:`Config` to keep them). Values may be
        text or already typed (Kafka's ``ConfigDef.parse``).
        """
        undefined = self._undefined_dependents()
        if undefined:
            raise ConfigError("Some configurations are named as dependents but not defined: "
                              + ", ".join(undefined))
        return {key.name: self._parse_value(key, props) for key in self._keys.values()}

    def _parse_value(self, key: ConfigKey, props: Mapping[str, Any]) -> Any:
        if key.name in props:
            value = parse_type(key.name, props[key.name], key.type)
        elif key.has_default:
            value = key.default
        else:
            raise ConfigError(missing_message(key), key=key.name)
        ensure_valid(key, value)
        return value

    def validate(self, props: Mapping[str, Any]) -> list[ConfigValue]:
        """Every key's :class:`ConfigValue`, collecting all errors instead of raising."""
        return list(self.validate_all(props).values())

    def validate_all(self, props: Mapping[str, Any]) -> dict[str, ConfigValue]:
        """:meth:`validate` by name (Kafka's ``validateAll``).

        A value that fails to parse carries that one error (its validator does not also see None);
        a missing key is given to its validator as None. Recommenders see all parsed values.
        """
        results = {name: ConfigValue(name) for name in self._keys}
        for name in self._undefined_dependents():
            results[name] = ConfigValue(
                name, errors=[f"{name} is referred in the dependents, but not defined."], visible=False)
        parsed: dict[str, Any] = {}
        for key in self._keys.values():
            result, value = results[key.name], None
            if key.name in props:
                try:
                    value = parse_type(key.name, props[key.name], key.type)
                except ConfigError as exc:
                    result.add_error_message(str(exc))
                    result.value = parsed[key.name] = None
                    continue
            elif key.has_default:
                value = key.default
            else:
                result.add_error_message(missing_message(key))
            try:
                ensure_valid(key, value)
            except ConfigError as exc:
                result.add_error_message(str(exc))
            result.value = parsed[key.name] = value
        for key in self._keys.values():
            if key.recommender is not None:
                result = results[key.name]
                try:
                    result.recommended_values = list(key.recommender.valid_values(key.name, parsed))
                    result.visible = bool(key.recommender.visible(key.name, parsed))
                except ConfigError as exc:
                    result.add_error_message(str(exc))
        return results

    def validate_response(self, connector_class_name: str, props: Mapping[str, Any]) -> dict[str, Any]:
        """The body Kafka Connect answers ``PUT /connector-plugins/{plugin}/config/validate`` with.

        Built as ``AbstractHerder.generateResult`` builds ``ConfigInfos``: values without a
        definition first, then one entry per defined key; ``error_count`` counts messages.
        Null values get Kafka's "Null value can not be supplied" error.
        """
        results = self.validate_all(props)
        for name, value in props.items():
            if value is None:
                results.setdefault(name, ConfigValue(name)).add_error_message(
                    "Null value can not be supplied as the configuration value.")
        configs: list[dict[str, Any]] = [
            {"definition": None, "value": result.info(None)}
            for name, result in results.items() if name not in self._keys]
        configs += [{"definition": key.info(), "value": results[key.name].info(key.type)}
                    for key in self._keys.values()]
        return {
            "name": connector_class_name,
            "error_count": sum(len(r.errors) for r in results.values()),
            "groups": self.groups(),
            "configs": configs,
        }

    def _undefined_dependents(self) -> list[str]:
        named = (d for key in self._keys.values() for d in key.dependents)
        return sorted({d for d in named if d not in self._keys})

    def sorted_keys(self) -> list[ConfigKey]:
        """Keys in Kafka's docs order: by group (ungrouped first, then as first defined) and
        order in group, then required before optional, then importance, then name."""
        group_order = {g: i for i, g in enumerate(self._groups)}
        importance = list(Importance)
        return sorted(self._keys.values(), key=lambda k: (
            k.group is not None, group_order[k.group] if k.group is not None else -1, k.order_in_group,
            k.has_default, importance.index(k.importance), k.name))

    def to_rst(self) -> str:
        """reStructuredText for Sphinx, as Kafka's ``ConfigDef.toRst`` writes it."""
        out: list[str] = []
        for key in self.sorted_keys():
            if key.internal:
                continue
            out.append(f"``{key.name}``\n")
            out.extend(f"  {line}\n\n" for line in key.documentation.split("\n") if line)
            out.append(f"  * Type: {key.type.name.lower()}\n")
            if key.has_default:
                out.append(f"  * Default: {default_for_docs(key.name, key.default, key.type)}\n")
            if key.validator is not None:
                out.append(f"  * Valid Values: {key.validator}\n")
            out.append(f"  * Importance: {key.importance.name.lower()}\n\n")
        return "".join(out)

    def to_markdown(self) -> str:
        """A Markdown table: name, type, default, valid values, importance, description."""
        def cell(text: str) -> str:
            return text.replace("|", "\\|").replace("\n", "<br>")

        rows = ["| Name | Type | Default | Valid values | Importance | Description |",
                "|---|---|---|---|---|---|"]
        for key in self.sorted_keys():
            if key.internal:
                continue
            default = default_for_docs(key.name, key.default, key.type) if key.has_default else "(required)"
            valid = str(key.validator) if key.validator is not None else ""
            rows.append(f"| `{key.name}` | {key.type.name.lower()} | {cell(default)} | {cell(valid)}"
                        f" | {key.importance.name.lower()} | {cell(key.documentation)} |")
        return "\n".join(rows) + "\n"


class _EmbeddedRecommender:
    """Gives an embedded key's recommender the names it was written for (``embeddedRecommender``)."""

    def __init__(self, prefix: str, base: Recommender) -> None:
        self.prefix, self.base = prefix, base

    def _unprefixed(self, parsed: Mapping[str, Any]) -> dict[str, Any]:
        return {k[len(self.prefix):]: v for k, v in parsed.items() if k.startswith(self.prefix)}

    def valid_values(self, name: str, parsed: Mapping[str, Any]) -> list[Any]:
        return self.base.valid_values(name[len(self.prefix):], self._unprefixed(parsed))

    def visible(self, name: str, parsed: Mapping[str, Any]) -> bool:
        return self.base.visible(name[len(self.prefix):], self._unprefixed(parsed))


class Config:
    """Parsed configuration with typed getters, keeping unknown keys (Kafka's ``AbstractConfig``).

    Unknown keys are kept in :meth:`originals`: connectors pass prefixed client settings
    (``consumer.*``, ``producer.override.*``) through to the clients. The repr and the log
    listing show parsed values only, with passwords as ``[hidden]``; ``originals()`` returns
    the raw values (secrets included) because clients need them: do not log it.
    """

    def __init__(self, definition: ConfigDef, props: Mapping[str, Any], *, log_values: bool = False) -> None:
        """Parse ``props``; raise :class:`ConfigError` if invalid.

        ``log_values`` logs the values at INFO as Kafka's ``logAll`` does; off by default
        because Airflow parses DAG files (and so builds configs) continually.
        """
        self.definition = definition
        self._originals = dict(props)
        self._values = definition.parse(self._originals)
        if log_values:
            listing = "".join(f"\t{k} = {'null' if v is None else convert_to_string(v)}\n"
                              for k, v in sorted(self._values.items()))
            logger.info("%s values: \n%s", type(self).__name__, listing)

    def get(self, key: str) -> Any:
        """The parsed value of a defined key; an undefined key raises :class:`ConfigError`."""
        if key not in self._values:
            raise ConfigError(f"Unknown configuration '{key}'", key=key)
        return self._values[key]

    def _typed(self, key: str, config_type: ConfigType, _kind: type[_T]) -> _T | None:
        value = self.get(key)
        defined = self.definition.keys[key].type
        if defined is not config_type:
            raise TypeError(f"{key} is defined as {defined.name}, not {config_type.name}")
        return cast("_T | None", value)

    def get_boolean(self, key: str) -> bool | None:
        return self._typed(key, ConfigType.BOOLEAN, bool)

    def get_int(self, key: str) -> int | None:
        return self._typed(key, ConfigType.INT, int)

    def get_short(self, key: str) -> int | None:
        return self._typed(key, ConfigType.SHORT, int)

    def get_long(self, key: str) -> int | None:
        return self._typed(key, ConfigType.LONG, int)

    def get_double(self, key: str) -> float | None:
        return self._typed(key, ConfigType.DOUBLE, float)

    def get_string(self, key: str) -> str | None:
        return self._typed(key, ConfigType.STRING, str)

    def get_list(self, key: str) -> list[Any] | None:
        return self._typed(key, ConfigType.LIST, list)

    def get_password(self, key: str) -> Password | None:
        return self._typed(key, ConfigType.PASSWORD, Password)

    def get_class(self, key: str) -> type | None:
        """The class a CLASS key names, imported now (parsing only checked the name)."""
        value: Any = self._typed(key, ConfigType.CLASS, object)
        return value if value is None or isinstance(value, type) else resolve_class(key, value)

    def type_of(self, key: str) -> ConfigType | None:
        found = self.definition.keys.get(key)
        return found.type if found else None

    def documentation_of(self, key: str) -> str | None:
        found = self.definition.keys.get(key)
        return found.documentation if found else None

    def values(self) -> dict[str, Any]:
        """Parsed values of the defined keys (passwords as :class:`Password`)."""
        return dict(self._values)

    def originals(self) -> dict[str, Any]:
        """Everything given, as given, defined or not (secrets in clear: do not log)."""
        return dict(self._originals)

    def originals_with_prefix(self, prefix: str, strip: bool = True) -> dict[str, Any]:
        """Given keys that start with ``prefix`` (and are longer), the prefix removed by default."""
        return {(k[len(prefix):] if strip else k): v for k, v in self._originals.items()
                if k.startswith(prefix) and len(k) > len(prefix)}

    def values_with_prefix_override(self, prefix: str) -> dict[str, Any]:
        """:meth:`values`, with defined keys overridden by ``<prefix><key>`` originals (parsed)."""
        result = self.values()
        for name, raw in self.originals_with_prefix(prefix).items():
            if name in self.definition:
                result[name] = self.definition._parse_value(self.definition.keys[name], {name: raw})
        return result

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Config) and type(other) is type(self) and other._originals == self._originals

    __hash__ = None  # type: ignore[assignment]  # mutable originals: equal, not hashable

    def __repr__(self) -> str:
        shown = ", ".join(f"{k}={v!r}" for k, v in sorted(self._values.items()))
        return f"{type(self).__name__}({shown})"


AbstractConfig = Config
"""Kafka's name for :class:`Config` (Kafka's own ``Config`` is the list of ConfigValues)."""

"""Configuration value types: what a key's value may be, how text parses, how values print.

The type layer under :mod:`kopycat.api.config` (Kafka's ``ConfigDef.Type``, ``parseType``,
``convertToString`` and ``types.Password``); validators build on it. Import these names from
:mod:`kopycat.api.config`.

Decisions where Python differs from Java:

- CLASS values are kept as written (``"pkg.module.Class"``, or a class object) and imported only
  by :func:`resolve_class` (``Config.get_class``). Validating, documenting or planning a
  connector (the REST API, Airflow's DAG parsing) must not import connector modules and their
  heavy dependencies. The name's syntax is checked when parsed; Java's ``Outer$Inner`` is
  accepted and resolved as the attribute ``Outer.Inner``.
- Integers are Python ints checked against the Java width of their type (SHORT 16, INT 32,
  LONG 64 bits); booleans are not numbers. Text numbers follow ``Integer.parseInt`` (no
  underscores or inner spaces); DOUBLE text follows ``Double.parseDouble`` (``NaN``,
  ``Infinity``, ``1.5f``).
- Strings for the REST API and docs follow Java's ``toString`` (``true``, ``1.0E10``), so they
  match what a Kafka Connect worker returns for the same configuration.
"""

from __future__ import annotations

import importlib
import math
import re
from decimal import Decimal
from enum import Enum
from typing import Any, Final

from kopycat.api.errors import ConfigError

__all__ = [
    "MASKED", "NO_DEFAULT", "ConfigType", "Importance", "Password", "Width", "convert_to_string",
    "default_for_docs", "invalid_value", "java_string", "parse_type", "resolve_class",
]


class Password:
    """A secret configuration value that prints as ``[hidden]`` (Kafka's ``types.Password``).

    PASSWORD keys parse to this, so a secret cannot reach a log line, an error message, a
    repr or the REST API by accident; call :meth:`value` where the secret is really needed.
    """

    HIDDEN = "[hidden]"
    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def value(self) -> str:
        """The secret itself: hand it to a client, never to a logger."""
        return self._value

    def __str__(self) -> str:
        return self.HIDDEN

    __repr__ = __str__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Password) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self._value)


class _NoDefault:
    """The type of :data:`NO_DEFAULT`; one instance, so ``is`` tells it apart from ``None``."""

    def __repr__(self) -> str:
        return "NO_DEFAULT"


NO_DEFAULT: Final = _NoDefault()
"""A key defined with this default is required (Kafka's ``ConfigDef.NO_DEFAULT_VALUE``)."""

MASKED: Final = Password("")  # stands in for a secret in error messages: prints [hidden]


class ConfigType(Enum):
    """The type a key's value parses to (Kafka's ``ConfigDef.Type``)."""

    BOOLEAN = "BOOLEAN"
    STRING = "STRING"
    INT = "INT"
    SHORT = "SHORT"
    LONG = "LONG"
    DOUBLE = "DOUBLE"
    LIST = "LIST"
    CLASS = "CLASS"
    PASSWORD = "PASSWORD"

    def is_sensitive(self) -> bool:
        """True for PASSWORD: values never shown in logs, errors or the REST API."""
        return self is ConfigType.PASSWORD


class Importance(Enum):
    """How likely a user needs to set the key; docs list HIGH first (``ConfigDef.Importance``)."""

    HIGH = "HIGH"
    MEDIUM = "MEDIUM"
    LOW = "LOW"


class Width(Enum):
    """How wide a UI should draw the value's field (``ConfigDef.Width``)."""

    NONE = "NONE"
    SHORT = "SHORT"
    MEDIUM = "MEDIUM"
    LONG = "LONG"


_INT_BITS: Final = {ConfigType.SHORT: 16, ConfigType.INT: 32, ConfigType.LONG: 64}
_INT_TEXT: Final = re.compile(r"[+-]?[0-9]+")
_DOUBLE_TEXT: Final = re.compile(r"[+-]?(NaN|Infinity|([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?[fFdD]?)")
_CLASS_NAME: Final = re.compile(r"[A-Za-z_$][\w$]*(\.[A-Za-z_$][\w$]*)*")
_COMMA: Final = re.compile(r"\s*,\s*")


def parse_type(name: str, value: Any, config_type: ConfigType) -> Any:
    """Parse ``value`` (text from a .properties file, or already typed) as Kafka's ``parseType``.

    None stays None; strings are trimmed first. Raises :class:`ConfigError` naming the key.
    """
    if value is None:
        return None
    text = value.strip() if isinstance(value, str) else None
    kind = type(value).__name__
    if config_type is ConfigType.BOOLEAN:
        if isinstance(value, bool):
            return value
        if text is not None and text.lower() in ("true", "false"):
            return text.lower() == "true"
        raise invalid_value(name, value, "Expected value to be either true or false")
    if config_type is ConfigType.PASSWORD:
        if isinstance(value, Password):
            return value
        if text is not None:
            return Password(text)
        raise invalid_value(name, MASKED, f"Expected value to be a string, but it was a {kind}")
    if config_type is ConfigType.STRING:
        if text is not None:
            return text
        raise invalid_value(name, value, f"Expected value to be a string, but it was a {kind}")
    if config_type in _INT_BITS:
        bits = _INT_BITS[config_type]
        if isinstance(value, int) and not isinstance(value, bool):
            number = value
        elif text is not None and _INT_TEXT.fullmatch(text):
            number = int(text)
        elif text is not None:
            raise invalid_value(name, value, f"Not a number of type {config_type.name}")
        else:
            raise invalid_value(
                name, value, f"Expected value to be a {bits}-bit integer, but it was a {kind}")
        low, high = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
        if not low <= number <= high:
            raise invalid_value(name, value, f"Not a number of type {config_type.name}: "
                                      f"a {bits}-bit integer is between {low} and {high}")
        return number
    if config_type is ConfigType.DOUBLE:
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
        if text is not None and _DOUBLE_TEXT.fullmatch(text):
            return float(text.rstrip("fFdD"))  # Java's 1.5f / 2d suffixes
        if text is not None:
            raise invalid_value(name, value, "Not a number of type DOUBLE")
        raise invalid_value(name, value, f"Expected value to be a double, but it was a {kind}")
    if config_type is ConfigType.LIST:
        if isinstance(value, list | tuple):
            return list(value)
        if text is not None:
            return [] if text == "" else _COMMA.split(text)
        raise invalid_value(name, value, "Expected a comma separated list.")
    if config_type is ConfigType.CLASS:
        if isinstance(value, type):
            return value
        if text is not None and _CLASS_NAME.fullmatch(text):
            return text
        if text is not None:
            raise invalid_value(name, value, "Expected a class name such as pkg.module.Class")
        raise invalid_value(name, value, "Expected a Class instance or class name.")
    raise ValueError(f"Unknown configuration type {config_type!r}")


def java_string(value: Any) -> str:
    """A value as Java's ``String.valueOf`` shows it in Kafka's messages: ``null``, ``true``, ``abc``,
    ``[a, b]``, ``1.0E10``, ``[hidden]`` for a Password (strings are not quoted)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return _java_double(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(java_string(item) for item in value) + "]"
    if isinstance(value, type):
        return f"class {value.__module__}.{value.__qualname__}"
    return str(value)


def invalid_value(key: str, value: Any, problem: str) -> ConfigError:
    """Kafka's ``ConfigException(name, value, message)``: ``Invalid value abc for configuration k: ...``.

    The value is shown as Java shows it (:func:`java_string`), so messages read as a Kafka
    Connect worker's do for the same configuration.
    """
    return ConfigError(f"Invalid value {java_string(value)} for configuration {key}: {problem}", key=key)


def _java_double(x: float) -> str:
    """``Double.toString``: plain between 10^-3 and 10^7, else ``1.0E10`` (shortest digits)."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    if x == 0 or 1e-3 <= abs(x) < 1e7:
        return repr(x)
    sign, digits, exponent = Decimal(repr(x)).as_tuple()
    text = "".join(map(str, digits)).rstrip("0") or "0"
    scientific = len(digits) + int(exponent) - 1
    return f"{'-' if sign else ''}{text[0]}.{text[1:] or '0'}E{scientific}"


def convert_to_string(value: Any, config_type: ConfigType | None = None) -> str | None:
    """A parsed value as Kafka Connect shows it (``ConfigDef.convertToString``).

    Passwords become ``[hidden]``, as ``Password.toString()`` does in Kafka's REST responses.
    """
    if value is None:
        return None
    if isinstance(value, Password):
        return Password.HIDDEN
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return _java_double(value)
    if isinstance(value, type):
        return f"{value.__module__}.{value.__qualname__}"
    if isinstance(value, list | tuple):
        items = ["null" if v is None else str(convert_to_string(v)) for v in value]
        return ",".join(items) if config_type is ConfigType.LIST else "[" + ", ".join(items) + "]"
    return str(value)


def default_for_docs(name: str, default: Any, config_type: ConfigType) -> str:
    """The docs' Default cell, as Kafka's ``getConfigValue``: ``null``, ``""`` or the value.

    Whole ``*.ms`` and ``*.bytes`` defaults get their unit, e.g. ``300000 (5 minutes)``.
    """
    if default is NO_DEFAULT:
        return ""
    if default is None:
        return "null"
    text = convert_to_string(default, config_type) or '""'
    if isinstance(default, int) and not isinstance(default, bool):
        if name.endswith(".ms"):
            text += _nice_units(default, (1000, 60, 60, 24), ("second", "minute", "hour", "day"), True)
        elif name.endswith(".bytes"):
            text += _nice_units(default, (1024,) * 4, ("kibibyte", "mebibyte", "gibibyte", "tebibyte"), False)
    return text


def _nice_units(value: int, divisors: tuple[int, ...], units: tuple[str, ...], is_time: bool) -> str:
    """`` (5 minutes)`` for 300000 ms: Kafka's ``niceTimeUnits`` / ``niceMemoryUnits``.

    Their plural rules differ (time: more than 1; bytes: other than 1); kept as Kafka has them.
    """
    count = 0
    while value != 0 and count < len(divisors) and value % divisors[count] == 0:
        value //= divisors[count]
        count += 1
    if count == 0:
        return ""
    plural = value > 1 if is_time else value != 1
    return f" ({value} {units[count - 1]}{'s' if plural else ''})"


def resolve_class(name: str, class_name: str) -> type:
    """Import ``pkg.module.Class`` (``Outer$Inner`` as ``Outer.Inner``) for key ``name``."""
    parts = class_name.replace("$", ".").split(".")
    for split in range(len(parts) - 1, 0, -1):
        module_name = ".".join(parts[:split])
        try:
            found: Any = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name is not None and (module_name + ".").startswith(exc.name + "."):
                continue  # this prefix is not a module: try a shorter one
            raise invalid_value(name, class_name, f"Class {class_name} could not be loaded: {exc}") from exc
        try:
            for attribute in parts[split:]:
                found = getattr(found, attribute)
        except AttributeError:
            continue
        if isinstance(found, type):
            return found
        raise invalid_value(name, class_name, f"{class_name} is not a class")
    raise invalid_value(name, class_name, f"Class {class_name} could not be found.")

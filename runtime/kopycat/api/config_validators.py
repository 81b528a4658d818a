"""Validators for configuration values, after Kafka's ``ConfigDef.Validator`` family.

A validator checks one parsed value and raises :class:`ConfigError` built with
:func:`~kopycat.api.config_types.invalid_value`, so every message names the key, the value (as
Kafka shows it) and what is allowed.
Its ``str()`` says what is allowed in a few words: the docs' "Valid Values" column and the
REST API show it, so it reads like Kafka's (``[1,...]``, ``[BASE64, NUMERIC]``).

Validators see the *parsed* value: a :class:`Password` for PASSWORD keys.
They unwrap it to check it but put only the masked object (``[hidden]``) in their messages.

All names are re-exported by :mod:`kopycat.api.config`; import them from there.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from kopycat.api.config_types import Password, invalid_value

__all__ = [
    "And",
    "CaseInsensitiveValidString",
    "CompositeValidator",
    "LambdaValidator",
    "ListSize",
    "NonEmptyString",
    "NonEmptyStringWithoutControlChars",
    "NonNullValidator",
    "Range",
    "Regex",
    "ValidList",
    "ValidString",
    "Validator",
]


def _plain(value: Any) -> Any:
    """The value to check: a Password's secret, anything else as it is (never put in messages)."""
    return value.value() if isinstance(value, Password) else value


class Validator:
    """Checks one configuration value (Kafka's ``ConfigDef.Validator``).

    Subclasses implement :meth:`ensure_valid` and ``__str__``; they must raise
    :class:`ConfigError` (never return False) so the reason travels with the failure.
    """

    def ensure_valid(self, name: str, value: Any) -> None:
        """Raise :class:`ConfigError` if ``value`` is not allowed for key ``name``."""
        raise NotImplementedError

    def __str__(self) -> str:
        """What is allowed, for the docs' "Valid Values" column; override it."""
        return ""

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self})"


class Range(Validator):
    """A numeric range, both bounds inclusive and optional (Kafka's ``ConfigDef.Range``).

    ``None`` fails, as in Kafka: a key with a Range needs a value (or a default).
    """

    def __init__(self, min: float | None = None, max: float | None = None) -> None:  # noqa: A002 - Kafka's Range.between(min, max) names
        self.min = min
        self.max = max

    @classmethod
    def at_least(cls, min: float) -> Range:  # noqa: A002 - Kafka's names
        """Only a lower bound (``Range.atLeast``)."""
        return cls(min=min)

    @classmethod
    def between(cls, min: float, max: float) -> Range:  # noqa: A002 - Kafka's names
        """Both bounds, inclusive (``Range.between``)."""
        return cls(min=min, max=max)

    def ensure_valid(self, name: str, value: Any) -> None:
        if value is None:
            raise invalid_value(name, None, "Value must be non-null")
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise invalid_value(name, value, f"Value must be a number in {self}")
        if self.min is not None and value < self.min:
            raise invalid_value(name, value, f"Value must be at least {self.min}")
        if self.max is not None and value > self.max:
            raise invalid_value(name, value, f"Value must be no more than {self.max}")

    def __str__(self) -> str:
        if self.min is None and self.max is None:
            return "[...]"
        if self.min is None:
            return f"[...,{self.max}]"
        if self.max is None:
            return f"[{self.min},...]"
        return f"[{self.min},...,{self.max}]"


class ValidString(Validator):
    """The value must be one of a fixed set of strings, case-sensitive (``ConfigDef.ValidString``)."""

    def __init__(self, valid: Sequence[str]) -> None:
        self.valid = tuple(valid)

    @classmethod
    def in_(cls, *valid: str) -> ValidString:
        """``ValidString.in_("BASE64", "NUMERIC")`` (Kafka's ``ValidString.in``)."""
        return cls(valid)

    def ensure_valid(self, name: str, value: Any) -> None:
        if _plain(value) not in self.valid:
            raise invalid_value(name, value, "String must be one of: " + ", ".join(self.valid))

    def __str__(self) -> str:
        return "[" + ", ".join(self.valid) + "]"


class CaseInsensitiveValidString(Validator):
    """One of a fixed set of strings, ignoring case (``ConfigDef.CaseInsensitiveValidString``).

    The parsed value is kept as written; compare it with ``.upper()`` where it is used.
    """

    def __init__(self, valid: Sequence[str]) -> None:
        self.valid = tuple(dict.fromkeys(v.upper() for v in valid))

    @classmethod
    def in_(cls, *valid: str) -> CaseInsensitiveValidString:
        return cls(valid)

    def ensure_valid(self, name: str, value: Any) -> None:
        plain = _plain(value)
        if not isinstance(plain, str) or plain.upper() not in self.valid:
            raise invalid_value(
                name, value, "String must be one of (case insensitive): " + ", ".join(self.valid))

    def __str__(self) -> str:
        return "(case insensitive) [" + ", ".join(self.valid) + "]"


class ValidList(Validator):
    """Every element of a LIST value must be one of a fixed set (``ConfigDef.ValidList``).

    The message names the offending element, as Kafka's does.
    """

    def __init__(self, valid: Sequence[str]) -> None:
        self.valid_string = ValidString(valid)

    @classmethod
    def in_(cls, *valid: str) -> ValidList:
        return cls(valid)

    def ensure_valid(self, name: str, value: Any) -> None:
        if not isinstance(value, list | tuple):
            raise invalid_value(name, value, f"Value must be a list of items from {self}")
        for item in value:
            self.valid_string.ensure_valid(name, item)

    def __str__(self) -> str:
        return str(self.valid_string)


class ListSize(Validator):
    """A LIST value with at most ``max_size`` elements (``ConfigDef.ListSize``)."""

    def __init__(self, max_size: int) -> None:
        self.max_size = max_size

    @classmethod
    def at_most_of_size(cls, max_size: int) -> ListSize:
        return cls(max_size)

    def ensure_valid(self, name: str, value: Any) -> None:
        if value is not None and len(value) > self.max_size:
            raise invalid_value(name, value, f"exceeds maximum list size of [{self.max_size}].")

    def __str__(self) -> str:
        return f"List containing maximum of {self.max_size} elements"


class NonNullValidator(Validator):
    """The value must not be null (``ConfigDef.NonNullValidator``)."""

    def ensure_valid(self, name: str, value: Any) -> None:
        if value is None:
            raise invalid_value(name, None, "entry must be non null")

    def __str__(self) -> str:
        return "non-null string"


class NonEmptyString(Validator):
    """A string that is not empty; null passes (``ConfigDef.NonEmptyString``).

    STRING values are trimmed when parsed, so blanks count as empty.
    """

    def ensure_valid(self, name: str, value: Any) -> None:
        if _plain(value) == "":
            raise invalid_value(name, value, "String must be non-empty")

    def __str__(self) -> str:
        return "non-empty string"


class NonEmptyStringWithoutControlChars(Validator):
    """Non-empty and without ISO control characters (Kafka's validator for connector names)."""

    def ensure_valid(self, name: str, value: Any) -> None:
        plain = _plain(value)
        if plain is None:
            return
        if plain == "":
            raise invalid_value(name, value, "String may not be empty")
        found = [ord(c) for c in plain if ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F]
        if found:
            raise invalid_value(
                name, value, "String may not contain control sequences but had the following "
                "ASCII chars: " + ", ".join(map(str, found)))

    def __str__(self) -> str:
        return "non-empty string without ISO control characters"


class Regex(Validator):
    """A string that is a valid regular expression, or one that matches ``pattern``.

    ``Regex()`` follows Kafka Connect's ``RegexValidator`` (used by RegexRouter's ``regex``
    and TopicNameMatches' ``pattern``): the value must compile. It compiles with Python's
    :mod:`re`, since that is the engine that will run it. ``Regex(pattern)`` instead requires
    the whole value to match ``pattern`` (like a ``LambdaValidator`` with ``Pattern.matches``).
    A LIST value is checked element by element. Null passes.
    """

    def __init__(self, pattern: str | None = None) -> None:
        self.pattern = re.compile(pattern) if pattern is not None else None

    def ensure_valid(self, name: str, value: Any) -> None:
        items = value if isinstance(value, list | tuple) else [value]
        for item in items:
            plain = _plain(item)
            if plain is None:
                continue
            if self.pattern is not None:
                if not isinstance(plain, str) or self.pattern.fullmatch(plain) is None:
                    raise invalid_value(name, item, f"Value must match {self}")
                continue
            try:
                re.compile(plain)
            except (re.error, TypeError) as exc:
                raise invalid_value(name, item, f"Invalid regex: {exc}") from None

    def __str__(self) -> str:
        return "valid regex" if self.pattern is None else f"regex {self.pattern.pattern}"


class CompositeValidator(Validator):
    """All of several validators, checked in order (``ConfigDef.CompositeValidator``)."""

    def __init__(self, validators: Sequence[Validator]) -> None:
        self.validators = tuple(validators)

    @classmethod
    def of(cls, *validators: Validator) -> CompositeValidator:
        return cls(validators)

    def ensure_valid(self, name: str, value: Any) -> None:
        for validator in self.validators:
            validator.ensure_valid(name, value)

    def __str__(self) -> str:
        return ", ".join(str(v) for v in self.validators)


def And(*validators: Validator) -> CompositeValidator:  # noqa: N802 - reads like a combinator
    """``And(Range.at_least(1), ...)``: shorthand for :meth:`CompositeValidator.of`."""
    return CompositeValidator(validators)


class LambdaValidator(Validator):
    """A validator from a function and a description (``ConfigDef.LambdaValidator``).

    ``check(name, value)`` raises :class:`ConfigError` (use ``ConfigError.for_key``).
    """

    def __init__(self, check: Callable[[str, Any], None], describe: Callable[[], str] | str) -> None:
        self.check = check
        self.describe = describe

    @classmethod
    def with_(cls, check: Callable[[str, Any], None], describe: Callable[[], str] | str) -> LambdaValidator:
        return cls(check, describe)

    def ensure_valid(self, name: str, value: Any) -> None:
        self.check(name, value)

    def __str__(self) -> str:
        return self.describe if isinstance(self.describe, str) else self.describe()

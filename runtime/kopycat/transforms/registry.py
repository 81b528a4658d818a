"""Which class a ``transforms.<alias>.type`` or ``predicates.<alias>.type`` names.

Three spellings reach the same built-in class, so connector configs written for Kafka Connect
work unchanged::

    org.apache.kafka.connect.transforms.InsertField$Value              Kafka's class name
    kopycat.transforms.InsertField$Value  (or ...InsertField.Value)    ours, same shape
    InsertField$Value                                                  the short alias

and any importable Python class path (``mypkg.smts.Redact``) loads a user's own
Transformation or Predicate subclass. Kafka Connect's ``Plugins`` / ``DelegatingClassLoader``
aliases are the model.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Any, Final

from kopycat.api.config import resolve_class
from kopycat.api.errors import ConfigError
from kopycat.api.transforms import Predicate, Transformation
from kopycat.transforms.cast import Cast
from kopycat.transforms.drop_headers import DropHeaders
from kopycat.transforms.extract_field import ExtractField
from kopycat.transforms.filter import Filter
from kopycat.transforms.flatten import Flatten
from kopycat.transforms.header_from import HeaderFrom
from kopycat.transforms.hoist_field import HoistField
from kopycat.transforms.insert_field import InsertField
from kopycat.transforms.insert_header import InsertHeader
from kopycat.transforms.mask_field import MaskField
from kopycat.transforms.predicates import HasHeaderKey, RecordIsTombstone, TopicNameMatches
from kopycat.transforms.regex_router import RegexRouter
from kopycat.transforms.replace_field import ReplaceField
from kopycat.transforms.set_schema_metadata import SetSchemaMetadata
from kopycat.transforms.timestamp_converter import TimestampConverter
from kopycat.transforms.timestamp_router import TimestampRouter
from kopycat.transforms.value_to_key import ValueToKey

__all__ = ["PREDICATES", "TRANSFORMATIONS", "PluginKind", "class_name"]


def class_name(cls: type) -> str:
    """``module.Outer$Inner``: how Kopycat names a class in messages and the REST API."""
    return f"{cls.__module__}.{cls.__qualname__.replace('.', '$')}"


@dataclass(frozen=True)
class PluginKind:
    """Transformations or predicates: their base class, built-ins and the packages they live in."""

    name: str
    base: type
    kafka_package: str
    our_package: str
    builtins: dict[str, type]
    abstract: dict[str, type] = field(default_factory=dict)
    _aliases: dict[str, type] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        for short, cls in {**self.abstract, **self.builtins}.items():
            for spelling in {short, short.replace("$", ".")}:
                for prefix in ("", self.kafka_package + ".", self.our_package + "."):
                    self._aliases[prefix + spelling] = cls

    def kafka_names(self) -> list[str]:
        """The built-ins under Kafka's class names (what the REST API recommends)."""
        return [f"{self.kafka_package}.{short}" for short in self.builtins]

    def known(self) -> str:
        """The built-in names for error messages."""
        return (f"built-in {self.name.lower()}s are {', '.join(self.builtins)} (as "
                f"{self.kafka_package}.<name> or {self.our_package}.<name>), or give the import path "
                f"of a {self.base.__module__}.{self.base.__name__} subclass")

    def resolve(self, key: str, value: Any) -> type:
        """The concrete class ``value`` names for config ``key``; ConfigError naming both if none."""
        if isinstance(value, type):
            cls: type = value
            shown = class_name(value)
        else:
            shown = str(value).strip()
            found = self._aliases.get(shown)
            if found is None:
                try:
                    found = resolve_class(key, shown)
                except ConfigError as exc:
                    raise ConfigError(f"{exc}; {self.known()}", key=key) from None
            cls = found
        if not issubclass(cls, self.base):
            raise ConfigError.for_key(key, shown, f"Class {class_name(cls)} does not implement the "
                                      f"{self.name} interface; {self.known()}")
        if inspect.isabstract(cls):
            variants = [class_name(getattr(cls, side)) for side in ("Key", "Value")
                        if isinstance(getattr(cls, side, None), type)]
            hint = f" Did you mean {' or '.join(variants)}?" if variants else ""
            raise ConfigError.for_key(key, shown, f"This class is abstract and cannot be created.{hint}")
        return cls


TRANSFORMATIONS: Final = PluginKind(
    "Transformation", Transformation, "org.apache.kafka.connect.transforms", "kopycat.transforms", {
        "Cast$Key": Cast.Key, "Cast$Value": Cast.Value,
        "DropHeaders": DropHeaders,
        "ExtractField$Key": ExtractField.Key, "ExtractField$Value": ExtractField.Value,
        "Filter": Filter,
        "Flatten$Key": Flatten.Key, "Flatten$Value": Flatten.Value,
        "HeaderFrom$Key": HeaderFrom.Key, "HeaderFrom$Value": HeaderFrom.Value,
        "HoistField$Key": HoistField.Key, "HoistField$Value": HoistField.Value,
        "InsertField$Key": InsertField.Key, "InsertField$Value": InsertField.Value,
        "InsertHeader": InsertHeader,
        "MaskField$Key": MaskField.Key, "MaskField$Value": MaskField.Value,
        "RegexRouter": RegexRouter,
        "ReplaceField$Key": ReplaceField.Key, "ReplaceField$Value": ReplaceField.Value,
        "SetSchemaMetadata$Key": SetSchemaMetadata.Key, "SetSchemaMetadata$Value": SetSchemaMetadata.Value,
        "TimestampConverter$Key": TimestampConverter.Key, "TimestampConverter$Value": TimestampConverter.Value,
        "TimestampRouter": TimestampRouter,
        "ValueToKey": ValueToKey,
    }, {family.__name__: family for family in (Cast, ExtractField, Flatten, HeaderFrom, HoistField, InsertField,
                                                MaskField, ReplaceField, SetSchemaMetadata, TimestampConverter)})
"""The built-in transformations and how to resolve a ``transforms.<alias>.type``."""

PREDICATES: Final = PluginKind(
    "Predicate", Predicate, "org.apache.kafka.connect.transforms.predicates",
    "kopycat.transforms.predicates", {
        "HasHeaderKey": HasHeaderKey, "RecordIsTombstone": RecordIsTombstone,
        "TopicNameMatches": TopicNameMatches,
    })
"""The built-in predicates and how to resolve a ``predicates.<alias>.type``."""

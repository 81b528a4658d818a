"""What the SMTs share: key/value sides, schema caches, requirements, config validators.

Follows Kafka's ``connect/transforms/util`` (``Requirements``, ``SchemaUtil``,
``NonEmptyListValidator``) and the ``Key``/``Value`` pattern every field SMT uses: the abstract
transform works on "the operating side", and its ``Key`` and ``Value`` subclasses say which side
that is. Private to :mod:`kopycat.transforms`.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any, ClassVar, Final, TypeVar

from kopycat.api.config import ConfigDef, Validator
from kopycat.api.data import Schema, SchemaBuilder, Struct
from kopycat.api.errors import ConfigError, DataError
from kopycat.api.records import ConnectRecord, SinkRecord

__all__ = [
    "DeclaredConfig", "KeySide", "NonEmptyList", "SchemaCache", "Side", "ValueSide", "copy_schema_basics",
    "java_split", "key_value_variants", "require_map", "require_map_or_null",
    "require_sink_record", "require_struct", "require_struct_or_null",
]

RecordT = TypeVar("RecordT", bound=ConnectRecord)

REPLACE_NULL_WITH_DEFAULT: Final = "replace.null.with.default"
REPLACE_NULL_WITH_DEFAULT_DOC: Final = (
    "Whether to replace fields that have a default value and that are null to the default value. "
    "When set to true, the default value is used, otherwise null is used.")


class DeclaredConfig:
    """``config()`` for transforms and predicates that declare their keys in ``CONFIG_DEF``.

    Listed before Transformation/Predicate in the bases so it fills their abstract config().
    """

    CONFIG_DEF: ClassVar[ConfigDef]

    def config(self) -> ConfigDef:
        return self.CONFIG_DEF


class Side(ABC):
    """The part of a record a field SMT works on: its key or its value (Kafka's ``operatingSchema``,
    ``operatingValue`` and ``newRecord`` template methods)."""

    SIDE: ClassVar[str] = ""

    @staticmethod
    @abstractmethod
    def operating_schema(record: ConnectRecord) -> Schema | None:
        """The schema of the side this transform changes."""

    @staticmethod
    @abstractmethod
    def operating_value(record: ConnectRecord) -> Any:
        """The key or the value this transform changes."""

    @staticmethod
    @abstractmethod
    def updated(record: RecordT, schema: Schema | None, value: Any) -> RecordT:
        """A copy of ``record`` whose side now has ``schema`` and ``value`` (headers copied)."""


class KeySide(Side):
    """Works on the record key (Kafka's ``$Key`` variants)."""

    SIDE = "Key"

    @staticmethod
    def operating_schema(record: ConnectRecord) -> Schema | None:
        return record.key_schema

    @staticmethod
    def operating_value(record: ConnectRecord) -> Any:
        return record.key

    @staticmethod
    def updated(record: RecordT, schema: Schema | None, value: Any) -> RecordT:
        updated: RecordT = record.new_record(key_schema=schema, key=value)
        return updated


class ValueSide(Side):
    """Works on the record value (Kafka's ``$Value`` variants)."""

    SIDE = "Value"

    @staticmethod
    def operating_schema(record: ConnectRecord) -> Schema | None:
        return record.value_schema

    @staticmethod
    def operating_value(record: ConnectRecord) -> Any:
        return record.value

    @staticmethod
    def updated(record: RecordT, schema: Schema | None, value: Any) -> RecordT:
        updated: RecordT = record.new_record(value_schema=schema, value=value)
        return updated


def key_value_variants(base: type[Any]) -> tuple[Any, Any]:
    """``base.Key`` and ``base.Value``: the concrete classes, named as Kafka nests them.

    ``InsertField.Value`` has the qualified name ``InsertField.Value``, so its class path is
    ``kopycat.transforms.InsertField$Value`` (or ``...InsertField.Value``), as Kafka's is
    ``org.apache.kafka.connect.transforms.InsertField$Value``.
    """
    made = []
    for side in (KeySide, ValueSide):
        doc = (f"{base.__name__} applied to the record {side.SIDE.lower()} "
               f"(Kafka's ``{base.__name__}${side.SIDE}``).")
        cls = type(side.SIDE, (side, base), {
            "__module__": base.__module__, "__qualname__": f"{base.__qualname__}.{side.SIDE}",
            "__doc__": doc})
        made.append(cls)
    return made[0], made[1]


class SchemaCache:
    """Updated schemas by input schema, bounded (Kafka's ``SynchronizedCache(LRUCache(16))``).

    A hit is one dict lookup (schemas hash once, identical objects compare by identity); a miss
    builds under a lock and evicts the oldest entry when full. Safe to share between threads.
    """

    __slots__ = ("_entries", "_lock", "_max")

    def __init__(self, max_entries: int = 16) -> None:
        self._entries: dict[Schema, Any] = {}
        self._lock = threading.Lock()
        self._max = max_entries

    def get(self, schema: Schema) -> Any:
        return self._entries.get(schema)

    def put(self, schema: Schema, updated: Any) -> None:
        with self._lock:
            if schema not in self._entries and len(self._entries) >= self._max:
                del self._entries[next(iter(self._entries))]
            self._entries[schema] = updated

    def __len__(self) -> int:
        return len(self._entries)


def copy_schema_basics(source: Schema, builder: SchemaBuilder) -> SchemaBuilder:
    """Copy name, version, doc and parameters onto ``builder`` (Kafka's ``SchemaUtil.copySchemaBasics``)."""
    if source.name is not None:
        builder.name(source.name)
    if source.version is not None:
        builder.version(source.version)
    if source.doc is not None:
        builder.doc(source.doc)
    if source.parameters is not None:
        builder.parameters(source.parameters)
    return builder


def _class_name(value: Any) -> str:
    return "null" if value is None else f"{type(value).__module__}.{type(value).__qualname__}"


def require_map(value: Any, purpose: str) -> Mapping[str, Any]:
    """``value`` as a dict, or DataError (Kafka's ``Requirements.requireMap``)."""
    if not isinstance(value, Mapping):
        raise DataError(f"Only Map objects supported in absence of schema for [{purpose}], "
                        f"found: {_class_name(value)}")
    return value


def require_map_or_null(value: Any, purpose: str) -> Mapping[str, Any] | None:
    return None if value is None else require_map(value, purpose)


def require_struct(value: Any, purpose: str) -> Struct:
    """``value`` as a Struct, or DataError (Kafka's ``Requirements.requireStruct``)."""
    if not isinstance(value, Struct):
        raise DataError(f"Only Struct objects supported for [{purpose}], found: {_class_name(value)}")
    return value


def require_struct_or_null(value: Any, purpose: str) -> Struct | None:
    return None if value is None else require_struct(value, purpose)


def require_sink_record(record: ConnectRecord, purpose: str) -> SinkRecord:
    """``record`` as a SinkRecord, or DataError (Kafka's ``Requirements.requireSinkRecord``)."""
    if not isinstance(record, SinkRecord):
        raise DataError(f"Only SinkRecord supported for [{purpose}], found: {_class_name(record)}")
    return record


def java_split(text: str, separator: str) -> list[str]:
    """``String.split`` with a literal separator: trailing empty strings are dropped."""
    parts = text.split(separator)
    while len(parts) > 1 and parts[-1] == "":
        parts.pop()
    if parts == [""] and text:
        return []
    return parts


class NonEmptyList(Validator):
    """A LIST with at least one element (Kafka's ``util.NonEmptyListValidator``)."""

    def ensure_valid(self, name: str, value: Any) -> None:
        if not value:
            raise ConfigError.for_key(name, value, "Empty list")

    def __str__(self) -> str:
        return "non-empty list"

"""Fluent, validating construction of schemas (Kafka's ``org.apache.kafka.connect.data.SchemaBuilder``).

Builds :class:`~kopycat.api.schema.Schema`; :mod:`kopycat.api.data` re-exports it
(``from kopycat.api.data import SchemaBuilder``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from kopycat.api.errors import DataError, SchemaBuilderError
from kopycat.api.schema import Field, Schema, Type, validate_value

__all__ = ["SchemaBuilder"]


class SchemaBuilder:
    """Fluent, validating construction of a :class:`Schema` (Kafka's ``SchemaBuilder``).

    ``SchemaBuilder.struct().name("order").field("id", Schema.INT64_SCHEMA).optional().build()``.
    Setting an attribute twice to different values raises :class:`SchemaBuilderError`, and so
    does a default that does not fit the schema built so far (as in Kafka).
    """

    def __init__(self, type: Type) -> None:
        if type is None:
            raise SchemaBuilderError("type cannot be null")
        self.type = type
        self._optional: bool | None = None
        self._default: Any = None
        self._name: str | None = None
        self._version: int | None = None
        self._doc: str | None = None
        self._parameters: dict[str, str] | None = None
        self._fields: dict[str, Field] | None = {} if type is Type.STRUCT else None
        self._key_schema: Schema | None = None
        self._value_schema: Schema | None = None

    @staticmethod
    def _check_can_set(attr: str, current: Any, value: Any) -> None:
        if current is not None and current != value:
            raise SchemaBuilderError(f"Invalid SchemaBuilder call: {attr} has already been set.")

    def optional(self) -> SchemaBuilder:
        """Allow null values."""
        self._check_can_set("optional", self._optional, True)
        self._optional = True
        return self

    def required(self) -> SchemaBuilder:
        """Disallow null values (the default)."""
        self._check_can_set("optional", self._optional, False)
        self._optional = False
        return self

    def default_value(self, value: Any) -> SchemaBuilder:
        """Set the default, validated against the schema as built so far."""
        self._check_can_set("default", self._default, value)
        try:
            validate_value(self.build(), value, "default")
        except DataError as exc:
            raise SchemaBuilderError(f"Invalid default value: {exc}") from exc
        self._default = value
        return self

    def name(self, name: str) -> SchemaBuilder:
        """Set the schema's (fully qualified) name; logical types are recognised by it."""
        self._check_can_set("name", self._name, name)
        self._name = name
        return self

    def version(self, version: int) -> SchemaBuilder:
        """Set the schema's version."""
        self._check_can_set("version", self._version, version)
        self._version = version
        return self

    def doc(self, doc: str) -> SchemaBuilder:
        """Set the human-readable documentation."""
        self._check_can_set("doc", self._doc, doc)
        self._doc = doc
        return self

    def parameter(self, key: str, value: str) -> SchemaBuilder:
        """Add a string parameter; insertion order is kept (Kafka uses a LinkedHashMap)."""
        if self._parameters is None:
            self._parameters = {}
        self._parameters[key] = value
        return self

    def parameters(self, params: Mapping[str, str]) -> SchemaBuilder:
        """Add several parameters; an empty mapping leaves parameters unset, as in Kafka."""
        for key, value in params.items():
            self.parameter(key, value)
        return self

    def field(self, name: str, schema: Schema | SchemaBuilder) -> SchemaBuilder:
        """Append a field to a STRUCT; names must be unique and non-empty."""
        if self._fields is None:
            raise SchemaBuilderError(f"Cannot create fields on type {self.type.name}")
        if not name:
            raise SchemaBuilderError("fieldName cannot be null.")
        if schema is None:
            raise SchemaBuilderError(f"fieldSchema for field {name} cannot be null.")
        if name in self._fields:
            raise SchemaBuilderError(f"Cannot create field because of field name duplication {name}")
        name = str(name)  # a plain str: subclasses (SQLAlchemy's reflected quoted_name) are no JSON keys to orjson
        self._fields[name] = Field(name, len(self._fields), schema.schema())
        return self

    def build(self) -> Schema:
        """The immutable schema."""
        return Schema(self.type, bool(self._optional), self._default, self._name, self._version,
                      self._doc, self._parameters,
                      None if self._fields is None else list(self._fields.values()),
                      self._key_schema, self._value_schema)

    schema = build

    @staticmethod
    def type_(type: Type) -> SchemaBuilder:
        """A builder for ``type`` (Kafka's ``SchemaBuilder.type``)."""
        return SchemaBuilder(type)

    # Kafka's SchemaBuilder.int8() ... bytes(), struct(): one factory per type, set below.
    int8: ClassVar[Callable[[], SchemaBuilder]]
    int16: ClassVar[Callable[[], SchemaBuilder]]
    int32: ClassVar[Callable[[], SchemaBuilder]]
    int64: ClassVar[Callable[[], SchemaBuilder]]
    float32: ClassVar[Callable[[], SchemaBuilder]]
    float64: ClassVar[Callable[[], SchemaBuilder]]
    bool: ClassVar[Callable[[], SchemaBuilder]]
    string: ClassVar[Callable[[], SchemaBuilder]]
    bytes: ClassVar[Callable[[], SchemaBuilder]]
    struct: ClassVar[Callable[[], SchemaBuilder]]

    @staticmethod
    def array(value_schema: Schema | SchemaBuilder) -> SchemaBuilder:
        """An ARRAY of ``value_schema`` elements."""
        if value_schema is None:
            raise SchemaBuilderError("valueSchema cannot be null.")
        builder = SchemaBuilder(Type.ARRAY)
        builder._value_schema = value_schema.schema()
        return builder

    @staticmethod
    def map(key_schema: Schema | SchemaBuilder, value_schema: Schema | SchemaBuilder) -> SchemaBuilder:
        """A MAP from ``key_schema`` keys to ``value_schema`` values."""
        if key_schema is None:
            raise SchemaBuilderError("keySchema cannot be null.")
        if value_schema is None:
            raise SchemaBuilderError("valueSchema cannot be null.")
        builder = SchemaBuilder(Type.MAP)
        builder._key_schema = key_schema.schema()
        builder._value_schema = value_schema.schema()
        return builder


for _type in Type:
    if _type not in (Type.ARRAY, Type.MAP):
        _factory = "bool" if _type is Type.BOOLEAN else _type.value
        setattr(SchemaBuilder, _factory, staticmethod(functools.partial(SchemaBuilder, _type)))

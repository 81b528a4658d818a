"""Kafka Connect's schemas and structs: ``Type``, ``Field``, ``Schema`` (``ConnectSchema``), ``Struct``.

The core of ``org.apache.kafka.connect.data`` that everything else in the data model builds on:
:mod:`kopycat.api.schema_builder` builds these schemas, :mod:`kopycat.api.logical` defines the
logical types over them, and :mod:`kopycat.api.data` re-exports all three as Kafka's one data
package. A schema built here means what it means to a Kafka Connect worker, so converters can
write the same bytes.

Python values per schema type (what :func:`validate_value` accepts)::

    INT8/INT16/INT32/INT64   int (not bool), within the Java type's range
    FLOAT32/FLOAT64          float (an int is accepted and written as a float)
    BOOLEAN                  bool            STRING   str
    BYTES                    bytes, bytearray
    ARRAY                    list, tuple     MAP      dict (any Mapping)
    STRUCT                   Struct whose schema equals the field's schema
    Decimal                  decimal.Decimal, finite, exact at the schema's scale
    Date                     datetime.date (not a datetime)
    Time                     datetime.time, naive or UTC; sub-millisecond digits are dropped on the wire
    Timestamp                datetime.datetime; naive means UTC; decoded values are UTC-aware

Where Python is looser than Java's class checks (ints for floats, naive datetimes) the
docstring of the type says so. Errors name the value's path (``order.lines[2].price``).
A value of a logical type is checked by its class, found by schema name in
:data:`kopycat.api.logical_registry.LOGICAL_TYPES`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from enum import Enum
from types import MappingProxyType
from typing import Any, ClassVar, Final

from kopycat.api.errors import DataError
from kopycat.api.logical_registry import LOGICAL_TYPES

__all__ = [
    "INT_RANGES", "Field", "Schema", "Struct", "Type", "at_field", "short_repr", "validate_value",
]

_logical_type = LOGICAL_TYPES.get


class Type(Enum):
    """A schema's type; values are Kafka's ``Schema.Type.getName()``."""

    INT8 = "int8"
    INT16 = "int16"
    INT32 = "int32"
    INT64 = "int64"
    FLOAT32 = "float32"
    FLOAT64 = "float64"
    BOOLEAN = "boolean"
    STRING = "string"
    BYTES = "bytes"
    ARRAY = "array"
    MAP = "map"
    STRUCT = "struct"

    @property
    def is_primitive(self) -> bool:
        """True for every type but ARRAY, MAP and STRUCT (``Type.isPrimitive``)."""
        return self not in (Type.ARRAY, Type.MAP, Type.STRUCT)


INT_RANGES: Final[dict[Type, tuple[int, int]]] = {
    Type.INT8: (-(2**7), 2**7 - 1),
    Type.INT16: (-(2**15), 2**15 - 1),
    Type.INT32: (-(2**31), 2**31 - 1),
    Type.INT64: (-(2**63), 2**63 - 1),
}


class Field:
    """A named, indexed member of a STRUCT schema (Kafka's ``Field``); immutable."""

    __slots__ = ("name", "index", "schema")

    def __init__(self, name: str, index: int, schema: Schema) -> None:
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "index", index)
        object.__setattr__(self, "schema", schema)

    name: str
    index: int
    schema: Schema

    def __setattr__(self, key: str, value: Any) -> None:
        raise AttributeError("Field is immutable")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Field):
            return NotImplemented
        return (self.index, self.name, self.schema) == (other.index, other.name, other.schema)

    def __hash__(self) -> int:
        return hash((self.name, self.index, self.schema))

    def __repr__(self) -> str:
        return f"Field{{name={self.name}, index={self.index}, schema={self.schema!r}}}"


class Schema:
    """An immutable schema, like Kafka's ``ConnectSchema``; build one with :class:`SchemaBuilder`.

    Equality and hashing follow ``ConnectSchema.equals``: every attribute counts, parameters
    compare as maps. ``fields``/``field()`` raise on non-STRUCT schemas, ``key_schema`` on
    non-MAP and ``value_schema`` on non-ARRAY/MAP schemas, as in Kafka.
    """

    __slots__ = ("type", "optional", "default", "name", "version", "doc", "_parameters",
                 "_fields", "_fields_by_name", "_key_schema", "_value_schema", "_hash")

    type: Type
    optional: bool
    default: Any
    name: str | None
    version: int | None
    doc: str | None
    _parameters: Mapping[str, str] | None
    _fields: tuple[Field, ...] | None
    _fields_by_name: dict[str, Field] | None
    _key_schema: Schema | None
    _value_schema: Schema | None
    _hash: int | None

    INT8_SCHEMA: ClassVar[Schema]
    INT16_SCHEMA: ClassVar[Schema]
    INT32_SCHEMA: ClassVar[Schema]
    INT64_SCHEMA: ClassVar[Schema]
    FLOAT32_SCHEMA: ClassVar[Schema]
    FLOAT64_SCHEMA: ClassVar[Schema]
    BOOLEAN_SCHEMA: ClassVar[Schema]
    STRING_SCHEMA: ClassVar[Schema]
    BYTES_SCHEMA: ClassVar[Schema]
    OPTIONAL_INT8_SCHEMA: ClassVar[Schema]
    OPTIONAL_INT16_SCHEMA: ClassVar[Schema]
    OPTIONAL_INT32_SCHEMA: ClassVar[Schema]
    OPTIONAL_INT64_SCHEMA: ClassVar[Schema]
    OPTIONAL_FLOAT32_SCHEMA: ClassVar[Schema]
    OPTIONAL_FLOAT64_SCHEMA: ClassVar[Schema]
    OPTIONAL_BOOLEAN_SCHEMA: ClassVar[Schema]
    OPTIONAL_STRING_SCHEMA: ClassVar[Schema]
    OPTIONAL_BYTES_SCHEMA: ClassVar[Schema]

    def __init__(
        self, type: Type, optional: bool = False, default: Any = None, name: str | None = None,
        version: int | None = None, doc: str | None = None,
        parameters: Mapping[str, str] | None = None, fields: list[Field] | tuple[Field, ...] | None = None,
        key_schema: Schema | None = None, value_schema: Schema | None = None,
    ) -> None:
        """Use :class:`SchemaBuilder`; this constructor does not validate (``ConnectSchema``'s)."""
        setter = object.__setattr__
        for attr, value in (("type", type), ("optional", optional), ("default", default),
                            ("name", name), ("version", version), ("doc", doc),
                            ("_key_schema", key_schema), ("_value_schema", value_schema),
                            ("_hash", None)):
            setter(self, attr, value)
        setter(self, "_parameters", None if parameters is None else MappingProxyType(dict(parameters)))
        field_tuple = tuple(fields or ()) if type is Type.STRUCT else None
        setter(self, "_fields", field_tuple)
        setter(self, "_fields_by_name", None if field_tuple is None else {f.name: f for f in field_tuple})

    def __setattr__(self, key: str, value: Any) -> None:
        raise AttributeError("Schema is immutable; use SchemaBuilder")

    @property
    def parameters(self) -> Mapping[str, str] | None:
        """Extra string parameters (logical types keep theirs here, e.g. Decimal's ``scale``)."""
        return self._parameters

    @property
    def fields(self) -> tuple[Field, ...]:
        """The STRUCT's fields in order."""
        if self._fields is None:
            raise DataError(f"Cannot list fields on non-struct type {self.type.name}")
        return self._fields

    def field(self, name: str) -> Field | None:
        """The STRUCT's field called ``name``, or None."""
        if self._fields_by_name is None:
            raise DataError(f"Cannot look up fields on non-struct type {self.type.name}")
        return self._fields_by_name.get(name)

    @property
    def key_schema(self) -> Schema:
        """The MAP's key schema."""
        if self.type is not Type.MAP:
            raise DataError(f"Cannot look up key schema on non-map type {self.type.name}")
        return self._key_schema  # type: ignore[return-value]

    @property
    def value_schema(self) -> Schema:
        """The ARRAY's element schema or the MAP's value schema."""
        if self.type is not Type.MAP and self.type is not Type.ARRAY:
            raise DataError(f"Cannot look up value schema on non-array and non-map type {self.type.name}")
        return self._value_schema  # type: ignore[return-value]

    def schema(self) -> Schema:
        """This schema (so a Schema and a SchemaBuilder can be used alike)."""
        return self

    def _key(self) -> tuple[Any, ...]:
        return (self.type, self.optional, self.name, self.version, self.doc, self._fields,
                self._key_schema, self._value_schema)

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if not isinstance(other, Schema):
            return NotImplemented
        return (self._key() == other._key() and _same_value(self.default, other.default)
                and self._parameters == other._parameters)

    def __hash__(self) -> int:
        if self._hash is None:
            params = frozenset(self._parameters.items()) if self._parameters is not None else None
            object.__setattr__(self, "_hash", hash((self._key(), params)))
        return self._hash  # type: ignore[return-value]

    def __repr__(self) -> str:
        return f"Schema{{{self.name}:{self.type.name}}}" if self.name else f"Schema{{{self.type.name}}}"

    def __reduce__(self) -> tuple[Any, ...]:
        return (Schema, (self.type, self.optional, self.default, self.name, self.version, self.doc,
                         self._parameters and dict(self._parameters), self._fields,
                         self._key_schema, self._value_schema))


def _same_value(a: Any, b: Any) -> bool:
    """Equality that keeps ``True != 1`` and ``1 != 1.0`` apart (Java's ``Objects.deepEquals``)."""
    return type(a) is type(b) and a == b


for _type in Type:
    if _type.is_primitive:
        setattr(Schema, f"{_type.name}_SCHEMA", Schema(_type))
        setattr(Schema, f"OPTIONAL_{_type.name}_SCHEMA", Schema(_type, optional=True))


class Struct:
    """A record of named values following a STRUCT schema (Kafka's ``Struct``).

    ``put`` validates the value against the field's schema and names the field's path on error;
    ``get`` returns the field's default when the value is unset; ``validate`` checks that every
    required field without a default is set. Structs are mutable and therefore unhashable.
    """

    __slots__ = ("schema", "_values")

    def __init__(self, schema: Schema) -> None:
        if schema.type is not Type.STRUCT:
            raise DataError(f"Not a struct schema: {schema!r}")
        self.schema = schema
        self._values: list[Any] = [None] * len(schema.fields)

    @classmethod
    def of_values(cls, schema: Schema, values: list[Any]) -> Struct:
        """A struct over ``values`` in field order, kept (not copied) and not checked.

        For hot paths whose values are known to fit: a converter's decoded fields, a transform's
        copy of a valid struct, a row of a reflected table. :meth:`validate` checks it on demand.
        """
        struct = cls.__new__(cls)
        struct.schema = schema
        struct._values = values
        return struct

    def _lookup(self, name: str | Field) -> Field:
        if isinstance(name, Field):
            return name
        found = self.schema.field(name)
        if found is None:
            raise DataError(f"{name} is not a valid field name")
        return found

    def put(self, name: str | Field, value: Any) -> Struct:
        """Set a field after validating ``value``; returns self so puts chain."""
        field = self._lookup(name)
        validate_value(field.schema, value, field.name)
        self._values[field.index] = value
        return self

    def get(self, name: str | Field) -> Any:
        """The field's value, or its schema's default when unset."""
        field = self._lookup(name)
        value = self._values[field.index]
        return field.schema.default if value is None else value

    def get_without_default(self, name: str | Field) -> Any:
        """The field's value as set, None when unset."""
        return self._values[self._lookup(name).index]

    def values(self) -> tuple[Any, ...]:
        """Every field's value as set (None when unset), in schema field order.

        For columnar conversions (:mod:`kopycat.api.arrow_values`), which read a batch of
        structs column by column instead of calling :meth:`get` per field and record.
        """
        return tuple(self._values)

    def validate(self, path: str = "") -> None:
        """Raise :class:`DataError` naming the first required field that is unset or invalid."""
        for field in self.schema.fields:
            value = self._values[field.index]
            if value is None and (field.schema.optional or field.schema.default is not None):
                continue
            validate_value(field.schema, value, _join(path, field.name))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Struct):
            return NotImplemented
        return self.schema == other.schema and self._values == other._values

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        set_fields = [f"{f.name}={self._values[f.index]!r}" for f in self.schema.fields
                      if self._values[f.index] is not None]
        return "Struct{" + ",".join(set_fields) + "}"


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _where(path: str) -> str:
    return f"field {path}" if path else "value"


def at_field(path: str) -> str:
    """`` for field <path>`` to put after "Invalid value" in a message, or nothing at the top level."""
    return f" for field {path}" if path else ""


def validate_value(schema: Schema, value: Any, path: str = "") -> None:
    """Raise :class:`DataError` unless ``value`` fits ``schema`` (``ConnectSchema.validateValue``).

    ``path`` names the value in messages (``order.lines[2].price``); nested values extend it.
    Used by :meth:`Struct.put`, :meth:`SchemaBuilder.default_value` and the converters.
    """
    if value is None:
        if not schema.optional:
            raise DataError(f"Invalid value: null used for required {_where(path)}, schema type: {schema.type.name}")
        return
    logical = _logical_type(schema.name) if schema.name else None
    if logical is not None:
        logical.validate(schema, value, path)
        return
    check = _CHECKS[schema.type]
    if not check(value):
        raise DataError(f"Invalid value{at_field(path)}: expected {_EXPECTED[schema.type]} for schema "
                        f"type {schema.type.name}, got {type(value).__name__} {short_repr(value)}")
    if schema.type in INT_RANGES:
        low, high = INT_RANGES[schema.type]
        if not low <= value <= high:
            raise DataError(f"Invalid value{at_field(path)}: {value} is out of range for {schema.type.name}")
    elif schema.type is Type.STRUCT:
        if value.schema != schema:
            raise DataError(f"Invalid value{at_field(path)}: struct schemas do not match")
        value.validate(path)
    elif schema.type is Type.ARRAY:
        for index, element in enumerate(value):
            validate_value(schema.value_schema, element, f"{path or 'value'}[{index}]")
    elif schema.type is Type.MAP:
        for key, element in value.items():
            validate_value(schema.key_schema, key, f"{path or 'value'}.<key {key!r}>")
            validate_value(schema.value_schema, element, f"{path or 'value'}[{key!r}]")


def short_repr(value: Any) -> str:
    """``repr(value)`` cut to 40 characters, so a message shows what was wrong without a whole blob."""
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


_CHECKS: Final[dict[Type, Callable[[Any], bool]]] = {
    Type.INT8: _is_int, Type.INT16: _is_int, Type.INT32: _is_int, Type.INT64: _is_int,
    Type.FLOAT32: lambda v: isinstance(v, float) or _is_int(v),
    Type.FLOAT64: lambda v: isinstance(v, float) or _is_int(v),
    Type.BOOLEAN: lambda v: isinstance(v, bool),
    Type.STRING: lambda v: isinstance(v, str),
    Type.BYTES: lambda v: isinstance(v, bytes | bytearray),
    Type.ARRAY: lambda v: isinstance(v, list | tuple),
    Type.MAP: lambda v: isinstance(v, Mapping),
    Type.STRUCT: lambda v: isinstance(v, Struct),
}
_EXPECTED: Final = {
    Type.INT8: "int", Type.INT16: "int", Type.INT32: "int", Type.INT64: "int",
    Type.FLOAT32: "float", Type.FLOAT64: "float", Type.BOOLEAN: "bool", Type.STRING: "str",
    Type.BYTES: "bytes", Type.ARRAY: "list", Type.MAP: "dict", Type.STRUCT: "Struct",
}

"""Connect schemas and values <-> Protobuf schemas and messages, as Confluent's ``ProtobufData`` maps them.

Follows ``io.confluent.connect.protobuf.ProtobufData`` with its defaults (no enhanced schema
support, no wrappers for nullables, names not scrubbed)::

    STRUCT              a proto3 message named by the schema's unqualified name (its namespace is
                        the package of the root); unnamed: ConnectDefault1, 2, ... in order of use;
                        a nested struct is a nested message (``<Name>Message`` when the field has
                        its name); fields numbered 1, 2, ... in order (or by ``...protobuf.Tag``)
    INT8, INT16         int32, with ``connect.type`` in the field's ``(confluent.field_meta)`` params
    INT32, INT64        int32, int64 (or the ``io.confluent.connect.protobuf.Type`` parameter's type)
    FLOAT32, FLOAT64    float, double;  BOOLEAN, STRING, BYTES   bool, string, bytes
    ARRAY               a ``repeated`` field (of non-null elements; arrays of arrays have no form)
    MAP                 ``map<K, V>`` (keys of a scalar type)
    Decimal             ``confluent.type.Decimal`` (unscaled two's complement bytes, precision,
                        scale), with ``scale`` and ``precision`` params
    Date, Time          ``google.type.Date``, ``google.type.TimeOfDay``
    Timestamp           ``google.protobuf.Timestamp``
    optional            a plain field (null is not written; it reads back as the type's zero,
                        as in Confluent's converter), or with ``optional.for.nullables`` a proto3
                        ``optional`` field, or with ``wrapper.for.nullables`` a wrapper message
                        (``google.protobuf.Int32Value``, ...): both keep null

Read back (``toConnectSchema``): a message is a STRUCT named by the message's simple name with
every field optional (by default) and tagged with ``io.confluent.connect.protobuf.Tag`` (its number), a map
named after its field (``ProtobufSchema.toMapField``);
int32 with ``connect.type`` int8/int16 is INT8/INT16; other 32-bit integer types are INT32 (unsigned
ones INT64) and 64-bit ones INT64, with ``...protobuf.Type`` naming a non-default type; repeated
fields are optional ARRAYs of optional elements; enums are STRINGs with ``...protobuf.Enum``
parameters. A message field not set, and a proto3 ``optional`` one not set, read as null.

A primitive root schema (a record key, say) is written as its ``google.protobuf`` wrapper message,
the schema being ``google/protobuf/wrappers.proto``, and read back as the primitive
(``wrapper.for.raw.primitives``). With ``wrapper.for.nullables`` optional primitive fields are
``google.protobuf`` wrapper fields both ways (null when not set), and scalar fields read back
required; with ``optional.for.nullables`` only ``optional`` scalars read back optional. Not
A oneof is an optional STRUCT field ``<oneof>_<index>`` named ``io.confluent.connect.protobuf.Union.<oneof>``
(first in the struct, as Confluent's ``generate.index.for.unions``), whose one set member holds the
value; such a struct is written back as the oneof. Not covered: ARRAY and MAP roots (a DataError).
"""

from __future__ import annotations

import datetime as dt
import decimal as _decimal
from dataclasses import dataclass, field
from typing import Any, Final

from google.protobuf import descriptor_pb2, wrappers_pb2

from kopycat.api.data import Date, Decimal, Schema, SchemaBuilder, Struct, Time, Timestamp, Type
from kopycat.api.errors import DataError
from kopycat.converters.protobuf_descriptors import CompiledProto
from kopycat.converters.protobuf_schema import SCALARS, ProtoEnum, ProtoField, ProtoFile, ProtoMessage, from_descriptor
from kopycat.converters.scrub_names import scrub_full_name, scrub_name

__all__ = ["ProtobufOptions", "from_connect_message", "to_connect_schema", "to_connect_value", "to_proto_file"]

NAMESPACE: Final = "io.confluent.connect.protobuf"
PROTOBUF_TYPE_TAG: Final = NAMESPACE + ".Tag"
PROTOBUF_TYPE_PROP: Final = NAMESPACE + ".Type"
PROTOBUF_TYPE_ENUM: Final = NAMESPACE + ".Enum"
PROTOBUF_TYPE_UNION_PREFIX: Final = NAMESPACE + ".Union."
DEFAULT_SCHEMA_NAME: Final = "ConnectDefault"
CONNECT_TYPE_PROP: Final = "connect.type"
CONNECT_PRECISION_PROP: Final = "connect.decimal.precision"
DECIMAL_TYPE: Final = "confluent.type.Decimal"
DATE_TYPE: Final = "google.type.Date"
TIME_TYPE: Final = "google.type.TimeOfDay"
TIMESTAMP_TYPE: Final = "google.protobuf.Timestamp"
_LOGICAL: Final = {  # Connect logical name -> (message type, its import)
    Decimal.LOGICAL_NAME: (DECIMAL_TYPE, "confluent/type/decimal.proto"),
    Date.LOGICAL_NAME: (DATE_TYPE, "google/type/date.proto"),
    Time.LOGICAL_NAME: (TIME_TYPE, "google/type/timeofday.proto"),
    Timestamp.LOGICAL_NAME: (TIMESTAMP_TYPE, "google/protobuf/timestamp.proto"),
}
_SCALAR_OF: Final = {Type.INT8: "int32", Type.INT16: "int32", Type.INT32: "int32", Type.INT64: "int64",
                     Type.FLOAT32: "float", Type.FLOAT64: "double", Type.BOOLEAN: "bool", Type.STRING: "string",
                     Type.BYTES: "bytes"}
_WRAPPERS: Final = ("DoubleValue", "FloatValue", "Int64Value", "UInt64Value", "Int32Value", "UInt32Value", "BoolValue",
                    "StringValue", "BytesValue")
"""The messages of google/protobuf/wrappers.proto, in order (their message indexes)."""
_WRAPPER_OF: Final = {Type.INT8: "Int32Value", Type.INT16: "Int32Value", Type.INT32: "Int32Value",
                      Type.INT64: "Int64Value", Type.FLOAT32: "FloatValue", Type.FLOAT64: "DoubleValue",
                      Type.BOOLEAN: "BoolValue", Type.STRING: "StringValue", Type.BYTES: "BytesValue"}
_UNWRAPPED: Final = {"DoubleValue": Type.FLOAT64, "FloatValue": Type.FLOAT32, "Int64Value": Type.INT64,
                     "UInt64Value": Type.INT64, "Int32Value": Type.INT32, "UInt32Value": Type.INT64,
                     "BoolValue": Type.BOOLEAN, "StringValue": Type.STRING, "BytesValue": Type.BYTES}
_WRAPPERS_IMPORT: Final = "google/protobuf/wrappers.proto"
_INT32_TYPES: Final = ("int32", "sint32", "sfixed32")
_INT64_TYPES: Final = ("uint32", "fixed32", "int64", "uint64", "sint64", "fixed64", "sfixed64")
_EPOCH: Final = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


@dataclass(frozen=True)
class ProtobufOptions:
    """The ``ProtobufDataConfig`` keys the mapping follows."""

    optional_for_nullables: bool = False
    """``optional.for.nullables``: optional Connect fields become proto3 ``optional`` fields."""
    wrapper_for_nullables: bool = False
    """``wrapper.for.nullables``: optional primitive fields become ``google.protobuf`` wrapper messages."""
    scrub_invalid_names: bool = False
    """``scrub.invalid.names``: field, message, enum and package names made valid Protobuf names."""


# ---------------------------------------------------------------------- Connect schema -> .proto

@dataclass
class _FromConnect:
    """One ``fromConnectSchema`` call: names given to unnamed schemas, imports needed."""

    options: ProtobufOptions
    unnamed: int = 0
    imports: list[str] = field(default_factory=list)

    def name_or_default(self, name: str | None) -> str:
        if name:
            return name
        self.unnamed += 1
        return f"{DEFAULT_SCHEMA_NAME}{self.unnamed}"

    def valid(self, name: str, *, full: bool = False) -> str:
        """``name`` scrubbed as ``ProtobufData.scrubName`` (``splitName`` for a ``full`` name) does
        with ``scrub.invalid.names``."""
        if not self.options.scrub_invalid_names:
            return name
        return scrub_full_name(name, protobuf=True) if full else scrub_name(name, protobuf=True)

    def message(self, schema: Schema, name: str) -> ProtoMessage:
        """A struct's message; a union struct field (``...protobuf.Union.<name>``) becomes a oneof."""
        message = ProtoMessage(name)
        numbers = iter(range(1, 1 << 29))
        for member in schema.fields:
            union = _union_name(member.schema)
            for part in member.schema.fields if union is not None else [member]:
                tag = (part.schema.parameters or {}).get(PROTOBUF_TYPE_TAG)
                proto_field = self.field(message, self.valid(part.name), int(tag) if tag else next(numbers),
                                         part.schema)
                if union is not None:
                    proto_field.label, proto_field.oneof = None, union
                message.fields.append(proto_field)
        return message

    def field(self, message: ProtoMessage, name: str, number: int, schema: Schema) -> ProtoField:
        label = None
        if schema.type is Type.ARRAY:
            label, schema = "repeated", schema.value_schema
            if schema.type in (Type.ARRAY, Type.MAP):
                raise DataError(f"Protobuf has no form for field {name}: an array of {schema.type.value}s")
        elif self.options.optional_for_nullables and schema.optional and schema.type is not Type.MAP:
            label = "optional"
        params: dict[str, str] = {}
        if schema.type is Type.MAP:
            key_type = _SCALAR_OF.get(schema.key_schema.type)
            if key_type is None or key_type in ("float", "double", "bytes") or schema.key_schema.name:
                raise DataError(f"Protobuf map field {name} needs scalar keys, not {schema.key_schema.type.value}")
            self.name_or_default(schema.name)
            value = self.field(message, "value", 2, schema.value_schema)
            if value.label is not None and value.label != "optional":
                raise DataError(f"Protobuf has no form for field {name}: a map of arrays")
            return ProtoField(name, number, value.type, None, key_type, value.params)
        return ProtoField(name, number, self.type_of(message, name, schema, params), label, params=params)

    def type_of(self, message: ProtoMessage, name: str, schema: Schema, params: dict[str, str]) -> str:
        logical = _LOGICAL.get(schema.name or "")
        if logical is not None:
            if logical[1] not in self.imports:
                self.imports.append(logical[1])
            if schema.name == Decimal.LOGICAL_NAME:
                schema_params = schema.parameters or {}
                if CONNECT_PRECISION_PROP in schema_params:
                    params["precision"] = schema_params[CONNECT_PRECISION_PROP]
                params["scale"] = str(Decimal.scale(schema))
            return logical[0]
        if schema.type is Type.STRUCT:
            type_name = self.valid(self.name_or_default(schema.name).rpartition(".")[2])
            if type_name == name:
                type_name += "Message"
            if all(nested.name != type_name for nested in message.messages):
                message.messages.append(self.message(schema, type_name))
            return type_name
        enum_type = (schema.parameters or {}).get(PROTOBUF_TYPE_ENUM)
        if enum_type and schema.type in (Type.STRING, Type.INT32):
            return self.enum(message, schema, enum_type)
        if schema.type in (Type.INT8, Type.INT16):
            params[CONNECT_TYPE_PROP] = schema.type.value
        scalar = (schema.parameters or {}).get(PROTOBUF_TYPE_PROP, _SCALAR_OF[schema.type])
        enum = PROTOBUF_TYPE_ENUM in (schema.parameters or {})
        if self.options.wrapper_for_nullables and schema.optional and not enum:
            if _WRAPPERS_IMPORT not in self.imports:
                self.imports.append(_WRAPPERS_IMPORT)
            wrapper = {"uint32": "UInt32Value", "fixed32": "UInt32Value", "uint64": "UInt64Value",
                       "fixed64": "UInt64Value"}.get(scalar, _WRAPPER_OF[schema.type])
            return f"google.protobuf.{wrapper}"
        return scalar


    def enum(self, message: ProtoMessage, schema: Schema, enum_type: str) -> str:
        """A field read from a Protobuf enum: the enum defined in the message that holds the field,
        its symbols from the ``...protobuf.Enum.<SYMBOL>`` parameters (``enumDefinitionFromConnectSchema``)."""
        name = self.valid((schema.name or enum_type).rpartition(".")[2])
        if all(known.name != name for known in message.enums):
            prefix = PROTOBUF_TYPE_ENUM + "."
            message.enums.append(ProtoEnum(name, [(key[len(prefix):], int(number)) for key, number
                                                  in (schema.parameters or {}).items() if key.startswith(prefix)]))
        return name


def to_proto_file(schema: Schema, options: ProtobufOptions | None = None) -> tuple[ProtoFile, int]:
    """The ``.proto`` model of a Connect schema (``ProtobufData.fromConnectSchema``) and the index of
    its message there: a struct is the file's only message; a primitive is its wrapper in
    ``google/protobuf/wrappers.proto`` (that file is the schema, as in Confluent's converter)."""
    if schema.type in _WRAPPER_OF:
        return from_descriptor(descriptor_pb2.FileDescriptorProto.FromString(
            wrappers_pb2.DESCRIPTOR.serialized_pb)), _WRAPPERS.index(_WRAPPER_OF[schema.type])
    if schema.type is not Type.STRUCT:
        raise DataError(f"Protobuf has no root message for a {schema.type.value} schema: ProtobufConverter "
                        f"writes structs and primitives (as google.protobuf wrappers), as Confluent's does")
    builder = _FromConnect(options or ProtobufOptions())
    package, _, name = builder.valid(builder.name_or_default(schema.name), full=True).rpartition(".")
    message = builder.message(schema, name)
    return ProtoFile(package or None, "proto3", builder.imports, [message]), 0


# ---------------------------------------------------------------------- descriptor -> Connect schema

def to_connect_schema(compiled: CompiledProto, full_name: str, version: int | None = None,
                      options: ProtobufOptions | None = None) -> Schema:
    """The Connect schema of a message (``ProtobufData.toConnectSchema``); a root wrapper message
    (``wrapper.for.raw.primitives``) is its primitive."""
    unwrapped = _unwrapped(full_name)
    builder = SchemaBuilder(unwrapped) if unwrapped is not None else \
        _ToConnect(compiled, options or ProtobufOptions()).struct(compiled.pool.FindMessageTypeByName(full_name))
    if version is not None:
        builder.version(version)
    return builder.build()


def _unwrapped(full_name: str) -> Type | None:
    """The primitive of a ``google.protobuf`` wrapper message; None for other messages."""
    return _UNWRAPPED.get(full_name.removeprefix("google.protobuf.")) if full_name.startswith("google.protobuf.") \
        else None


@dataclass
class _ToConnect:
    """One ``toConnectSchema`` call: the compiled schema, the options, the messages being built."""

    compiled: CompiledProto
    options: ProtobufOptions
    building: set[str] = field(default_factory=set)

    def struct(self, descriptor: Any) -> SchemaBuilder:
        if descriptor.full_name in self.building:
            raise DataError(f"Protobuf message {descriptor.full_name} refers to itself: recursive schemas have no "
                            f"Connect schema here")
        self.building.add(descriptor.full_name)
        builder = SchemaBuilder.struct().name(descriptor.name)
        for oneof in descriptor.oneofs:  # real oneofs first, each a union struct named <oneof>_<index>
            if all(self._proto3_optional(descriptor, member) for member in oneof.fields):
                continue
            union = SchemaBuilder.struct().name(PROTOBUF_TYPE_UNION_PREFIX + oneof.name)
            for member in oneof.fields:
                union.field(member.name, self.field(descriptor, member, oneof_member=True))
            builder.field(f"{oneof.name}_{oneof.index}", union.optional().build())
        for member in descriptor.fields:
            if member.containing_oneof is None or self._proto3_optional(descriptor, member):
                builder.field(member.name, self.field(descriptor, member))
        self.building.discard(descriptor.full_name)
        return builder

    def _proto3_optional(self, owner: Any, member: Any) -> bool:
        return (owner.full_name, member.number) in self.compiled.proto3_optional

    def field(self, owner: Any, member: Any, oneof_member: bool = False) -> Schema:
        """A field's schema; optional as Confluent decides: message, enum and repeated fields always,
        scalars unless ``wrapper.for.nullables`` or ``optional.for.nullables`` (then only ``optional`` ones)."""
        type_name = _SCALAR_NAMES.get(member.type)
        params = self.compiled.params.get((owner.full_name, member.number), {})
        optional = member.is_repeated or member.type in (_TYPE_ENUM, _TYPE_MESSAGE)
        if member.type == _TYPE_ENUM:
            enum = member.enum_type
            builder = SchemaBuilder.string().name(enum.name).parameter(PROTOBUF_TYPE_ENUM, enum.name)
            for value in enum.values:
                builder.parameter(f"{PROTOBUF_TYPE_ENUM}.{value.name}", str(value.number))
        elif type_name in _INT32_TYPES:
            connect_type = params.get(CONNECT_TYPE_PROP)
            builder = SchemaBuilder(Type.INT8 if connect_type == "int8" else Type.INT16 if connect_type == "int16"
                                    else Type.INT32)
            if builder.type is Type.INT32 and type_name != "int32":
                builder.parameter(PROTOBUF_TYPE_PROP, type_name)
        elif type_name in _INT64_TYPES:
            builder = SchemaBuilder.int64()
            if type_name != "int64":
                builder.parameter(PROTOBUF_TYPE_PROP, type_name)
        elif type_name is not None:
            builder = SchemaBuilder({"float": Type.FLOAT32, "double": Type.FLOAT64, "bool": Type.BOOLEAN,
                                     "string": Type.STRING, "bytes": Type.BYTES}[type_name])
        else:
            builder = self.message(member, params)
        if member.is_repeated and builder.type is not Type.MAP:
            builder = SchemaBuilder.array(builder.optional().build())
        if oneof_member:
            optional = True
        elif self.options.optional_for_nullables:
            optional = optional or self._proto3_optional(owner, member)
        elif not self.options.wrapper_for_nullables:
            optional = True
        if optional:
            builder.optional()
        return builder.parameter(PROTOBUF_TYPE_TAG, str(member.number)).build()

    def message(self, member: Any, params: dict[str, str]) -> SchemaBuilder:
        message = member.message_type
        if message.full_name == DECIMAL_TYPE:
            builder = Decimal.builder(int(params.get("scale", "0")))
            if "precision" in params:
                builder.parameter(CONNECT_PRECISION_PROP, params["precision"])
            return builder
        logical = {DATE_TYPE: Date, TIME_TYPE: Time, TIMESTAMP_TYPE: Timestamp}.get(message.full_name)
        if logical is not None:
            return logical.builder()
        unwrapped = _unwrapped(message.full_name) if self.options.wrapper_for_nullables else None
        if unwrapped is not None:
            return SchemaBuilder(unwrapped)
        if member.is_repeated and message.GetOptions().map_entry:
            key, value = message.fields_by_number[1], message.fields_by_number[2]
            return SchemaBuilder.map(self.field(message, key), self.field(message, value)) \
                .name(_map_field(message.name))
        return self.struct(message)


def _map_field(entry_name: str) -> str:
    """``ProtobufSchema.toMapField``: the map entry's name without ``Entry``, in lower underscore case."""
    base = entry_name.removesuffix("Entry")
    return "".join(f"_{c.lower()}" if c.isupper() and i else c.lower() for i, c in enumerate(base))


_SCALAR_NAMES: Final = {number: name for name, number in SCALARS.items()}
_TYPE_ENUM: Final = 14
_TYPE_MESSAGE: Final = 11


# ---------------------------------------------------------------------- values

def from_connect_message(message: Any, schema: Schema, value: Any) -> Any:
    """Fill a new message of the schema's message class (``ProtobufData.fromConnectData``)."""
    if schema.type in _WRAPPER_OF:
        message.value = _scalar(schema, value)
        return message
    if not isinstance(value, Struct):
        raise DataError(f"a Struct was expected for a Protobuf message, got {type(value).__name__}")
    fields = message.DESCRIPTOR.fields_by_name
    for member in schema.fields:
        item = value.get(member)
        if item is None:
            continue
        if _union_name(member.schema) is not None:  # the union's one set member
            member = next((f for f in member.schema.fields if item.get(f) is not None), None)
            if member is None:
                continue
            item = item.get(member)
        target = fields.get(member.name) or fields[scrub_name(member.name, protobuf=True)]  # scrub.invalid.names
        _set(message, target, member.schema, item)
    return message


def _set(message: Any, target: Any, schema: Schema, value: Any) -> None:
    name = target.name
    if schema.type is Type.ARRAY:
        container = getattr(message, name)
        for item in value:
            if item is None:
                raise DataError(f"Protobuf repeated field {name} cannot hold a null element")
            if target.message_type is not None:
                _fill(container.add(), schema.value_schema, item)
            else:
                container.append(_scalar(schema.value_schema, item))
        return
    if schema.type is Type.MAP:
        container = getattr(message, name)
        value_field = target.message_type.fields_by_number[2]
        for key, item in value.items():
            if item is None:
                continue
            if value_field.message_type is not None:
                _fill(container[key], schema.value_schema, item)
            else:
                container[key] = _scalar(schema.value_schema, item)
        return
    if target.message_type is not None:
        _fill(getattr(message, name), schema, value)
    else:
        setattr(message, name, _scalar(schema, value))


def _fill(message: Any, schema: Schema, value: Any) -> None:
    """A message-typed value: a struct or a logical type's message; set even when all its fields are zero."""
    message.SetInParent()
    if schema.name == Decimal.LOGICAL_NAME:
        unscaled = Decimal.unscaled(value, Decimal.scale(schema))
        bits = unscaled.bit_length() if unscaled >= 0 else (~unscaled).bit_length()
        message.value = unscaled.to_bytes(bits // 8 + 1, "big", signed=True)
        message.precision = len(str(abs(unscaled)))
        message.scale = Decimal.scale(schema)
    elif schema.name == Date.LOGICAL_NAME:
        message.year, message.month, message.day = value.year, value.month, value.day
    elif schema.name == Time.LOGICAL_NAME:
        message.hours, message.minutes, message.seconds = value.hour, value.minute, value.second
        message.nanos = value.microsecond // 1000 * 1_000_000
    elif schema.name == Timestamp.LOGICAL_NAME:
        millis = Timestamp.from_logical(schema, value)
        message.seconds, message.nanos = millis // 1000, millis % 1000 * 1_000_000
    else:
        from_connect_message(message, schema, value)


def _scalar(schema: Schema, value: Any) -> Any:
    if schema.type is Type.STRING and (schema.parameters or {}).get(PROTOBUF_TYPE_ENUM):
        return value
    if schema.type is Type.BYTES:
        return bytes(value)
    return value


def to_connect_value(schema: Schema, message: Any) -> Any:
    """A message as the Connect value of its schema (``ProtobufData.toConnectData``)."""
    if schema.type is not Type.STRUCT:
        return message.value
    struct = Struct(schema)
    fields = message.DESCRIPTOR.fields_by_name
    for member in schema.fields:
        union = _union_name(member.schema)
        if union is not None:
            which = message.WhichOneof(union)
            if which is not None:
                target = fields[which]
                struct.put(member, Struct(member.schema).put(which, _value(member.schema.field(which).schema, target,
                                                                           getattr(message, which))))
            continue
        target = fields[member.name]
        if not target.is_repeated and target.has_presence and not message.HasField(target.name):
            continue
        struct.put(member, _value(member.schema, target, getattr(message, target.name)))
    return struct


def _union_name(schema: Schema) -> str | None:
    """The oneof a union struct stands for (``io.confluent.connect.protobuf.Union.<oneof>``); else None."""
    if schema.type is Type.STRUCT and schema.name and schema.name.startswith(PROTOBUF_TYPE_UNION_PREFIX):
        return schema.name[len(PROTOBUF_TYPE_UNION_PREFIX):].rpartition(".")[2]
    return None


def _value(schema: Schema, target: Any, value: Any) -> Any:
    if schema.type is Type.ARRAY:
        return [_single(schema.value_schema, target, item) for item in value]
    if schema.type is Type.MAP:
        value_field = target.message_type.fields_by_number[2]
        return {key: _single(schema.value_schema, value_field, item) for key, item in value.items()}
    return _single(schema, target, value)


def _single(schema: Schema, target: Any, value: Any) -> Any:
    if schema.name == Decimal.LOGICAL_NAME:
        return Decimal.from_unscaled(int.from_bytes(value.value, "big", signed=True), value.scale) \
            if value.value else _decimal.Decimal(0).scaleb(-value.scale)
    if schema.name == Date.LOGICAL_NAME:
        return dt.date(value.year, value.month, value.day)
    if schema.name == Time.LOGICAL_NAME:
        return dt.time(value.hours, value.minutes, value.seconds, value.nanos // 1_000_000 * 1000)
    if schema.name == Timestamp.LOGICAL_NAME:
        return Timestamp.to_logical(schema, value.seconds * 1000 + value.nanos // 1_000_000)
    if schema.type is Type.STRUCT:
        return to_connect_value(schema, value)
    if target.type == _TYPE_MESSAGE:  # a google.protobuf wrapper read as its primitive
        return value.value
    if target.type == _TYPE_ENUM:
        return target.enum_type.values_by_number[value].name if value in target.enum_type.values_by_number \
            else str(value)
    return value

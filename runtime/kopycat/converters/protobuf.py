"""ProtobufConverter: Confluent's Protobuf wire format with a Schema Registry.

Registered under Confluent's class name ``io.confluent.connect.protobuf.ProtobufConverter``, with
the keys Confluent's converters share (``schema.registry.url``, basic/bearer auth, subject name
strategies, ``auto.register.schemas``, ``use.latest.version``, ``normalize.schemas``, retries: see
:mod:`kopycat.converters.registry_converter`). Follows ``ProtobufConverter``,
``KafkaProtobufSerializer``/``Deserializer`` and ``ProtobufDataConfig``:

- Wire format: magic byte 0, the 4-byte big-endian schema id, the message indexes (a zig-zag
  varint count, then each index as a zig-zag varint: the path of the message in the schema; the
  first message, ``[0]``, is the single byte 0), then the message's Protobuf binary encoding.
- Writing: the Connect struct schema (or a primitive's wrapper) becomes a ``.proto`` file by
  :mod:`kopycat.converters.protobuf_data`, registered as its source text with ``schemaType``
  PROTOBUF; values are filled into message classes built from it (the ``protobuf`` package).
- Reading: the id's schema (``.proto`` source, or the base64 ``FileDescriptorProto`` Confluent's
  Python serializer registers) is parsed and compiled once, with the files it imports from its
  schema references (each a subject version, fetched once); the message indexes pick the message,
  whose Connect schema takes the registry's version. Enums read as STRINGs carrying their symbols
  and are written back as the same enum, nested in the message of the field.
- Its own keys: ``optional.for.nullables`` (optional fields as proto3 ``optional``),
  ``wrapper.for.nullables`` (optional primitives as ``google.protobuf`` wrapper messages) and
  ``scrub.invalid.names`` (names made valid as ``ProtobufData`` scrubs them).

Needs the ``protobuf`` package (the ``kopycat[protobuf]`` extra); :mod:`kopycat.plugins` imports
this module only where the converter is configured.

Bad input (no magic byte, an unknown id, bytes that are no such message) is a
:class:`~kopycat.api.errors.DataError`. The columnar methods keep the SPI's default None.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from google.protobuf.message import DecodeError

from kopycat.api.config import ConfigDef, ConfigType, Importance
from kopycat.api.converter import SchemaAndValue
from kopycat.api.data import Schema
from kopycat.api.errors import DataError
from kopycat.converters.protobuf_data import (
    ProtobufOptions,
    from_connect_message,
    to_connect_schema,
    to_connect_value,
    to_proto_file,
)
from kopycat.converters.protobuf_descriptors import CompiledProto
from kopycat.converters.protobuf_schema import parse_proto, print_proto
from kopycat.converters.registry_converter import REGISTRY_CONFIG, SchemaReader, SchemaRegistryConverter, SchemaWriter

__all__ = ["ProtobufConverter", "read_message_indexes", "write_message_indexes"]

OPTIONAL_FOR_NULLABLES_CONFIG: Final = "optional.for.nullables"

WRAPPER_FOR_NULLABLES_CONFIG: Final = "wrapper.for.nullables"
SCRUB_INVALID_NAMES_CONFIG: Final = "scrub.invalid.names"

CONFIG: Final = (
    ConfigDef(REGISTRY_CONFIG)
    .define(OPTIONAL_FOR_NULLABLES_CONFIG, ConfigType.BOOLEAN, default=False, importance=Importance.MEDIUM,
            doc="Whether nullable fields should be specified with an optional label.")
    .define(WRAPPER_FOR_NULLABLES_CONFIG, ConfigType.BOOLEAN, default=False, importance=Importance.MEDIUM,
            doc="Whether nullable fields should use primitive wrapper messages.")
    .define(SCRUB_INVALID_NAMES_CONFIG, ConfigType.BOOLEAN, default=False, importance=Importance.MEDIUM,
            doc="Whether to scrub invalid names by replacing invalid characters with valid ones "
                "(URL-encoded, then every character Protobuf names refuse replaced by _; x before a leading "
                "digit or _).")
)


def write_message_indexes(indexes: Sequence[int]) -> bytes:
    """The message indexes as Confluent writes them: ``[0]`` is the single byte 0."""
    if list(indexes) == [0]:
        return b"\x00"
    return b"".join(_varint(_zigzag(number)) for number in [len(indexes), *indexes])


def read_message_indexes(payload: bytes) -> tuple[list[int], int]:
    """The message indexes at the start of a payload and where the message begins."""
    count, at = _read_varint(payload, 0)
    count = _unzigzag(count)
    if count == 0:
        return [0], at
    if count < 0 or count > len(payload):
        raise ValueError(f"invalid message index count {count}")
    indexes = []
    for _ in range(count):
        number, at = _read_varint(payload, at)
        indexes.append(_unzigzag(number))
    return indexes, at


def _zigzag(number: int) -> int:
    return (number << 1) ^ (number >> 63)


def _unzigzag(number: int) -> int:
    return (number >> 1) ^ -(number & 1)


def _varint(number: int) -> bytes:
    out = bytearray()
    while True:
        byte, number = number & 0x7F, number >> 7
        out.append(byte | (0x80 if number else 0))
        if not number:
            return bytes(out)


def _read_varint(data: bytes, at: int) -> tuple[int, int]:
    number = shift = 0
    while True:
        if at >= len(data):
            raise ValueError("truncated message indexes")
        byte = data[at]
        number |= (byte & 0x7F) << shift
        at, shift = at + 1, shift + 7
        if not byte & 0x80:
            return number, at


class _Writer(SchemaWriter):
    def __init__(self, schema: Schema, options: ProtobufOptions) -> None:
        super().__init__()
        self.schema = schema
        proto, index = to_proto_file(schema, options)
        self.text = print_proto(proto)
        compiled = CompiledProto(proto)
        self.record_name = compiled.message_name([index])
        self.message_class = compiled.message_class(self.record_name)
        self.indexes = write_message_indexes([index])

    def encode(self, values: Sequence[Any]) -> list[bytes]:
        return [self.indexes + from_connect_message(self.message_class(), self.schema, value).SerializeToString()
                for value in values]

    def with_schema(self, latest: str) -> SchemaWriter:
        """Refused: Protobuf's bytes follow the schema's field numbers and message indexes, so this
        writer's bytes under another schema's id would be misread, and Kopycat does not re-encode a value
        for another .proto (Confluent's ProtobufData does)."""
        raise DataError("use.latest.version: the subject's latest Protobuf schema differs from the Connect "
                        "schema's, and the Protobuf converter writes only with the Connect schema's own "
                        "message (its bytes under the latest id would be misread). Register the Connect "
                        "schema instead (use.latest.version=false, auto.register.schemas=true), or make it "
                        "the subject's latest version")


class _Reader(SchemaReader):
    def __init__(self, compiled: CompiledProto, version: Callable[[str], int | None],
                 options: ProtobufOptions) -> None:
        self.compiled = compiled
        self.version = version
        self.options = options
        self.messages: dict[tuple[int, ...], tuple[Schema, Any]] = {}
        self._message(())  # the first message's schema: an invalid schema fails here, once

    def _message(self, indexes: tuple[int, ...]) -> tuple[Schema, Any]:
        known = self.messages.get(indexes or (0,))
        if known is None:
            name = self.compiled.message_name(list(indexes))
            known = (to_connect_schema(self.compiled, name, self.version(name), self.options),
                     self.compiled.message_class(name))
            self.messages[indexes or (0,)] = known
        return known

    def decode(self, payload: bytes) -> SchemaAndValue:
        indexes, at = read_message_indexes(payload)
        schema, message_class = self._message(tuple(indexes))
        try:
            message = message_class.FromString(payload[at:])
        except DecodeError as exc:
            raise ValueError(f"not a {message_class.DESCRIPTOR.full_name} message: {exc}") from None
        return SchemaAndValue(schema, to_connect_value(schema, message))


class ProtobufConverter(SchemaRegistryConverter):
    """Connect data <-> Confluent's Protobuf records with a Schema Registry; see the module docstring."""

    CONFIG = CONFIG
    FORMAT = "Protobuf"
    SCHEMA_TYPE = "PROTOBUF"

    def configure_format(self, parsed: Mapping[str, Any]) -> None:
        self.options = ProtobufOptions(optional_for_nullables=parsed[OPTIONAL_FOR_NULLABLES_CONFIG],
                                       wrapper_for_nullables=parsed[WRAPPER_FOR_NULLABLES_CONFIG],
                                       scrub_invalid_names=parsed[SCRUB_INVALID_NAMES_CONFIG])

    def new_writer(self, schema: Schema) -> SchemaWriter:
        return _Writer(schema, self.options)

    def new_reader(self, text: str, version: Callable[[str], int | None],
                   references: Callable[[], Mapping[str, str]]) -> SchemaReader:
        try:
            return _Reader(CompiledProto(parse_proto(text), references), version, self.options)
        except (ValueError, KeyError, IndexError) as exc:
            raise DataError(f"Invalid Protobuf schema: {type(exc).__name__}: {exc}") from None

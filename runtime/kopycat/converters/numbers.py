"""Primitive converters: one number or boolean as the bytes of Kafka's own serializers.

Follows Kafka's ``org.apache.kafka.connect.converters.NumberConverter`` and its subclasses
(``ShortConverter``, ``IntegerConverter``, ``LongConverter``, ``FloatConverter``,
``DoubleConverter``) and ``BooleanConverter``: the bytes are those of ``ShortSerializer`` ...
``DoubleSerializer`` (big-endian two's complement ints, IEEE 754 floats) and
``BooleanSerializer`` (one byte, 1 or 0). Reads give the optional primitive schema
(``Schema.OPTIONAL_INT16_SCHEMA`` ...); None passes through both ways. As in Kafka, the number
converters do not look at the schema, and the boolean one refuses a non-BOOLEAN schema.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from typing import Any, ClassVar, Final

from kopycat.api.config import ConfigDef
from kopycat.api.converter import SchemaAndValue
from kopycat.api.data import Schema, Type
from kopycat.api.errors import DataError
from kopycat.converters.headers_as_data import HeadersAsData

__all__ = [
    "BooleanConverter", "DoubleConverter", "FloatConverter", "IntegerConverter", "LongConverter",
    "NumberConverter", "ShortConverter",
]

CONFIG: Final = ConfigDef()
"""No keys of their own (Kafka's ``NumberConverterConfig`` has only ``converter.type``, which the
worker sets from ``is_key``)."""


class NumberConverter(HeadersAsData):
    """One number per key, value or header, in a fixed-width big-endian layout.

    Subclasses name the Java type (for messages), the ``struct`` format and the schema reads give;
    ``INTEGRAL`` ones take Python ints only (a bool is refused, as Java's ``Boolean`` is no
    ``Number``), floating ones ints or floats.
    """

    TYPE_NAME: ClassVar[str]
    FORMAT: ClassVar[struct.Struct]
    SCHEMA: ClassVar[Schema]
    INTEGRAL: ClassVar[bool] = True
    DESERIALIZER: ClassVar[str]

    def config(self) -> ConfigDef:
        return CONFIG

    def configure(self, configs: Mapping[str, Any], is_key: bool = False) -> None:
        """Nothing to configure: keys and values are written alike."""

    def _check(self, value: Any) -> Any:
        if isinstance(value, bool) or not isinstance(value, int if self.INTEGRAL else int | float):
            raise DataError(f"Failed to serialize to {self.TYPE_NAME} (was {type(value).__name__}): "
                            f"{self.TYPE_NAME} converters take a Python "
                            f"{'int' if self.INTEGRAL else 'int or float'}")
        return value

    def from_connect_data(self, topic: str, schema: Schema | None, value: Any,
                          headers: Any = None) -> bytes | None:
        """The serializer's bytes for ``value``; None gives None; out of range is a DataError."""
        if value is None:
            return None
        try:
            return self.FORMAT.pack(self._check(value))
        except (struct.error, OverflowError):
            raise DataError(f"Failed to serialize to {self.TYPE_NAME}: {value} is out of its range") from None

    def to_connect_data(self, topic: str, value: bytes | None, headers: Any = None) -> SchemaAndValue:
        """``SchemaAndValue(<optional schema>, number)``; bytes of another width are a DataError."""
        if value is None:
            return SchemaAndValue(self.SCHEMA, None)
        if len(value) != self.FORMAT.size:
            raise DataError(f"Failed to deserialize {self.TYPE_NAME}: Size of data received by "
                            f"{self.DESERIALIZER} is not {self.FORMAT.size} (got {len(value)} bytes)")
        return SchemaAndValue(self.SCHEMA, self.FORMAT.unpack(value)[0])


class ShortConverter(NumberConverter):
    """INT16 as 2 bytes (Kafka's ``ShortConverter``)."""

    TYPE_NAME, FORMAT, DESERIALIZER = "short", struct.Struct(">h"), "ShortDeserializer"
    SCHEMA = Schema.OPTIONAL_INT16_SCHEMA


class IntegerConverter(NumberConverter):
    """INT32 as 4 bytes (Kafka's ``IntegerConverter``)."""

    TYPE_NAME, FORMAT, DESERIALIZER = "integer", struct.Struct(">i"), "IntegerDeserializer"
    SCHEMA = Schema.OPTIONAL_INT32_SCHEMA


class LongConverter(NumberConverter):
    """INT64 as 8 bytes (Kafka's ``LongConverter``)."""

    TYPE_NAME, FORMAT, DESERIALIZER = "long", struct.Struct(">q"), "LongDeserializer"
    SCHEMA = Schema.OPTIONAL_INT64_SCHEMA


class FloatConverter(NumberConverter):
    """FLOAT32 as 4 IEEE 754 bytes (Kafka's ``FloatConverter``)."""

    TYPE_NAME, FORMAT, DESERIALIZER = "float", struct.Struct(">f"), "Deserializer"
    SCHEMA = Schema.OPTIONAL_FLOAT32_SCHEMA
    INTEGRAL = False


class DoubleConverter(NumberConverter):
    """FLOAT64 as 8 IEEE 754 bytes (Kafka's ``DoubleConverter``)."""

    TYPE_NAME, FORMAT, DESERIALIZER = "double", struct.Struct(">d"), "DoubleDeserializer"
    SCHEMA = Schema.OPTIONAL_FLOAT64_SCHEMA
    INTEGRAL = False


class BooleanConverter(HeadersAsData):
    """BOOLEAN as one byte, 1 for true and 0 for false (Kafka's ``BooleanConverter``)."""

    def config(self) -> ConfigDef:
        return CONFIG

    def configure(self, configs: Mapping[str, Any], is_key: bool = False) -> None:
        """Nothing to configure."""

    def from_connect_data(self, topic: str, schema: Schema | None, value: Any,
                          headers: Any = None) -> bytes | None:
        if schema is not None and schema.type is not Type.BOOLEAN:
            raise DataError(f"Invalid schema type for BooleanConverter: {schema.type.name}")
        if value is None:
            return None
        if not isinstance(value, bool):
            raise DataError(f"BooleanConverter is not compatible with objects of type {type(value).__name__}")
        return b"\x01" if value else b"\x00"

    def to_connect_data(self, topic: str, value: bytes | None, headers: Any = None) -> SchemaAndValue:
        """``SchemaAndValue(Schema.OPTIONAL_BOOLEAN_SCHEMA, flag)``; only b"\\x00" and b"\\x01" read."""
        if value is None:
            return SchemaAndValue(Schema.OPTIONAL_BOOLEAN_SCHEMA, None)
        if len(value) != 1:
            raise DataError("Failed to deserialize boolean: Size of data received by BooleanDeserializer "
                            f"is not 1 (got {len(value)} bytes)")
        if value[0] > 1:
            raise DataError("Failed to deserialize boolean: Unexpected byte received by BooleanDeserializer: "
                            f"{value[0] - 256 if value[0] > 127 else value[0]}")
        return SchemaAndValue(Schema.OPTIONAL_BOOLEAN_SCHEMA, value[0] == 1)

"""ByteArrayConverter: record bytes pass through untouched (Kafka's ``ByteArrayConverter``).

The choice for data Kopycat should copy without looking inside, e.g. MirrorMaker-style
replication. Keys and values read as ``SchemaAndValue(Schema.OPTIONAL_BYTES_SCHEMA, bytes)``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from kopycat.api.config import ConfigDef
from kopycat.api.converter import SchemaAndValue
from kopycat.api.data import Schema, Type
from kopycat.api.errors import DataError
from kopycat.converters.headers_as_data import HeadersAsData

__all__ = ["ByteArrayConverter"]

_PLAIN: Final = frozenset({bytes, type(None)})  # values a batch passes through as they are

CONFIG: Final = ConfigDef()


class ByteArrayConverter(HeadersAsData):
    """Bytes in, bytes out; anything but BYTES schemas and bytes-like values is a DataError."""

    CONFIG = CONFIG

    def config(self) -> ConfigDef:
        """No keys of its own (Kafka's ``ConverterConfig.newConfigDef()`` has only converter.type)."""
        return CONFIG

    def configure(self, configs: Mapping[str, Any], is_key: bool = False) -> None:
        """Nothing to configure."""

    def from_connect_data(self, topic: str, schema: Schema | None, value: Any,
                          headers: Any = None) -> bytes | None:
        """The value's bytes; None stays None."""
        if schema is not None and schema.type is not Type.BYTES:
            raise DataError(f"Invalid schema type for ByteArrayConverter: {schema.type.name}")
        if value is None or value.__class__ is bytes:
            return value
        if isinstance(value, bytes | bytearray | memoryview):
            return bytes(value)
        raise DataError(f"ByteArrayConverter is not compatible with objects of type {type(value).__name__}")

    def from_connect_data_batch(self, topic: str, schema: Schema | None,
                                values: Sequence[Any]) -> list[bytes | None]:
        """As the single-record method, with the schema checked once."""
        if schema is not None and schema.type is not Type.BYTES:
            raise DataError(f"Invalid schema type for ByteArrayConverter: {schema.type.name}")
        if set(map(type, values)) <= _PLAIN:  # one C pass, not a generator step per value
            return list(values)
        return [self.from_connect_data(topic, None, value) for value in values]

    def to_connect_data(self, topic: str, value: bytes | None, headers: Any = None) -> SchemaAndValue:
        """``SchemaAndValue(Schema.OPTIONAL_BYTES_SCHEMA, value)``, None included."""
        return SchemaAndValue(Schema.OPTIONAL_BYTES_SCHEMA, value)

    def to_connect_data_batch(self, topic: str, values: Sequence[bytes | None]) -> list[SchemaAndValue]:
        schema = Schema.OPTIONAL_BYTES_SCHEMA
        return [SchemaAndValue(schema, value) for value in values]

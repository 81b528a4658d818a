"""SimpleHeaderConverter: header values as UTF-8 text whose form says their type.

Follows Kafka's ``org.apache.kafka.connect.storage.SimpleHeaderConverter``: values are written
with ``Values.convertToString`` and read with ``Values.parseString`` (:mod:`kopycat.values`), so
``42`` reads back as an INT8, ``true`` as a BOOLEAN and ``2024-01-31`` as a Date. Bytes that are
not UTF-8 decode with U+FFFD in place of bad sequences, as Java's ``new String(bytes, UTF_8)``
does. A header converter only: it is no key or value converter.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from kopycat.api.config import ConfigDef
from kopycat.api.converter import HeaderConverter, SchemaAndValue
from kopycat.api.data import Schema
from kopycat.values import convert_to_string, parse_string

__all__ = ["SimpleHeaderConverter"]

CONFIG: Final = ConfigDef()


class SimpleHeaderConverter(HeaderConverter):
    """Text in, typed values out; None passes through both ways."""

    def config(self) -> ConfigDef:
        """No keys (Kafka's ``SimpleHeaderConverter`` defines none)."""
        return CONFIG

    def configure(self, configs: Mapping[str, Any], is_key: bool = False) -> None:
        """Nothing to configure."""

    def from_connect_header(self, topic: str, header_key: str, schema: Schema | None,
                            value: Any) -> bytes | None:
        text = convert_to_string(schema, value)
        return None if text is None else text.encode("utf-8")

    def to_connect_header(self, topic: str, header_key: str, value: bytes | None) -> SchemaAndValue:
        if value is None:
            return SchemaAndValue(None, None)
        return parse_string(value.decode("utf-8", "replace"))

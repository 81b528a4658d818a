"""A converter that is its own header converter: header values written and read as keys and values are.

Kafka's ``StringConverter``, ``ByteArrayConverter``, ``NumberConverter``, ``BooleanConverter`` and
``JsonConverter`` each implement ``HeaderConverter`` so: ``fromConnectHeader`` is ``fromConnectData``
and ``toConnectHeader`` is ``toConnectData``, the header key playing no part. Kopycat's converters that
follow them inherit :class:`HeadersAsData` instead of repeating the two delegations.
"""

from __future__ import annotations

from typing import Any

from kopycat.api.converter import Converter, HeaderConverter, SchemaAndValue
from kopycat.api.data import Schema

__all__ = ["HeadersAsData"]


class HeadersAsData(Converter, HeaderConverter):
    """A :class:`Converter` that serves as the ``header.converter`` too, converting a header value as
    its ``from_connect_data``/``to_connect_data`` convert a key or value."""

    def from_connect_header(self, topic: str, header_key: str, schema: Schema | None,
                            value: Any) -> bytes | None:
        return self.from_connect_data(topic, schema, value)

    def to_connect_header(self, topic: str, header_key: str, value: bytes | None) -> SchemaAndValue:
        return self.to_connect_data(topic, value)

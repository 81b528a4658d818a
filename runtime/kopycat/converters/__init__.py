"""Built-in converters, after Kafka Connect's: JSON (byte-compatible), string and byte array.

Configured in a worker or connector as ``key.converter`` / ``value.converter`` with the class
path, e.g. ``kopycat.converters.json.JsonConverter`` (Kafka's
``org.apache.kafka.connect.json.JsonConverter``).
"""

from __future__ import annotations

from kopycat.converters.bytes import ByteArrayConverter
from kopycat.converters.json import JsonConverter
from kopycat.converters.string import StringConverter

__all__ = ["ByteArrayConverter", "JsonConverter", "StringConverter"]

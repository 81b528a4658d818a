"""Built-in converters, after Kafka Connect's: JSON (byte-compatible), string and byte array, and
Confluent's Avro with a Schema Registry (:mod:`kopycat.converters.avro`).

Configured in a worker or connector as ``key.converter`` / ``value.converter`` with the class
path, e.g. ``kopycat.converters.json.JsonConverter``, or Kafka's and Confluent's class names
(``org.apache.kafka.connect.json.JsonConverter``, ``io.confluent.connect.avro.AvroConverter``).
The Avro converter is imported only where configured (:mod:`kopycat.plugins` resolves the names).
"""

from __future__ import annotations

from kopycat.converters.bytes import ByteArrayConverter
from kopycat.converters.json import JsonConverter
from kopycat.converters.string import StringConverter

__all__ = ["ByteArrayConverter", "JsonConverter", "StringConverter"]

"""Built-in converters, after Kafka Connect's: JSON (byte-compatible), string and byte array, and
Confluent's Schema Registry formats: Avro (:mod:`kopycat.converters.avro`), JSON Schema
(:mod:`kopycat.converters.json_schema`) and Protobuf (:mod:`kopycat.converters.protobuf`).

Configured in a worker or connector as ``key.converter`` / ``value.converter`` with the class
path, e.g. ``kopycat.converters.json.JsonConverter``, or Kafka's and Confluent's class names
(``org.apache.kafka.connect.json.JsonConverter``, ``io.confluent.connect.avro.AvroConverter``).
The registry converters are imported only where configured (:mod:`kopycat.plugins` resolves the names).
"""

from __future__ import annotations

from kopycat.converters.bytes import ByteArrayConverter
from kopycat.converters.json import JsonConverter
from kopycat.converters.string import StringConverter

__all__ = ["ByteArrayConverter", "JsonConverter", "StringConverter"]

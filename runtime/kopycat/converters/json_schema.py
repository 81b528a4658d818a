"""JsonSchemaConverter: Confluent's JSON Schema wire format with a Schema Registry.

Registered under Confluent's class name ``io.confluent.connect.json.JsonSchemaConverter``, with
the keys Confluent's converters share (``schema.registry.url``, basic/bearer auth, subject name
strategies, ``auto.register.schemas``, ``use.latest.version``, ``normalize.schemas``, retries: see
:mod:`kopycat.converters.registry_converter`). Follows ``JsonSchemaConverter`` and
``JsonSchemaDataConfig``:

- Wire format: magic byte 0, the 4-byte big-endian schema id, then the value as compact JSON
  (UTF-8), as Confluent's ``KafkaJsonSchemaSerializer`` writes it.
- The Connect schema becomes a JSON Schema by :mod:`kopycat.converters.json_schema_data` and is
  registered with ``schemaType`` JSON; reading maps the id's JSON Schema back and takes the
  registry's version when the schema has no ``connect.version``.
- Its own keys: ``decimal.format`` (BASE64 or NUMERIC), ``object.additional.properties`` and
  ``use.optional.for.nonrequired``. Values are not validated against the schema on either side
  (Confluent's ``json.fail.invalid.schema`` defaults to false).

Bad input (no magic byte, an unknown id, invalid JSON, a value that does not fit) is a
:class:`~kopycat.api.errors.DataError`. The columnar methods keep the SPI's default None.
"""

from __future__ import annotations

import decimal
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from kopycat.api.config import CaseInsensitiveValidString, ConfigDef, ConfigType, Importance
from kopycat.api.converter import SchemaAndValue
from kopycat.api.data import Schema
from kopycat.converters.json_schema_data import (
    JsonSchemaOptions,
    dumps,
    from_connect_value,
    to_connect_schema,
    to_connect_value,
    to_json_schema,
)
from kopycat.converters.registry_converter import REGISTRY_CONFIG, SchemaReader, SchemaRegistryConverter, SchemaWriter

__all__ = ["JsonSchemaConverter"]

DECIMAL_FORMAT_CONFIG: Final = "decimal.format"
OBJECT_ADDITIONAL_PROPERTIES_CONFIG: Final = "object.additional.properties"
USE_OPTIONAL_FOR_NON_REQUIRED_CONFIG: Final = "use.optional.for.nonrequired"

CONFIG: Final = (
    ConfigDef(REGISTRY_CONFIG)
    .define(DECIMAL_FORMAT_CONFIG, ConfigType.STRING, default="BASE64",
            validator=CaseInsensitiveValidString.in_("BASE64", "NUMERIC"), importance=Importance.LOW,
            doc="Controls which format this converter will serialize decimals in: BASE64 (the base64 of the "
                "unscaled value's bytes) or NUMERIC (a JSON number).")
    .define(OBJECT_ADDITIONAL_PROPERTIES_CONFIG, ConfigType.BOOLEAN, default=True, importance=Importance.LOW,
            doc="Whether to allow additional properties for object schemas.")
    .define(USE_OPTIONAL_FOR_NON_REQUIRED_CONFIG, ConfigType.BOOLEAN, default=False, importance=Importance.LOW,
            doc="Whether to set non-required properties to be optional.")
)


class _Writer(SchemaWriter):
    def __init__(self, schema: Schema, options: JsonSchemaOptions) -> None:
        super().__init__()
        self.schema = schema
        self.options = options
        json_schema = to_json_schema(schema, options)
        self.text = dumps(json_schema)
        self.record_name = str(json_schema.get("title", ""))

    def encode(self, values: Sequence[Any]) -> list[bytes]:
        return [dumps(from_connect_value(self.schema, value, self.options)).encode() for value in values]


class _Reader(SchemaReader):
    def __init__(self, schema: Schema) -> None:
        self.schema = schema

    def decode(self, payload: bytes) -> SchemaAndValue:
        parsed = json.loads(payload, parse_float=decimal.Decimal)
        return SchemaAndValue(self.schema, to_connect_value(self.schema, parsed))


class JsonSchemaConverter(SchemaRegistryConverter):
    """Connect data <-> Confluent's JSON Schema records with a Schema Registry; see the module docstring."""

    CONFIG = CONFIG
    FORMAT = "JSON Schema"
    SCHEMA_TYPE = "JSON"

    def configure_format(self, parsed: Mapping[str, Any]) -> None:
        self.options = JsonSchemaOptions(
            decimal_numeric=parsed[DECIMAL_FORMAT_CONFIG].upper() == "NUMERIC",
            additional_properties=parsed[OBJECT_ADDITIONAL_PROPERTIES_CONFIG],
            optional_for_nonrequired=parsed[USE_OPTIONAL_FOR_NON_REQUIRED_CONFIG])

    def new_writer(self, schema: Schema) -> SchemaWriter:
        return _Writer(schema, self.options)

    def new_reader(self, text: str, version: Callable[[str], int | None],
                   references: Callable[[], Mapping[str, str]]) -> SchemaReader:
        json_schema = json.loads(text)
        record_name = str(json_schema.get("title", "")) if isinstance(json_schema, dict) else ""
        return _Reader(to_connect_schema(json_schema, version(record_name), self.options))

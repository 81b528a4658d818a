"""The Spark export's value converter: Kafka Connect's JsonConverter, or Confluent's AvroConverter.

The job decodes values with the same converter classes the Python storage sink uses, so both
movers write identical rows. JsonConverter envelopes carry their schema. Confluent Avro values carry
a 5-byte header (magic byte, schema id) before the Avro record: the driver fetches the writer
schemas from the registry once, when the job plans a topic (every version of the value subject,
Confluent's ``TopicNameStrategy``, ``<topic>-value``: several schema ids in one range are fine),
and the Python workers decode against those texts (:class:`PlannedSchemas`), never asking the
registry themselves, so a thousand Spark tasks make no thousand registry calls. An id not among
them fails the record, naming the subject and the ids the plan found.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from kopycat.api.converter import Converter
from kopycat.api.errors import ConfigError
from kopycat.converters.avro import AvroConverter
from kopycat.converters.json import JsonConverter
from kopycat.converters.registry_converter import registry_client
from kopycat.converters.schema_registry import RegisteredSchema, SchemaRegistryError

__all__ = ["AVRO_CONVERTER", "JSON_CONVERTER", "ExportConverter", "PlannedSchemas", "converter_options",
           "plan_converter"]

JSON_CONVERTER: Final = "org.apache.kafka.connect.json.JsonConverter"
AVRO_CONVERTER: Final = "io.confluent.connect.avro.AvroConverter"
_AVRO_NAMES: Final = (AVRO_CONVERTER, "kopycat.converters.avro.AvroConverter")
_JSON_NAMES: Final = (JSON_CONVERTER, "kopycat.converters.json.JsonConverter")
_PREFIX: Final = "value.converter."


@dataclass(frozen=True)
class ExportConverter:
    """Which converter decodes a topic's values, with what it needs; small, so it pickles to the workers.

    ``schemas`` (Avro) are the registry's writer schemas by id and ``versions`` each one's
    ``(subject, version)``, fetched by :func:`plan_converter`.
    """

    class_name: str = JSON_CONVERTER
    options: dict[str, str] = field(default_factory=dict)
    schemas: dict[int, str] = field(default_factory=dict)
    versions: dict[int, tuple[str, int]] = field(default_factory=dict)

    @property
    def is_avro(self) -> bool:
        return self.class_name in _AVRO_NAMES

    @property
    def expected(self) -> str:
        """What a value must be, for error messages."""
        if self.is_avro:
            return "a Confluent Avro value (magic byte 0, a 4-byte schema id, the Avro record)"
        return "a JsonConverter envelope (schemas.enable=true)"

    @property
    def produce_with(self) -> str:
        return "AvroConverter" if self.is_avro else "JsonConverter and schemas.enable=true"

    def new(self) -> Converter:
        """The converter, configured (in the driver for the schema peek, in each Python worker)."""
        if not self.is_avro:
            return JsonConverter()
        converter = AvroConverter(client=PlannedSchemas(self.schemas, self.versions))  # type: ignore[arg-type]
        converter.configure(self.options, is_key=False)
        return converter


class PlannedSchemas:
    """The registry calls a reading AvroConverter makes, answered from the schemas fetched at plan time."""

    def __init__(self, schemas: Mapping[int, str], versions: Mapping[int, tuple[str, int]]) -> None:
        self.schemas = dict(schemas)
        self.by_text = {(versions[i][0], text): (i, versions[i][1]) for i, text in schemas.items() if i in versions}

    def schema_by_id(self, schema_id: int) -> str:
        text = self.schemas.get(schema_id)
        if text is None:
            subjects = sorted({subject for subject, _ in self.by_text})
            raise SchemaRegistryError(f"schema id {schema_id} is not one the export fetched when it planned the "
                                      f"topic (ids {sorted(self.schemas)} of {', '.join(subjects) or 'no subject'})",
                                      404, 40403)
        return text

    def version_of(self, subject: str, schema: str, *, schema_type: str | None = None) -> RegisteredSchema:
        found = self.by_text.get((subject, schema))
        if found is None:
            raise SchemaRegistryError(f"the schema is not registered under {subject}", 404, 40403)
        return RegisteredSchema(found[0], schema, subject, found[1])


def converter_options(props: Mapping[str, Any]) -> tuple[str, dict[str, str]]:
    """A sink config's ``value.converter`` class and its ``value.converter.*`` keys (prefix stripped)."""
    class_name = str(props.get("value.converter") or JSON_CONVERTER)
    if class_name not in (*_AVRO_NAMES, *_JSON_NAMES):
        raise ConfigError.for_key("value.converter", class_name, "the Spark export decodes JsonConverter "
                                  "envelopes or Confluent Avro values; export other topics with the Python "
                                  "storage sink (CopyTaskOperator)")
    return class_name, {key[len(_PREFIX):]: str(value) for key, value in props.items()
                        if key.startswith(_PREFIX) and value is not None}


def plan_converter(class_name: str, options: Mapping[str, str], topic: str) -> ExportConverter:
    """The converter of ``topic``'s values; for Avro with every version of ``<topic>-value`` fetched now."""
    if class_name not in _AVRO_NAMES:
        return ExportConverter(class_name, dict(options))
    client = registry_client(AvroConverter.CONFIG.parse(options))
    subject = f"{topic}-value"
    quoted = urllib.parse.quote(subject, safe="")
    schemas: dict[int, str] = {}
    versions: dict[int, tuple[str, int]] = {}
    numbers: Sequence[int] = client.request("GET", f"/subjects/{quoted}/versions")
    for number in numbers:
        found = client.request("GET", f"/subjects/{quoted}/versions/{number}")
        schemas[int(found["id"])] = found["schema"]
        versions[int(found["id"])] = (subject, int(found["version"]))
    return ExportConverter(class_name, dict(options), schemas, versions)

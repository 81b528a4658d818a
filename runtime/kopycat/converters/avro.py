"""AvroConverter: Confluent's Avro wire format with a Schema Registry (``io.confluent.connect.avro.AvroConverter``).

Registered under Confluent's class name, so ``value.converter=io.confluent.connect.avro.AvroConverter``
with ``value.converter.schema.registry.url=...`` works as in a Confluent Platform worker. Follows
``AvroConverter``, ``AvroConverterConfig`` and ``AbstractKafkaAvroSerializer``/``Deserializer``:

- Wire format: magic byte 0, the 4-byte big-endian schema id, then the Avro binary encoding of the
  value (fastavro). A null value is a null record (a tombstone) both ways. What the registry
  converters share (keys, subjects, ids, caches, errors) is in :mod:`kopycat.converters.registry_converter`.
- Writing: the Connect schema becomes an Avro schema by :mod:`kopycat.converters.avro_data` (the
  mapping the storage sink's Avro files use), registered under the subject the strategy names
  (``auto.register.schemas``), looked up without registering, or the subject's latest version used
  (``use.latest.version``); ids are cached per schema.
- Reading: the id's schema is fetched once, mapped back by :mod:`kopycat.converters.avro_to_connect`
  and decoded; the Connect schema is cached per id. As in Confluent's converter, a schema without
  ``connect.version`` takes its version under the strategy's subject (one more lookup per id; a
  schema not registered there simply has no version, where Confluent's would fail).
- Subjects (``key.subject.name.strategy`` / ``value.subject.name.strategy``): Confluent's
  ``TopicNameStrategy`` (``<topic>-key|value``), ``RecordNameStrategy`` (the record's full name) and
  ``TopicRecordNameStrategy`` (``<topic>-<record full name>``), by their class names or short names.
- Bad input raises :class:`DataError` naming the cause: no magic byte, an id the registry does not
  know, the registry unreachable after its retries; the runner adds topic, partition and offset and
  applies ``errors.tolerance`` and the dead letter queue as for any converter.

``scrub.invalid.names`` makes field and struct names valid Avro names as Confluent's ``AvroData``
scrubs them (:mod:`kopycat.converters.scrub_names`); without it such a name is a DataError naming it,
as Avro's Java parser refuses it in Confluent's converter.

``enhanced.avro.schema.support`` writes a STRING read from an Avro enum back as that enum (its
other part, general unions as ``io.confluent.connect.avro.Union`` structs, is not supported: such
schemas are a DataError on read). The columnar methods (``to_arrow_array``/``from_arrow_array``)
convert a STRUCT (nested structs, arrays and string-keyed maps included) between payloads and Arrow
columns without a Connect value per record (:mod:`kopycat.converters.avro_arrow`); maps of other
keys take the record path.
"""

from __future__ import annotations

import copy
import io
import json
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

import fastavro

from kopycat.api.config import ConfigDef, ConfigType, Importance
from kopycat.api.converter import SchemaAndValue
from kopycat.api.data import Schema
from kopycat.api.errors import DataError
from kopycat.converters.avro_compatibility import reader_incompatibilities
from kopycat.converters.avro_data import AvroSchema, avro_values_converter, to_avro_schema
from kopycat.converters.avro_to_connect import connect_values_converter, plain_reader_schema, to_connect_schema
from kopycat.converters.registry_converter import (
    REGISTRY_CONFIG,
    SchemaReader,
    SchemaRegistryConverter,
    SchemaWriter,
    subject_for,
)
from kopycat.converters.scrub_names import invalid_name

if TYPE_CHECKING:
    from kopycat.converters.avro_arrow import AvroColumns

__all__ = ["AvroConverter", "subject_name"]

_UNSET: Final = object()

CONNECT_META_DATA_CONFIG: Final = "connect.meta.data"
ENHANCED_AVRO_SCHEMA_SUPPORT_CONFIG: Final = "enhanced.avro.schema.support"
SCRUB_INVALID_NAMES_CONFIG: Final = "scrub.invalid.names"

CONFIG: Final = (
    ConfigDef(REGISTRY_CONFIG)
    .define(CONNECT_META_DATA_CONFIG, ConfigType.BOOLEAN, default=True, importance=Importance.LOW,
            doc="Allow connect converter to add its metadata to the output schema.")
    .define(ENHANCED_AVRO_SCHEMA_SUPPORT_CONFIG, ConfigType.BOOLEAN, default=False, importance=Importance.LOW,
            doc="Enable enhanced schema support to preserve package information and Enums.")
    .define(SCRUB_INVALID_NAMES_CONFIG, ConfigType.BOOLEAN, default=False, importance=Importance.MEDIUM,
            doc="Whether to scrub invalid names by replacing invalid characters with valid ones "
                "(URL-encoded, then every character Avro names refuse replaced by _; x before a leading "
                "digit), so Connect field and struct names such as 'unit price' can be written.")
)


def subject_name(strategy: str, topic: str, is_key: bool, avro_schema: AvroSchema) -> str:
    """The subject ``strategy`` (a full Confluent class name) names for an Avro schema."""
    return subject_for(strategy, topic, is_key, _record_name(avro_schema))


def _record_name(avro_schema: AvroSchema) -> str:
    """Confluent's ``AvroSchema.name()``: the full name of a named type, else the type's name."""
    if isinstance(avro_schema, dict) and "name" in avro_schema:
        name: str = avro_schema["name"]
        space = avro_schema.get("namespace")
        return f"{space}.{name}" if space and "." not in name else name
    if isinstance(avro_schema, dict):
        return str(avro_schema["type"])
    return "union" if isinstance(avro_schema, list) else avro_schema


def _columns_plan(schema: Schema) -> AvroColumns | None:
    """The columns plan of a schema, built on a writer's or reader's first columnar call."""
    from kopycat.converters.avro_arrow import avro_columns  # pyarrow only where columns are asked for

    return avro_columns(schema)


class _Writer(SchemaWriter):
    """What writing one Connect schema needs, built once: the Avro schema, its text, an encoder."""

    def __init__(self, schema: Schema, connect_meta_data: bool, enhanced: bool, scrub: bool) -> None:
        super().__init__()
        invalid = None if scrub else invalid_name(schema)
        if invalid is not None:
            raise DataError(f"The {invalid} is not a valid Avro name (letters, digits and _, not starting with a "
                            f"digit); set {SCRUB_INVALID_NAMES_CONFIG}=true to replace its invalid characters as "
                            f"Confluent's AvroData does")
        self.avro = to_avro_schema(schema, connect_meta_data=connect_meta_data, enhanced=enhanced, scrub=scrub)
        self.text = json.dumps(self.avro, separators=(",", ":"), ensure_ascii=False)
        self.record_name = _record_name(self.avro)
        self.encoding = to_avro_schema(schema, null_namespace="kopycat.nonamespace",
                                       connect_meta_data=connect_meta_data, enhanced=enhanced, scrub=scrub)
        """The schema fastavro encodes with (see :func:`to_avro_schema`'s ``null_namespace``)."""
        self.parsed = fastavro.parse_schema(self.encoding)
        self.values = avro_values_converter(schema, scrub=scrub)
        self.schema = schema
        renamed = scrub and self.avro != to_avro_schema(schema, connect_meta_data=connect_meta_data,
                                                        enhanced=enhanced)
        self._columns: object = None if renamed else _UNSET  # the columns path writes the Connect names

    def incompatibilities(self, latest: str) -> list[str]:
        """Avro's schema resolution: can the latest schema read data of this one?"""
        try:
            return reader_incompatibilities(json.loads(latest), self.encoding)
        except (ValueError, fastavro.schema.SchemaParseException, fastavro.schema.UnknownType) as exc:
            return [f"the latest schema cannot be parsed: {exc}"]

    def with_schema(self, latest: str) -> SchemaWriter:
        """This writer's values encoded with the latest schema: fields by name, those it adds by their
        defaults (as Avro's ``GenericDatumWriter`` writes the record Confluent's serializer gets)."""
        try:
            parsed = fastavro.parse_schema(json.loads(latest))
        except (ValueError, fastavro.schema.SchemaParseException, fastavro.schema.UnknownType) as exc:
            raise DataError(f"The subject's latest Avro schema cannot be parsed: {exc}") from None
        target = copy.copy(self)
        target.text, target.parsed, target.headers, target.targets = latest, parsed, {}, {}
        return target

    def encode(self, values: Sequence[Any]) -> list[bytes]:
        """The values mapped together (a struct batch column by column), then each encoded."""
        out = []
        for datum in self.values(values):
            buffer = io.BytesIO()
            fastavro.schemaless_writer(buffer, self.parsed, datum)
            out.append(buffer.getvalue())
        return out

    def encode_arrow(self, values: Any, header: bytes) -> Any | None:
        if self._columns is _UNSET:
            self._columns = _columns_plan(self.schema)
        columns: AvroColumns | None = self._columns  # type: ignore[assignment]
        return None if columns is None else columns.encode(values, header, fastavro.schemaless_writer, self.parsed)


class _Reader(SchemaReader):
    """What reading one schema id needs, built once: the Connect schema, a decoder, a value mapping."""

    def __init__(self, avro: AvroSchema, connect_meta_data: bool, version: int | None) -> None:
        self.schema = to_connect_schema(avro, connect_meta_data=connect_meta_data, version=version)
        self.parsed = fastavro.parse_schema(plain_reader_schema(avro))
        self.values: Callable[[Any], Any] = connect_values_converter(self.schema)
        self._columns: object = _UNSET

    def decode(self, payload: bytes) -> SchemaAndValue:
        return SchemaAndValue(self.schema, self.values(fastavro.schemaless_reader(io.BytesIO(payload), self.parsed,
                                                                                  None)))

    def decode_arrow(self, data: bytes, starts: Sequence[int], ends: Sequence[int]) -> SchemaAndValue | None:
        if self._columns is _UNSET:
            self._columns = _columns_plan(self.schema)
        columns: AvroColumns | None = self._columns  # type: ignore[assignment]
        array = None if columns is None else columns.decode(data, starts, ends, fastavro.schemaless_reader,
                                                             self.parsed)
        return None if array is None else SchemaAndValue(self.schema, array)


class AvroConverter(SchemaRegistryConverter):
    """Connect data <-> Confluent's Avro records with a Schema Registry; see the module docstring."""

    CONFIG = CONFIG
    FORMAT = "Avro"

    def configure_format(self, parsed: Mapping[str, Any]) -> None:
        self.connect_meta_data = parsed[CONNECT_META_DATA_CONFIG]
        self.enhanced = parsed[ENHANCED_AVRO_SCHEMA_SUPPORT_CONFIG]
        self.scrub = parsed[SCRUB_INVALID_NAMES_CONFIG]

    def new_writer(self, schema: Schema) -> SchemaWriter:
        return _Writer(schema, self.connect_meta_data, self.enhanced, self.scrub)

    def new_reader(self, text: str, version: Callable[[str], int | None],
                   references: Callable[[], Mapping[str, str]]) -> SchemaReader:
        avro = json.loads(text)
        return _Reader(avro, self.connect_meta_data, version(_record_name(avro)))

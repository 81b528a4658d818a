"""AvroConverter: Confluent's Avro wire format with a Schema Registry (``io.confluent.connect.avro.AvroConverter``).

Registered under Confluent's class name, so ``value.converter=io.confluent.connect.avro.AvroConverter``
with ``value.converter.schema.registry.url=...`` works as in a Confluent Platform worker. Follows
``AvroConverter``, ``AvroConverterConfig`` and ``AbstractKafkaAvroSerializer``/``Deserializer``:

- Wire format: magic byte 0, the 4-byte big-endian schema id, then the Avro binary encoding of the
  value (fastavro). A null value is a null record (a tombstone) both ways.
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

``enhanced.avro.schema.support`` writes a STRING read from an Avro enum back as that enum (its
other part, general unions as ``io.confluent.connect.avro.Union`` structs, is not supported: such
schemas are a DataError on read). The columnar methods (``to_arrow_array``/``from_arrow_array``) keep the SPI's default
None: the runners then convert record by record.
"""

from __future__ import annotations

import io
import json
import logging
import struct
import urllib.parse
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

import fastavro

from kopycat.api.config import CaseInsensitiveValidString, ConfigDef, ConfigType, Importance, Password, Range
from kopycat.api.converter import Converter, SchemaAndValue
from kopycat.api.data import Schema
from kopycat.api.errors import ConfigError, DataError
from kopycat.converters.avro_data import AvroSchema, avro_values_converter, to_avro_schema
from kopycat.converters.avro_to_connect import connect_values_converter, plain_reader_schema, to_connect_schema
from kopycat.converters.schema_registry import SchemaRegistryClient, SchemaRegistryError

__all__ = ["AvroConverter", "subject_name"]

log = logging.getLogger(__name__)

SCHEMA_REGISTRY_URL_CONFIG: Final = "schema.registry.url"
BASIC_AUTH_CREDENTIALS_SOURCE_CONFIG: Final = "basic.auth.credentials.source"
USER_INFO_CONFIG: Final = "basic.auth.user.info"
BEARER_AUTH_TOKEN_CONFIG: Final = "bearer.auth.token"
KEY_SUBJECT_NAME_STRATEGY_CONFIG: Final = "key.subject.name.strategy"
VALUE_SUBJECT_NAME_STRATEGY_CONFIG: Final = "value.subject.name.strategy"
AUTO_REGISTER_SCHEMAS_CONFIG: Final = "auto.register.schemas"
USE_LATEST_VERSION_CONFIG: Final = "use.latest.version"
NORMALIZE_SCHEMAS_CONFIG: Final = "normalize.schemas"
CONNECT_META_DATA_CONFIG: Final = "connect.meta.data"
ENHANCED_AVRO_SCHEMA_SUPPORT_CONFIG: Final = "enhanced.avro.schema.support"
MAX_RETRIES_CONFIG: Final = "max.retries"
RETRIES_WAIT_MS_CONFIG: Final = "retries.wait.ms"
RETRIES_MAX_WAIT_MS_CONFIG: Final = "retries.max.wait.ms"

_STRATEGY_PACKAGE: Final = "io.confluent.kafka.serializers.subject."
TOPIC_NAME_STRATEGY: Final = _STRATEGY_PACKAGE + "TopicNameStrategy"
RECORD_NAME_STRATEGY: Final = _STRATEGY_PACKAGE + "RecordNameStrategy"
TOPIC_RECORD_NAME_STRATEGY: Final = _STRATEGY_PACKAGE + "TopicRecordNameStrategy"
_STRATEGIES: Final = (TOPIC_NAME_STRATEGY, RECORD_NAME_STRATEGY, TOPIC_RECORD_NAME_STRATEGY)
_STRATEGY_DOC: Final = ("Determines how to construct the subject name under which the schema is registered: "
                        "io.confluent.kafka.serializers.subject.TopicNameStrategy (<topic>-key or <topic>-value), "
                        "RecordNameStrategy (the record's full name) or TopicRecordNameStrategy "
                        "(<topic>-<record full name>).")

CONFIG: Final = (
    ConfigDef()
    .define(SCHEMA_REGISTRY_URL_CONFIG, ConfigType.LIST, importance=Importance.HIGH,
            doc="Comma-separated list of URLs for Schema Registry instances that can be used to register "
                "or look up schemas.")
    .define(BASIC_AUTH_CREDENTIALS_SOURCE_CONFIG, ConfigType.STRING, default="URL",
            validator=CaseInsensitiveValidString.in_("URL", "USER_INFO"), importance=Importance.MEDIUM,
            doc="Specify how to pick the credentials for the Basic Auth header: URL (user info in "
                "schema.registry.url) or USER_INFO (basic.auth.user.info).")
    .define(USER_INFO_CONFIG, ConfigType.PASSWORD, default="", importance=Importance.MEDIUM,
            doc="Specify the user info for Basic Auth in the form of {username}:{password}.")
    .define(BEARER_AUTH_TOKEN_CONFIG, ConfigType.PASSWORD, default="", importance=Importance.MEDIUM,
            doc="A static bearer token sent as 'Authorization: Bearer <token>' (used when no basic auth is set).")
    .define(KEY_SUBJECT_NAME_STRATEGY_CONFIG, ConfigType.STRING, default=TOPIC_NAME_STRATEGY,
            importance=Importance.MEDIUM, doc=_STRATEGY_DOC)
    .define(VALUE_SUBJECT_NAME_STRATEGY_CONFIG, ConfigType.STRING, default=TOPIC_NAME_STRATEGY,
            importance=Importance.MEDIUM, doc=_STRATEGY_DOC)
    .define(AUTO_REGISTER_SCHEMAS_CONFIG, ConfigType.BOOLEAN, default=True, importance=Importance.MEDIUM,
            doc="Specify if the Serializer should attempt to register the Schema with Schema Registry.")
    .define(USE_LATEST_VERSION_CONFIG, ConfigType.BOOLEAN, default=False, importance=Importance.LOW,
            doc="Specify if the Serializer should use the latest subject version for serialization.")
    .define(NORMALIZE_SCHEMAS_CONFIG, ConfigType.BOOLEAN, default=False, importance=Importance.LOW,
            doc="Whether to normalize schemas, which generally ignores ordering when it is not significant.")
    .define(CONNECT_META_DATA_CONFIG, ConfigType.BOOLEAN, default=True, importance=Importance.LOW,
            doc="Allow connect converter to add its metadata to the output schema.")
    .define(ENHANCED_AVRO_SCHEMA_SUPPORT_CONFIG, ConfigType.BOOLEAN, default=False, importance=Importance.LOW,
            doc="Enable enhanced schema support to preserve package information and Enums.")
    .define(MAX_RETRIES_CONFIG, ConfigType.INT, default=3, validator=Range(min=0), importance=Importance.LOW,
            doc="Rounds of retries over the registry URLs after a connection error or a 5xx answer.")
    .define(RETRIES_WAIT_MS_CONFIG, ConfigType.INT, default=1000, validator=Range(min=0),
            importance=Importance.LOW, doc="Wait before the first retry; doubled each round.")
    .define(RETRIES_MAX_WAIT_MS_CONFIG, ConfigType.INT, default=20000, validator=Range(min=0),
            importance=Importance.LOW, doc="The longest wait between retries.")
)

_MAGIC_BYTE: Final = 0
_HEADER: Final = struct.Struct(">bI")
_ENCODE_ERRORS: Final = (TypeError, ValueError, AttributeError, KeyError, OverflowError)


def _encode(header: bytes, parsed: Any, datum: Any) -> bytes:
    out = io.BytesIO()
    out.write(header)
    fastavro.schemaless_writer(out, parsed, datum)
    return out.getvalue()


def subject_name(strategy: str, topic: str, is_key: bool, avro_schema: AvroSchema) -> str:
    """The subject ``strategy`` (a Confluent class name or its short name) names for a schema."""
    if strategy == TOPIC_NAME_STRATEGY:
        return f"{topic}-{'key' if is_key else 'value'}"
    record = _record_name(avro_schema)
    return record if strategy == RECORD_NAME_STRATEGY else f"{topic}-{record}"


def _record_name(avro_schema: AvroSchema) -> str:
    """Confluent's ``AvroSchema.name()``: the full name of a named type, else the type's name."""
    if isinstance(avro_schema, dict) and "name" in avro_schema:
        name: str = avro_schema["name"]
        space = avro_schema.get("namespace")
        return f"{space}.{name}" if space and "." not in name else name
    if isinstance(avro_schema, dict):
        return str(avro_schema["type"])
    return "union" if isinstance(avro_schema, list) else avro_schema


def _strategy(value: str, key: str) -> str:
    full = value if "." in value else _STRATEGY_PACKAGE + value
    if full not in _STRATEGIES:
        raise ConfigError.for_key(key, value, f"not a known subject name strategy; use one of {', '.join(_STRATEGIES)}")
    return full


class _Writer:
    """What writing one Connect schema needs, built once: the Avro schema, its text, an encoder."""

    def __init__(self, schema: Schema, connect_meta_data: bool, enhanced: bool) -> None:
        self.avro = to_avro_schema(schema, connect_meta_data=connect_meta_data, enhanced=enhanced)
        self.text = json.dumps(self.avro, separators=(",", ":"), ensure_ascii=False)
        self.parsed = fastavro.parse_schema(to_avro_schema(schema, null_namespace="kopycat.nonamespace",
                                                           connect_meta_data=connect_meta_data, enhanced=enhanced))
        self.values = avro_values_converter(schema)
        self.headers: dict[str, bytes] = {}
        """Magic byte and schema id by topic (the subject may depend on it)."""


class _Reader:
    """What reading one schema id needs, built once: the Connect schema, a decoder, a value mapping."""

    def __init__(self, avro: AvroSchema, connect_meta_data: bool, version: int | None) -> None:
        self.schema = to_connect_schema(avro, connect_meta_data=connect_meta_data, version=version)
        self.parsed = fastavro.parse_schema(plain_reader_schema(avro))
        self.values: Callable[[Any], Any] = connect_values_converter(self.schema)


class AvroConverter(Converter):
    """Connect data <-> Confluent's Avro records with a Schema Registry; see the module docstring."""

    CONFIG = CONFIG

    def __init__(self, client: SchemaRegistryClient | None = None) -> None:
        self.client = client
        self.is_key = False
        self._writers: dict[Schema, _Writer] = {}
        self._readers: dict[int, _Reader] = {}

    def config(self) -> ConfigDef:
        return CONFIG

    def configure(self, configs: Mapping[str, Any], is_key: bool = False) -> None:
        """Read the keys of :data:`CONFIG`; builds the registry client unless one was passed in."""
        parsed = CONFIG.parse(configs)
        self.is_key = is_key
        key = KEY_SUBJECT_NAME_STRATEGY_CONFIG if is_key else VALUE_SUBJECT_NAME_STRATEGY_CONFIG
        self.strategy = _strategy(parsed[key], key)
        self.auto_register = parsed[AUTO_REGISTER_SCHEMAS_CONFIG]
        self.use_latest = parsed[USE_LATEST_VERSION_CONFIG]
        self.normalize = parsed[NORMALIZE_SCHEMAS_CONFIG]
        self.connect_meta_data = parsed[CONNECT_META_DATA_CONFIG]
        self.enhanced = parsed[ENHANCED_AVRO_SCHEMA_SUPPORT_CONFIG]
        if self.client is None:
            self.client = _client(parsed)

    # ------------------------------------------------------------------ Connect -> bytes

    def from_connect_data(self, topic: str, schema: Schema | None, value: Any,
                          headers: Any = None) -> bytes | None:
        """Magic byte, schema id, Avro binary; a null value gives None (a tombstone)."""
        if value is None:
            return None
        writer, header = self._prepare(topic, schema)
        try:
            return _encode(header, writer.parsed, writer.values([value])[0])
        except _ENCODE_ERRORS as exc:
            raise DataError(f"Failed to serialize Avro data for topic {topic}: {type(exc).__name__}: {exc}") from None

    def from_connect_data_batch(self, topic: str, schema: Schema | None,
                                values: Sequence[Any]) -> list[bytes | None]:
        """The batch's schema resolved once and its values mapped together (a struct batch column by
        column); any failure converts value by value, so the bad value is the one named."""
        present = [value for value in values if value is not None]
        if not present:
            return [None] * len(values)
        writer, header = self._prepare(topic, schema)
        try:
            encoded = iter([_encode(header, writer.parsed, item) for item in writer.values(present)])
        except (*_ENCODE_ERRORS, DataError):
            return [self.from_connect_data(topic, schema, value) for value in values]
        return [None if value is None else next(encoded) for value in values]

    def _prepare(self, topic: str, schema: Schema | None) -> tuple[_Writer, bytes]:
        """The writer of ``schema`` and the 5-byte header of its id for ``topic`` (registered on first use)."""
        if schema is None:
            raise DataError("AvroConverter needs a Connect schema to write a value; the record has none "
                            "(use JsonConverter with schemas.enable=false for schemaless data)")
        writer = self._writers.get(schema)
        if writer is None:
            writer = self._writers.setdefault(schema, _Writer(schema, self.connect_meta_data, self.enhanced))
        header = writer.headers.get(topic)
        if header is None:
            header = writer.headers.setdefault(topic, _HEADER.pack(_MAGIC_BYTE, self._schema_id(topic, writer)))
        return writer, header

    def _schema_id(self, topic: str, writer: _Writer) -> int:
        assert self.client is not None, "configure() first"
        subject = subject_name(self.strategy, topic, self.is_key, writer.avro)
        if self.use_latest:
            return self.client.latest(subject).schema_id
        if self.auto_register:
            return self.client.register(subject, writer.text, normalize=self.normalize)
        return self.client.lookup(subject, writer.text, normalize=self.normalize)

    # ------------------------------------------------------------------ bytes -> Connect

    def to_connect_data(self, topic: str, value: bytes | None, headers: Any = None) -> SchemaAndValue:
        """The Connect schema of the record's schema id and the decoded value; None gives (None, None)."""
        if value is None:
            return SchemaAndValue(None, None)
        if len(value) < _HEADER.size or value[0] != _MAGIC_BYTE:
            raise DataError(f"Failed to deserialize Avro data for topic {topic}: unknown magic byte "
                            f"(the value does not start with 0 and a 4-byte schema id: not written by an "
                            f"Avro serializer with a Schema Registry)")
        schema_id = _HEADER.unpack_from(value)[1]
        reader = self._readers.get(schema_id)
        if reader is None:
            reader = self._readers.setdefault(schema_id, self._reader(topic, schema_id))
        try:
            decoded = fastavro.schemaless_reader(io.BytesIO(value[_HEADER.size:]), reader.parsed, None)
        except (EOFError, ValueError, TypeError, IndexError, UnicodeDecodeError) as exc:
            raise DataError(f"Failed to deserialize Avro data for topic {topic} with schema id {schema_id}: "
                            f"{type(exc).__name__}: {exc}") from None
        return SchemaAndValue(reader.schema, reader.values(decoded))

    def _reader(self, topic: str, schema_id: int) -> _Reader:
        assert self.client is not None, "configure() first"
        try:
            text = self.client.schema_by_id(schema_id)
        except SchemaRegistryError as exc:
            raise SchemaRegistryError(f"Failed to deserialize Avro data for topic {topic}: schema id {schema_id} "
                                      f"could not be fetched: {exc}", exc.status, exc.error_code) from None
        avro = json.loads(text)
        return _Reader(avro, self.connect_meta_data, self._version(topic, avro, text))

    def _version(self, topic: str, avro: AvroSchema, text: str) -> int | None:
        """The schema's version under the subject the strategy names, which the Connect schema takes
        when it carries no ``connect.version`` (Confluent's converter asks the registry the same);
        None when the schema is not registered under that subject."""
        assert self.client is not None, "configure() first"
        try:
            return self.client.version_of(subject_name(self.strategy, topic, self.is_key, avro), text).version
        except SchemaRegistryError as exc:
            log.debug("No version for the schema of topic %s: %s", topic, exc)
            return None


def _client(parsed: Mapping[str, Any]) -> SchemaRegistryClient:
    """The registry client the keys describe (URLs, auth, retries)."""
    urls = list(parsed[SCHEMA_REGISTRY_URL_CONFIG])
    if not urls:
        raise ConfigError.for_key(SCHEMA_REGISTRY_URL_CONFIG, "", "name at least one Schema Registry URL")
    basic_auth = None
    if parsed[BASIC_AUTH_CREDENTIALS_SOURCE_CONFIG].upper() == "USER_INFO":
        basic_auth = _secret(parsed[USER_INFO_CONFIG]) or None
    else:
        split = urllib.parse.urlsplit(urls[0])
        if split.username is not None:
            basic_auth = f"{urllib.parse.unquote(split.username)}:{urllib.parse.unquote(split.password or '')}"
        urls = [_without_user_info(url) for url in urls]
    return SchemaRegistryClient(
        urls, basic_auth=basic_auth, bearer_token=_secret(parsed[BEARER_AUTH_TOKEN_CONFIG]) or None,
        max_retries=parsed[MAX_RETRIES_CONFIG], retry_backoff_s=parsed[RETRIES_WAIT_MS_CONFIG] / 1000,
        retry_backoff_max_s=parsed[RETRIES_MAX_WAIT_MS_CONFIG] / 1000)


def _without_user_info(url: str) -> str:
    split = urllib.parse.urlsplit(url)
    return split._replace(netloc=split.hostname + (f":{split.port}" if split.port else "")).geturl() \
        if split.username is not None and split.hostname else url


def _secret(value: Any) -> str:
    """A PASSWORD key's text (Kopycat's ``Password`` hides it everywhere else)."""
    if value is None:
        return ""
    return value.value() if isinstance(value, Password) else str(value)

"""What Confluent's Schema Registry converters share: keys, subjects, the wire header, schema caches.

Follows ``AbstractKafkaSchemaSerDe`` and its serializer/deserializer subclasses, which Confluent's
``AvroConverter``, ``JsonSchemaConverter`` and ``ProtobufConverter`` all build on:

- Wire format: magic byte 0, the 4-byte big-endian schema id, then the format's payload (for
  Protobuf the message indexes come first; the format's writer and reader own them). A null value
  is a null record (a tombstone) both ways.
- Writing: the format turns the Connect schema into its schema text once (a :class:`SchemaWriter`),
  registered under the subject the strategy names (``auto.register.schemas``), looked up without
  registering, or the subject's latest version used (``use.latest.version``), checked to read the
  data (``latest.compatibility.strict``) and written with by the format's ``with_schema``; ids are cached.
- Reading: the id's schema text is fetched once and the format builds a :class:`SchemaReader`
  (the Connect schema and a decoder); a schema without a Connect version takes its version under
  the strategy's subject, as Confluent's ``deserializeWithSchemaAndVersion`` does.
- Subjects (``key.subject.name.strategy`` / ``value.subject.name.strategy``): ``TopicNameStrategy``
  (``<topic>-key|value``), ``RecordNameStrategy`` (the record's full name) and
  ``TopicRecordNameStrategy`` (``<topic>-<record full name>``), by class names or short names.
- Bad input raises :class:`DataError` naming the cause: no magic byte, an id the registry does not
  know, the registry unreachable after its retries.

A format subclasses :class:`SchemaRegistryConverter` and fills its declared hooks
(:meth:`~SchemaRegistryConverter.configure_format`, :meth:`~SchemaRegistryConverter.new_writer`,
:meth:`~SchemaRegistryConverter.new_reader`). The columnar methods frame and group what the
format's :meth:`SchemaWriter.encode_arrow` and :meth:`SchemaReader.decode_arrow` hooks convert
(whose defaults, None, send a batch down the record path).
"""

from __future__ import annotations

import logging
import struct
import urllib.parse
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from itertools import accumulate, repeat
from typing import Any, ClassVar, Final

from kopycat.api.config import CaseInsensitiveValidString, ConfigDef, ConfigType, Importance, Range
from kopycat.api.converter import Converter, SchemaAndValue
from kopycat.api.data import Schema
from kopycat.api.errors import ConfigError, DataError
from kopycat.converters.registry_bearer import (
    CREDENTIALS_SOURCE_CONFIG,
    REGISTRY_BEARER_CONFIG,
    STATIC_TOKEN,
    bearer_headers,
    secret_text,
)
from kopycat.converters.registry_tls import REGISTRY_TLS_CONFIG, registry_ssl_context
from kopycat.converters.schema_registry import SchemaRegistryClient, SchemaRegistryError

__all__ = [
    "REGISTRY_CONFIG", "RECORD_NAME_STRATEGY", "TOPIC_NAME_STRATEGY", "TOPIC_RECORD_NAME_STRATEGY",
    "SchemaReader", "SchemaRegistryConverter", "SchemaWriter", "registry_client", "subject_for",
]

log = logging.getLogger(__name__)

SCHEMA_REGISTRY_URL_CONFIG: Final = "schema.registry.url"
BASIC_AUTH_CREDENTIALS_SOURCE_CONFIG: Final = "basic.auth.credentials.source"
USER_INFO_CONFIG: Final = "basic.auth.user.info"
KEY_SUBJECT_NAME_STRATEGY_CONFIG: Final = "key.subject.name.strategy"
VALUE_SUBJECT_NAME_STRATEGY_CONFIG: Final = "value.subject.name.strategy"
AUTO_REGISTER_SCHEMAS_CONFIG: Final = "auto.register.schemas"
USE_LATEST_VERSION_CONFIG: Final = "use.latest.version"
LATEST_COMPATIBILITY_STRICT_CONFIG: Final = "latest.compatibility.strict"
NORMALIZE_SCHEMAS_CONFIG: Final = "normalize.schemas"
MAX_RETRIES_CONFIG: Final = "max.retries"
RETRIES_WAIT_MS_CONFIG: Final = "retries.wait.ms"
RETRIES_MAX_WAIT_MS_CONFIG: Final = "retries.max.wait.ms"
SCHEMAS_CACHE_SIZE_CONFIG: Final = "schemas.cache.config"

_STRATEGY_PACKAGE: Final = "io.confluent.kafka.serializers.subject."
TOPIC_NAME_STRATEGY: Final = _STRATEGY_PACKAGE + "TopicNameStrategy"
RECORD_NAME_STRATEGY: Final = _STRATEGY_PACKAGE + "RecordNameStrategy"
TOPIC_RECORD_NAME_STRATEGY: Final = _STRATEGY_PACKAGE + "TopicRecordNameStrategy"
_STRATEGIES: Final = (TOPIC_NAME_STRATEGY, RECORD_NAME_STRATEGY, TOPIC_RECORD_NAME_STRATEGY)
_STRATEGY_DOC: Final = ("Determines how to construct the subject name under which the schema is registered: "
                        "io.confluent.kafka.serializers.subject.TopicNameStrategy (<topic>-key or <topic>-value), "
                        "RecordNameStrategy (the record's full name) or TopicRecordNameStrategy "
                        "(<topic>-<record full name>).")

REGISTRY_CONFIG: Final = (
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
    .define(KEY_SUBJECT_NAME_STRATEGY_CONFIG, ConfigType.STRING, default=TOPIC_NAME_STRATEGY,
            importance=Importance.MEDIUM, doc=_STRATEGY_DOC)
    .define(VALUE_SUBJECT_NAME_STRATEGY_CONFIG, ConfigType.STRING, default=TOPIC_NAME_STRATEGY,
            importance=Importance.MEDIUM, doc=_STRATEGY_DOC)
    .define(AUTO_REGISTER_SCHEMAS_CONFIG, ConfigType.BOOLEAN, default=True, importance=Importance.MEDIUM,
            doc="Specify if the Serializer should attempt to register the Schema with Schema Registry.")
    .define(USE_LATEST_VERSION_CONFIG, ConfigType.BOOLEAN, default=False, importance=Importance.LOW,
            doc="Specify if the Serializer should use the latest subject version for serialization.")
    .define(LATEST_COMPATIBILITY_STRICT_CONFIG, ConfigType.BOOLEAN, default=True, importance=Importance.LOW,
            doc="Whether to check for backward compatibility between the latest subject version and the "
                "schema of the object to be serialized (with use.latest.version): the latest schema must be "
                "able to read the data. Avro applies Avro's schema resolution rules; Protobuf and JSON Schema "
                "pass only a latest schema of the same text.")
    .define(NORMALIZE_SCHEMAS_CONFIG, ConfigType.BOOLEAN, default=False, importance=Importance.LOW,
            doc="Whether to normalize schemas, which generally ignores ordering when it is not significant.")
    .define(MAX_RETRIES_CONFIG, ConfigType.INT, default=3, validator=Range(min=0), importance=Importance.LOW,
            doc="Rounds of retries over the registry URLs after a connection error or a 5xx answer.")
    .define(RETRIES_WAIT_MS_CONFIG, ConfigType.INT, default=1000, validator=Range(min=0),
            importance=Importance.LOW, doc="Wait before the first retry; doubled each round.")
    .define(RETRIES_MAX_WAIT_MS_CONFIG, ConfigType.INT, default=20000, validator=Range(min=0),
            importance=Importance.LOW, doc="The longest wait between retries.")
    .define(SCHEMAS_CACHE_SIZE_CONFIG, ConfigType.INT, default=1000, importance=Importance.LOW,
            doc="Size of the converted schemas cache: how many Connect schemas (writing) and schema ids "
                "(reading) keep their converted form; the least recently used is dropped first (at least 1).")
).merge(REGISTRY_TLS_CONFIG).merge(REGISTRY_BEARER_CONFIG)
"""The keys every registry converter takes; a format's CONFIG adds its own to a copy."""

_MAGIC_BYTE: Final = 0
_HEADER: Final = struct.Struct(">bI")
_ENCODE_ERRORS: Final = (TypeError, ValueError, AttributeError, KeyError, OverflowError)
_DECODE_ERRORS: Final = (EOFError, ValueError, TypeError, IndexError, KeyError, UnicodeDecodeError)


def subject_for(strategy: str, topic: str, is_key: bool, record_name: str) -> str:
    """The subject ``strategy`` (a full Confluent class name) names for a schema whose record is ``record_name``."""
    if strategy == TOPIC_NAME_STRATEGY:
        return f"{topic}-{'key' if is_key else 'value'}"
    return record_name if strategy == RECORD_NAME_STRATEGY else f"{topic}-{record_name}"


def _strategy(value: str, key: str) -> str:
    full = value if "." in value else _STRATEGY_PACKAGE + value
    if full not in _STRATEGIES:
        raise ConfigError.for_key(key, value, f"not a known subject name strategy; use one of {', '.join(_STRATEGIES)}")
    return full


class SchemaWriter(ABC):
    """What writing one Connect schema in a format needs, built once: the schema text and an encoder."""

    text: str
    """The schema as registered."""
    record_name: str
    """The record's full name, for the record name strategies."""

    def __init__(self) -> None:
        self.headers: dict[str, bytes] = {}
        """Magic byte and schema id by topic (the subject may depend on it)."""
        self.targets: dict[str, SchemaWriter] = {}
        """By topic, the writer with the subject's latest schema when it differs (``use.latest.version``)."""

    def incompatibilities(self, latest: str) -> list[str]:
        """Hook: why data of this schema cannot be read with the registered schema text ``latest``
        (``latest.compatibility.strict``); empty when it can. Default: only the same text passes."""
        return [] if latest == self.text else ["its schema text differs from the Connect schema's, and this "
                                               "format checks no more than that"]

    def with_schema(self, latest: str) -> SchemaWriter:
        """Hook: the writer of this schema's Connect values encoded with the registered schema text
        ``latest`` (``use.latest.version``). Default: this writer (its own encoding)."""
        return self

    @abstractmethod
    def encode(self, values: Sequence[Any]) -> list[bytes]:
        """The payloads (what follows the 5-byte header) of non-null Connect values, in order."""

    def encode_arrow(self, values: Any, header: bytes) -> Any | None:
        """Hook: a ``pyarrow.Array`` of the schema's values as a ``BinaryArray`` of ``header`` and
        each payload, identical to :meth:`encode`'s; None (the default) leaves it to the record path."""
        return None


class SchemaReader(ABC):
    """What reading one schema id in a format needs, built once: the Connect schema(s) and a decoder."""

    @abstractmethod
    def decode(self, payload: bytes) -> SchemaAndValue:
        """The Connect schema and value of a payload (the bytes after the 5-byte header); the schema
        may depend on the payload (Protobuf's message indexes pick one of the file's messages)."""

    def decode_arrow(self, data: bytes, starts: Sequence[int], ends: Sequence[int]) -> SchemaAndValue | None:
        """Hook: the payloads at ``data[starts[i]:ends[i]]`` as one ``pyarrow.Array`` and the Connect
        schema all share, identical to :meth:`decode` then :mod:`kopycat.api.arrow_values`; None (the
        default) leaves them to the record path."""
        return None


class _SchemaCache(OrderedDict[Any, Any]):
    """A converted-schemas cache of ``schemas.cache.config`` entries (Confluent's Guava caches with
    ``maximumSize``): the least recently used entry is dropped first."""

    def __init__(self, size: int) -> None:
        super().__init__()
        self.size = max(1, size)

    def get_or_build(self, key: Any, build: Callable[[], Any]) -> Any:
        found = self.get(key)
        if found is None:
            found = self[key] = build()
            if len(self) > self.size:
                self.popitem(last=False)
        else:
            self.move_to_end(key)
        return found


class SchemaRegistryConverter(Converter):
    """Connect data <-> a Schema Registry format; see the module docstring for what is shared.

    Hooks a format declares: :attr:`FORMAT` (its name in messages), :attr:`SCHEMA_TYPE` (the
    registry's ``schemaType``, None for Avro), :attr:`CONFIG`, :meth:`configure_format`,
    :meth:`new_writer` and :meth:`new_reader`.
    """

    CONFIG: ClassVar[ConfigDef] = REGISTRY_CONFIG
    FORMAT: ClassVar[str] = ""
    SCHEMA_TYPE: ClassVar[str | None] = None

    def __init__(self, client: SchemaRegistryClient | None = None) -> None:
        self.client = client
        self.is_key = False
        self._writers = _SchemaCache(1000)
        """Connect schema -> :class:`SchemaWriter`."""
        self._readers = _SchemaCache(1000)
        """Schema id -> :class:`SchemaReader`."""

    def config(self) -> ConfigDef:
        return self.CONFIG

    def configure(self, configs: Mapping[str, Any], is_key: bool = False) -> None:
        """Read the keys of :attr:`CONFIG`; builds the registry client unless one was passed in."""
        parsed = self.CONFIG.parse(configs)
        self.is_key = is_key
        key = KEY_SUBJECT_NAME_STRATEGY_CONFIG if is_key else VALUE_SUBJECT_NAME_STRATEGY_CONFIG
        self.strategy = _strategy(parsed[key], key)
        self.auto_register = parsed[AUTO_REGISTER_SCHEMAS_CONFIG]
        self.use_latest = parsed[USE_LATEST_VERSION_CONFIG]
        self.latest_strict = parsed[LATEST_COMPATIBILITY_STRICT_CONFIG]
        self.normalize = parsed[NORMALIZE_SCHEMAS_CONFIG]
        self._writers = _SchemaCache(parsed[SCHEMAS_CACHE_SIZE_CONFIG])
        self._readers = _SchemaCache(parsed[SCHEMAS_CACHE_SIZE_CONFIG])
        self.configure_format(parsed)
        if self.client is None:
            self.client = registry_client(parsed)

    def configure_format(self, parsed: Mapping[str, Any]) -> None:  # noqa: B027 - optional hook
        """Hook: read the format's own keys from the parsed configuration. Default: none."""

    @abstractmethod
    def new_writer(self, schema: Schema) -> SchemaWriter:
        """Hook: the writer of a Connect schema (called once per schema)."""

    @abstractmethod
    def new_reader(self, text: str, version: Callable[[str], int | None],
                   references: Callable[[], Mapping[str, str]]) -> SchemaReader:
        """Hook: the reader of a registered schema text (called once per id); ``version(record_name)``
        asks the registry the schema's version under the subject the strategy names, and
        ``references()`` the text of every schema it references, directly or not, by the name it is
        referenced by (a Protobuf import path)."""

    # ------------------------------------------------------------------ Connect -> bytes

    def from_connect_data(self, topic: str, schema: Schema | None, value: Any,
                          headers: Any = None) -> bytes | None:
        """Magic byte, schema id, payload; a null value gives None (a tombstone)."""
        if value is None:
            return None
        writer, header = self._prepare(topic, schema)
        try:
            return header + writer.encode([value])[0]
        except _ENCODE_ERRORS as exc:
            raise DataError(f"Failed to serialize {self.FORMAT} data for topic {topic}: "
                            f"{type(exc).__name__}: {exc}") from None

    def from_connect_data_batch(self, topic: str, schema: Schema | None,
                                values: Sequence[Any]) -> list[bytes | None]:
        """The batch's schema resolved once and its values encoded together; any failure converts
        value by value, so the bad value is the one named."""
        present = [value for value in values if value is not None]
        if not present:
            return [None] * len(values)
        writer, header = self._prepare(topic, schema)
        try:
            encoded = iter([header + payload for payload in writer.encode(present)])
        except (*_ENCODE_ERRORS, DataError):
            return [self.from_connect_data(topic, schema, value) for value in values]
        return [None if value is None else next(encoded) for value in values]

    def _prepare(self, topic: str, schema: Schema | None) -> tuple[SchemaWriter, bytes]:
        """The writer of ``schema`` and the 5-byte header of its id for ``topic`` (registered on first use)."""
        if schema is None:
            raise DataError(f"{type(self).__name__} needs a Connect schema to write a value; the record has none "
                            f"(use JsonConverter with schemas.enable=false for schemaless data)")
        writer: SchemaWriter = self._writers.get_or_build(schema, lambda: self.new_writer(schema))
        header = writer.headers.get(topic)
        if header is None:
            header = writer.headers.setdefault(topic, _HEADER.pack(_MAGIC_BYTE, self._schema_id(topic, writer)))
        return writer.targets.get(topic, writer), header

    def _schema_id(self, topic: str, writer: SchemaWriter) -> int:
        assert self.client is not None, "configure() first"
        subject = subject_for(self.strategy, topic, self.is_key, writer.record_name)
        if self.use_latest:
            return self._latest_id(topic, subject, writer)
        if self.auto_register:
            try:
                return self.client.register(subject, writer.text, normalize=self.normalize,
                                            schema_type=self.SCHEMA_TYPE)
            except SchemaRegistryError as exc:
                if exc.status != 409:
                    raise
                raise SchemaRegistryError(f"The Schema Registry refused the {self.FORMAT} schema of topic {topic} "
                                          f"under subject {subject} ({self._latest_version(subject)}): {exc}. "
                                          f"Change the schema compatibly, or the subject's compatibility level",
                                          exc.status, exc.error_code) from None
        return self.client.lookup(subject, writer.text, normalize=self.normalize, schema_type=self.SCHEMA_TYPE)

    def _latest_id(self, topic: str, subject: str, writer: SchemaWriter) -> int:
        """The id of the subject's latest schema, whose writer encodes ``topic``'s values from now on
        (Confluent's ``lookupLatestVersion``, with its check when ``latest.compatibility.strict``)."""
        assert self.client is not None, "configure() first"
        latest = self.client.latest(subject)
        if latest.schema != writer.text:
            problems = writer.incompatibilities(latest.schema) if self.latest_strict else []
            if problems:
                raise DataError(f"Incompatible schema of type '{self.SCHEMA_TYPE or 'AVRO'}': the latest version "
                                f"({latest.version}) of subject {subject} cannot read the {self.FORMAT} data of "
                                f"topic {topic}: {'; '.join(problems)}. Set {LATEST_COMPATIBILITY_STRICT_CONFIG}="
                                f"false to disable this check")
            writer.targets[topic] = writer.with_schema(latest.schema)
        return latest.schema_id

    def from_arrow_array(self, topic: str, schema: Schema, values: Any) -> Any | None:
        """The header of ``schema``'s id and each value's payload, by the writer's columns hook."""
        writer, header = self._prepare(topic, schema)
        return writer.encode_arrow(values, header)

    def _latest_version(self, subject: str) -> str:
        """The subject's latest version, for a refusal's message (Confluent's names the version it broke)."""
        assert self.client is not None, "configure() first"
        try:
            return f"incompatible with version {self.client.latest(subject).version}, its latest"
        except SchemaRegistryError:
            return "its latest version unknown"

    # ------------------------------------------------------------------ bytes -> Connect

    def to_arrow_array(self, topic: str, values: Sequence[bytes | None]) -> SchemaAndValue | None:
        """Framed values decoded by schema id with the readers' columns hook, back in batch order.

        None for a null value, a value without the header, an id the registry does not answer, ids
        whose Connect schemas differ, or a reader that answers None: the record path reports those.
        """
        if not values or None in values:
            return None
        data = b"".join(values)  # type: ignore[arg-type]
        ends = list(accumulate(map(len, values)))  # type: ignore[arg-type]
        starts = [end - len(value) for end, value in zip(ends, values, strict=True)]  # type: ignore[arg-type]
        head = values[0][:_HEADER.size]  # type: ignore[index]
        if len(head) < _HEADER.size or head[0] != _MAGIC_BYTE:
            return None
        if all(map(bytes.startswith, values, repeat(head))):  # type: ignore[arg-type]
            return self._decoded_arrow(topic, _HEADER.unpack(head)[1], data, starts, ends)
        return self._grouped_arrow(topic, values, data, starts, ends)  # type: ignore[arg-type]

    def _grouped_arrow(self, topic: str, values: Sequence[bytes], data: bytes, starts: list[int],
                       ends: list[int]) -> SchemaAndValue | None:
        """Values of several schema ids: each id's run decoded, concatenated and put back in order."""
        groups: dict[int, list[int]] = {}
        for index, value in enumerate(values):
            if len(value) < _HEADER.size or value[0] != _MAGIC_BYTE:
                return None
            groups.setdefault(_HEADER.unpack_from(value)[1], []).append(index)
        decoded = [self._decoded_arrow(topic, schema_id, data, [starts[i] for i in group], [ends[i] for i in group])
                   for schema_id, group in groups.items()]
        if any(part is None or part.schema != decoded[0].schema for part in decoded):  # type: ignore[union-attr]
            return None
        import pyarrow as pa  # pyarrow only where columns are asked for
        import pyarrow.compute as pc

        positions = pc.sort_indices(pa.array([index for group in groups.values() for index in group]))
        joined = pa.concat_arrays([part.value for part in decoded])  # type: ignore[union-attr]
        return SchemaAndValue(decoded[0].schema, joined.take(positions))  # type: ignore[union-attr]

    def _decoded_arrow(self, topic: str, schema_id: int, data: bytes, starts: list[int],
                       ends: list[int]) -> SchemaAndValue | None:
        try:
            reader: SchemaReader = self._readers.get_or_build(schema_id, lambda: self._reader(topic, schema_id))
        except (SchemaRegistryError, DataError):
            return None
        return reader.decode_arrow(data, [start + _HEADER.size for start in starts], ends)


    def to_connect_data(self, topic: str, value: bytes | None, headers: Any = None) -> SchemaAndValue:
        """The Connect schema of the record's schema id and the decoded value; None gives (None, None)."""
        if value is None:
            return SchemaAndValue(None, None)
        if len(value) < _HEADER.size or value[0] != _MAGIC_BYTE:
            raise DataError(f"Failed to deserialize {self.FORMAT} data for topic {topic}: unknown magic byte "
                            f"(the value does not start with 0 and a 4-byte schema id: not written by a "
                            f"{self.FORMAT} serializer with a Schema Registry)")
        schema_id = _HEADER.unpack_from(value)[1]
        reader: SchemaReader = self._readers.get_or_build(schema_id, lambda: self._reader(topic, schema_id))
        try:
            return reader.decode(value[_HEADER.size:])
        except _DECODE_ERRORS as exc:
            raise DataError(f"Failed to deserialize {self.FORMAT} data for topic {topic} with schema id "
                            f"{schema_id}: {type(exc).__name__}: {exc}") from None

    def _reader(self, topic: str, schema_id: int) -> SchemaReader:
        assert self.client is not None, "configure() first"
        try:
            text = self.client.schema_by_id(schema_id)
        except SchemaRegistryError as exc:
            raise SchemaRegistryError(f"Failed to deserialize {self.FORMAT} data for topic {topic}: schema id "
                                      f"{schema_id} could not be fetched: {exc}", exc.status, exc.error_code) from None
        return self.new_reader(text, lambda record_name: self._version(topic, record_name, text),
                               lambda: self._referenced(schema_id))

    def _referenced(self, schema_id: int) -> dict[str, str]:
        """The texts of the schemas ``schema_id`` references, through their own references (Confluent's
        client resolves a ``SchemaReference`` by its subject and version the same way)."""
        assert self.client is not None, "configure() first"
        found: dict[str, str] = {}
        pending = list(self.client.references_of(schema_id))
        while pending:
            reference = pending.pop()
            if reference.name not in found:
                registered = self.client.subject_version(reference.subject, reference.version)
                found[reference.name] = registered.schema
                pending.extend(registered.references)
        return found

    def _version(self, topic: str, record_name: str, text: str) -> int | None:
        """The schema's version under the subject the strategy names, which the Connect schema takes
        when it carries no Connect version (Confluent's converters ask the registry the same);
        None when the schema is not registered under that subject."""
        assert self.client is not None, "configure() first"
        subject = subject_for(self.strategy, topic, self.is_key, record_name)
        try:
            return self.client.version_of(subject, text, schema_type=self.SCHEMA_TYPE).version
        except SchemaRegistryError as exc:
            log.debug("No version for the schema of topic %s: %s", topic, exc)
            return None


def registry_client(parsed: Mapping[str, Any]) -> SchemaRegistryClient:
    """The registry client the keys of :data:`REGISTRY_CONFIG` describe (URLs, auth, retries, TLS)."""
    urls = list(parsed[SCHEMA_REGISTRY_URL_CONFIG])
    if not urls:
        raise ConfigError.for_key(SCHEMA_REGISTRY_URL_CONFIG, "", "name at least one Schema Registry URL")
    basic_auth = None
    if parsed[BASIC_AUTH_CREDENTIALS_SOURCE_CONFIG].upper() == "USER_INFO":
        basic_auth = secret_text(parsed[USER_INFO_CONFIG]) or None
    else:
        split = urllib.parse.urlsplit(urls[0])
        if split.username is not None:
            basic_auth = f"{urllib.parse.unquote(split.username)}:{urllib.parse.unquote(split.password or '')}"
        urls = [_without_user_info(url) for url in urls]
    if basic_auth and parsed[CREDENTIALS_SOURCE_CONFIG].upper() != STATIC_TOKEN:
        raise ConfigError.for_key(CREDENTIALS_SOURCE_CONFIG, parsed[CREDENTIALS_SOURCE_CONFIG],
                                  "basic auth credentials are set too; give the registry either basic auth "
                                  "or a bearer token, as Confluent's client allows only one")
    return SchemaRegistryClient(
        urls, basic_auth=basic_auth, bearer_headers=None if basic_auth else bearer_headers(parsed),
        max_retries=parsed[MAX_RETRIES_CONFIG], retry_backoff_s=parsed[RETRIES_WAIT_MS_CONFIG] / 1000,
        retry_backoff_max_s=parsed[RETRIES_MAX_WAIT_MS_CONFIG] / 1000, ssl_context=registry_ssl_context(parsed))


def _without_user_info(url: str) -> str:
    split = urllib.parse.urlsplit(url)
    return split._replace(netloc=split.hostname + (f":{split.port}" if split.port else "")).geturl() \
        if split.username is not None and split.hostname else url

"""JsonConverter: Kafka Connect's JSON wire format, byte for byte.

Follows ``org.apache.kafka.connect.json.JsonConverter`` (and its ``JsonConverterConfig``):
with ``schemas.enable=true`` every record is the compact envelope
``{"schema":{...},"payload":...}``, the schema written with Kafka's key order; with
``schemas.enable=false`` the payload alone. Bytes are base64; Decimal is base64 of the unscaled
two's-complement big-endian integer (or a JSON number with ``decimal.format=NUMERIC``); Date,
Time and Timestamp are int days / int ms / long ms; a map whose keys are not strings is an
array of ``[key, value]`` pairs. Numbers and escapes are written as Jackson writes them
(:mod:`kopycat.converters._jsonformat`).

Speed: per schema, the envelope's schema text and a payload encoder are built once (a cache
keyed by schema, like Kafka's ``fromConnectSchemaCache``); on the way back, records whose bytes
start with an envelope prefix seen before skip parsing the schema. Batch methods do the lookups
once per batch. orjson does the JSON text work.
"""

from __future__ import annotations

import json as _stdjson
import re
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from decimal import Decimal as _PyDecimal
from typing import Any, Final

import orjson

from kopycat.api.config import CaseInsensitiveValidString, ConfigDef, ConfigType, Importance, Range
from kopycat.api.converter import SchemaAndValue
from kopycat.api.data import Schema, Type, validate_value
from kopycat.api.errors import DataError
from kopycat.converters._jsoncodec import (
    NeedExactNumbers,
    Options,
    decode_schemaless,
    decoder,
    encode_schemaless,
    encoder,
)
from kopycat.converters._jsonformat import fix_escapes, needs_fix
from kopycat.converters._jsonschema import connect_schema, schema_json
from kopycat.converters.headers_as_data import HeadersAsData
from kopycat.interpreter_settings import gc_paused

__all__ = ["JsonConverter"]

SCHEMAS_ENABLE_CONFIG: Final = "schemas.enable"
SCHEMAS_CACHE_SIZE_CONFIG: Final = "schemas.cache.size"
DECIMAL_FORMAT_CONFIG: Final = "decimal.format"
REPLACE_NULL_WITH_DEFAULT_CONFIG: Final = "replace.null.with.default"

CONFIG: Final = (
    ConfigDef()
    .define(SCHEMAS_ENABLE_CONFIG, ConfigType.BOOLEAN, default=True, importance=Importance.HIGH,
            doc="Include schemas within each of the serialized values and keys.",
            group="Schemas", order_in_group=0, display_name="Enable Schemas")
    .define(SCHEMAS_CACHE_SIZE_CONFIG, ConfigType.INT, default=1000, validator=Range(min=0),
            importance=Importance.HIGH,
            doc="The maximum number of schemas that can be cached in this converter instance.",
            group="Schemas", order_in_group=1, display_name="Schema Cache Size")
    .define(DECIMAL_FORMAT_CONFIG, ConfigType.STRING, default="BASE64",
            validator=CaseInsensitiveValidString.in_("BASE64", "NUMERIC"), importance=Importance.LOW,
            doc="Controls which format this converter will serialize decimals in. This value is case "
                "insensitive and can be either 'BASE64' (default) or 'NUMERIC'",
            group="Serialization", order_in_group=0, display_name="Decimal Format")
    .define(REPLACE_NULL_WITH_DEFAULT_CONFIG, ConfigType.BOOLEAN, default=True, importance=Importance.LOW,
            doc="Whether to replace fields that have a default value and that are null to the default "
                "value. When set to true, the default value is used, otherwise null is used.",
            group="Serialization", order_in_group=1, display_name="Replace null with default")
)

_ENVELOPE_ERROR: Final = (
    'JsonConverter with schemas.enable requires "schema" and "payload" fields and may not contain '
    "additional fields. If you are trying to deserialize plain JSON data, set schemas.enable=false "
    "in your converter configuration.")
_LEADING_ZEROS: Final = re.compile(r'"(?:[^"\\]|\\.)*"|(?<![\w.])(-?)0+(?=\d)')
_LONG_DIGITS: Final = re.compile(rb"\d{20}")
"""orjson reads an integer beyond 64 bits as a float; text with such a run of digits takes the exact path."""
_PREFIXES_KEPT: Final = 8
_ENCODE_ERRORS: Final = (DataError, TypeError, ValueError, AttributeError, KeyError, OverflowError)


class _Cache(OrderedDict[Any, Any]):
    """A bounded map that forgets the oldest entry first (Kafka uses an ``LRUCache``).

    Looked up once per batch, so recency hardly matters; size 0 keeps nothing.
    """

    def __init__(self, size: int) -> None:
        super().__init__()
        self.size = size

    def put(self, key: Any, value: Any) -> Any:
        if self.size > 0:
            self[key] = value
            self.move_to_end(key)
            if len(self) > self.size:
                self.popitem(last=False)
        return value


def _drop_leading_zeros(match: re.Match[str]) -> str:
    """``0012`` -> ``12``; strings (group 1 unmatched) stay as they are."""
    return match.group(0) if match.group(1) is None else match.group(1)


def _parse(data: bytes | memoryview, exact: bool = False) -> Any:
    """JSON text to Python values; ``exact`` parses non-integers as ``decimal.Decimal``.

    orjson first, unless the text holds 20 digits in a row (orjson would turn an integer beyond 64
    bits into a float; the standard library keeps it exact); what orjson refuses gets the lenient
    path (Jackson, as Kafka configures it, accepts leading zeros such as ``0012``), then a DataError
    naming the problem.
    """
    if not exact and not _LONG_DIGITS.search(data):
        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError:
            pass
    try:
        text = bytes(data).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DataError(f"Converting byte[] to Kafka Connect data failed due to serialization error: "
                        f"not UTF-8 ({exc})") from None
    parse_float: Callable[[str], Any] = _PyDecimal if exact else float
    try:
        return _stdjson.loads(text, parse_float=parse_float)
    except ValueError:
        pass
    try:
        return _stdjson.loads(_LEADING_ZEROS.sub(_drop_leading_zeros, text),
                              parse_float=parse_float)
    except ValueError as exc:
        raise DataError(f"Converting byte[] to Kafka Connect data failed due to serialization error: "
                        f"{exc}: {text[:60]!r}") from None


def _no_decoder(value: Any, path: str) -> Any:
    raise AssertionError("only called after an envelope prefix was found")


def _new_result(pair: tuple[Schema | None, Any]) -> SchemaAndValue:
    """``SchemaAndValue(*pair)`` without the Python-level ``__new__`` of a NamedTuple."""
    return tuple.__new__(SchemaAndValue, pair)


def _number_text(value: Any) -> Any:
    """Exactly parsed numbers in a schema (NUMERIC decimal defaults) keyed as their JSON text."""
    if isinstance(value, _PyDecimal):
        return orjson.Fragment(str(value).encode())
    raise TypeError(type(value).__name__)


class JsonConverter(HeadersAsData):
    """Kafka Connect's ``JsonConverter``: same config keys, same bytes, batch-friendly.

    Config: ``schemas.enable`` (true), ``decimal.format`` (BASE64 | NUMERIC),
    ``schemas.cache.size`` (1000), ``replace.null.with.default`` (true).

    Null contract, as Kafka's: a None schema with a None value is a tombstone (None bytes);
    a None value *with* a schema is written (envelope with payload null, or the bytes ``null``
    without schemas), or its default when ``replace.null.with.default``; None bytes read as
    ``SchemaAndValue(None, None)``; empty bytes with ``schemas.enable=false`` too.
    """

    CONFIG = CONFIG

    def __init__(self) -> None:
        self.configure({}, is_key=False)

    def config(self) -> ConfigDef:
        """The accepted keys (Kafka's ``Converter.config()``)."""
        return CONFIG

    def configure(self, configs: Mapping[str, Any], is_key: bool = False) -> None:
        """Parse the keys above; raises ConfigError naming a bad key, its value and what is allowed."""
        values = CONFIG.parse(configs)
        self.is_key = is_key
        self.schemas_enabled: bool = values[SCHEMAS_ENABLE_CONFIG]
        self.options = Options(decimal_numeric=values[DECIMAL_FORMAT_CONFIG].upper() == "NUMERIC",
                               replace_null_with_default=values[REPLACE_NULL_WITH_DEFAULT_CONFIG])
        size = values[SCHEMAS_CACHE_SIZE_CONFIG]
        self._writers = _Cache(size)   # Schema -> function(value) -> bytes
        self._envelope_texts = _Cache(size)  # Schema -> (head, tail) texts around columnar payloads
        self._schemas = _Cache(size)   # schema JSON text -> (Schema, decoder)
        self._prefixes: list[tuple[bytes, Schema, Callable[[Any, str], Any]]] = []

    # ------------------------------------------------------------------ Connect -> bytes

    def from_connect_data(self, topic: str, schema: Schema | None, value: Any,
                          headers: Any = None) -> bytes | None:
        """One value to bytes; see the class docstring for nulls."""
        return self._writer(schema)(value)

    def from_connect_data_batch(self, topic: str, schema: Schema | None,
                                values: Sequence[Any]) -> list[bytes | None]:
        """Many values sharing ``schema``: the schema's writer is looked up once."""
        write = self._writer(schema)
        return [write(value) for value in values]

    def _writer(self, schema: Schema | None) -> Callable[[Any], bytes | None]:
        try:
            return self._writers[schema]  # type: ignore[no-any-return]
        except KeyError:
            return self._writers.put(schema, self._build_writer(schema))  # type: ignore[no-any-return]

    def _build_writer(self, schema: Schema | None) -> Callable[[Any], bytes | None]:
        payload, null_payload = self._payload_encoders(schema)
        dumps, fix, failure = orjson.dumps, fix_escapes, self._failure
        if not self.schemas_enabled:
            def write_plain(value: Any) -> bytes | None:
                try:
                    if value is None:
                        return None if schema is None else fix(dumps(null_payload()))
                    data = dumps(payload(value))
                except _ENCODE_ERRORS as exc:
                    raise failure(schema, value, exc) from exc
                return fix(data) if needs_fix(data) else data
            return write_plain
        # The envelope around the payload is the same bytes for every value of the schema: made
        # (and fixed to Jackson's escapes) once, so only the payload is encoded and scanned.
        head, tail = self._envelope(schema)

        def write_envelope(value: Any) -> bytes | None:
            try:
                if value is None:
                    if schema is None:
                        return None
                    data = dumps(null_payload())
                else:
                    data = dumps(payload(value))
            except _ENCODE_ERRORS as exc:
                raise failure(schema, value, exc) from exc
            return head + (fix(data) if needs_fix(data) else data) + tail
        return write_envelope

    def _envelope(self, schema: Schema | None) -> tuple[bytes, bytes]:
        """The bytes before and after the payload with ``schemas.enable`` (empty without)."""
        if not self.schemas_enabled:
            return b"", b""
        schema_text = b"null" if schema is None else fix_escapes(orjson.dumps(schema_json(schema, self.options)))
        return b'{"schema":' + schema_text + b',"payload":', b"}"

    def from_arrow_array(self, topic: str, schema: Schema, values: Any) -> Any | None:
        """A whole column of values to their bytes, column by column, or None where the record
        path must do it (:mod:`kopycat.converters.json_arrow_writer`)."""
        from kopycat.converters.json_arrow_writer import json_texts  # pyarrow only where columns are used

        try:
            head, tail = self._envelope_texts[schema]
        except KeyError:
            head, tail = self._envelope_texts.put(schema, tuple(part.decode() for part in self._envelope(schema)))
        return json_texts(schema, values, self.options, head, tail)

    def _payload_encoders(self, schema: Schema | None) -> tuple[Callable[[Any], Any], Callable[[], Any]]:
        """What a non-null value and a null value of ``schema`` become in the payload.

        Values that are not a Struct (whose fields ``Struct.put`` checked) are validated first,
        as Kafka's class checks would reject them.
        """
        if schema is None:
            return encode_schemaless, lambda: None
        encode = encoder(schema, self.options) or (lambda value: value)
        default, optional = schema.default, schema.optional
        replace = self.options.replace_null_with_default

        def null_payload() -> Any:
            if default is not None and replace:
                return encode(default)
            if optional:
                return None
            raise DataError("Conversion error: null value for field that is required and has no default value")
        if schema.type is Type.STRUCT:
            return encode, null_payload

        def checked(value: Any) -> Any:
            validate_value(schema, value)
            return encode(value)
        return checked, null_payload

    @staticmethod
    def _failure(schema: Schema | None, value: Any, exc: Exception) -> DataError:
        """The error to raise for a failed encoding: re-validation names the field path."""
        if schema is not None and value is not None:
            validate_value(schema, value)  # raises with the path when the value does not fit
        if isinstance(exc, DataError):
            return exc
        return DataError(f"Converting Kafka Connect data to byte[] failed due to serialization error: {exc}")

    # ------------------------------------------------------------------ bytes -> Connect

    def to_connect_data(self, topic: str, value: bytes | None, headers: Any = None) -> SchemaAndValue:
        """One record's bytes to Connect data; see the class docstring for nulls."""
        return self._read(value)

    def to_connect_data_batch(self, topic: str, values: Sequence[bytes | None]) -> list[SchemaAndValue]:
        """Many records' bytes; records sharing a schema reuse its parsed form and decoder."""
        with gc_paused():
            if not self.schemas_enabled:
                read = self._read
                return [read(value) for value in values]
            return self._read_envelopes(values)

    def _read_envelopes(self, values: Sequence[bytes | None]) -> list[SchemaAndValue]:
        """The batch loop, with the most recent envelope prefix checked inline."""
        results: list[SchemaAndValue] = []
        append, read, loads, new = results.append, self._read, orjson.loads, _new_result
        prefix: bytes | None = None
        schema: Schema | None = None
        decode: Callable[[Any, str], Any] = _no_decoder
        if self._prefixes:
            prefix, schema, decode = self._prefixes[0]
        for data in values:
            if prefix is not None and data is not None and data.startswith(prefix) and data.endswith(b"}"):
                payload = memoryview(data)[len(prefix):-1]
                try:
                    append(new((schema, decode(loads(payload), ""))))
                    continue
                except orjson.JSONDecodeError:
                    pass  # not a plain envelope after all: the full path explains what is wrong
                except NeedExactNumbers:
                    append(new((schema, decode(_parse(payload, exact=True), ""))))
                    continue
            append(read(data))
            if self._prefixes and self._prefixes[0][0] is not prefix:
                prefix, schema, decode = self._prefixes[0]
        return results

    def to_arrow_array(self, topic: str, values: Sequence[bytes | None]) -> SchemaAndValue | None:
        """Envelopes that all share one known schema text, decoded column by column.

        The first value's envelope prefix (learned by reading it once, when new) must start every
        value, followed by an object payload; :mod:`kopycat.converters.json_arrow` does the rest,
        or answers None where the record path would decode differently.
        """
        # pyarrow only where columns are asked for
        from kopycat.converters.json_arrow import envelope_columns, payload_lines

        if not self.schemas_enabled or not values:
            return None
        known = self._prefix_of(values[0])
        if known is None:
            return None
        prefix, schema = known
        columns = envelope_columns(schema, self.options.replace_null_with_default)
        if columns is None:
            return None
        lines = payload_lines(values, prefix)  # type: ignore[arg-type]
        array = None if lines is None else columns.decode(lines)
        return None if array is None else SchemaAndValue(schema, array)

    def _prefix_of(self, data: bytes | None) -> tuple[bytes, Schema] | None:
        """The remembered envelope prefix ``data`` starts with, learning it from ``data`` if new."""
        if data is None:
            return None
        known = self._known_prefix(data)
        if known is None:
            try:
                self._read(data)
            except DataError:
                return None
            known = self._known_prefix(data)
        return known

    def _known_prefix(self, data: bytes) -> tuple[bytes, Schema] | None:
        return next(((prefix, schema) for prefix, schema, _ in self._prefixes if data.startswith(prefix)), None)

    def _read(self, data: bytes | None) -> SchemaAndValue:
        if data is None:
            return SchemaAndValue(None, None)
        if self.schemas_enabled:
            for prefix, schema, decode in self._prefixes:
                if data.startswith(prefix) and data.endswith(b"}"):
                    found = self._read_payload(memoryview(data)[len(prefix):-1], schema, decode)
                    if found is not None:
                        return found
                    break
            return self._read_envelope(data)
        if not data.strip():
            return SchemaAndValue(None, None)
        try:
            return SchemaAndValue(None, decode_schemaless(_parse(data)))
        except RecursionError:
            raise DataError("JSON nested too deeply") from None

    @staticmethod
    def _read_payload(payload: memoryview, schema: Schema, decode: Callable[[Any, str], Any]) -> SchemaAndValue | None:
        """The fast path: the envelope's schema text is one seen before. None: take the full path."""
        try:
            parsed = orjson.loads(payload)
        except orjson.JSONDecodeError:
            return None
        try:
            return SchemaAndValue(schema, decode(parsed, ""))
        except NeedExactNumbers:
            return SchemaAndValue(schema, decode(_parse(payload, exact=True), ""))

    def _read_envelope(self, data: bytes) -> SchemaAndValue:
        envelope = _parse(data) if data.strip() else None
        if envelope.__class__ is not dict or len(envelope) != 2 or not {"schema", "payload"} <= envelope.keys():
            raise DataError(_ENVELOPE_ERROR)
        try:
            try:
                schema, decode, value = self._decode_envelope(envelope)
            except NeedExactNumbers:  # a NUMERIC decimal: parse again keeping every digit
                schema, decode, value = self._decode_envelope(_parse(data, exact=True))
        except RecursionError:
            raise DataError("JSON nested too deeply") from None
        self._remember_prefix(data, envelope["schema"], schema, decode)
        return SchemaAndValue(schema, value)

    def _decode_envelope(self, envelope: dict[str, Any]) -> tuple[Schema | None, Any, Any]:
        schema, decode = self._schema_for(envelope["schema"])
        if schema is None:
            return None, None, decode_schemaless(envelope["payload"])
        return schema, decode, decode(envelope["payload"], "")

    def _schema_for(self, schema_obj: Any) -> tuple[Any, Any]:
        if schema_obj is None:
            return None, None
        key = orjson.dumps(schema_obj, default=_number_text)
        try:
            return self._schemas[key]  # type: ignore[no-any-return]
        except KeyError:
            schema = connect_schema(schema_obj, self.options)
            assert schema is not None  # a JSON null schema returned above
            return self._schemas.put(key, (schema, decoder(schema, self.options)))  # type: ignore[no-any-return]

    def _remember_prefix(self, data: bytes, schema_obj: Any, schema: Schema | None, decode: Any) -> None:
        """Keep the envelope's leading bytes when they are exactly what orjson writes for the schema."""
        if schema is None:
            return
        try:
            prefix = b'{"schema":' + orjson.dumps(schema_obj) + b',"payload":'
        except TypeError:
            return
        if data.startswith(prefix) and all(prefix != p for p, _, _ in self._prefixes):
            self._prefixes.insert(0, (prefix, schema, decode))
            del self._prefixes[_PREFIXES_KEPT:]

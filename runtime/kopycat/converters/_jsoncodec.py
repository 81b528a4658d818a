"""Schema-directed JSON encoders and decoders, built once per schema for JsonConverter.

Mirrors ``convertToJson`` and ``convertToConnect`` of Kafka's
``org.apache.kafka.connect.json.JsonConverter``, but walks a schema once to build a closure per
schema, so a batch pays the schema walk once and each record only runs the closure. The schemas
themselves (``asJsonSchema``, ``asConnectSchema``) are in :mod:`kopycat.converters._jsonschema`.

Encoders turn Connect values into what orjson writes as Jackson's bytes (see
:mod:`kopycat.converters._jsonformat`). Decoders check the JSON type of every value, so the
structs they build are valid without a second pass. Encoders trust :class:`Struct` contents
(``Struct.put`` validated them); on failure the converter re-validates to name the field path.
"""

from __future__ import annotations

import binascii
import datetime as _dt
import decimal
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

import orjson

from kopycat.api.data import (
    INT_RANGES,
    LOGICAL_TYPES,
    Date,
    Decimal,
    Schema,
    Struct,
    Time,
    Timestamp,
    Type,
)
from kopycat.api.errors import DataError
from kopycat.converters._jsonfast import compile_struct_decoder, compile_struct_encoder
from kopycat.converters._jsonformat import json_double, json_float
from kopycat.java_numbers import f32, java_big_decimal

Encoder = Callable[[Any], Any]
Decoder = Callable[[Any, str], Any]

_EPOCH_ORDINAL: Final = _dt.date(1970, 1, 1).toordinal()


class NeedExactNumbers(Exception):
    """A NUMERIC decimal was parsed as a float: the caller re-parses with exact decimals."""


@dataclass(frozen=True)
class Options:
    """The JsonConverter settings that change encoding or decoding."""

    decimal_numeric: bool = False
    replace_null_with_default: bool = True


def _b64(data: bytes) -> str:
    return binascii.b2a_base64(data, newline=False).decode("ascii")


def _unb64(text: Any, what: str) -> bytes:
    if not isinstance(text, str):
        raise DataError(f"Invalid {what}: expected a base64 string, found {_json_kind(text)}")
    try:
        return binascii.a2b_base64(text, strict_mode=True)  # b64decode(validate=True) is 3x slower
    except (binascii.Error, ValueError):
        raise DataError(f"Invalid {what}: not valid base64: {text[:40]!r}") from None


def _json_kind(value: Any) -> str:
    kinds = {dict: "OBJECT", list: "ARRAY", str: "STRING", bool: "BOOLEAN", type(None): "NULL"}
    return kinds.get(type(value), "NUMBER")


# ---------------------------------------------------------------- Connect value -> JSON value

def _null_replacer(schema: Schema, encode: Encoder | None, options: Options, name: str) -> Callable[[], Any]:
    """What a null value of ``schema`` becomes: its default, JSON null, or an error."""
    if schema.default is not None and options.replace_null_with_default:
        default = schema.default if encode is None else encode(schema.default)
        return lambda: default
    if schema.optional:
        return lambda: None

    def fail() -> Any:
        where = f" (field {name})" if name else ""
        raise DataError(f"Conversion error: null value for field that is required and has no default value{where}")
    return fail


def _null_constant(schema: Schema, encode: Encoder | None, options: Options) -> tuple[bool, Any]:
    """(True, what a null of ``schema`` becomes) when :func:`_null_replacer` gives a fixed value;
    (False, None) when a null is an error."""
    if schema.default is not None and options.replace_null_with_default:
        return True, schema.default if encode is None else encode(schema.default)
    return schema.optional, None


def _decimal_encoder(schema: Schema, options: Options) -> Encoder:
    if options.decimal_numeric:
        def numeric(value: decimal.Decimal) -> Any:
            sign, digits, exponent = value.as_tuple()
            if not isinstance(exponent, int):
                raise DataError(f"Decimal value {value} is not finite")
            unscaled = int("".join(map(str, digits)) or "0")
            return json_fragment(java_big_decimal(-unscaled if sign else unscaled, -exponent))
        return numeric
    scale, unscaled = Decimal.scale(schema), Decimal.unscaled

    def base64(value: decimal.Decimal) -> str:  # Decimal.from_logical with the scale parsed once
        number = unscaled(value, scale)
        length = (number if number >= 0 else ~number).bit_length() // 8 + 1
        return _b64(number.to_bytes(length, "big", signed=True))
    return base64


def json_fragment(text: str) -> Any:
    """Raw JSON text that orjson inserts as is."""
    return orjson.Fragment(text.encode())


def _logical_encoder(schema: Schema, options: Options) -> Encoder | None:
    name = schema.name
    if name == Decimal.LOGICAL_NAME:
        return _decimal_encoder(schema, options)
    if name == Date.LOGICAL_NAME:
        return lambda value: value.toordinal() - _EPOCH_ORDINAL
    if name == Time.LOGICAL_NAME:
        return lambda value: Time.from_logical(schema, value)
    if name == Timestamp.LOGICAL_NAME:
        return _timestamp_millis
    return None


_EPOCH: Final = _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)
_EPOCH_NAIVE: Final = _dt.datetime(1970, 1, 1)
_MILLISECOND: Final = _dt.timedelta(milliseconds=1)


def _timestamp_millis(value: _dt.datetime) -> int:
    """``Timestamp.from_logical`` in one call: timestamps are in most records."""
    return (value - (_EPOCH_NAIVE if value.tzinfo is None else _EPOCH)) // _MILLISECOND


def encoder(schema: Schema, options: Options) -> Encoder | None:
    """A function from a non-null value of ``schema`` to its JSON value; None means identity."""
    if schema.name in LOGICAL_TYPES:
        return _logical_encoder(schema, options)
    schema_type = schema.type
    if schema_type is Type.FLOAT64:
        return json_double
    if schema_type is Type.FLOAT32:
        return json_float
    if schema_type is Type.BYTES:
        return _b64
    if schema_type is Type.ARRAY:
        return _array_encoder(schema, options)
    if schema_type is Type.MAP:
        return _map_encoder(schema, options)
    if schema_type is Type.STRUCT:
        return _struct_encoder(schema, options)
    return None


def _nullable(schema: Schema, options: Options) -> Encoder | None:
    """An encoder that also handles None (default, null or error); None means identity."""
    encode = encoder(schema, options)
    if encode is None and schema.optional and (schema.default is None or not options.replace_null_with_default):
        return None
    on_null = _null_replacer(schema, encode, options, "")
    if encode is None:
        return lambda value: on_null() if value is None else value
    return lambda value: on_null() if value is None else encode(value)


def _array_encoder(schema: Schema, options: Options) -> Encoder:
    element = _nullable(schema.value_schema, options)
    if element is None:
        return lambda values: values
    return lambda values: [element(value) for value in values]


def _map_encoder(schema: Schema, options: Options) -> Encoder:
    """String keys make a JSON object (a null key is written "null", as Jackson's
    ``NullNode.asText()``); other keys an array of ``[key, value]`` pairs."""
    key, value = _nullable(schema.key_schema, options), _nullable(schema.value_schema, options)
    if schema.key_schema.type is Type.STRING:
        if value is None and schema.key_schema.default is None and not schema.key_schema.optional:
            return lambda mapping: mapping if type(mapping) is dict else dict(mapping)
        value_of = value or (lambda v: v)

        def key_text(k: Any) -> str:
            text = k if key is None else key(k)
            return "null" if text is None else text
        return lambda mapping: {key_text(k): value_of(v) for k, v in mapping.items()}
    key_of = key or (lambda k: k)
    value_of = value or (lambda v: v)
    return lambda mapping: [[key_of(k), value_of(v)] for k, v in mapping.items()]


def _struct_encoder(schema: Schema, options: Options) -> Encoder:
    fields = schema.fields
    names = [field.name for field in fields]
    encoders = [encoder(field.schema, options) for field in fields]
    on_null = [_null_replacer(f.schema, e, options, f.name) for f, e in zip(fields, encoders, strict=True)]

    def encode_any_struct(struct: Struct) -> dict[str, Any]:
        """Every case: unset fields become their default, null, or an error naming the field."""
        if struct.schema is not schema and struct.schema != schema:
            raise DataError("Mismatching schema.")
        return {name: on_null[i]() if value is None else value if encode is None else encode(value)
                for i, (name, encode, value) in enumerate(zip(names, encoders, struct._values, strict=True))}
    nulls = [_null_constant(f.schema, e, options) for f, e in zip(fields, encoders, strict=True)]
    return compile_struct_encoder(schema, encoders, encode_any_struct, nulls)


def encode_schemaless(value: Any) -> Any:
    """A value without a schema, typed by its Python class (``ConnectSchema.schemaType``)."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return json_double(value)
    if isinstance(value, bytes | bytearray):
        return _b64(bytes(value))
    if isinstance(value, list | tuple):
        return [encode_schemaless(v) for v in value]
    if isinstance(value, Mapping):
        if all(isinstance(k, str) for k in value):
            return {k: encode_schemaless(v) for k, v in value.items()}
        return [[encode_schemaless(k), encode_schemaless(v)] for k, v in value.items()]
    if isinstance(value, Struct):
        raise DataError("Mismatching schema.")
    raise DataError(f"Python class {type(value).__name__} does not have corresponding schema type.")


# ---------------------------------------------------------------- JSON value -> Connect value

def _null_decoder(schema: Schema, options: Options) -> Decoder:
    if schema.default is not None and options.replace_null_with_default:
        default = schema.default
        return lambda value, path: default
    if schema.optional:
        return lambda value, path: None

    def fail(value: Any, path: str) -> Any:
        where = f" {path}" if path else ""
        raise DataError(f"Invalid null value for required {schema.type.name} field{where}")
    return fail


def _mismatch(schema: Schema, expected: str, value: Any, path: str) -> DataError:
    where = f" for field {path}" if path else ""
    name = f" \"{schema.name}\"" if schema.name else ""
    return DataError(f"Invalid JSON{where}: schema{name} of type {schema.type.name} expects {expected}, "
                     f"found {_json_kind(value)} {str(value)[:40]}")


def decoder(schema: Schema, options: Options) -> Decoder:
    """A function from a JSON value (as parsed) and its path to the Connect value, None included."""
    on_null = _null_decoder(schema, options)
    decode = _value_decoder(schema, options)

    def decode_nullable(value: Any, path: str) -> Any:
        return on_null(value, path) if value is None else decode(value, path)
    return decode_nullable


def _int_decoder(schema: Schema) -> Decoder:
    low, high = INT_RANGES[schema.type]

    def decode_int(value: Any, path: str) -> int:
        if value.__class__ is not int or not low <= value <= high:
            if isinstance(value, int) and not isinstance(value, bool):
                raise DataError(f"Invalid JSON for field {path or 'value'}: {value} is out of range "
                                f"for {schema.type.name}")
            raise _mismatch(schema, "an integer", value, path)
        return value
    return decode_int


_NON_FINITE: Final = {"NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf")}


def _float_decoder(schema: Schema) -> Decoder:
    single = schema.type is Type.FLOAT32

    def decode_float(value: Any, path: str) -> float:
        if isinstance(value, str) and value in _NON_FINITE:
            return _NON_FINITE[value]
        if isinstance(value, bool) or not isinstance(value, float | int | decimal.Decimal):
            raise _mismatch(schema, "a number", value, path)
        number = float(value)
        return f32(number) if single else number
    return decode_float


def _typed(schema: Schema, kind: type, expected: str) -> Decoder:
    def decode_typed(value: Any, path: str) -> Any:
        if value.__class__ is not kind:
            raise _mismatch(schema, expected, value, path)
        return value
    return decode_typed


def _logical_decoder(schema: Schema) -> Decoder | None:
    name = schema.name
    if name == Decimal.LOGICAL_NAME:
        scale, from_unscaled = Decimal.scale(schema), Decimal.from_unscaled

        def decode_decimal(value: Any, path: str) -> decimal.Decimal:
            if isinstance(value, str):  # Decimal.to_logical with the scale parsed once
                data = _unb64(value, f"bytes for Decimal field {path or 'value'}")
                if not data:
                    raise DataError("Invalid Decimal bytes: zero length")
                return from_unscaled(int.from_bytes(data, "big", signed=True), scale)
            if isinstance(value, decimal.Decimal):
                return value
            if isinstance(value, float):
                raise NeedExactNumbers()
            if isinstance(value, int) and not isinstance(value, bool):
                return Decimal.from_unscaled(value * 10**scale, scale) if scale >= 0 else decimal.Decimal(value)
            raise _mismatch(schema, "a number or base64 bytes", value, path)
        return decode_decimal
    logical = {Date.LOGICAL_NAME: (Date, Type.INT32), Time.LOGICAL_NAME: (Time, Type.INT32),
               Timestamp.LOGICAL_NAME: (Timestamp, Type.INT64)}.get(name or "")
    if logical is None:
        return None
    kind, raw_type = logical
    check = _int_decoder(Schema(raw_type, name=name))
    if kind is Timestamp:
        return _timestamp_decoder(schema, check)

    def decode_logical(value: Any, path: str) -> Any:
        raw = check(value, path)
        try:
            return kind.to_logical(schema, raw)
        except DataError as exc:
            raise DataError(f"Invalid value for {f'field {path}' if path else 'value'}: {exc}") from None
    return decode_logical


def _timestamp_decoder(schema: Schema, check: Decoder) -> Decoder:
    """Timestamps are in most records: the common range is decoded without further calls."""
    from_seconds, utc = _dt.datetime.fromtimestamp, _dt.UTC
    exact = Timestamp.EXACT_FLOAT_MS

    def decode_timestamp(value: Any, path: str) -> _dt.datetime:
        if value.__class__ is int and -exact < value < exact:
            return from_seconds(value / 1000, utc)
        try:
            return Timestamp.to_logical(schema, check(value, path))
        except DataError as exc:
            raise DataError(f"Invalid value for {f'field {path}' if path else 'value'}: {exc}") from None
    return decode_timestamp


def _value_decoder(schema: Schema, options: Options) -> Decoder:
    logical = _logical_decoder(schema) if schema.name in LOGICAL_TYPES else None
    if logical is not None:
        return logical
    schema_type = schema.type
    if schema_type in INT_RANGES:
        return _int_decoder(schema)
    if schema_type in (Type.FLOAT32, Type.FLOAT64):
        return _float_decoder(schema)
    if schema_type is Type.BOOLEAN:
        return _typed(schema, bool, "a boolean")
    if schema_type is Type.STRING:
        return _typed(schema, str, "a string")
    if schema_type is Type.BYTES:
        return lambda value, path: _unb64(value, f"bytes field {path or 'value'}")
    if schema_type is Type.ARRAY:
        return _array_decoder(schema, options)
    if schema_type is Type.MAP:
        return _map_decoder(schema, options)
    return _struct_decoder(schema, options)


def _array_decoder(schema: Schema, options: Options) -> Decoder:
    element = decoder(schema.value_schema, options)

    def decode_array(value: Any, path: str) -> list[Any]:
        if value.__class__ is not list:
            raise _mismatch(schema, "an array", value, path)
        return [element(item, f"{path or 'value'}[{i}]") for i, item in enumerate(value)]
    return decode_array


def _map_decoder(schema: Schema, options: Options) -> Decoder:
    key, element = decoder(schema.key_schema, options), decoder(schema.value_schema, options)
    if schema.key_schema.type is Type.STRING:
        def decode_object(value: Any, path: str) -> dict[Any, Any]:
            if value.__class__ is not dict:
                raise DataError(f"Maps with string fields should be encoded as JSON objects, but found "
                                f"{_json_kind(value)} (field {path or 'value'})")
            return {k: element(v, f"{path or 'value'}[{k!r}]") for k, v in value.items()}
        return decode_object

    def decode_pairs(value: Any, path: str) -> dict[Any, Any]:
        if value.__class__ is not list:
            raise DataError(f"Maps with non-string fields should be encoded as JSON array of tuples, "
                            f"but found {_json_kind(value)} (field {path or 'value'})")
        result = {}
        for i, pair in enumerate(value):
            if pair.__class__ is not list or len(pair) != 2:
                raise DataError(f"Found invalid map entry instead of a [key, value] array at "
                                f"{path or 'value'}[{i}]: {str(pair)[:40]}")
            where = f"{path or 'value'}[{i}]"
            result[key(pair[0], where + "[0]")] = element(pair[1], where + "[1]")
        return result
    return decode_pairs


def _struct_decoder(schema: Schema, options: Options) -> Decoder:
    fields = schema.fields
    names = [field.name for field in fields]
    decoders = [decoder(field.schema, options) for field in fields]

    def decode_any_struct(value: Any, path: str) -> Struct:
        """Every case: missing or null fields take defaults, errors name the field path."""
        if value.__class__ is not dict:
            raise DataError(f"Structs should be encoded as JSON objects, but found {_json_kind(value)} "
                            f"(field {path or 'value'})")
        values = [decode(value.get(name), f"{path}.{name}" if path else name)
                  for name, decode in zip(names, decoders, strict=True)]
        return Struct.of_values(schema, values)
    value_decoders = [_value_decoder(field.schema, options) for field in fields]
    return compile_struct_decoder(schema, value_decoders, decode_any_struct)


def decode_schemaless(value: Any) -> Any:
    """A JSON value without a schema: numbers become int or float, objects dicts (as Kafka)."""
    if isinstance(value, decimal.Decimal):
        return float(value)
    if value.__class__ is list:
        return [decode_schemaless(v) for v in value]
    if value.__class__ is dict:
        return {k: decode_schemaless(v) for k, v in value.items()}
    return value

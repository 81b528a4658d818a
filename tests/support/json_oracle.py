"""Kafka 4.1.1's JsonConverter as an oracle: the case protocol, the run, and the comparisons.

java/JsonConverterOracle.java (tests/unit/converters/java) reads one case per line: a Connect schema
in Kafka's envelope form and the value in an exact typed form written here (never by Kopycat's code),
serializes it under each of SETTINGS and reads its bytes back. Both sides render what they read as
the same canonical text (doubles by their bits, decimals by unscaled value and scale), so Kopycat's
results compare to Java's as strings. Used by tests/integration/test_json_converter_interop.py.
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import json
import re
import struct
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kopycat.api.data import Date, Decimal, Schema, Struct, Time, Timestamp, Type
from kopycat.api.errors import DataError
from kopycat.converters.json import JsonConverter
from kopycat.dev.jars import ensure_jars

ORACLE = Path(__file__).parents[1] / "unit" / "converters" / "java" / "JsonConverterOracle.java"
TOPIC = "topic"
UTC = dt.UTC
SETTINGS = [{"schemas.enable": enable, "decimal.format": decimal_format, "replace.null.with.default": replace}
            for enable in ("true", "false") for decimal_format in ("BASE64", "NUMERIC")
            for replace in ("true", "false")]
SCHEMALESS = SETTINGS.index({"schemas.enable": "false", "decimal.format": "BASE64",
                              "replace.null.with.default": "true"})
_PLAIN = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")
_EPOCH_DAY = dt.date(1970, 1, 1).toordinal()
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=UTC)
_MS = dt.timedelta(milliseconds=1)
_NUMBER = re.compile(r"(-?\d+\.\d+(?:E-?\d+)?)")
_INT_TAGS = {Type.INT8: "i8", Type.INT16: "i16", Type.INT32: "i32", Type.INT64: "i64"}


@dataclass(frozen=True)
class Case:
    """A schema and a value; ``name`` is the pytest id."""

    name: str
    schema: Schema | None
    value: Any


# ------------------------------------------------------------------ the oracle's input (not Kopycat's code)

def _unscaled(value: decimal.Decimal, scale: int) -> int:
    sign, digits, exponent = value.as_tuple()
    assert isinstance(exponent, int)
    number = int("".join(map(str, digits)) or "0") * (-1 if sign else 1)
    shift = exponent + scale
    assert shift >= 0 or number % 10**-shift == 0, (value, scale)
    return number * 10**shift if shift >= 0 else number // 10**-shift


def _scale(schema: Schema) -> int:
    return int((schema.parameters or {})["scale"])


def _millis(schema: Schema, value: Any) -> int:
    """Date / Time / Timestamp as Kafka's underlying int (days for Date)."""
    if schema.name == Date.LOGICAL_NAME:
        return int(value.toordinal() - _EPOCH_DAY)
    if schema.name == Time.LOGICAL_NAME:
        return ((value.hour * 60 + value.minute) * 60 + value.second) * 1000 + value.microsecond // 1000
    return (value.replace(tzinfo=value.tzinfo or UTC) - _EPOCH) // _MS  # type: ignore[no-any-return]


def _bits(value: float, single: bool) -> str:
    return struct.pack(">f" if single else ">d", value).hex()


def typed(schema: Schema, value: Any) -> Any:
    """The oracle's exact typed form of ``value`` (see JsonConverterOracle.java)."""
    if value is None:
        return None
    if schema.name == Decimal.LOGICAL_NAME:
        return str(_unscaled(value, _scale(schema)))
    if schema.name in (Date.LOGICAL_NAME, Time.LOGICAL_NAME, Timestamp.LOGICAL_NAME):
        return _millis(schema, value)
    kind = schema.type
    if kind in (Type.FLOAT32, Type.FLOAT64):
        return _bits(value, kind is Type.FLOAT32)
    if kind is Type.BYTES:
        return bytes(value).hex()
    if kind is Type.ARRAY:
        return [typed(schema.value_schema, v) for v in value]
    if kind is Type.MAP:
        return [[typed(schema.key_schema, k), typed(schema.value_schema, v)] for k, v in value.items()]
    if kind is Type.STRUCT:
        return {f.name: typed(f.schema, value.get_without_default(f.name)) for f in schema.fields
                if value.get_without_default(f.name) is not None}
    return value


def typed_schemaless(value: Any) -> Any:
    """Tagged form of a schemaless value: Java's Long, Double, String, ..., LinkedHashMap."""
    if value is None:
        return None
    for kind, tag, form in ((bool, "b", bool), (int, "i64", int), (float, "f64", lambda v: _bits(v, False)),
                            (str, "s", str), (bytes, "y", bytes.hex)):
        if isinstance(value, kind):
            return [tag, form(value)]
    if isinstance(value, list):
        return ["arr", [typed_schemaless(v) for v in value]]
    return ["map", [[typed_schemaless(k), typed_schemaless(v)] for k, v in value.items()]]


def connect_payload(schema: Schema, value: Any) -> Any:
    """A default value as Kafka's envelope payload holds it (read by Java's asConnectSchema)."""
    if value is None:
        return None
    if schema.name == Decimal.LOGICAL_NAME:
        number = _unscaled(value, _scale(schema))
        data = number.to_bytes((number.bit_length() + (number < 0)) // 8 + 1, "big", signed=True)
        return base64.b64encode(data).decode()
    if schema.type is Type.BYTES:
        return base64.b64encode(value).decode()
    if schema.type is Type.ARRAY:
        return [connect_payload(schema.value_schema, v) for v in value]
    if schema.type is Type.STRUCT:
        return {f.name: connect_payload(f.schema, value.get_without_default(f.name)) for f in schema.fields}
    if schema.type is Type.MAP:
        if schema.key_schema.type is Type.STRING:
            return {k: connect_payload(schema.value_schema, v) for k, v in value.items()}
        return [[connect_payload(schema.key_schema, k), connect_payload(schema.value_schema, v)]
                for k, v in value.items()]
    return typed(schema, value) if schema.name else value


def schema_json(schema: Schema) -> dict[str, Any]:
    """Kafka's envelope schema JSON for ``schema`` (key order is irrelevant to the reader)."""
    names = {Type.FLOAT32: "float", Type.FLOAT64: "double"}
    out: dict[str, Any] = {"type": names.get(schema.type, schema.type.value), "optional": schema.optional}
    for key, attr in (("name", schema.name), ("version", schema.version), ("doc", schema.doc)):
        if attr is not None:
            out[key] = attr
    if schema.parameters is not None:
        out["parameters"] = dict(schema.parameters)
    if schema.default is not None:
        out["default"] = connect_payload(schema, schema.default)
    if schema.type is Type.ARRAY:
        out["items"] = schema_json(schema.value_schema)
    elif schema.type is Type.MAP:
        out["keys"], out["values"] = schema_json(schema.key_schema), schema_json(schema.value_schema)
    elif schema.type is Type.STRUCT:
        out["fields"] = [{**schema_json(f.schema), "field": f.name} for f in schema.fields]
    return out


def case_line(case: Case) -> str:
    value = typed_schemaless(case.value) if case.schema is None else typed(case.schema, case.value)
    schema = None if case.schema is None else schema_json(case.schema)
    return "write\t" + json.dumps({"schema": schema, "value": value})


# ------------------------------------------------------------------ canonical text (as the oracle renders it)

def esc(text: str) -> str:
    return "".join(chr(b) if b in _PLAIN else f"%{b:02X}" for b in text.encode())


def canon_schema(schema: Schema | None) -> str:
    if schema is None:
        return "none"
    params = "-" if schema.parameters is None else "".join(
        f"{esc(k)}:{esc(v)};" for k, v in sorted(schema.parameters.items()))
    text = (f"({schema.type.value}{'?' if schema.optional else ''},n={esc(schema.name) if schema.name else '-'},"
            f"v={'-' if schema.version is None else schema.version},"
            f"d={'-' if schema.doc is None else esc(schema.doc)},p={params},def={canon(schema, schema.default)}")
    if schema.type is Type.ARRAY:
        text += f",items={canon_schema(schema.value_schema)}"
    elif schema.type is Type.MAP:
        text += f",keys={canon_schema(schema.key_schema)},values={canon_schema(schema.value_schema)}"
    elif schema.type is Type.STRUCT:
        text += ",fields=" + "".join(f"{esc(f.name)}:{canon_schema(f.schema)};" for f in schema.fields)
    return text + ")"


def _canon_float(value: float, single: bool) -> str:
    if single and struct.unpack(">f", struct.pack(">f", value))[0] != value and value == value:
        return f"f32!{value!r}"  # not a 32-bit float: Java could not hold it
    return ("f32:" if single else "f64:") + _bits(value, single)


def canon(schema: Schema | None, value: Any) -> str:
    if value is None:
        return "null"
    if schema is None:
        return _canon_schemaless(value)
    if schema.name == Decimal.LOGICAL_NAME:
        sign, digits, exponent = value.as_tuple()
        return f"dec:{int(''.join(map(str, digits)) or '0') * (-1 if sign else 1)}e{-exponent}"
    prefixes = {Date.LOGICAL_NAME: "date:", Time.LOGICAL_NAME: "time:", Timestamp.LOGICAL_NAME: "ts:"}
    if schema.name in prefixes:
        days_or_ms = _millis(schema, value)
        return prefixes[schema.name] + str(days_or_ms * (86_400_000 if schema.name == Date.LOGICAL_NAME else 1))
    kind = schema.type
    if kind in (Type.FLOAT32, Type.FLOAT64):
        return _canon_float(float(value), kind is Type.FLOAT32)
    if kind is Type.ARRAY:
        return "[" + ",".join(canon(schema.value_schema, v) for v in value) + "]"
    if kind is Type.MAP:
        return "{" + ",".join(sorted(f"{canon(schema.key_schema, k)}={canon(schema.value_schema, v)}"
                                     for k, v in value.items())) + "}"
    if kind is Type.STRUCT:
        return "struct{" + ",".join(f"{esc(f.name)}={canon(f.schema, value.get_without_default(f.name))}"
                                    for f in schema.fields) + "}"
    if kind is Type.BOOLEAN:
        return "b:" + str(value).lower()
    if kind is Type.STRING:
        return "s:" + esc(value)
    if kind is Type.BYTES:
        return "y:" + bytes(value).hex()
    return f"{_INT_TAGS[kind]}:{value}"


def _canon_schemaless(value: Any) -> str:
    if isinstance(value, bool):
        return "b:" + str(value).lower()
    if isinstance(value, int):
        return f"i64:{value}"
    if isinstance(value, float):
        return _canon_float(value, False)
    if isinstance(value, str):
        return "s:" + esc(value)
    if isinstance(value, bytes):
        return "y:" + value.hex()
    if isinstance(value, decimal.Decimal):
        return canon(Decimal.schema(-int(value.as_tuple().exponent)), value)
    if isinstance(value, Struct):
        return canon(value.schema, value)
    if isinstance(value, list):
        return "[" + ",".join(canon(None, v) for v in value) + "]"
    return "{" + ",".join(sorted(f"{canon(None, k)}={canon(None, v)}" for k, v in value.items())) + "}"


def f32(value: float) -> float:
    """The nearest 32-bit float (Java's ``(float) value``), clamped to the finite range."""
    return float(struct.unpack(">f", struct.pack(">f", max(-3.4e38, min(3.4e38, value))))[0])


def run_oracle(java_command: str, cases: list[Case], reads: Sequence[tuple[str, int, bytes]]
               ) -> dict[str, Any]:
    """Runs java/JsonConverterOracle.java once: every case under every setting, and ``reads`` (name, setting, bytes).

    The class path is the `connect` jar set (include/jars/connect/pom.xml): connect-json's JsonConverter,
    connect-api and the Jackson version Kafka 4.1.1 ships with.
    """
    commands = ["java", "settings\t" + "\t".join(",".join(f"{k}={v}" for k, v in s.items()) for s in SETTINGS)]
    commands += [case_line(case) for case in cases]
    commands += [f"read\t{index}\t{data.hex()}" for _, index, data in reads]
    result = subprocess.run([java_command, "-cp", f"{ensure_jars('connect')}/*", str(ORACLE)],
                            input="\n".join(commands) + "\n", capture_output=True, text=True, timeout=300,
                            check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    lines = iter(result.stdout.splitlines())
    version = next(lines).split("\t")[1]
    assert next(lines) == f"settings\t{len(SETTINGS)}"
    written = {case.name: [column.split(" ") for column in next(lines).split("\t")] for case in cases}
    return {"version": version, "written": written, "read": {name: next(lines) for name, _, _ in reads}}


def _converter(index: int) -> JsonConverter:
    converter = JsonConverter()
    converter.configure(SETTINGS[index], is_key=False)
    return converter


def ours_write(index: int, case: Case) -> str:
    """Kopycat's bytes as the oracle prints them: hex, "-" for None, "!..." for an error."""
    try:
        data = _converter(index).from_connect_data(TOPIC, case.schema, case.value)
    except DataError as exc:
        return f"!{exc}"
    return "-" if data is None else data.hex()


def ours_read(index: int, data: bytes | None) -> str:
    """Kopycat's reading of ``data`` as canonical text, "!..." for an error."""
    try:
        read = _converter(index).to_connect_data(TOPIC, data)
    except DataError as exc:
        return f"!{exc}"
    return f"{canon_schema(read.schema)}|{canon(read.schema, read.value)}"


def same_reading(java: str, ours: str) -> bool:
    """Equal texts, or both an error (messages differ between the languages)."""
    return java == ours or (java.startswith("!") and ours.startswith("!"))


def write_mismatches(case: Case, java_columns: list[list[str]]) -> list[str]:
    """Where Kopycat's bytes differ from Java's, one line per setting."""
    problems = []
    for index, (java_bytes, _) in enumerate(java_columns):
        ours = ours_write(index, case)
        if not same_reading(java_bytes, ours):
            problems.append(f"{SETTINGS[index]}: java {show(java_bytes)} ours {show(ours)}")
    return problems


def read_mismatches(java_columns: list[list[str]]) -> list[str]:
    """Where Kopycat reads Java's bytes to something else than Java does."""
    problems = []
    for index, (java_bytes, java_read) in enumerate(java_columns):
        if java_bytes.startswith("!"):
            continue
        ours = ours_read(index, None if java_bytes == "-" else bytes.fromhex(java_bytes))
        if not same_reading(java_read, ours):
            problems.append(f"{SETTINGS[index]} {show(java_bytes)}: java {java_read} ours {ours}")
    return problems


def show(text: str) -> str:
    return text if text.startswith("!") or text == "-" else repr(bytes.fromhex(text))


def java_major(version: str) -> int:
    return int(version.split(".")[0])


def _same_number(java_text: str, our_text: str) -> bool:
    """Two renderings of one double, or of one 32-bit float (Float.toString digits)."""
    return float(java_text) == float(our_text) or f32(float(java_text)) == f32(float(our_text))


def number_text_differences(java_hex: str, our_hex: str) -> list[tuple[str, str]] | None:
    """The (java, ours) number texts where the two JSON texts differ, or None when anything else differs.

    For the random sweep on a JDK before 19, whose Double/Float.toString print longer digits.
    """
    if java_hex.startswith("!") or our_hex.startswith("!") or "-" in (java_hex, our_hex):
        return None
    java_parts = _NUMBER.split(bytes.fromhex(java_hex).decode())
    our_parts = _NUMBER.split(bytes.fromhex(our_hex).decode())
    if len(java_parts) != len(our_parts) or java_parts[::2] != our_parts[::2]:
        return None
    pairs = [(j, o) for j, o in zip(java_parts[1::2], our_parts[1::2], strict=True) if j != o]
    return pairs if all(_same_number(j, o) for j, o in pairs) else None

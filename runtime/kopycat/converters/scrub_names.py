"""Connect names made valid Avro or Protobuf names, as Confluent scrubs them (``scrub.invalid.names``).

Avro and Protobuf names match ``[A-Za-z_][A-Za-z0-9_]*``; Connect field and struct names may hold
anything (a database column ``unit price``, a topic ``orders-v2``). With ``scrub.invalid.names=true``
Confluent's ``AvroData.doScrubName`` turns an invalid name into a valid one deterministically: the
name is URL-encoded as Java's ``URLEncoder`` (UTF-8) does it, prefixed with ``x`` when it starts
with a digit, and every character still invalid becomes ``_`` (``unit price`` -> ``unit_price``,
``€`` -> ``_E2_82_AC``, ``1st`` -> ``x1st``). ``ProtobufData.doScrubName`` (``protobuf=True``)
treats a leading ``_`` as invalid too (``_id`` -> ``x_id``). A full name is scrubbed part by part
between its dots (``scrubFullName``, ``splitName``). Valid names are returned unchanged. Without
scrubbing, :func:`invalid_name` finds the name Avro would refuse, for the converter's error.
"""

from __future__ import annotations

from typing import Final

from kopycat.api.data import Schema, Type

__all__ = ["invalid_name", "scrub_full_name", "scrub_name"]

_VALID: Final = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")
_URL_SAFE: Final = _VALID | frozenset(".-*")
"""What Java's ``URLEncoder`` leaves as is (a space becomes ``+``, the rest ``%XX`` per UTF-8 byte)."""


def _url_encoded(name: str) -> str:
    out = []
    for char in name:
        if char in _URL_SAFE:
            out.append(char)
        elif char == " ":
            out.append("+")
        else:
            out.extend(f"%{byte:02X}" for byte in char.encode("utf-8", "surrogatepass"))
    return "".join(out)


def _bad_start(char: str, protobuf: bool) -> bool:
    return "0" <= char <= "9" or (protobuf and char == "_")


def scrub_name(name: str, *, protobuf: bool = False) -> str:
    """``AvroData.doScrubName`` (``ProtobufData.doScrubName`` with ``protobuf``): ``name`` as a valid
    name (unchanged when it is one already)."""
    if not name or (all(char in _VALID for char in name) and not _bad_start(name[0], protobuf)):
        return name
    encoded = _url_encoded(name)
    if _bad_start(encoded[0], protobuf):
        encoded = "x" + encoded
    return "".join(char if char in _VALID else "_" for char in encoded)


def scrub_full_name(name: str, *, protobuf: bool = False) -> str:
    """``AvroData.scrubFullName``: each dot-separated part of a full name scrubbed."""
    return ".".join(scrub_name(part, protobuf=protobuf) for part in name.split("."))


def invalid_name(schema: Schema) -> str | None:
    """The first struct or field name of ``schema`` that is not a valid Avro name (described for an
    error), or None; Confluent's ``AvroData`` without scrubbing fails on such a name too."""
    if schema.type is Type.STRUCT:
        for part in schema.name.split(".") if schema.name else ():
            if scrub_name(part) != part:
                return f"struct name {schema.name!r}"
        for field in schema.fields:
            if scrub_name(field.name) != field.name:
                return f"field name {field.name!r} of {schema.name or 'an unnamed struct'}"
            found = invalid_name(field.schema)
            if found:
                return found
        return None
    if schema.type is Type.ARRAY:
        return invalid_name(schema.value_schema)
    if schema.type is Type.MAP:
        return invalid_name(schema.key_schema) or invalid_name(schema.value_schema)
    return None

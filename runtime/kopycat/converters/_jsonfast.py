"""Struct encoders and decoders compiled per schema: the JsonConverter's hot path.

A struct is most records' value, so its per-record cost decides throughput. Walking the
fields in a Python loop costs a call and a branch per field; instead, for each struct schema we
generate one small function (as ``dataclasses`` does for ``__init__``) that reads every field in
straight-line code. The generated code handles only the common case -- every field set, every
JSON value of the usual type -- and hands anything else to the generic, checking closures in
:mod:`kopycat.converters._jsoncodec`, which produce the same result or the error with the path.
So the generated code never decides an edge case on its own.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kopycat.api.data import INT_RANGES, Schema, Struct, Type
from kopycat.api.errors import DataError

Encoder = Callable[[Any], Any]
Decoder = Callable[[Any, str], Any]

_DIRECT_KINDS = {Type.BOOLEAN: "bool", Type.STRING: "str", Type.FLOAT64: "float"}


def compile_struct_encoder(schema: Schema, field_encoders: list[Encoder | None], slow: Encoder,
                           nulls: list[tuple[bool, Any]] | None = None) -> Encoder:
    """``struct -> dict`` for structs whose unset fields all have a fixed JSON form; others go to ``slow``.

    ``nulls`` says per field whether a null becomes a fixed value (True and the encoded default,
    or None for an optional field) or an error (False): a Debezium envelope always has a null
    ``before`` or ``after``, so nulls with a fixed form are written inline, and only a null in a
    required field without a default goes to ``slow`` for its error.
    """
    nulls = nulls or [(False, None)] * len(field_encoders)
    namespace: dict[str, Any] = {"schema": schema, "slow": slow, "DataError": DataError}
    items, required = [], []
    for field, encode, (fixed, null) in zip(schema.fields, field_encoders, nulls, strict=True):
        value = f"v[{field.index}]"
        if encode is not None:
            namespace[f"e{field.index}"] = encode
            value = f"e{field.index}({value})"
        if fixed:
            namespace[f"n{field.index}"] = null
            value = f"n{field.index} if v[{field.index}] is None else {value}"
        else:
            required.append(f"v[{field.index}]")
        items.append(f"{field.name!r}: {value}")
    check = ("    if None in v:\n" if len(required) == len(items) else
             f"    if None in ({', '.join(required)},):\n" if required else "    if False:\n")
    source = (
        "def encode_struct(struct):\n"
        "    if struct.schema is not schema and struct.schema != schema:\n"
        "        raise DataError('Mismatching schema.')\n"
        "    v = struct._values\n"
        f"{check}"
        "        return slow(struct)\n"
        f"    return {{{', '.join(items)}}}\n"
    )
    exec(compile(source, f"<json encoder for {schema!r}>", "exec"), namespace)  # source built above
    return namespace["encode_struct"]  # type: ignore[no-any-return]


def compile_struct_decoder(schema: Schema, value_decoders: list[Decoder], slow: Decoder) -> Decoder:
    """``(dict, path) -> Struct`` when every field is present and of the usual JSON type."""
    fields = schema.fields
    if not fields:
        return slow
    namespace: dict[str, Any] = {"schema": schema, "slow": slow, "DataError": DataError,
                                 "new": object.__new__, "Struct": Struct}
    reads, checks, values = [], [], []
    for field, decode in zip(fields, value_decoders, strict=True):
        name = f"v{field.index}"
        reads.append(f"            {name} = value[{field.name!r}]")
        check, value = _field_check(field.schema, name)
        if check is None:
            namespace[f"d{field.index}"] = decode
            value = f"d{field.index}({name}, '')"
        else:
            checks.append(check)
        values.append(value)
    condition = " and ".join(checks) or "True"
    source = (
        "def decode_struct(value, path):\n"
        "    if value.__class__ is dict:\n"
        "        try:\n" + "\n".join(reads) + "\n"
        "        except KeyError:\n"
        "            return slow(value, path)\n"
        f"        if {condition}:\n"
        "            try:\n"
        f"                values = [{', '.join(values)}]\n"
        "            except DataError:\n"
        "                return slow(value, path)\n"
        "            struct = new(Struct)\n"
        "            struct.schema = schema\n"
        "            struct._values = values\n"
        "            return struct\n"
        "    return slow(value, path)\n"
    )
    exec(compile(source, f"<json decoder for {schema!r}>", "exec"), namespace)  # source built above
    return namespace["decode_struct"]  # type: ignore[no-any-return]


def _field_check(schema: Schema, name: str) -> tuple[str | None, str]:
    """An inline test that the JSON value is already the Connect value; None: call a decoder.

    A null in an optional field without a default is also the Connect value (None): that is
    the usual shape of sparse records, so it stays on the fast path.
    """
    if schema.name:
        return None, name
    if schema.type in _DIRECT_KINDS:
        check = f"{name}.__class__ is {_DIRECT_KINDS[schema.type]}"
    elif schema.type in INT_RANGES:
        low, high = INT_RANGES[schema.type]
        check = f"{name}.__class__ is int and {low} <= {name} <= {high}"
    else:
        return None, name
    if schema.optional and schema.default is None:
        check = f"({name} is None or {check})"
    return check, name

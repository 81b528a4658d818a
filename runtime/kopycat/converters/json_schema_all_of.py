"""JSON Schema ``allOf`` read as Confluent's ``JsonSchemaData.allOfToConnectSchema`` reads it.

An ``allOf`` of objects (directly, through local ``$ref``s or nested ``allOf``s) is one struct of
all their properties, in the order met, a later definition of a name replacing an earlier one in
place (``collectPropertySchemas``); a property is required when the object that defines it last
requires it. An ``allOf`` without properties stands for one of its members, by Confluent's
precedence (:func:`all_of_choice`). :mod:`kopycat.converters.json_schema_data` builds the schemas.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

__all__ = ["all_of_choice", "all_of_properties"]


def all_of_properties(members: Sequence[Any], target: Callable[[str], Any]) -> tuple[dict[str, Any], set[str]]:
    """The properties of every object among ``members`` and which are required; ``target(ref)`` is the
    schema a local ``$ref`` points at."""
    properties: dict[str, Any] = {}
    required: set[str] = set()
    seen: set[str] = set()

    def collect(node: Any) -> None:
        if not isinstance(node, Mapping):
            return
        if "$ref" in node:
            if node["$ref"] not in seen:
                seen.add(node["$ref"])
                collect(target(node["$ref"]))
            return
        for member in node.get("allOf", ()):
            collect(member)
        for name, sub in (node.get("properties") or {}).items():
            properties[name] = sub
            required.discard(name)
        required.update(name for name in node.get("required", ()) if name in (node.get("properties") or {}))

    for member in members:
        collect(member)
    return properties, required


def all_of_choice(members: list[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """The member an ``allOf`` without properties stands for, by Confluent's precedence: a combined
    one; an enum or const beside a string (the enum) or a number (the number); a string with a
    format (or the number beside it); a reference."""
    def first(test: Any) -> Mapping[str, Any] | None:
        return next((m for m in members if test(m)), None)

    combined = first(lambda m: any(k in m for k in ("oneOf", "anyOf", "allOf")))
    number = first(lambda m: m.get("type") in ("number", "integer"))
    string = first(lambda m: m.get("type") == "string")
    enum = first(lambda m: "enum" in m or "const" in m)
    if combined is not None:
        return combined
    if enum is not None and (string is not None or number is not None):
        return enum if string is not None and "enum" in enum else string or number
    if string is not None and "format" in string:
        return number or string
    return first(lambda m: "$ref" in m)

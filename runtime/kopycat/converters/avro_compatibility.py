"""Can data written with one Avro schema be read with another? Avro's schema resolution rules.

Follows Avro's ``SchemaCompatibility.checkReaderWriterCompatibility``, which Confluent's
``AvroSchema.isBackwardCompatible`` runs for ``latest.compatibility.strict``: before writing with
the subject's latest schema (``use.latest.version``), the latest schema (the reader) must be able
to read data of the converter's own schema (the writer). The rules of the Avro specification's
"Schema Resolution":

- the same primitive type, or a promotion: int -> long, float, double; long -> float, double;
  float -> double; string <-> bytes;
- records of the same name: every reader field is a writer field (by name or alias) whose type
  resolves, or has a default; writer fields the reader lacks are skipped;
- enums of the same name whose reader symbols hold every writer symbol (or a reader default);
  fixed of the same name and size; arrays and maps whose items / values resolve;
- a writer union: every branch resolves; a reader union: some branch reads the writer's type.

Logical types are not compared (Avro's checker ignores them too). Named types are expanded by
fastavro first; a recursive schema is checked to a bounded depth.
"""

from __future__ import annotations

from typing import Any, Final

import fastavro

__all__ = ["reader_incompatibilities"]

_PROMOTIONS: Final = {"int": {"long", "float", "double"}, "long": {"float", "double"}, "float": {"double"},
                      "string": {"bytes"}, "bytes": {"string"}}
_DEPTH: Final = 64


def reader_incompatibilities(reader: Any, writer: Any) -> list[str]:
    """Why data written with Avro schema ``writer`` cannot be read with ``reader`` (parsed JSON);
    empty when it can."""
    return _check(fastavro.parse_schema(reader, expand=True), fastavro.parse_schema(writer, expand=True), "/", 0)


def _type(schema: Any) -> str:
    if isinstance(schema, list):
        return "union"
    if isinstance(schema, dict):
        inner = schema["type"]
        return inner if isinstance(inner, str) else _type(inner)
    return str(schema)


def _unwrapped(schema: Any) -> Any:
    """``{"type": {...}}`` and ``{"type": [...]}`` as the inner schema."""
    while isinstance(schema, dict) and isinstance(schema["type"], (dict, list)):
        schema = schema["type"]
    return schema


def _short(name: str) -> str:
    return name.rpartition(".")[2]


def _check(reader: Any, writer: Any, path: str, depth: int) -> list[str]:
    reader, writer = _unwrapped(reader), _unwrapped(writer)
    if depth > _DEPTH:
        return []
    kind_r, kind_w = _type(reader), _type(writer)
    if kind_w == "union":
        return [problem for branch in writer for problem in _check(reader, branch, path, depth + 1)]
    if kind_r == "union":
        if any(not _check(branch, writer, path, depth + 1) for branch in reader):
            return []
        return [f"{path}: no branch of the reader's union reads the writer's {kind_w}"]
    if kind_r != kind_w:
        if kind_r in _PROMOTIONS.get(kind_w, ()):
            return []
        return [f"{path}: the reader's {kind_r} cannot read the writer's {kind_w}"]
    if kind_r in ("record", "enum", "fixed"):
        names = {_short(reader["name"]), *(_short(alias) for alias in reader.get("aliases", ()))}
        if _short(writer["name"]) not in names:
            return [f"{path}: the reader's {kind_r} {reader['name']} is not the writer's {writer['name']}"]
    if kind_r == "record":
        return _record(reader, writer, path, depth)
    if kind_r == "enum":
        missing = [symbol for symbol in writer["symbols"] if symbol not in reader["symbols"]]
        if missing and "default" not in reader:
            return [f"{path}: the reader's enum {reader['name']} lacks the symbols {missing}"]
    if kind_r == "fixed" and reader["size"] != writer["size"]:
        return [f"{path}: fixed sizes differ: {reader['size']} (reader) and {writer['size']} (writer)"]
    if kind_r == "array":
        return _check(reader["items"], writer["items"], f"{path}items/", depth + 1)
    if kind_r == "map":
        return _check(reader["values"], writer["values"], f"{path}values/", depth + 1)
    return []


def _record(reader: dict[str, Any], writer: dict[str, Any], path: str, depth: int) -> list[str]:
    written = {field["name"]: field for field in writer["fields"]}
    problems = []
    for field in reader["fields"]:
        source = next((written[name] for name in (field["name"], *field.get("aliases", ())) if name in written), None)
        if source is not None:
            problems += _check(field["type"], source["type"], f"{path}{field['name']}/", depth + 1)
        elif "default" not in field:
            problems.append(f"{path}{field['name']}: the reader's field has no default and the writer has no "
                            f"such field")
    return problems

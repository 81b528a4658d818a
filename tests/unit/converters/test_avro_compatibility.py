"""Avro schema resolution (reader reads writer) as Avro's ``SchemaCompatibility`` decides it.

The same cases are checked against a real registry's FORWARD compatibility check (Apicurio, which
runs Avro's Java checker) in tests/integration/test_avro_latest_version.py.
"""

from __future__ import annotations

from typing import Any

import pytest

from kopycat.converters.avro_compatibility import reader_incompatibilities


def record(*fields: dict[str, Any], name: str = "Point") -> dict[str, Any]:
    return {"type": "record", "name": name, "namespace": "com.example", "fields": list(fields)}


X_INT = {"name": "x", "type": "int"}
X_LONG = {"name": "x", "type": "long"}
LABEL = {"name": "label", "type": "string", "default": "n/a"}
LABEL_REQUIRED = {"name": "label", "type": "string"}
COLOR = {"type": "enum", "name": "Color", "symbols": ["RED", "GREEN"]}

CASES: list[tuple[str, Any, Any, str | None]] = [
    # id, reader (the latest), writer (ours), a fragment of the problem or None when readable
    ("same", record(X_INT), record(X_INT), None),
    ("reader-adds-a-defaulted-field", record(X_INT, LABEL), record(X_INT), None),
    ("reader-adds-a-required-field", record(X_INT, LABEL_REQUIRED), record(X_INT), "label: the reader's field has no"),
    ("writer-has-an-extra-field", record(X_INT), record(X_INT, LABEL), None),
    ("int-promotes-to-long", record(X_LONG), record(X_INT), None),
    ("long-does-not-narrow-to-int", record(X_INT), record(X_LONG), "x/: the reader's int cannot read the writer's"),
    ("reader-union-reads-a-branch", record({"name": "x", "type": ["null", "long"]}), record(X_INT), None),
    ("writer-union-null-unreadable", record({"name": "x", "type": "string"}),
     record({"name": "x", "type": ["null", "string"]}), "the reader's string cannot read the writer's null"),
    ("enum-gains-a-symbol", record({"name": "c", "type": {**COLOR, "symbols": ["RED", "GREEN", "BLUE"]}}),
     record({"name": "c", "type": COLOR}), None),
    ("enum-loses-a-symbol", record({"name": "c", "type": {**COLOR, "symbols": ["RED"]}}),
     record({"name": "c", "type": COLOR}), "lacks the symbols ['GREEN']"),
    ("record-renamed", record(X_INT, name="Spot"), record(X_INT), "the reader's record com.example.Spot is not"),
    ("nested-array-of-records", record({"name": "ps", "type": {"type": "array", "items": record(X_INT, LABEL_REQUIRED,
                                                                                                name="In")}}),
     record({"name": "ps", "type": {"type": "array", "items": record(X_INT, name="In")}}), "ps/items/label"),
    ("string-reads-bytes", "string", "bytes", None),
    ("map-values-promote", {"type": "map", "values": "double"}, {"type": "map", "values": "float"}, None),
]


@pytest.mark.parametrize(("reader", "writer", "problem"), [case[1:] for case in CASES], ids=[c[0] for c in CASES])
def test_reader_incompatibilities_follow_avros_schema_resolution(reader: Any, writer: Any, problem: str | None) -> None:
    found = reader_incompatibilities(reader, writer)
    if problem is None:
        assert found == []
    else:
        assert len(found) == 1 and problem in found[0], found

"""Signals read from the WAL: rows inserted into ``signal.data.collection`` (Debezium's source channel).

As Debezium 3.6's ``SourceSignalChannel`` and ``SignalProcessor``: a row (id, type, data) inserted
into the signal table is a signal once its transaction is decoded. The actions Kopycat runs are
``execute-snapshot`` and ``stop-snapshot`` (``ExecuteSnapshot``/``StopSnapshot``: data
``{"data-collections": [...], "type": "incremental", "additional-conditions": [{"data-collection":
..., "filter": ...}]}``), ``pause-snapshot`` and ``resume-snapshot``
(``PauseIncrementalSnapshot``/``ResumeIncrementalSnapshot``, no data) and the incremental snapshot's
own ``snapshot-window-open``/``snapshot-window-close`` watermarks. A signal with bad data is logged and
skipped, as Debezium does: a malformed row in a table anyone may write must not stop the capture.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from kopycat.connectors.postgres_cdc.pgoutput import Relation

__all__ = ["EXECUTE_SNAPSHOT", "PAUSE_SNAPSHOT", "RESUME_SNAPSHOT", "STOP_SNAPSHOT", "WINDOW_CLOSE", "WINDOW_OPEN",
           "Signal", "SignalError", "SignalTable", "additional_conditions", "snapshot_collections", "snapshot_type"]

EXECUTE_SNAPSHOT: Final = "execute-snapshot"
STOP_SNAPSHOT: Final = "stop-snapshot"
PAUSE_SNAPSHOT: Final = "pause-snapshot"
RESUME_SNAPSHOT: Final = "resume-snapshot"
WINDOW_OPEN: Final = "snapshot-window-open"
WINDOW_CLOSE: Final = "snapshot-window-close"


class SignalError(ValueError):
    """A signal row whose data cannot be acted on; the message names the field, the value and the fix."""


@dataclass(frozen=True)
class Signal:
    id: str
    type: str
    data: str | None


class SignalTable:
    """Recognises the signal table's relation in the WAL and reads its inserted rows as signals."""

    def __init__(self, schema: str, table: str) -> None:
        self.schema, self.table = schema, table
        self.oid = -1
        self.columns = (0, 1, 2)

    @property
    def name(self) -> str:
        return f"{self.schema}.{self.table}"

    def relation(self, relation: Relation) -> None:
        """Learn the table's oid and where id, type and data are (by name; else the first three columns)."""
        if (relation.namespace, relation.name) != (self.schema, self.table):
            return
        self.oid = relation.oid
        names = [c.name for c in relation.columns]
        if {"id", "type", "data"} <= set(names):
            self.columns = (names.index("id"), names.index("type"), names.index("data"))

    def signal(self, values: Sequence[object]) -> Signal:
        """An inserted row's (text) values as a signal."""
        id_, type_, data = (values[i] for i in self.columns)
        return Signal(str(id_), str(type_), None if data is None else str(data))


def snapshot_collections(signal: Signal, captured: Sequence[str]) -> list[str]:
    """The ``<schema>.<table>`` names an execute/stop-snapshot signal selects, in the signal's order.

    Each ``data-collections`` entry is a table name or a regular expression over the captured
    tables (Debezium expands both). ``stop-snapshot`` without data-collections selects all.
    """
    data = _data(signal)
    snapshot_type(signal)
    names = data.get("data-collections")
    if names is None and signal.type == STOP_SNAPSHOT:
        return list(captured)
    if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
        raise SignalError(f"signal {signal.id}: data-collections is {names!r}; give a non-empty list of "
                          f"<schema>.<table> names, e.g. {{\"data-collections\": [\"public.items\"]}}")
    selected: list[str] = []
    for name in names:
        try:
            pattern = re.compile(name.strip())
        except re.error as exc:
            raise SignalError(f"signal {signal.id}: data-collections entry {name!r} is not a table name or a "
                              f"regular expression ({exc})") from None
        selected += [t for t in captured if (t == name.strip() or pattern.fullmatch(t)) and t not in selected]
    if not selected and signal.type == EXECUTE_SNAPSHOT:
        raise SignalError(f"signal {signal.id}: data-collections {names!r} match no captured table "
                          f"(captured: {', '.join(captured) or 'none'}); name tables table.include.list selects")
    return selected


def snapshot_type(signal: Signal) -> str:
    """``incremental`` (the default) or ``blocking``: the snapshot an execute-snapshot signal asks for."""
    kind = _data(signal).get("type", "incremental")
    if not isinstance(kind, str) or kind.lower() not in ("incremental", "blocking"):
        raise SignalError(f"signal {signal.id}: type {kind!r} is not supported; give \"type\": \"incremental\" "
                          f"or \"type\": \"blocking\"")
    return kind.lower()


def additional_conditions(signal: Signal, names: Sequence[str]) -> dict[str, str]:
    """The filter of each selected table that an ``additional-conditions`` entry matches (the first one).

    As Debezium's ``ExecuteSnapshot``: each entry's ``data-collection`` is a regular expression
    matched case-insensitively against the whole ``<schema>.<table>`` name; a table no entry
    matches is read whole (no key in the result). ``surrogate-key`` is refused: chunks follow the
    primary key only.
    """
    data = _data(signal)
    if data.get("surrogate-key"):
        raise SignalError(f"signal {signal.id}: surrogate-key {data['surrogate-key']!r} is not supported; Kopycat "
                          f"reads chunks in primary-key order: remove surrogate-key from the signal's data")
    entries = data.get("additional-conditions") or []
    example = '[{"data-collection": "public.items", "filter": "region = \'eu\'"}]'
    if not isinstance(entries, list):
        raise SignalError(f"signal {signal.id}: additional-conditions is {entries!r}; give a list such as {example}")
    found: dict[str, str] = {}
    for entry in entries:
        collection = entry.get("data-collection") if isinstance(entry, dict) else None
        where = entry.get("filter") if isinstance(entry, dict) else None
        if not isinstance(collection, str) or not isinstance(where, str) or not where.strip():
            raise SignalError(f"signal {signal.id}: additional-conditions entry {entry!r} needs a data-collection "
                              f"and a non-empty filter, e.g. {example}")
        try:
            pattern = re.compile(collection, re.IGNORECASE)
        except re.error as exc:
            raise SignalError(f"signal {signal.id}: additional-conditions data-collection {collection!r} is not a "
                              f"regular expression ({exc})") from None
        for name in names:
            if name not in found and pattern.fullmatch(name):
                found[name] = where
    return found


def _data(signal: Signal) -> dict[str, Any]:
    if not signal.data:
        return {}
    try:
        data = json.loads(signal.data)
    except ValueError as exc:
        raise SignalError(f"signal {signal.id}: data {signal.data!r} is not JSON ({exc}); give e.g. "
                          f"{{\"data-collections\": [\"public.items\"], \"type\": \"incremental\"}}") from None
    if not isinstance(data, dict):
        raise SignalError(f"signal {signal.id}: data {signal.data!r} is not a JSON object")
    return data

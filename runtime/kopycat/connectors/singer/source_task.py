"""SingerSourceTask: runs a Singer tap and returns its RECORDs, with its STATE as the source offset.

One source partition per tap, ``{"tap": "<executable's name>"}``, whose offset holds the tap's
STATE value as compact JSON text, ``{"state": "{\"bookmarks\": ...}"}``: Kafka Connect's offsets
may hold only primitive values (its ``OffsetUtils.validateFormat``), and a Singer state nests.
start() reads it back from the offset store and passes it with ``--state``, so each run continues
where the last committed one stopped. Which STATE a record carries is
:class:`~kopycat.connectors.singer.state_gate.StateGate`'s rule. SCHEMA messages become each
stream's Connect schemas (:mod:`~kopycat.connectors.singer.json_schema`); a stream's
``key_properties`` become the record key.

Consecutive records of one stream and schema are returned as one :class:`SourceRecordBatch`
(the columnar path) when the run takes columns; otherwise, and for single records, as records.
Whether the converters take a stream schema's columns is decided once per schema, by its first
batch: when the engine asks that batch for its records (a converter without columns, a value its
column path leaves to the record path), the schema's later records skip the Arrow batch and go
straight to records, which costs no Arrow work that would be thrown away. JsonConverter writes
nested fields (the ``customer`` object, the ``tags`` array) as columns too.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kopycat.api import (
    ConnectError,
    DataError,
    RunComplete,
    SourceRecord,
    SourceRecordBatch,
    SourceTask,
    Struct,
    is_bounded_run,
    to_arrow_batch,
    to_arrow_type,
)
from kopycat.api.task import SourceItem
from kopycat.connectors.singer.json_schema import StreamSchema, stream_schema
from kopycat.connectors.singer.source_config import (
    CATALOG_CONFIG,
    CONFIG,
    DECIMAL_SCALE_CONFIG,
    EXECUTABLE_CONFIG,
    MAX_RECORDS_CONFIG,
    RESTART_INTERVAL_MS_CONFIG,
    SELECT_CONFIG,
    TOPIC_PREFIX_CONFIG,
    selected_catalog,
    tap_settings,
    topic_for,
)
from kopycat.connectors.singer.state_gate import StateGate
from kopycat.connectors.singer.tap_process import TapProcess

__all__ = ["STATE_FIELD", "SingerSourceTask", "state_of", "tap_partition"]

log = logging.getLogger(__name__)

Entry = tuple[StreamSchema, Struct]
Row = tuple[Struct, dict[str, Any] | None]
"""A record's value and its source offset."""
_POLL_WAIT_S = 1.0
STATE_FIELD = "state"


def state_of(offset: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The Singer state a stored source offset holds, or None for none."""
    if offset is None or offset.get(STATE_FIELD) is None:
        return None
    state = json.loads(str(offset[STATE_FIELD]))
    if not isinstance(state, dict):
        raise DataError(f"The stored Singer state is not a JSON object: {str(offset[STATE_FIELD])[:200]}")
    return state


def tap_partition(executable: str) -> dict[str, str]:
    """The one source partition of a tap: its executable's file name."""
    return {"tap": Path(executable).name}


class SingerSourceTask(SourceTask):
    """Runs the tap once per run (bounded) or again every restart interval (continuous)."""

    def __init__(self) -> None:
        self.stopping = threading.Event()
        self.tap: TapProcess | None = None
        self.workdir: Path | None = None

    def start(self, props: Mapping[str, str]) -> None:
        config = CONFIG.parse(props)
        self.executable = str(config[EXECUTABLE_CONFIG])
        self.prefix = str(config[TOPIC_PREFIX_CONFIG])
        self.scale = int(config[DECIMAL_SCALE_CONFIG])
        self.limit = int(config[MAX_RECORDS_CONFIG])
        self.restart_s = int(config[RESTART_INTERVAL_MS_CONFIG]) / 1000
        self.bounded = is_bounded_run(props)
        self.partition = tap_partition(self.executable)
        self.workdir = Path(tempfile.mkdtemp(prefix="kopycat-singer-"))
        self.config_file = self._private_file("config.json", tap_settings(self.executable, props))
        catalog = selected_catalog(self.executable, self.config_file, str(config[CATALOG_CONFIG]),
                                   list(config[SELECT_CONFIG]))
        self.catalog_file = None if catalog is None else self._private_file("catalog.json", catalog)
        self.schemas: dict[str, StreamSchema] = {}
        self.record_only: set[StreamSchema] = set()
        self.gate: StateGate[Entry] = StateGate(state_of(self.context.offset_reader.offset(self.partition)),
                                               self.limit)
        self.finished = False
        self.restart_at = 0.0
        self._launch()

    def _private_file(self, name: str, content: Any) -> Path:
        """A file only this user may read: the tap's config may hold secrets."""
        assert self.workdir is not None
        path = self.workdir / name
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "w") as out:
            json.dump(content, out)
        return path

    def _launch(self) -> None:
        argv = [self.executable, "--config", str(self.config_file)]
        if self.catalog_file is not None:
            argv += ["--catalog", str(self.catalog_file)]
        if self.gate.latest is not None:
            argv += ["--state", str(self._private_file("state.json", self.gate.latest))]
        self.tap = TapProcess(argv)

    def poll(self) -> list[SourceItem] | None:
        """The records a STATE released, waiting while the tap runs and has released none.

        A silent tap is working (a query, a slow page), not caught up: returning nothing then
        would end a bounded run early (its idle rule), so poll() waits, as the JDBC source waits
        on its query. stop() ends the tap, so a waiting poll() returns promptly. Between tap runs
        of a continuous run poll() returns None every second.
        """
        if self.finished:
            raise RunComplete
        while not self.stopping.is_set():
            if self.tap is None:
                if self.stopping.wait(min(_POLL_WAIT_S, max(0.0, self.restart_at - time.monotonic()))):
                    return None
                if time.monotonic() < self.restart_at:
                    return None
                self._launch()
            items = self._read_tap()
            if items or self.finished:
                return items
        return None

    def _read_tap(self) -> list[SourceItem]:
        """Handle what the tap wrote within a second; at its end, check its exit and release all."""
        tap = self.tap
        assert tap is not None
        for message in tap.messages(self.limit, _POLL_WAIT_S):
            self._handle(message)
        if tap.ended and self.stopping.is_set():  # stop() ended it: its exit code says nothing
            self.tap = None
            return []
        if tap.ended:
            tap.check_exit()
            self.gate.end()
            self.tap = None
            self.restart_at = time.monotonic() + self.restart_s
            self.finished = self.bounded
        items = self._items(self.gate.take())
        if not items and self.finished:
            raise RunComplete
        return items

    def _handle(self, message: Mapping[str, Any]) -> None:
        kind = message["type"]
        if kind == "RECORD":
            stream = message.get("stream")
            schema = self.schemas.get(stream)  # type: ignore[arg-type]
            if schema is None:
                raise DataError(f"Singer tap {self.executable!r} sent a RECORD of stream {stream!r} before its "
                                f"SCHEMA message")
            self.gate.record((schema, schema.value(message["record"])))
        elif kind == "STATE":
            value = message.get("value")
            if not isinstance(value, dict):
                raise DataError(f"Singer tap {self.executable!r} sent a STATE whose value is not a JSON object: "
                                f"{json.dumps(value)[:200]}")
            self.gate.state(value)
        elif kind == "SCHEMA":
            stream = str(message["stream"])
            self.schemas[stream] = stream_schema(stream, message["schema"], message.get("key_properties") or [],
                                                 decimal_scale=self.scale)
        elif kind == "BATCH":
            raise ConnectError(f"Singer tap {self.executable!r} sent a BATCH message (records in files); "
                               f"turn its batch_config off so it sends RECORD messages")
        else:
            log.debug("Singer tap %s: ignoring a %s message", self.executable, kind)

    def _items(self, ready: list[tuple[Entry, dict[str, Any] | None]]) -> list[SourceItem]:
        """Records, or batches of consecutive records of one stream schema when the run takes columns."""
        items: list[SourceItem] = []
        offsets: dict[int, dict[str, Any] | None] = {}
        for _, state in ready:
            if id(state) not in offsets:
                offsets[id(state)] = None if state is None else {
                    STATE_FIELD: json.dumps(state, separators=(",", ":"))}
        start = 0
        while start < len(ready):
            schema = ready[start][0][0]
            end = start + 1
            while end < len(ready) and ready[end][0][0] is schema:
                end += 1
            rows = [(value, offsets[id(state)]) for (_, value), state in ready[start:end]]
            batch = self._batch(schema, rows) if end - start > 1 and self._takes_columns(schema) else None
            if batch is not None:
                items.append(batch)
            else:
                items.extend(self._records(schema, rows))
            start = end
        return items

    def _records(self, schema: StreamSchema, rows: list[Row]) -> list[SourceRecord]:
        topic, new = topic_for(self.prefix, schema.stream), SourceRecord.of
        return [new(self.partition, offset, topic, None, schema.key_schema, schema.key(value), schema.schema, value,
                    None) for value, offset in rows]

    def _takes_columns(self, schema: StreamSchema) -> bool:
        """Whether a batch of this stream schema may go as columns: the run takes columns and no
        batch of the schema was refused."""
        return self.context.takes_columns and schema not in self.record_only

    def _refused(self, schema: StreamSchema, rows: list[Row]) -> list[SourceRecord]:
        """A batch's records, asked for by the engine: its converters did not take the columns, so
        this schema's next records are not built into columns."""
        if schema not in self.record_only:
            log.debug("Singer stream %s: the converters do not take its columns; sending records", schema.stream)
            self.record_only.add(schema)
        return self._records(schema, rows)

    def _batch(self, schema: StreamSchema, rows: list[Row]) -> SourceRecordBatch | None:
        """The rows as columns, the key columns taken from the value's; None when Arrow cannot hold
        them (they then go as records). The records are built only if the engine asks for them."""
        try:
            values = to_arrow_batch(schema.schema, [value for value, _ in rows]).to_struct_array()
        except DataError as exc:
            log.debug("Singer stream %s: sending %d records one by one: %s", schema.stream, len(rows), exc)
            return None
        keys = None
        if schema.key_schema is not None:
            import pyarrow as pa  # pyarrow only where columns are used

            keys = pa.StructArray.from_arrays([values.field(name) for name in schema.key_properties],
                                              fields=list(to_arrow_type(schema.key_schema)))
        return SourceRecordBatch(self.partition, rows[-1][1], topic_for(self.prefix, schema.stream), schema.schema,
                                 values, schema.key_schema, keys, record_factory=lambda: self._refused(schema, rows))

    def stop(self) -> None:
        """From any thread: end the tap and remove its files (they may hold secrets)."""
        self.stopping.set()
        tap = self.tap
        if tap is not None:
            tap.terminate()
        if self.workdir is not None:
            shutil.rmtree(self.workdir, ignore_errors=True)

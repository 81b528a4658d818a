"""DltSourceTask: iterates a dlt source's resources and returns their rows as columnar batches.

dlt keeps a source's state in its pipeline state, under ``sources.<source>``: each resource's
(``dlt.sources.incremental``'s ``last_value`` and the hashes of the rows at it, anything a
resource writes to ``dlt.current.resource_state()``) under ``resources.<resource>``, the
source's own (``dlt.current.source_state()``) beside them. This task runs no pipeline: it
iterates the source (``DltSource.__iter__``, as ``list(source)`` does) with a state dict of its
own injected (dlt's ``StateInjectableContext``, what ``Pipeline.extract`` injects), filled from
the source offsets and read back into them as dlt's typed JSON text (Kafka Connect's offsets
hold only primitive values, and dlt's typed JSON keeps datetimes and decimals exact):

- one source partition per resource, ``{"dlt_source": <source name>, "resource": <resource>}``,
  whose offset holds the resource's state (``{"state": "{\"incremental\": ...}"}``) and, under
  ``"pipe"``, the states of the steps it is piped from: ``filesystem(...) | read_csv()`` keeps
  its incremental on the ``filesystem`` step. Each resource runs with only its own states, so
  two pipes from steps of one name (dlt's ``readers``) do not share a cursor;
- one for the source, ``{"dlt_source": <source name>}``, whose offset holds the source-level
  state (``{"state": ...}``). Every task of the connector reads it and writes it as each of its
  resources ends, so a source whose resources share source-level state runs with ``tasks.max=1``.

A resource's rows may come in any order (``sql_database`` does not sort by the cursor), so its
state is only safe to store once the resource is exhausted: every batch carries the state the
run started from (resuming there re-sends them: at-least-once). A resource whose incremental
sorts them (``row_order``, ``dlt.incremental.row.order``) is safe to resume after each Arrow
table it yields (dlt's state then covers exactly the rows so far): those batches carry that
state, so a failed run repeats only what was not committed. The last chunks carry the
state dlt holds at the end, their first row the source-level state under the source's
partition (an offset needs a record: a resource ending with fewer than two rows stores none).
They leave in one poll(), whose offsets the engine commits together. So a chunk is held until
the next one arrives (the last two when the last has one row and there is source-level state);
of an unsorted resource's Arrow table (up to ``chunk_size`` rows, passed on whole) only its last
row is held (two with source-level state): its other rows carry the state the run started from
whichever chunk comes last, so they leave at once, produced while dlt reads the next table.

Resources run one after another, each to its end, taking turns in dlt with the other tasks of
the process (:data:`~kopycat.connectors.dlt.source_loader.DLT_LOCK`); rows become :class:`SourceRecordBatch` items
on ``<topic.prefix><resource>`` (:mod:`~kopycat.connectors.dlt.arrow_chunks`), which the engine
encodes a column at a time or opens into records.

A resource is read on a thread of its own (:class:`~kopycat.read_ahead.ReadAhead`),
up to :data:`READ_AHEAD` tables ahead of poll(): dlt reads the next table while the runner
produces the last. Everything above (the holding back, each chunk's offset, the batch) is
worked out on that thread as each table arrives, so a batch's offset is the state after its own
rows, never one read ahead; poll() only hands the batches on.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import pyarrow as pa
from dlt.common import json as dlt_json
from dlt.common.configuration.container import Container
from dlt.common.pipeline import StateInjectableContext
from dlt.extract import DltSource, Incremental

from kopycat.api import ConnectError, DataError, RunComplete, SourceRecordBatch, SourceTask, is_bounded_run
from kopycat.api.task import SourceItem
from kopycat.connectors.dlt.arrow_chunks import RowChunker, connect_columns
from kopycat.connectors.dlt.source_config import (
    BATCH_ROWS_CONFIG,
    CONFIG,
    RESTART_INTERVAL_MS_CONFIG,
    TASK_RESOURCES_CONFIG,
    TASK_SOURCE_CONFIG,
    TOPIC_PREFIX_CONFIG,
    topic_for,
)
from kopycat.connectors.dlt.source_loader import DLT_LOCK, load_source
from kopycat.read_ahead import ReadAhead

__all__ = ["PIPE_FIELD", "READ_AHEAD", "STATE_FIELD", "DltSourceTask", "primary_key", "resource_partition",
           "source_partition", "state_of"]

log = logging.getLogger(__name__)

STATE_FIELD = "state"
PIPE_FIELD = "pipe"
_WAIT_S = 1.0
READ_AHEAD: Final = 1
"""Tables' batches waiting for poll(), besides the one the reader holds while it waits for room:
so the reader is at most two tables ahead."""


def resource_partition(source: str, resource: str) -> dict[str, str]:
    """The source partition of one resource of a dlt source."""
    return {"dlt_source": source, "resource": resource}


def source_partition(source: str) -> dict[str, str]:
    """The source partition of a dlt source's own (source-level) state."""
    return {"dlt_source": source}


def state_of(offset: Mapping[str, Any] | None, key: str = STATE_FIELD) -> dict[str, Any] | None:
    """The dlt state a stored source offset holds under ``key``, or None for none."""
    if offset is None or offset.get(key) is None:
        return None
    state = dlt_json.typed_loads(str(offset[key]))
    if not isinstance(state, dict):
        raise DataError(f"The stored dlt state under {key!r} is not a JSON object: {str(offset[key])[:200]}")
    return state


def primary_key(source: DltSource, resource: str) -> list[str]:
    """The resource's primary key hint (columns marked ``primary_key``); empty when it has none."""
    try:
        columns = source.resources[resource].compute_table_schema().get("columns", {})
    except Exception:  # noqa: BLE001 - a table name computed per row has no static hints
        log.debug("dlt resource %s: no static table schema, so no key", resource, exc_info=True)
        return []
    return [name for name, column in columns.items() if column.get("primary_key")]


def _resource_offset(name: str, states: Mapping[str, Any]) -> dict[str, Any] | None:
    """A resource's offset: its own state, and under ``pipe`` its steps' (the other states of its run)."""
    offset: dict[str, Any] = {}
    if name in states:
        offset[STATE_FIELD] = dlt_json.typed_dumps(states[name])
    pipe = {step: state for step, state in states.items() if step != name}
    if pipe:
        offset[PIPE_FIELD] = dlt_json.typed_dumps(pipe)
    return offset or None


def _resource_states(name: str, offset: Mapping[str, Any] | None) -> dict[str, Any]:
    """The ``resources`` states a resource's run starts from, read back from its offset."""
    states: dict[str, Any] = dict(state_of(offset, PIPE_FIELD) or {})
    own = state_of(offset)
    if own is not None:
        states[name] = own
    return states


def _ordered(source: DltSource, resource: str) -> bool:
    """True when the resource's incremental sorts its rows by the cursor (a ``row_order``).

    dlt's ``DltResource.incremental`` is the pipe's step: an ``IncrementalResourceWrapper`` holding the
    incremental where the resource function takes one (``sql_database``'s tables), the ``Incremental``
    itself where ``apply_hints`` added it to a resource that takes none (a hand-written one)."""
    step = source.resources[resource].incremental
    incremental = step if step is None or isinstance(step, Incremental) else step.incremental
    return incremental is not None and bool(incremental.row_order)


def _release(held: list[_Chunk], keep_rows: int, split: bool) -> list[_Chunk]:
    """Take the held chunks off the front while the ones left still have ``keep_rows`` rows; with
    ``split``, also the front rows of the first one left, so that exactly ``keep_rows`` rows stay."""
    ready: list[_Chunk] = []
    while len(held) > 1 and sum(chunk.table.num_rows for chunk in held[1:]) >= keep_rows:
        ready.append(held.pop(0))
    spare = sum(chunk.table.num_rows for chunk in held) - keep_rows
    if split and spare > 0:  # fewer than keep_rows rows follow held[0]: the spare rows are all its own
        first = held[0]
        ready.append(_Chunk(first.table.slice(0, spare), first.offset))
        held[0] = _Chunk(first.table.slice(spare), first.offset)
    return ready


@dataclass(frozen=True, slots=True)
class _Chunk:
    """A chunk of a resource's rows and the offset to resume after it (the safe one so far)."""

    table: pa.Table
    offset: dict[str, Any] | None


@dataclass
class _ResourceRun:
    """One resource being iterated (on its reader thread): its chunks, its key, the last offset safe to
    resume from (the one it started from, or for a sorted resource the one after its last whole table),
    the chunks held back."""

    name: str
    chunker: RowChunker
    tables: Iterator[pa.Table]
    key: list[str]
    partition: dict[str, str]
    safe: dict[str, Any] | None
    ordered: bool
    held: list[_Chunk] = field(default_factory=list)


class DltSourceTask(SourceTask):
    """Runs the task's resources once per run (bounded) or again every restart interval (continuous).

    poll() waits for the resource's reader thread, so it blocks while a resource does (a query,
    an HTTP page); stop() may come from any thread: it makes poll() return at once and waits for
    the reader to end (after its current read). A continuous run waits between passes a second
    at a time, returning None.

    Thread-safety: dlt's state (``state``, ``runs``, ``level``) is touched by one resource's reader
    while it reads and by poll()'s thread only between resources, once that reader has ended.
    """

    def __init__(self) -> None:
        self.stopping = threading.Event()
        self.reading: ReadAhead[list[SourceRecordBatch]] | None = None

    def start(self, props: Mapping[str, str]) -> None:
        config = CONFIG.parse(props)
        self.config, self.props = config, dict(props)
        self.prefix = str(config[TOPIC_PREFIX_CONFIG])
        self.limit = int(config[BATCH_ROWS_CONFIG])
        self.restart_s = int(config[RESTART_INTERVAL_MS_CONFIG]) / 1000
        self.bounded = is_bounded_run(props)
        self.state: dict[str, Any] = {"sources": {}}
        self.source = self._load(self._source_name(config))
        self.level: dict[str, Any] = self.state["sources"].setdefault(self.source.name, {})
        self.resources = list(config[TASK_RESOURCES_CONFIG]) or list(self.source.resources.selected)
        reader = self.context.offset_reader
        self.runs = {name: _resource_states(name, reader.offset(resource_partition(self.source.name, name)))
                     for name in self.resources}
        self.queue = list(self.resources)
        self.finished = False
        self.restart_at = 0.0

    def _source_name(self, config: Mapping[str, Any]) -> str:
        """The source's name, to read its source-level state before it runs: the connector's plan says
        it; without it (a task started by hand), a load with a throwaway state finds it."""
        return str(config[TASK_SOURCE_CONFIG]) or load_source(config, self.props).name

    def _load(self, name: str) -> DltSource:
        """Load the source with its source-level state injected: its offset's on the first load."""
        sources = self.state["sources"]
        if name not in sources:
            sources[name] = state_of(self.context.offset_reader.offset(source_partition(name))) or {}
        sources[name].pop("resources", None)
        return load_source(self.config, self.props, self.state)

    def poll(self) -> list[SourceItem] | None:
        """Batches of about ``dlt.batch.max.rows`` rows; RunComplete once a bounded run's resources are done."""
        if self.finished:
            raise RunComplete
        if self.reading is None and not self.queue and not self._next_pass():
            return None
        items: list[SourceItem] = []
        rows = 0
        while rows < self.limit and not self.stopping.is_set() and (self.reading is not None or self.queue):
            if self.reading is None:
                self.reading = self._open(self.queue.pop(0))
            batches = self.reading.take()
            if batches is None and not self.stopping.is_set():  # the resource ended
                self.reading.close()
                self.reading = None
            for batch in batches or []:
                items.append(batch)
                rows += len(batch)
        if self.stopping.is_set():
            self._stop_reading()
        elif self.reading is None and not self.queue:
            self.finished = self.bounded
            self.restart_at = time.monotonic() + self.restart_s
            if not items and self.finished:
                raise RunComplete
        return items if items or self.bounded else None

    def _next_pass(self) -> bool:
        """In a continuous run, load the source again once the restart interval passed (waiting up to
        a second for it); False while it has not. A bounded run has one pass: it is complete."""
        if self.bounded:
            self.finished = True
            raise RunComplete
        if self.stopping.wait(min(_WAIT_S, max(0.0, self.restart_at - time.monotonic()))):
            return False
        if time.monotonic() < self.restart_at:
            return False
        self.source = self._load(self.source.name)
        self.queue = list(self.resources)
        return True

    def _open(self, name: str) -> ReadAhead[list[SourceRecordBatch]]:
        """Start reading one resource with its own states (its offset's, or the last pass's) in dlt's."""
        states = self.runs[name]
        self.level["resources"] = states
        safe = _resource_offset(name, states)
        with DLT_LOCK, Container().injectable_context(StateInjectableContext(state=self.state)):
            rows = iter(self.source.with_resources(name))
            key = primary_key(self.source, name)
            ordered = _ordered(self.source, name)
        log.info("dlt source %s: copying resource %s from state %s", self.source.name, name, safe)
        chunker = RowChunker(name, self.limit)
        run = _ResourceRun(name, chunker, chunker.tables(rows), key, resource_partition(self.source.name, name),
                           safe, ordered)
        return ReadAhead(self._read(run), READ_AHEAD, f"kopycat-dlt-{self.source.name}-{name}", self.stopping)

    def _read(self, run: _ResourceRun) -> Iterator[list[SourceRecordBatch]]:
        """On the resource's reader thread: the batches each table releases, then the last ones."""
        while (table := self._next_table(run)) is not None:
            released = self._step(run, table)
            if released:
                yield released
        last = self._last(run)
        if last:
            yield last

    def _next_table(self, run: _ResourceRun) -> pa.Table | None:
        """The resource's next table; None once it is exhausted. Its failure as a ConnectError naming it."""
        try:
            with DLT_LOCK:
                return next(run.tables, None)
        except DataError:
            raise
        except Exception as exc:
            raise ConnectError(f"dlt resource {run.name!r} of source {self.source.name!r} failed: "
                               f"{type(exc).__name__}: {exc}") from exc

    def _step(self, run: _ResourceRun, table: pa.Table) -> list[SourceRecordBatch]:
        """Hold the resource's next table with its offset; return the held ones it releases."""
        if run.ordered and run.chunker.whole:  # sorted, and dlt's state covers exactly the rows so far
            run.safe = _resource_offset(run.name, self.runs[run.name])
        run.held.append(_Chunk(table, run.safe))
        split = run.chunker.whole and not run.ordered  # its rows carry the state the run started from
        released = _release(run.held, 2 if self._source_level() else 1, split)
        return [self._batch(run, chunk.table, run.partition, chunk.offset) for chunk in released]

    def _last(self, run: _ResourceRun) -> list[SourceRecordBatch]:
        """The held chunks with the resource's final state; their first row with the source-level state
        under the source's partition, when there is one and a row to spare."""
        chunks, run.held = [chunk.table for chunk in run.held], []
        final = _resource_offset(run.name, self.runs[run.name])
        level = self._source_level()
        batches: list[SourceRecordBatch] = []
        if level and sum(chunk.num_rows for chunk in chunks) >= 2:
            first = chunks.pop(0)
            batches.append(self._batch(run, first.slice(0, 1), source_partition(self.source.name),
                                       {STATE_FIELD: dlt_json.typed_dumps(level)}))
            if first.num_rows > 1:
                chunks.insert(0, first.slice(1))
        return batches + [self._batch(run, chunk, run.partition, final) for chunk in chunks]

    def _source_level(self) -> dict[str, Any]:
        """The source-level state as dlt holds it now (without the resources' states)."""
        return {key: value for key, value in self.level.items() if key != "resources"}

    def _batch(self, run: _ResourceRun, table: pa.Table, partition: dict[str, str],
               offset: dict[str, Any] | None) -> SourceRecordBatch:
        columns = connect_columns(table, run.key, run.name)
        return SourceRecordBatch(partition, offset, topic_for(self.prefix, run.name), columns.value_schema,
                                 columns.values, columns.key_schema, columns.keys)

    def stop(self) -> None:
        """From any thread: poll() returns at once, and the resource's reader ends (waited for here); its
        generator is dropped with the task."""
        self.stopping.set()
        self._stop_reading()

    def _stop_reading(self) -> None:
        """Wait for the reader of the resource being read, if any, to end (``stopping`` is set)."""
        reading = self.reading
        if reading is not None:
            reading.close()

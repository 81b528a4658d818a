"""DltSourceTask: iterates a dlt source's resources and returns their rows as columnar batches.

dlt keeps a resource's incremental state (``dlt.sources.incremental``'s ``last_value`` and the
hashes of the rows at it, anything a resource writes to ``dlt.current.resource_state()``) in its
pipeline state, under ``sources.<source>.resources.<resource>``. This task runs no pipeline: it
iterates the source (``DltSource.__iter__``, as ``list(source)`` does) with a state dict of its
own injected (dlt's ``StateInjectableContext``, what ``Pipeline.extract`` injects), filled from
the source offsets and read back into them. One source partition per resource,
``{"dlt_source": <source name>, "resource": <resource>}``, whose offset holds the resource's
state as dlt's typed JSON text (``{"state": "{\"incremental\": ...}"}``): Kafka Connect's
offsets hold only primitive values, and dlt's typed JSON keeps datetimes and decimals exact.

A resource's rows may come in any order (``sql_database`` does not sort by the cursor), so its
state is only safe to store once the resource is exhausted: every batch carries the state the
run started from (resuming there re-sends them: at-least-once), and the last batch carries the
state dlt holds at the end. A chunk is therefore held until the next one arrives.

Resources run one after another, each to its end, taking turns in dlt with the other tasks of
the process (:data:`~kopycat.connectors.dlt.source_loader.DLT_LOCK`); rows become :class:`SourceRecordBatch` items
on ``<topic.prefix><resource>`` (:mod:`~kopycat.connectors.dlt.arrow_chunks`), which the engine
encodes a column at a time or opens into records.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from dlt.common import json as dlt_json
from dlt.common.configuration.container import Container
from dlt.common.pipeline import StateInjectableContext
from dlt.extract import DltSource

from kopycat.api import ConnectError, DataError, RunComplete, SourceRecordBatch, SourceTask, is_bounded_run
from kopycat.api.task import SourceItem
from kopycat.connectors.dlt.arrow_chunks import RowChunker, connect_columns
from kopycat.connectors.dlt.source_config import (
    BATCH_ROWS_CONFIG,
    CONFIG,
    RESTART_INTERVAL_MS_CONFIG,
    TASK_RESOURCES_CONFIG,
    TOPIC_PREFIX_CONFIG,
    topic_for,
)
from kopycat.connectors.dlt.source_loader import DLT_LOCK, load_source

__all__ = ["STATE_FIELD", "DltSourceTask", "primary_key", "resource_partition", "state_of"]

log = logging.getLogger(__name__)

STATE_FIELD = "state"
_WAIT_S = 1.0


def resource_partition(source: str, resource: str) -> dict[str, str]:
    """The source partition of one resource of a dlt source."""
    return {"dlt_source": source, "resource": resource}


def state_of(offset: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The dlt resource state a stored source offset holds, or None for none."""
    if offset is None or offset.get(STATE_FIELD) is None:
        return None
    state = dlt_json.typed_loads(str(offset[STATE_FIELD]))
    if not isinstance(state, dict):
        raise DataError(f"The stored dlt resource state is not a JSON object: {str(offset[STATE_FIELD])[:200]}")
    return state


def primary_key(source: DltSource, resource: str) -> list[str]:
    """The resource's primary key hint (columns marked ``primary_key``); empty when it has none."""
    try:
        columns = source.resources[resource].compute_table_schema().get("columns", {})
    except Exception:  # noqa: BLE001 - a table name computed per row has no static hints
        log.debug("dlt resource %s: no static table schema, so no key", resource, exc_info=True)
        return []
    return [name for name, column in columns.items() if column.get("primary_key")]


@dataclass
class _ResourceRun:
    """One resource being iterated: its chunks, its key, the offset it started from, the chunk held back."""

    name: str
    tables: Iterator[pa.Table]
    key: list[str]
    partition: dict[str, str]
    safe: dict[str, Any] | None
    held: pa.Table | None = None


class DltSourceTask(SourceTask):
    """Runs the task's resources once per run (bounded) or again every restart interval (continuous).

    poll() runs the resources' generators in the task's thread, so it blocks while a resource
    does (a query, an HTTP page); stop() may come from any thread and makes the next poll()
    return at once. A continuous run waits between passes a second at a time, returning None.
    """

    def __init__(self) -> None:
        self.stopping = threading.Event()
        self.current: _ResourceRun | None = None

    def start(self, props: Mapping[str, str]) -> None:
        config = CONFIG.parse(props)
        self.config, self.props = config, dict(props)
        self.prefix = str(config[TOPIC_PREFIX_CONFIG])
        self.limit = int(config[BATCH_ROWS_CONFIG])
        self.restart_s = int(config[RESTART_INTERVAL_MS_CONFIG]) / 1000
        self.bounded = is_bounded_run(props)
        self.source = load_source(config, props)
        self.resources = list(config[TASK_RESOURCES_CONFIG]) or list(self.source.resources.selected)
        self.state: dict[str, Any] = {}
        stored = self.state.setdefault("sources", {}).setdefault(self.source.name, {}).setdefault("resources", {})
        reader = self.context.offset_reader
        for resource in self.resources:
            resource_state = state_of(reader.offset(resource_partition(self.source.name, resource)))
            if resource_state is not None:
                stored[resource] = resource_state
        self.queue = list(self.resources)
        self.finished = False
        self.restart_at = 0.0

    def poll(self) -> list[SourceItem] | None:
        """Batches of up to ``dlt.batch.max.rows`` rows; RunComplete once a bounded run's resources are done."""
        if self.finished:
            raise RunComplete
        if self.current is None and not self.queue and not self._next_pass():
            return None
        items: list[SourceItem] = []
        rows = 0
        while rows < self.limit and not self.stopping.is_set() and (self.current is not None or self.queue):
            if self.current is None:
                self.current = self._open(self.queue.pop(0))
            batch = self._step(self.current)
            if batch is not None:
                items.append(batch)
                rows += len(batch)
        if self.current is None and not self.queue:
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
        self.source = load_source(self.config, self.props)
        self.queue = list(self.resources)
        return True

    def _open(self, name: str) -> _ResourceRun:
        """Start iterating one resource, with the state dlt holds for it (its offset's, or the last pass's)."""
        partition = resource_partition(self.source.name, name)
        resources = self.state["sources"][self.source.name]["resources"]
        safe = {STATE_FIELD: dlt_json.typed_dumps(resources[name])} if name in resources else None
        with DLT_LOCK, Container().injectable_context(StateInjectableContext(state=self.state)):
            rows = iter(self.source.with_resources(name))
            key = primary_key(self.source, name)
        log.info("dlt source %s: copying resource %s from state %s", self.source.name, name, safe)
        return _ResourceRun(name, RowChunker(name, self.limit).tables(rows), key, partition, safe)

    def _step(self, run: _ResourceRun) -> SourceRecordBatch | None:
        """Take the resource's next chunk; return the one held before it (the last with the final state)."""
        try:
            with DLT_LOCK:
                table = next(run.tables, None)
        except DataError:
            raise
        except Exception as exc:
            raise ConnectError(f"dlt resource {run.name!r} of source {self.source.name!r} failed: "
                               f"{type(exc).__name__}: {exc}") from exc
        held, run.held = run.held, table
        if table is None:
            self.current = None
            final = self.state["sources"][self.source.name]["resources"].get(run.name)
            offset = None if final is None else {STATE_FIELD: dlt_json.typed_dumps(final)}
            return None if held is None else self._batch(run, held, offset)
        return None if held is None else self._batch(run, held, run.safe)

    def _batch(self, run: _ResourceRun, table: pa.Table, offset: dict[str, Any] | None) -> SourceRecordBatch:
        columns = connect_columns(table, run.key, run.name)
        return SourceRecordBatch(run.partition, offset, topic_for(self.prefix, run.name), columns.value_schema,
                                 columns.values, columns.key_schema, columns.keys)

    def stop(self) -> None:
        """From any thread: the next poll() returns at once; the resource's generator is dropped with the task."""
        self.stopping.set()

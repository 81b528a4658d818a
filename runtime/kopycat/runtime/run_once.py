"""Run a connector once, as one scheduled Airflow run does, without Airflow: ``kopycat run``.

The plan (:func:`plan_bounded_run`), then every planned task side by side on threads
(:func:`run_planned_task`), each to its bound: a source until caught up, a sink up to the end
offsets snapshotted by the plan. Offsets are the worker's: the file of
``offset.storage.file.filename`` when set (as ``kopycat standalone``), else the offsets topic (as
the DAGs), so ``kopycat run`` from cron and the DAGs continue each other's work when they share it;
a connector with its own ``offsets.storage.topic`` reads and writes that topic first.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from kopycat.runtime.bounded_plan import PlannedTask, plan_bounded_run
from kopycat.runtime.bounded_run import run_planned_task
from kopycat.runtime.bounds import RunSummary
from kopycat.runtime.config_transformer import resolve_worker_config
from kopycat.runtime.lag import connector_lag, lag_input_kind
from kopycat.runtime.offsets_admin import connector_offsets

__all__ = ["planned_sink_records", "run_connector_once"]

log = logging.getLogger(__name__)


def run_connector_once(connector_props: Mapping[str, Any], worker_props: Mapping[str, Any], *,
                       max_records: int | None = None, max_seconds: float | None = None,
                       on_plan: Callable[[Sequence[PlannedTask]], None] | None = None,
                       observe: Callable[[RunSummary], None] | None = None) -> list[RunSummary]:
    """Plan, then run every task once; their summaries, by task. Raises the first task's error
    once every task has ended (the others still commit what they copied)."""
    worker_props = resolve_worker_config(worker_props)
    with connector_offsets(connector_props, worker_props) as store:
        planned = plan_bounded_run(connector_props, worker_props, store)
        if on_plan is not None:
            on_plan(planned)
        if not planned:
            return []
        with ThreadPoolExecutor(max_workers=len(planned), thread_name_prefix="kopycat-run") as pool:
            futures = [pool.submit(run_planned_task, connector_props, task, worker_props, offset_store=store,
                                   max_records=max_records, max_seconds=max_seconds, progress_interval_s=3600.0,
                                   observe=observe) for task in planned]
            errors = [future.exception() for future in futures]
    failed = next((error for error in errors if error is not None), None)
    if failed is not None:
        raise failed
    return [future.result() for future in futures]


def planned_sink_records(connector_props: Mapping[str, Any], worker_props: Mapping[str, Any],
                         planned: Sequence[PlannedTask]) -> int | None:
    """How many records the planned sink tasks will copy (from the group's positions to the planned
    ends), for a progress bar; None for a source, or when the positions cannot be read."""
    try:
        if lag_input_kind(connector_props) != "sink":
            return None
        rows = connector_lag(connector_props, worker_props).partitions
    except Exception as exc:  # noqa: BLE001 - a bar without a total is still a progress display
        log.debug("No total for the progress bar: %s", exc)
        return None
    starts = {(row.topic, row.partition): row.end - row.lag for row in rows}
    ends = {(tp.topic, tp.partition): end for task in planned for tp, end in task.end_offsets_by_partition().items()}
    return sum(max(0, end - starts.get(key, end)) for key, end in ends.items())

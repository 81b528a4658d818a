"""Run one planned task to its bound: the body of an Airflow mapped copy task.

The same runners as the standalone worker (Kafka's WorkerSourceTask / WorkerSinkTask), started
from a :class:`PlannedTask`: a source resumes from the offsets topic and stops when caught up
(or at a budget); a sink copies its planned partitions up to the planned end offsets. A run with
a :class:`TimeWindow` (an Airflow backfill) copies exactly that window: a source task is told the
window and runs against an empty in-memory offset store; a sink task is told the window too and
copies each planned partition's records stamped in it (found with ``offsets_for_times``) without
committing the consumer group. Either way the live offsets are not moved and the scheduled runs
carry on where they were.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from confluent_kafka import KafkaException

from kopycat.api.errors import ConnectError
from kopycat.api.task import SinkTask, SourceTask
from kopycat.api.window import TimeWindow
from kopycat.client_security import explain_client_error
from kopycat.runtime.bounded_plan import PlannedTask, with_passwords
from kopycat.runtime.bounds import Bounds, RunSummary
from kopycat.runtime.config_transformer import resolve_worker_config
from kopycat.runtime.offsets_admin import connector_offset_store
from kopycat.runtime.planning import task_class_of
from kopycat.runtime.progress import ProgressLogger
from kopycat.runtime.task_factory import build_sink_runner, build_source_runner
from kopycat.runtime.task_metrics import TaskMetrics
from kopycat.runtime.task_parts import TaskId
from kopycat.storage.kafka_offset_store import KafkaOffsetStore
from kopycat.storage.offset_backing_store import MemoryOffsetStore, OffsetBackingStore

__all__ = ["run_planned_task"]

log = logging.getLogger(__name__)


def run_planned_task(connector_props: Mapping[str, Any], planned: PlannedTask | Mapping[str, Any],
                     worker_props: Mapping[str, Any], *, offset_store: OffsetBackingStore | None = None,
                     window: TimeWindow | None = None, idle_ms: int = 1_000,
                     max_records: int | None = None, max_seconds: float | None = None,
                     progress_interval_s: float = 10.0,
                     observe: Callable[[RunSummary], None] | None = None,
                     observe_metrics: Callable[[TaskMetrics], None] | None = None) -> RunSummary:
    """Copy one planned task's range and commit; the summary, or the task's error raised.

    ``offset_store`` defaults to the worker's offsets topic (``offset.storage.topic``), read after
    the connector's own ``offsets.storage.topic`` when it names one; a given store is used as is.
    ``observe`` gets the run's live summary before the copy starts (the CLI's progress bar
    reads its counters while the task runs); ``observe_metrics`` gets its live Kafka Connect metrics
    (an Airflow copy task publishes them as it goes: :class:`~kopycat.runtime.progress.ProgressPublisher`).
    """
    task = planned if isinstance(planned, PlannedTask) else PlannedTask.from_dict(planned)
    worker_props = resolve_worker_config(worker_props)
    name = str(connector_props.get("name", ""))
    task_id = TaskId(name, task.index)
    task_props = with_passwords(task.config, connector_props)
    task_class = task_class_of(task_props, connector_props)
    props = {k: str(v) for k, v in connector_props.items() if v is not None}
    if issubclass(task_class, SourceTask):
        bounds = Bounds(idle_ms=idle_ms, max_records=max_records, max_seconds=max_seconds)
        if window is not None:
            task_props.update(window.to_props())
            return _run(build_source_runner(task_id, task_class, task_props, props, worker_props, MemoryOffsetStore(),
                                            bounds), progress_interval_s, observe, observe_metrics)
        if offset_store is not None:
            return _run(build_source_runner(task_id, task_class, task_props, props, worker_props, offset_store,
                                            bounds), progress_interval_s, observe, observe_metrics)
        with KafkaOffsetStore.from_config(worker_props) as worker_store, \
                connector_offset_store(worker_store, props, worker_props) as store:
            return _run(build_source_runner(task_id, task_class, task_props, props, worker_props, store, bounds),
                        progress_interval_s, observe, observe_metrics)
    if issubclass(task_class, SinkTask):
        planned_ends = task.end_offsets_by_partition()
        if window is None:
            bounds = Bounds(end_offsets=planned_ends, max_records=max_records, max_seconds=max_seconds)
            return _run(build_sink_runner(task_id, task_class, task_props, props, worker_props, bounds,
                                          assignment=list(planned_ends)),
                        progress_interval_s, observe, observe_metrics)
        task_props.update(window.to_props())
        bounds = Bounds(window_start_ms=window.start_ms, window_end_ms=window.end_ms, max_records=max_records,
                        max_seconds=max_seconds)
        return _run(build_sink_runner(task_id, task_class, task_props, props, worker_props, bounds,
                                      assignment=list(planned_ends) or None),
                    progress_interval_s, observe, observe_metrics)
    raise ConnectError(f"Task class {task_class.__qualname__} of connector {name} is neither a SourceTask "
                       f"nor a SinkTask")


def _run(runner: Any, progress_interval_s: float, observe: Callable[[RunSummary], None] | None,
         observe_metrics: Callable[[TaskMetrics], None] | None) -> RunSummary:
    if observe is not None:
        observe(runner.summary)
    if observe_metrics is not None:
        observe_metrics(runner.metrics)
    with ProgressLogger(runner.summary, progress_interval_s):
        try:
            summary: RunSummary = runner.run()
        except KafkaException as exc:
            explained = explain_client_error(exc)
            if explained is None:
                raise
            raise explained from exc
    return summary

"""Copy one planned task: the mapped task of a Kopycat DAG run."""

from __future__ import annotations

import traceback
from collections.abc import Callable, Mapping, Sequence
from functools import cached_property
from typing import Any, Literal, get_args

from airflow.sdk import BaseOperator, Context
from airflow.sdk.exceptions import AirflowFailException

from kopycat.api.errors import ConfigError
from kopycat.api.window import TimeWindow
from kopycat.runtime.bounded_plan import PlannedTask
from kopycat.runtime.bounds import RunSummary
from kopycat.runtime.progress import ProgressPublisher
from kopycat.runtime.stored_connectors import TaskStatusReporter
from kopycat.runtime.task_metrics import TaskMetrics
from kopycat.storage.connector_status import State
from kopycat_airflow.assets import emit_topic_events
from kopycat_airflow.connector_config import ConnectorConfigArg, StoredConnector, resolve_connector_config
from kopycat_airflow.hooks.kopycat import KopycatHook
from kopycat_airflow.run_metrics import send_run_metrics
from kopycat_airflow.secret_masking import MasksConfigSecrets

__all__ = ["COPY_LABEL_TEMPLATE", "CopyTaskOperator", "WINDOW_CONF_KEY", "WINDOW_MODES", "WindowMode",
           "check_window_mode", "planned_task_of", "window_of"]

WindowMode = Literal["auto", "always", "never"]
WINDOW_MODES: tuple[WindowMode, ...] = get_args(WindowMode)
COPY_LABEL_TEMPLATE = "{{ kopycat_task_label }}"
"""The UI's name of a mapped copy task: its tables or topic-partitions (pass to ``.partial``)."""
WINDOW_CONF_KEY = "kopycat_window"
"""``dag_run.conf`` key: a manual run with ``{"kopycat_window": true}`` copies its data interval."""


class CopyTaskOperator(MasksConfigSecrets, BaseOperator):
    """A bounded run of one task config (from :class:`PlanConnectorOperator`).

    Resumes from the stored offsets, copies until caught up (sources) or to the planned end
    offsets (sinks), commits, returns the run summary (small JSON: counts, offsets before/after,
    topics). Airflow retries re-run it and resume exactly from the committed offsets.

    Backfills: with ``window="auto"`` a backfill run (or a run triggered with
    ``{"kopycat_window": true}``) copies exactly its data interval ``[start, end)`` without
    reading or moving the live offsets; ``"always"`` windows every run, ``"never"`` none.
    Which records a sink's window copies: see kopycat.runtime.run_range.BackfillWindow; neither the
    consumer group nor the sink's own offsets move. The JDBC sink upserts the rows again (a window
    needs ``insert.mode`` upsert or update). The storage sink overwrites the window's directories, so it needs
    ``partitioner.class=TimeBasedPartitioner`` (or Hourly/Daily) with ``timestamp.extractor=Record``
    and a data interval of whole ``partition.duration.ms`` buckets; otherwise the task fails with a
    ConfigError before anything is deleted. Keep a storage sink's runs apart, as they write the
    same partitions' files: ``max_active_runs=1`` on the DAG limits scheduled runs only, so create
    backfills with ``airflow backfill create ... --max-active-runs 1`` too.

    Map with ``CopyTaskOperator.partial(connector_config=..., task_id="copy").expand(task_config=plan.output)``;
    the UI names each mapped task by its tables or topic-partitions.

    :param connector_config: the connector properties (dict) or file path, as given to the plan.
    :param task_config: one item of the plan's output.
    :param kopycat_conn_id: the Kafka cluster and worker keys (:class:`KopycatHook`).
    :param worker_overrides: worker.properties keys that win over the connection's.
    :param window: ``auto``, ``always`` or ``never`` (see above).
    :param idle_ms: a source has caught up after this long with nothing new (a source that knows its
        range ends sooner: the JDBC source once each table's query of the run was read, MirrorMaker
        at the end offsets it snapshotted).
    :param max_records: stop after about this many records (the rest waits for the next run).
    :param max_seconds: stop after about this long.
    :param progress_interval_s: how often a stored connector's task writes its figures so far to the
        status topic while it copies (:mod:`kopycat.storage.task_progress`), for the connectors page.
    """

    template_fields: Sequence[str] = ("connector_config", "task_config")
    ui_color = "#fdf3e8"

    def __init__(self, *, connector_config: ConnectorConfigArg,
                 task_config: Mapping[str, Any], kopycat_conn_id: str = KopycatHook.default_conn_name,
                 worker_overrides: Mapping[str, Any] | None = None, window: WindowMode = "auto",
                 idle_ms: int = 1_000, max_records: int | None = None, max_seconds: float | None = None,
                 progress_interval_s: float = 5.0, **kwargs: Any) -> None:
        kwargs.setdefault("map_index_template", COPY_LABEL_TEMPLATE)
        check_window_mode(window)
        if not progress_interval_s > 0:
            raise ValueError(f"progress_interval_s={progress_interval_s!r}: give a number of seconds > 0, e.g. 5")
        super().__init__(**kwargs)
        self.connector_config = connector_config
        self.task_config = task_config
        self.kopycat_conn_id = kopycat_conn_id
        self.worker_overrides = dict(worker_overrides or {})
        self.window = window
        self.idle_ms = idle_ms
        self.max_records = max_records
        self.max_seconds = max_seconds
        self.progress_interval_s = progress_interval_s

    @cached_property
    def hook(self) -> KopycatHook:
        return KopycatHook(self.kopycat_conn_id, self.worker_overrides)

    def execute(self, context: Context) -> dict[str, Any]:
        planned = planned_task_of(context, self.task_config)
        stored = isinstance(self.connector_config, StoredConnector)
        props = self._connector_props()
        window = window_of(context, self.window)
        if window is not None:
            self.log.info("Windowed run: copying [%s, %s) without touching the live offsets",
                          context.get("data_interval_start"), context.get("data_interval_end"))
        if stored:
            run = f"{context['ti'].dag_id}/{context['ti'].run_id}"
            with TaskStatusReporter(self.hook.worker_props, props["name"], planned.index) as reporter, \
                    ProgressPublisher(lambda figures: reporter.publish_progress(run, figures),
                                      self.progress_interval_s) as publisher:
                summary = self._copy(props, planned, window, reporter, publisher.watch)
        else:
            summary = self._copy(props, planned, window, None)
        emit_topic_events(context, self.outlets, lambda: self.hook.cluster, summary.topics,
                          {"records": summary.records, "task": summary.task})
        send_run_metrics(summary)
        self.log.info("Copied %d records (%d skipped, %d filtered) in %.1f s, stopped: %s; offsets: %s",
                      summary.records, summary.skipped, summary.filtered, summary.duration_s,
                      summary.stop_reason.value, summary.offsets)
        return summary.to_dict()

    def _copy(self, props: Mapping[str, str], planned: PlannedTask, window: TimeWindow | None,
              reporter: TaskStatusReporter | None,
              observe_metrics: Callable[[TaskMetrics], None] | None = None) -> RunSummary:
        """The bounded run; a stored connector's task reports RUNNING, its figures as it goes (to
        ``observe_metrics``), then its topics or FAILED."""
        if reporter is not None:
            reporter.report(State.RUNNING)
        try:
            summary = self.hook.run_task(props, planned, window=window, idle_ms=self.idle_ms,
                                         max_records=self.max_records, max_seconds=self.max_seconds,
                                         observe_metrics=observe_metrics)
        except Exception as exc:
            if reporter is not None:
                reporter.report(State.FAILED, traceback.format_exc())
            if isinstance(exc, ConfigError):
                raise AirflowFailException(
                    f"Task {planned.index} ({planned.label}) of {props.get('name')}: {exc}") from exc
            raise
        if reporter is not None:
            self._report_topics(reporter, summary)
        return summary

    def _report_topics(self, reporter: TaskStatusReporter, summary: RunSummary) -> None:
        """KIP-558 topic tracking; a failure is logged: the copy itself is done and committed."""
        try:
            new = reporter.record_topics(summary.topics_used())
        except Exception as exc:  # noqa: BLE001 - bookkeeping must not fail a committed copy
            self.log.warning("Could not record the topics task %d of %s used: %s", reporter.task, reporter.name, exc)
            return
        if new:
            self.log.info("First use of topic(s) %s by %s recorded", ", ".join(new), reporter.name)

    def _connector_props(self) -> dict[str, str]:
        """The connector's config: given, or read from the config topic for a stored connector.

        A stored connector paused or stopped since the plan still finishes this run's task:
        Kafka's workers also finish the batch in hand before honouring a new target state.
        """
        if isinstance(self.connector_config, StoredConnector):
            return self.hook.stored_connector(self.connector_config.name).config
        return resolve_connector_config(self.connector_config)

    def get_openlineage_facets_on_start(self) -> Any:
        """This task's datasets (OpenLineage provider hook): its tables or topics and where they go."""
        from kopycat_airflow.lineage import connector_lineage

        config = self.task_config.get("config", {}) if isinstance(self.task_config, Mapping) else {}
        return connector_lineage(self._connector_props(), self.hook.worker_props, [config])

    def get_openlineage_facets_on_complete(self, task_instance: Any) -> Any:
        """The same datasets as on start: a bounded run copies what its task config names."""
        return self.get_openlineage_facets_on_start()


def planned_task_of(context: Context, task_config: Mapping[str, Any]) -> PlannedTask:
    """The plan item a mapped task runs, its label put where ``COPY_LABEL_TEMPLATE`` finds it.

    Shared by every operator mapped over :class:`PlanConnectorOperator`'s output, so the items
    are read one way and the UI names every mapped task by its tables or topic-partitions.
    """
    try:
        planned = PlannedTask.from_dict(task_config)
    except (KeyError, TypeError, ValueError) as exc:
        raise AirflowFailException(
            f"task_config {str(task_config)[:200]!r} is not an item of PlanConnectorOperator's output "
            f"({{'index', 'label', 'config', 'end_offsets'}}; {type(exc).__name__}: {exc}): map the task with "
            f".expand(task_config=plan.output)") from exc
    context["kopycat_task_label"] = planned.label  # type: ignore[typeddict-unknown-key]
    return planned


def check_window_mode(window: str) -> None:
    """An operator's ``window`` argument, checked in ``__init__`` (before any run) by every operator
    that takes one: a ValueError naming the values."""
    if window not in WINDOW_MODES:
        raise ValueError(f"window={window!r}: use 'auto', 'always' or 'never'")


def window_of(context: Context, mode: WindowMode) -> TimeWindow | None:
    """The data interval to copy exactly, or None for a normal offset-resuming run."""
    if mode == "never":
        return None
    run = context.get("dag_run")
    run_type = getattr(run, "run_type", None)
    kind = str(getattr(run_type, "value", run_type) or "")  # the task SDK's enum prints as DagRunType.BACKFILL
    conf = getattr(run, "conf", None) or {}
    if mode == "auto" and not (kind == "backfill" or conf.get(WINDOW_CONF_KEY)):
        return None
    start, end = context.get("data_interval_start"), context.get("data_interval_end")
    if start is None or end is None or start == end:
        raise AirflowFailException(
            "A windowed run needs a data interval, but this run has none (start == end): schedule the DAG "
            "with a data-interval timetable (CronDataIntervalTimetable or DeltaDataIntervalTimetable)")
    return TimeWindow(int(start.timestamp() * 1000), int(end.timestamp() * 1000))



"""Export a storage sink's backlog in bulk: take the planned ranges, submit the Spark job, check the commit."""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Mapping, Sequence
from functools import cached_property
from pathlib import Path
from typing import Any

from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook
from airflow.sdk import BaseOperator, Context
from airflow.sdk.exceptions import AirflowException, AirflowFailException

from kopycat.api.errors import ConfigError, ConnectError
from kopycat.api.records import TopicPartition
from kopycat.api.window import TimeWindow
from kopycat.connectors.files.spark_export import (
    ExportResult,
    OffsetRange,
    SparkExportJob,
    check_layout,
    parse_result,
)
from kopycat.connectors.files.spark_plan import export_ranges, plan_spark_export
from kopycat.kafka import consumer_group_id
from kopycat.runtime.bounded_plan import PlannedTask
from kopycat.runtime.connector_config import TOPICS_CONFIG, TOPICS_REGEX_CONFIG, sink_topics
from kopycat_airflow.connector_config import resolve_connector_config
from kopycat_airflow.hooks.kopycat import KopycatHook
from kopycat_airflow.operators.copy import (
    COPY_LABEL_TEMPLATE,
    WindowMode,
    check_window_mode,
    planned_task_of,
    window_of,
)
from kopycat_airflow.secret_masking import MasksConfigSecrets

__all__ = ["SparkExportOperator", "planned_ends"]


class SparkExportOperator(MasksConfigSecrets, BaseOperator):
    """Copy a storage sink connector's topics to its store with Spark, exactly once.

    The bulk path of DESIGN.md §4 for the same connector config ``CopyTaskOperator`` runs with
    the Python sink (``FileSinkConnector``: ``name``, ``topics``, ``store.url``, ``topics.dir``,
    Parquet, the default partitioner or a time-based one on ``timestamp.extractor=Record``, each
    record in the directory the Python sink's partitioner prints for it): the plan snapshots each
    partition's end offset, the job reads
    from the group ``connect-<name>``'s offsets to those ends with Spark's Kafka source, writes
    Parquet under the committed names the Python sink uses, and commits the group only after the
    files are committed. A retry resumes behind the files already committed, so nothing is
    written twice. The task fails unless the group reached every planned end.

    Mapped (:func:`kopycat_airflow.task_group.spark_export_task_group`): given ``task_config``,
    one item of :class:`PlanConnectorOperator`'s output, the task exports that item's partitions
    up to that item's planned ends, one Spark job per planned range group, and checks the group
    for those partitions only. Items hold disjoint partitions, so mapped tasks run side by side
    and a retry of one resumes behind its own files. Without ``task_config`` the task plans the
    connector itself and exports every partition in one job.

    Backfills, as ``CopyTaskOperator`` runs them: with ``window="auto"`` a backfill run (or one
    triggered with ``{"kopycat_window": true}``, see :func:`kopycat_airflow.operators.copy.window_of`)
    exports exactly its data interval ``[start, end)`` (which records: see
    kopycat.runtime.run_range.BackfillWindow; the planned end when sooner), the window's directories are
    overwritten (the planned partitions' committed files there are deleted first), and neither
    the group nor the live offsets move; the same window twice gives the same files. It needs a
    TimeBasedPartitioner (or Hourly/Daily) with ``timestamp.extractor=Record`` and a data
    interval of whole ``partition.duration.ms`` buckets, else the task fails with the key, the
    value and the fix before anything is written. ``"always"`` windows every run,
    ``"never"`` none. Keep the connector's runs apart (``max_active_runs=1``, and
    ``airflow backfill create ... --max-active-runs 1``): a window and a live run write the same
    partitions' files.

    :param connector_config: the sink's properties (dict, Jinja-templated) or file path.
    :param task_config: one item of the plan's output (mapped), or None to plan here.
    :param kopycat_conn_id: the Kafka cluster and worker keys (:class:`KopycatHook`).
    :param spark_conn_id: the Spark connection (master, deploy mode); ``spark_default``.
    :param spark_conf: extra Spark conf (executor memory, ``spark.sql.shuffle.partitions``...).
    :param worker_overrides: worker.properties keys that win over the connection's.
    :param window: ``auto``, ``always`` or ``never`` (see above).
    """

    template_fields: Sequence[str] = ("connector_config", "task_config", "spark_conf")
    ui_color = "#fff1d6"

    def __init__(self, *, connector_config: Mapping[str, Any] | str | os.PathLike[str],
                 task_config: Mapping[str, Any] | None = None,
                 kopycat_conn_id: str = KopycatHook.default_conn_name, spark_conn_id: str = "spark_default",
                 spark_conf: Mapping[str, str] | None = None, worker_overrides: Mapping[str, Any] | None = None,
                 window: WindowMode = "auto", **kwargs: Any) -> None:
        check_window_mode(window)
        if task_config is not None:
            kwargs.setdefault("map_index_template", COPY_LABEL_TEMPLATE)
        super().__init__(**kwargs)
        self.window = window
        self.connector_config = connector_config
        self.task_config = task_config
        self.kopycat_conn_id = kopycat_conn_id
        self.spark_conn_id = spark_conn_id
        self.spark_conf = dict(spark_conf or {})
        self.worker_overrides = dict(worker_overrides or {})
        self._written_files: list[str] = []

    @cached_property
    def hook(self) -> KopycatHook:
        return KopycatHook(self.kopycat_conn_id, self.worker_overrides)

    def get_openlineage_facets_on_start(self) -> Any:
        """The exported topics and their directories on the store (OpenLineage provider hook)."""
        from kopycat_airflow.lineage import connector_lineage

        return connector_lineage(resolve_connector_config(self.connector_config), self.hook.worker_props, [])

    def get_openlineage_facets_on_complete(self, task_instance: Any) -> Any:
        """The datasets of the start, each directory with the columns of a Parquet file this run committed
        there (a footer read; none when the run wrote nothing, or the read fails)."""
        from kopycat.runtime.lineage import add_written_fields, connector_lineage
        from kopycat_airflow.lineage import operator_lineage

        props = resolve_connector_config(self.connector_config)
        found = connector_lineage(props, self.hook.worker_props, [])
        try:
            add_written_fields(found, props, self._written_files)
        except Exception:  # noqa: BLE001 - lineage is informational; the export has succeeded
            self.log.warning("Could not read the schema of the files written for OpenLineage", exc_info=True)
        return operator_lineage(found)

    def execute(self, context: Context) -> dict[str, Any]:
        summary = self._export(context)
        self._written_files = list(summary.get("files") or [])
        return summary

    def _export(self, context: Context) -> dict[str, Any]:
        planned = planned_task_of(context, self.task_config) if self.task_config is not None else None
        props = resolve_connector_config(self.connector_config)
        name = str(props.get("name") or "")
        window = window_of(context, self.window)
        if window is not None:
            try:  # before the plan or Kafka: a window Spark cannot overwrite whole fails with the fix at once
                check_layout(props, window)
            except ConfigError as exc:
                raise AirflowFailException(f"Connector {name} cannot export this window with Spark: {exc}") from exc
            self.log.info("Windowed run: exporting [%s, %s) without touching the live offsets",
                          context.get("data_interval_start"), context.get("data_interval_end"))
        ends = self._ends(props, planned)
        if not ends:
            self.log.warning("Connector %s: no partitions to export", name)
            return _summary([], {}, None, planned, window)
        try:
            job = plan_spark_export(props, self.hook.worker_props, ends, master=self._master(),
                                    run_id=_job_run_id(context, planned), window=window)
        except ConfigError as exc:
            raise AirflowFailException(f"Connector {name} cannot be exported with Spark: {exc}") from exc
        ranges = [r for r in job.ranges if not r.empty]
        if not ranges:
            self.log.info("Connector %s: %s", name,
                          "no partition holds a record at/after the window's start before its live position"
                          if window else "every partition is exported up to its planned end already")
            return _summary([], ends, None, planned, window)
        self.log.info("Exporting %d records of %s with Spark: %s", sum(r.end - r.start for r in ranges), name,
                      ", ".join(f"{r.topic}-{r.partition} [{r.start}, {r.end})" for r in ranges))
        result = self._submit(job, _job_name(job, planned))
        if window is not None:
            return self._windowed_summary(name, ends, result, planned, window)
        return self._check_committed(props, name, ends, result, planned)

    def _ends(self, props: Mapping[str, Any], planned: PlannedTask | None) -> dict[TopicPartition, int]:
        """The planned end of each partition this task exports: its item's, or a plan made here."""
        if planned is not None:
            return planned_ends(planned, props)
        try:
            tasks = self.hook.plan(props)
        except ConfigError as exc:
            raise AirflowFailException(f"Connector config of {props.get('name', '?')} is invalid: {exc}") from exc
        return {tp: end for task in tasks for tp, end in task.end_offsets_by_partition().items()}

    def _master(self) -> str:
        """The master the Spark connection names (the job puts its jars on the class path when local).

        Read through Airflow's public connection API with SparkSubmitHook's rules: the hook resolves
        the master once but keeps it in a private attribute, and has no public accessor for it. A
        missing connection means yarn, as for the hook.
        """
        try:
            conn = SparkSubmitHook.get_connection(self.spark_conn_id)
        except AirflowException:
            return "yarn"
        if conn.conn_type == "spark" and conn.host and ("://" in conn.host or not conn.port):
            master = str(conn.host)  # a UI connection: the host holds the whole master URL
        else:
            master = f"{conn.conn_type}://{conn.host or ''}"
        return f"{master}:{conn.port}" if conn.port else master

    def _submit(self, job: SparkExportJob, name: str) -> ExportResult | None:
        """Run the job through the Spark provider's SparkSubmitHook; the job's result, when its driver
        ran here (client mode) and so wrote the result file this task reads after it."""
        # spark-submit ships with pyspark, beside this interpreter; Popen looks it up on the env's PATH.
        path = os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")])
        # The job's secret Kafka settings reach it in a private file, never on the command line (staged).
        with tempfile.TemporaryDirectory(prefix="kopycat-spark-result-") as tmp, job.staged() as staged:
            result_file = Path(tmp) / "result.json"
            job = staged.writing_result_to(str(result_file))
            hook = SparkSubmitHook(
                conf={**job.conf, **self.spark_conf}, conn_id=self.spark_conn_id, jars=",".join(job.jars) or None,
                name=name, application_args=list(job.application_args), env_vars={**job.env, "PATH": path})
            hook.submit(job.application)
            output = result_file.read_text() if result_file.exists() else ""
        try:
            return parse_result(output)
        except ConnectError:  # cluster deploy mode: the driver wrote its result file on the cluster
            self.log.info("No result from the Spark driver (cluster deploy mode?); checking the consumer group only")
            return None

    def _check_committed(self, props: Mapping[str, Any], name: str, ends: Mapping[TopicPartition, int],
                         result: ExportResult | None, planned: PlannedTask | None) -> dict[str, Any]:
        """The sink's group must sit at this task's every planned end: the job's own proof of commit."""
        group = consumer_group_id(name, props)
        after = {r.topic_partition: r.start for r in export_ranges(name, self.hook.worker_props, props, ends)}
        behind = [f"{tp.topic}-{tp.partition} at {after[tp]} < {ends[tp]}"
                  for tp in sorted(ends) if after[tp] < ends[tp]]
        if behind:
            raise AirflowException(f"The Spark export of {name} finished but its group {group} is behind the "
                                   f"planned ends ({'; '.join(behind)}); the retry resumes behind the committed files")
        summary = _summary(result.read if result else [], ends, result, planned)
        self.log.info("Exported %d records of %s in %d files; group %s at %s", summary["records"], name,
                      len(summary["files"]), group, summary["offsets"])
        return summary


    def _windowed_summary(self, name: str, ends: Mapping[TopicPartition, int], result: ExportResult | None,
                          planned: PlannedTask | None, window: TimeWindow) -> dict[str, Any]:
        """A windowed job commits no group, so its result is the proof: the window it copied."""
        if result is not None and result.window != window:
            raise AirflowException(f"The Spark export of {name} copied the window {result.window}, not this run's "
                                   f"{window}; the job ignored --window: check include/spark/kafka_to_files.py")
        summary = _summary(result.read if result else [], ends, result, planned, window)
        self.log.info("Exported window [%d, %d) of %s: %d records in %d files, %d stamped outside it; the group "
                      "did not move", window.start_ms, window.end_ms, name, summary["records"],
                      len(summary["files"]), summary["filtered"])
        return summary


def planned_ends(planned: PlannedTask, props: Mapping[str, Any]) -> dict[TopicPartition, int]:
    """The partitions and planned ends of one plan item, once it is known to be this connector's.

    A mapped task's item comes from XCom, so it may be stale: planned before the config changed
    (another ``name``, topics dropped) or for another connector. Exporting it would write files
    and commit a group the config does not name, so it fails naming the field and the fix.
    """
    name = str(props.get("name") or "")
    where = f"task_config (task {planned.index}, {planned.label})"
    rerun = "re-run the plan: clear the DAG run's plan task with its downstream tasks"
    planned_name = str(planned.config.get("name") or name)
    if planned_name != name:
        raise AirflowFailException(
            f"{where}: config.name is {planned_name!r}, but this task exports connector {name!r}; expand the task "
            f"over the output of a plan of the same connector config (spark_export_task_group does), or {rerun}")
    ends = planned.end_offsets_by_partition()
    if not ends:
        raise AirflowFailException(
            f"{where}: end_offsets is empty, so the item is not a sink's planned range; expand the task over "
            f"the plan of a storage sink connector")
    topics = set(sink_topics(props, {tp.topic for tp in ends}))
    gone = sorted(f"{tp.topic}:{tp.partition}" for tp in ends if tp.topic not in topics)
    if gone:
        raise AirflowFailException(
            f"{where}: end_offsets names {', '.join(gone)}, which connector {name!r} no longer reads "
            f"({TOPICS_CONFIG}={props.get(TOPICS_CONFIG) or ''!r}, {TOPICS_REGEX_CONFIG}="
            f"{props.get(TOPICS_REGEX_CONFIG) or ''!r}); {rerun}, so the items match the config")
    return ends


def _job_run_id(context: Context, planned: PlannedTask | None) -> str:
    """The job's temp dir name: unique per mapped task and try, so side-by-side jobs never share one."""
    task = "" if planned is None else f"-task{planned.index}"
    return f"{context['run_id']}{task}-{context['ti'].try_number}"


def _job_name(job: SparkExportJob, planned: PlannedTask | None) -> str:
    """The application name on the cluster: one per planned range group, so its jobs tell apart."""
    return job.name if planned is None else f"{job.name}-task{planned.index}"


def _summary(read: Sequence[OffsetRange], ends: Mapping[TopicPartition, int],
             result: ExportResult | None, planned: PlannedTask | None,
             window: TimeWindow | None = None) -> dict[str, Any]:
    """The task's XCom: records read and files committed by this run, the group's offsets after it.

    ``task``, ``records`` and ``topics`` are what the copy tasks' summaries also carry, so
    ``summarize_run`` totals either kind of mapped task. A windowed run's ``records`` are the
    rows it wrote (those stamped inside ``window``), ``filtered`` the records it read outside it,
    ``offsets`` the group's untouched offsets (-1: none committed).
    """
    records = sum(r.end - r.start for r in read)
    summary = {"task": planned.index if planned else None,
               "records": records,
               "read": [[r.topic, r.partition, r.start, r.end] for r in read],
               "files": [f.path for f in result.files] if result else [],
               "offsets": {f"{tp.topic}-{tp.partition}": end for tp, end in sorted(ends.items())},
               "topics": sorted({tp.topic for tp in ends})}
    if window is not None:
        summary.update(records=sum(f.rows for f in result.files) if result else 0,
                       filtered=result.filtered if result else 0, window=[window.start_ms, window.end_ms],
                       offsets={f"{tp.topic}-{tp.partition}": offset
                                for tp, offset in sorted(result.committed_offsets.items())} if result else {})
    return summary

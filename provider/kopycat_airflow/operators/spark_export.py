"""Export a storage sink's backlog in bulk: plan the ranges, submit the Spark job, check the commit."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Mapping, Sequence
from functools import cached_property
from typing import Any, Literal

from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook
from airflow.sdk import BaseOperator, Context
from airflow.sdk.exceptions import AirflowException, AirflowFailException

from kopycat.api.errors import ConfigError
from kopycat.api.records import TopicPartition
from kopycat.api.errors import ConnectError
from kopycat.connectors.files.spark_export import (
    RESULT_KEY,
    ExportResult,
    OffsetRange,
    SparkExportJob,
    parse_result,
)
from kopycat.connectors.files.spark_plan import export_ranges, plan_spark_export
from kopycat.kafka import consumer_group_id
from kopycat_airflow.connector_config import resolve_connector_config
from kopycat_airflow.hooks.kopycat import KopycatHook
from kopycat_airflow.operators.copy import window_of

__all__ = ["SparkExportOperator"]


class SparkExportOperator(BaseOperator):
    """Copy a storage sink connector's topics to its store with Spark, exactly once.

    The bulk path of DESIGN.md §4 for the same connector config ``CopyTaskOperator`` runs with
    the Python sink (``FileSinkConnector``: ``name``, ``topics``, ``store.url``, ``topics.dir``,
    Parquet, default partitioner): the plan snapshots each partition's end offset, the job reads
    from the group ``connect-<name>``'s offsets to those ends with Spark's Kafka source, writes
    Parquet under the committed names the Python sink uses, and commits the group only after the
    files are committed. A retry resumes behind the files already committed, so nothing is
    written twice. The task fails unless the group reached every planned end.

    Backfills: the Spark job copies offset ranges, not time windows, so a backfill run (as
    :func:`kopycat_airflow.operators.copy.window_of` sees it with ``window="auto"``) fails with a
    message saying so instead of exporting the live range under a past interval; backfill with
    ``CopyTaskOperator`` over the same config, or pass ``window="never"`` to export the live range.

    :param connector_config: the sink's properties (dict, Jinja-templated) or file path.
    :param kopycat_conn_id: the Kafka cluster and worker keys (:class:`KopycatHook`).
    :param spark_conn_id: the Spark connection (master, deploy mode); ``spark_default``.
    :param spark_conf: extra Spark conf (executor memory, ``spark.sql.shuffle.partitions``...).
    :param worker_overrides: worker.properties keys that win over the connection's.
    :param window: ``auto`` (refuse backfill runs, see above) or ``never``.
    """

    template_fields: Sequence[str] = ("connector_config", "spark_conf")
    ui_color = "#fff1d6"

    def __init__(self, *, connector_config: Mapping[str, Any] | str | os.PathLike[str],
                 kopycat_conn_id: str = KopycatHook.default_conn_name, spark_conn_id: str = "spark_default",
                 spark_conf: Mapping[str, str] | None = None, worker_overrides: Mapping[str, Any] | None = None,
                 window: Literal["auto", "never"] = "auto", **kwargs: Any) -> None:
        if window not in ("auto", "never"):
            raise ValueError(f"window={window!r}: use 'auto' or 'never' (Spark exports do not copy time windows)")
        super().__init__(**kwargs)
        self.window = window
        self.connector_config = connector_config
        self.kopycat_conn_id = kopycat_conn_id
        self.spark_conn_id = spark_conn_id
        self.spark_conf = dict(spark_conf or {})
        self.worker_overrides = dict(worker_overrides or {})

    @cached_property
    def hook(self) -> KopycatHook:
        return KopycatHook(self.kopycat_conn_id, self.worker_overrides)

    def execute(self, context: Context) -> dict[str, Any]:
        props = resolve_connector_config(self.connector_config)
        name = str(props.get("name") or "")
        if window_of(context, self.window) is not None:
            raise AirflowFailException(
                f"Connector {name}: this is a backfill (windowed) run, and the Spark export copies offset ranges, "
                f"not time windows, so it would export the live range under a past interval. Backfill with "
                f"CopyTaskOperator over the same connector config (the storage sink overwrites the window's "
                f"directories), or set window='never' on this task to export the live range")
        ends = self._planned_ends(props)
        if not ends:
            self.log.warning("Connector %s: no partitions to export", name)
            return _summary([], {}, None)
        try:
            job = plan_spark_export(props, self.hook.worker_props, ends, master=self._master(),
                                    run_id=f"{context['run_id']}-{context['ti'].try_number}")
        except ConfigError as exc:
            raise AirflowFailException(f"Connector {name} cannot be exported with Spark: {exc}") from exc
        ranges = [r for r in job.ranges if not r.empty]
        if not ranges:
            self.log.info("Connector %s: every partition is exported up to its planned end already", name)
            return _summary([], ends, None)
        self.log.info("Exporting %d records of %s with Spark: %s", sum(r.end - r.start for r in ranges), name,
                      ", ".join(f"{r.topic}-{r.partition} [{r.start}, {r.end})" for r in ranges))
        result = self._submit(job)
        return self._check_committed(props, name, ends, result)

    def _planned_ends(self, props: Mapping[str, Any]) -> dict[TopicPartition, int]:
        try:
            planned = self.hook.plan(props)
        except ConfigError as exc:
            raise AirflowFailException(f"Connector config of {props.get('name', '?')} is invalid: {exc}") from exc
        return {tp: end for task in planned for tp, end in task.end_offsets_by_partition().items()}

    def _master(self) -> str:
        """The master the Spark connection names (the job puts its jars on the class path when local)."""
        return str(SparkSubmitHook(conn_id=self.spark_conn_id)._connection["master"])  # noqa: SLF001

    def _submit(self, job: SparkExportJob) -> ExportResult | None:
        """Run the job through the Spark provider; its result line, when the driver's stdout reaches us."""
        # spark-submit ships with pyspark, beside this interpreter; Popen looks it up on the env's PATH.
        path = os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")])
        hook = _ResultCapturingSparkSubmitHook(
            conf={**job.conf, **self.spark_conf}, conn_id=self.spark_conn_id, jars=",".join(job.jars) or None,
            name=job.name, application_args=list(job.application_args), env_vars={**job.env, "PATH": path})
        hook.submit(job.application)
        try:
            return parse_result("\n".join(hook.output_lines))
        except ConnectError:  # cluster deploy mode: the driver's stdout stays on the cluster
            self.log.info("No result line in the spark-submit output; checking the consumer group only")
            return None

    def _check_committed(self, props: Mapping[str, Any], name: str, ends: Mapping[TopicPartition, int],
                         result: ExportResult | None) -> dict[str, Any]:
        """The sink's group must sit at every planned end: the job's own proof of commit."""
        group = consumer_group_id(name, props)
        after = {r.topic_partition: r.start for r in export_ranges(name, self.hook.worker_props, props, ends)}
        behind = [f"{tp.topic}-{tp.partition} at {after[tp]} < {ends[tp]}" for tp in sorted(ends) if after[tp] < ends[tp]]
        if behind:
            raise AirflowException(f"The Spark export of {name} finished but its group {group} is behind the "
                                   f"planned ends ({'; '.join(behind)}); the retry resumes behind the committed files")
        summary = _summary(result.read if result else [], ends, result)
        self.log.info("Exported %d records of %s in %d files; group %s at %s", summary["records"], name,
                      len(summary["files"]), group, summary["offsets"])
        return summary


class _ResultCapturingSparkSubmitHook(SparkSubmitHook):
    """SparkSubmitHook that also keeps the lines of spark-submit's output that carry the job's result.

    The provider logs the output line by line and returns nothing; the job prints its result
    (files committed, ranges read) as one JSON line, wanted as the task's XCom.
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.output_lines: list[str] = []

    def _process_spark_submit_log(self, itr: Iterator[Any]) -> None:
        super()._process_spark_submit_log(self._keep_result_lines(itr))

    def _keep_result_lines(self, itr: Iterator[Any]) -> Iterator[Any]:
        for line in itr:
            if f'"{RESULT_KEY}"' in line:
                self.output_lines.append(line.strip())
            yield line


def _summary(read: Sequence[OffsetRange], ends: Mapping[TopicPartition, int],
             result: ExportResult | None) -> dict[str, Any]:
    """The task's XCom: records read and files committed by this run, the group's offsets after it."""
    return {"records": sum(r.end - r.start for r in read),
            "read": [[r.topic, r.partition, r.start, r.end] for r in read],
            "files": [f.path for f in result.files] if result else [],
            "offsets": {f"{tp.topic}-{tp.partition}": end for tp, end in sorted(ends.items())},
            "topics": sorted({tp.topic for tp in ends})}

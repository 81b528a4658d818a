"""One call that turns a connector config into plan -> mapped copy (or Spark export) tasks -> summary.

DESIGN.md §4's shape, so a DAG is a few lines::

    with DAG("shop_import", schedule=CronDataIntervalTimetable("*/5 * * * *", timezone="UTC"), ...):
        connector_task_group("include/shop-jdbc-source.properties")

    with DAG("shop_lake_spark", schedule=None, ...):
        spark_export_task_group("include/shop-lake-sink.properties")
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from airflow.sdk import AssetAlias, TaskGroup, XComArg, get_current_context, task

from kopycat_airflow.assets import connector_alias, emit_topic_events
from kopycat_airflow.connector_config import ConnectorConfigArg, connector_name
from kopycat_airflow.hooks.kopycat import KopycatHook
from kopycat_airflow.operators.copy import COPY_LABEL_TEMPLATE, CopyTaskOperator, WindowMode
from kopycat_airflow.operators.plan import PlanConnectorOperator

if TYPE_CHECKING:
    from airflow.sdk.definitions.mappedoperator import MappedOperator

__all__ = ["connector_task_group", "run_totals", "spark_export_task_group"]


def connector_task_group(connector_config: ConnectorConfigArg, *,
                         group_id: str | None = None, kopycat_conn_id: str = KopycatHook.default_conn_name,
                         worker_overrides: Mapping[str, Any] | None = None, window: WindowMode = "auto",
                         idle_ms: int = 1_000, max_records: int | None = None,
                         max_seconds: float | None = None, copy_retries: int = 2,
                         **copy_kwargs: Any) -> TaskGroup:
    """A task group ``<connector name>``: ``plan`` -> ``copy`` (one mapped task per task config) -> ``summary``.

    The copy tasks retry ``copy_retries`` times (each retry resumes from the committed offsets);
    ``summary`` logs and returns the totals of the run and, once every copy task succeeded, attaches
    the topics the run wrote to the ``kopycat:<connector>`` asset alias. Emitting from ``summary``
    rather than from each copy task means a DAG scheduled on one of those topics starts after the
    whole run: its sinks plan end offsets that include every table of the import, not only the
    tables whose copy task finished first.
    """
    name = connector_name(connector_config)
    return _planned_group(connector_config, group_id, kopycat_conn_id, worker_overrides,
                          lambda common, planned: CopyTaskOperator.partial(
        task_id="copy", window=window, idle_ms=idle_ms, max_records=max_records, max_seconds=max_seconds,
        retries=copy_retries, map_index_template=COPY_LABEL_TEMPLATE, **common, **copy_kwargs,
    ).expand(task_config=planned), outlets=[connector_alias(name)] if name else [])


def spark_export_task_group(connector_config: ConnectorConfigArg, *, group_id: str | None = None,
                            kopycat_conn_id: str = KopycatHook.default_conn_name,
                            spark_conn_id: str = "spark_default", spark_conf: Mapping[str, str] | None = None,
                            worker_overrides: Mapping[str, Any] | None = None, export_retries: int = 2,
                            **export_kwargs: Any) -> TaskGroup:
    """A task group ``<connector name>``: ``plan`` -> ``export`` (one Spark job per task config) -> ``summary``.

    The storage sink's own plan splits its topic-partitions over ``tasks.max`` task configs with
    their end offsets, as for ``connector_task_group``; each mapped ``export`` submits one Spark
    job for its item's partitions (disjoint, so the jobs run side by side up to the DAG's
    concurrency) and commits the group ``connect-<name>`` for them only. A retry
    (``export_retries``) resumes behind the files its own job committed. ``export_kwargs`` go to
    every :class:`SparkExportOperator` (``window``, ``retry_delay``, ``pool``...).
    """
    # Imported here: the Spark path brings the storage sink and its formats (0.4 s a DAG parse),
    # which JDBC and mirror DAGs, parsed by every one of their task processes, never use.
    from kopycat_airflow.operators.spark_export import SparkExportOperator

    return _planned_group(connector_config, group_id, kopycat_conn_id, worker_overrides,
                          lambda common, planned: SparkExportOperator.partial(
        task_id="export", spark_conn_id=spark_conn_id, spark_conf=spark_conf, retries=export_retries,
        map_index_template=COPY_LABEL_TEMPLATE, **common, **export_kwargs,
    ).expand(task_config=planned))


def _planned_group(connector_config: ConnectorConfigArg, group_id: str | None, kopycat_conn_id: str,
                   worker_overrides: Mapping[str, Any] | None,
                   mapped: Callable[[dict[str, Any], XComArg], MappedOperator],
                   outlets: list[AssetAlias] | None = None) -> TaskGroup:
    """``plan`` -> ``mapped(common, plan.output)`` -> ``summary``: the shape both kinds of run share.

    ``common`` holds the keyword arguments the plan and every mapped task take alike; ``outlets``
    are the asset aliases ``summary`` attaches the run's written topics to.
    """
    common = {"connector_config": connector_config, "kopycat_conn_id": kopycat_conn_id,
              "worker_overrides": worker_overrides}
    with TaskGroup(group_id=group_id or connector_name(connector_config) or "kopycat") as group:
        plan = PlanConnectorOperator(task_id="plan", **common)
        summarize_run.override(task_id="summary", outlets=outlets or [])(
            mapped(common, plan.output).output, kopycat_conn_id=kopycat_conn_id, worker_overrides=worker_overrides)
    return group


@task
def summarize_run(summaries: list[dict[str, Any]], kopycat_conn_id: str = KopycatHook.default_conn_name,
                  worker_overrides: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Logs and returns :func:`run_totals`; the topics written go to the task's asset aliases
    (``kafka://<cluster>/<topic>`` events)."""
    total = run_totals(summaries)
    print(f"Kopycat run: {total['records']:,} records over {total['tasks']} task(s)"  # noqa: T201 - task log
          f"{', topics ' + ', '.join(total['topics']) if total['topics'] else ''}")
    context = get_current_context()
    emit_topic_events(context, context["task"].outlets,
                      lambda: KopycatHook(kopycat_conn_id, worker_overrides).cluster,
                      total["topics"], {"records": total["records"], "tasks": total["tasks"]})
    return total


def run_totals(summaries: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Totals over the mapped copy or Spark export tasks of this run (what moved, per task).

    A Spark export's summary has no ``skipped`` or ``bytes`` (the job counts neither), so they add 0.
    """
    summaries = list(summaries)
    return {"tasks": len(summaries), "records": sum(s["records"] for s in summaries),
            "skipped": sum(s.get("skipped", 0) for s in summaries),
            "bytes": sum(s.get("bytes", 0) for s in summaries),
            "topics": sorted({t for s in summaries for t in s.get("topics", [])})}

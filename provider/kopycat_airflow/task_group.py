"""One call that turns a connector config into plan -> mapped copy tasks -> summary.

DESIGN.md §4's shape, so a DAG is a few lines::

    with DAG("shop_import", schedule=CronDataIntervalTimetable("*/5 * * * *", timezone="UTC"), ...):
        connector_task_group("include/shop-jdbc-source.properties")
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from airflow.sdk import TaskGroup, task

from kopycat_airflow.assets import connector_alias
from kopycat_airflow.connector_config import ConnectorConfigArg, connector_name
from kopycat_airflow.hooks.kopycat import KopycatHook
from kopycat_airflow.operators.copy import COPY_LABEL_TEMPLATE, CopyTaskOperator, WindowMode
from kopycat_airflow.operators.plan import PlanConnectorOperator

__all__ = ["connector_task_group"]


def connector_task_group(connector_config: ConnectorConfigArg, *,
                         group_id: str | None = None, kopycat_conn_id: str = KopycatHook.default_conn_name,
                         worker_overrides: Mapping[str, Any] | None = None, window: WindowMode = "auto",
                         idle_ms: int = 1_000, max_records: int | None = None,
                         max_seconds: float | None = None, copy_retries: int = 2,
                         **copy_kwargs: Any) -> TaskGroup:
    """A task group ``<connector name>``: ``plan`` -> ``copy`` (one mapped task per task config) -> ``summary``.

    The copy tasks retry ``copy_retries`` times (each retry resumes from the committed offsets),
    declare the ``kopycat:<connector>`` asset alias as outlet (events name the topics written),
    and ``summary`` logs and returns the totals of the run.
    """
    name = connector_name(connector_config)
    common = {"connector_config": connector_config, "kopycat_conn_id": kopycat_conn_id,
              "worker_overrides": worker_overrides}
    with TaskGroup(group_id=group_id or name or "kopycat") as group:
        plan = PlanConnectorOperator(task_id="plan", **common)
        outlets = [connector_alias(name)] if name else []
        copy = CopyTaskOperator.partial(
            task_id="copy", window=window, idle_ms=idle_ms, max_records=max_records, max_seconds=max_seconds,
            retries=copy_retries, outlets=outlets, map_index_template=COPY_LABEL_TEMPLATE, **common,
            **copy_kwargs,
        ).expand(task_config=plan.output)
        summarize_run.override(task_id="summary")(copy.output)
    return group


@task
def summarize_run(summaries: list[dict[str, Any]]) -> dict[str, Any]:
    """Totals over the mapped copy tasks of this run (what moved, per task)."""
    summaries = list(summaries)
    total = {"tasks": len(summaries), "records": sum(s["records"] for s in summaries),
             "skipped": sum(s["skipped"] for s in summaries), "bytes": sum(s["bytes"] for s in summaries),
             "topics": sorted({t for s in summaries for t in s.get("topics", [])})}
    print(f"Kopycat run: {total['records']:,} records over {total['tasks']} task(s)"  # noqa: T201 - task log
          f"{', topics ' + ', '.join(total['topics']) if total['topics'] else ''}")
    return total


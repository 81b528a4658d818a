"""The figures of the Airflow "Kafka connectors" page: each connector DAG's latest copy tasks.

A worker's REST app serves its live tasks' metrics at ``/metrics``; inside Airflow the tasks run in
worker processes and end, leaving their Kafka Connect metrics in the copy task's summary (XCom
``return_value``). :class:`LatestRunFigures` is a metrics provider (``ConnectMetrics.register``) that
reads, for every stored connector, the copy tasks of its DAG's latest run (``kopycat_connector_<name>``,
map index = task id) and gives their groups through :func:`kopycat.runtime.run_figures.summary_groups`.
The plugin serves them at ``/kopycat/metrics``, so the page (:mod:`kopycat.rest.ui`) shows each task's
throughput, records copied, uncommitted records and last error as ``kopycat rest`` does.

A copy task still running has no summary yet: it writes its figures so far to the status topic every
few seconds (:mod:`kopycat.storage.task_progress`), and those of the latest run's task are shown
instead, so the page follows a long copy as it goes. Kafka carries them because the copy tasks run in
any number of worker processes and hosts, and the API server already reads the status topic.

Runs inside Airflow's API server, which owns the metadata DB, so it uses the ORM directly.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Any, Final

from kopycat.runtime.metrics import GroupValues
from kopycat.runtime.run_figures import summary_groups
from kopycat.storage.task_progress import TaskProgress
from kopycat_airflow.dag_factory import connector_dag_id

__all__ = ["LatestRunFigures"]

log = logging.getLogger(__name__)

_COPY: Final = ".copy"


class LatestRunFigures:
    """Metrics provider: the latest run's copy task summaries of each connector ``connectors()`` names,
    and for its tasks without one yet the figures ``progress(connector)`` holds for that run."""

    def __init__(self, connectors: Callable[[], Iterable[str]],
                 progress: Callable[[str], Iterable[TaskProgress]] = lambda name: ()) -> None:
        self.connectors = connectors
        self.progress = progress

    def __call__(self) -> list[GroupValues]:
        groups: list[GroupValues] = []
        for name in self.connectors():
            dag_id = connector_dag_id(name)
            run_id, summaries = latest_copy_summaries(dag_id)
            done = {s["task"]: s for s in summaries if isinstance(s, dict) and "connector" in s and "task" in s}
            live = {p.task: p.summary for p in self.progress(name) if run_id and p.run == f"{dag_id}/{run_id}"}
            for task in sorted(done.keys() | live.keys()):
                groups += summary_groups(done.get(task) or live[task])
        return groups


def latest_copy_summaries(dag_id: str) -> tuple[str | None, list[Any]]:
    """``dag_id``'s latest run and the XCom return values of its copy tasks, by map index."""
    from airflow.models.dagrun import DagRun
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session
    from sqlalchemy import select

    with create_session() as session:
        run_id = session.scalars(select(DagRun.run_id).where(DagRun.dag_id == dag_id).order_by(DagRun.id.desc())
                                 .limit(1)).first()
        if run_id is None:
            return None, []
        rows = session.scalars(XComModel.get_many(run_id=run_id, dag_ids=dag_id, key="return_value")).all()
        return run_id, [XComModel.deserialize_value(row) for row in sorted(rows, key=lambda r: r.map_index)
                        if row.task_id.endswith(_COPY)]

"""Pause, resume, stop and restart reach a connector's DAG (the herder's RunControl for Airflow).

Each stored connector runs as the DAG ``kopycat_connector_<name>`` (:mod:`kopycat_airflow.dag_factory`):
plan, one mapped copy task per task config (map index = task id), summary. Kafka Connect's herder
acts on its own connector and task threads; here the same calls act on that DAG:

- PAUSED and STOPPED pause the DAG, STARTED unpauses it (the plan also skips a run that is not
  STARTED, so a DAG the scheduler has not parsed yet still honours the target state);
- a restart clears the failed (or upstream-failed) task instances of the DAG's latest run, as
  "Clear failed tasks" does in the UI: the plan for the connector, the copy tasks of the named
  task ids, and the summary after them. A run with nothing failed is left alone: the next
  scheduled run starts every task again anyway.

Runs inside Airflow's API server, which owns the metadata DB, so it uses the ORM directly.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, Final

from kopycat.storage.config_backing_store import TargetState
from kopycat_airflow.dag_factory import connector_dag_id

__all__ = ["AirflowRunControl"]

log = logging.getLogger(__name__)

_COPY: Final = ".copy"
_SUMMARY: Final = ".summary"
_RERUNNABLE: Final = ("failed", "upstream_failed")


class AirflowRunControl:
    """The :class:`~kopycat.rest.run_control.RunControl` of connectors run as DAGs."""

    def target_state_changed(self, name: str, state: TargetState) -> None:
        """Pause the connector's DAG unless it is STARTED."""
        from airflow.models.dag import DagModel
        from airflow.utils.session import create_session
        from sqlalchemy import update

        dag_id, paused = connector_dag_id(name), state is not TargetState.STARTED
        with create_session() as session:
            found = session.execute(update(DagModel).where(DagModel.dag_id == dag_id).values(is_paused=paused))
        log.info("Connector %s is %s: DAG %s %s", name, state.name, dag_id,
                 ("paused" if paused else "unpaused") if getattr(found, "rowcount", 0) else "not parsed yet")

    def restart(self, name: str, *, connector: bool, tasks: Sequence[int]) -> None:
        """Clear the failed task instances of the latest run that the restart names."""
        from airflow.models.dagrun import DagRun
        from airflow.models.taskinstance import clear_task_instances
        from airflow.utils.session import create_session
        from sqlalchemy import select

        dag_id = connector_dag_id(name)
        with create_session() as session:
            run = session.scalars(select(DagRun).where(DagRun.dag_id == dag_id).order_by(DagRun.id.desc())
                                  .limit(1)).first()
            if run is None:
                log.info("Connector %s: DAG %s has no run to restart", name, dag_id)
                return
            chosen = [ti for ti in run.get_task_instances(session=session)
                      if _rerunnable(ti) and _named(ti, connector=connector, tasks=set(tasks))]
            if chosen:
                clear_task_instances(chosen, session)
            log.info("Connector %s: cleared %s of run %s", name,
                     ", ".join(f"{ti.task_id}[{ti.map_index}]" for ti in chosen) or "nothing", run.run_id)


def _rerunnable(ti: Any) -> bool:
    return str(getattr(ti.state, "value", ti.state)) in _RERUNNABLE


def _named(ti: Any, *, connector: bool, tasks: set[int]) -> bool:
    """A connector restart reruns its whole failed run; a task restart its copy task and the summary."""
    if connector or ti.task_id.endswith(_SUMMARY):
        return True
    return ti.task_id.endswith(_COPY) and ti.map_index in tasks

"""The plugin's figures: a finished copy task's summary, else its progress in the same run, else nothing."""

from __future__ import annotations

from typing import Any

import pytest

from kopycat.storage.task_progress import TaskProgress
from kopycat_airflow.dag_factory import connector_dag_id
from kopycat_plugin import airflow_figures
from kopycat_plugin.airflow_figures import LatestRunFigures

SENT = "sink-task-metrics.sink-record-send-total"


def _summary(task: int, records: int) -> dict[str, Any]:
    return {"connector": "orders", "task": task, "records": records, "duration_s": 2.0, "metrics": {SENT: records}}


def test_a_task_without_a_summary_shows_its_progress_in_the_latest_run_only(monkeypatch: pytest.MonkeyPatch) -> None:
    dag_id = connector_dag_id("orders")
    monkeypatch.setattr(airflow_figures, "latest_copy_summaries",
                        lambda asked: ("run-2", [_summary(0, 50)]) if asked == dag_id else (None, []))
    progress = [TaskProgress("orders", 0, f"{dag_id}/run-2", _summary(0, 20)),  # finished since: the summary wins
                TaskProgress("orders", 1, f"{dag_id}/run-2", _summary(1, 7)),  # still copying
                TaskProgress("orders", 2, f"{dag_id}/run-1", _summary(2, 99))]  # an earlier run's last figures
    groups = LatestRunFigures(lambda: ["orders"], lambda name: progress)()
    sent = {g.tags["task"]: g.values["sink-record-send-total"] for g in groups if g.group == "sink-task-metrics"}
    assert sent == {"0": 50, "1": 7}
    rates = {g.tags["task"]: g.values["sink-record-send-rate"] for g in groups if g.group == "sink-task-metrics"}
    assert rates == {"0": 25.0, "1": 3.5}  # records over the run's duration so far


def test_a_connector_whose_dag_never_ran_has_no_figures(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(airflow_figures, "latest_copy_summaries", lambda dag_id: (None, []))
    progress = [TaskProgress("orders", 0, "None/None", _summary(0, 1))]
    assert LatestRunFigures(lambda: ["orders"], lambda name: progress)() == []

"""A dlt source as an Airflow DAG through connector_task_group, unchanged: one copy task per planned task,
and each scheduled run copies only the rows added since the last one.

Real broker, real Airflow (dag.test in the session's served child process), dlt's sql_database on
a SQLite file. Assertions are on the ids in the topics.
"""

from __future__ import annotations

import datetime as dt
import json
import uuid
from pathlib import Path
from typing import Any

import orjson
import pytest

from kopycat_airflow.local import LocalAirflow
from tests.support.kafka import consume_all
from tests.support.sql import create_stamped_tables, insert_stamped

pytestmark = [pytest.mark.integration, pytest.mark.timeout(1800)]

T0 = dt.datetime(2026, 11, 20, 0, 0, 0)
TABLES = ("orders", "customers", "refunds")


def _dag_file(folder: Path, dag_id: str, config: dict[str, Any]) -> None:
    (folder / f"{dag_id}.py").write_text(f'''
import pendulum
from airflow.sdk import DAG
from airflow.timetables.interval import CronDataIntervalTimetable
from kopycat_airflow.task_group import connector_task_group

with DAG({dag_id!r}, schedule=CronDataIntervalTimetable("0 * * * *", timezone="UTC"),
         start_date=pendulum.datetime(2026, 1, 1, tz="UTC"), catchup=False):
    connector_task_group({json.dumps(config)})
''')


def _ids(bootstrap: str, topic: str) -> list[int]:
    return [orjson.loads(v)["payload"]["id"] for v in consume_all(bootstrap, topic) if v is not None]


def test_dlt_sql_database_dag_copies_each_row_once_over_two_scheduled_runs(
        local_airflow: LocalAirflow, bootstrap_servers: str, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'shop.db'}"
    engine, metadata = create_stamped_tables(url, TABLES, 20, T0)
    prefix = f"dlt{uuid.uuid4().hex[:6]}_"
    config = {"name": f"dlt-{uuid.uuid4().hex[:6]}", "connector.class": "kopycat.connectors.dlt.DltSourceConnector",
              "tasks.max": "2", "dlt.source": "dlt.sources.sql_database:sql_database",
              "dlt.args.credentials": url, "dlt.args.table_names": json.dumps(list(TABLES)),
              "dlt.incremental": ",".join(f"{table}:updated_at" for table in TABLES), "topic.prefix": prefix}
    _dag_file(local_airflow.dags_folder, "t_dlt", config)
    try:
        first = local_airflow.run_dag("t_dlt", "2026-11-21T01:00:00Z")
        assert first["state"] == "success", first.get("log")
        copies = first.tasks("copy")
        assert len(copies) == 2
        assert sum(t["result"]["records"] for t in copies) == 3 * 20

        insert_stamped(engine, metadata.tables["orders"], 21, 7, T0)
        insert_stamped(engine, metadata.tables["refunds"], 21, 4, T0)
        second = local_airflow.run_dag("t_dlt", "2026-11-21T02:00:00Z")
        assert second["state"] == "success", second.get("log")
        assert sum(t["result"]["records"] for t in second.tasks("copy")) == 11
    finally:
        engine.dispose()

    for table, rows in [("orders", 27), ("customers", 20), ("refunds", 24)]:
        assert sorted(_ids(bootstrap_servers, prefix + table)) == list(range(1, rows + 1)), table  # duplicates = 0

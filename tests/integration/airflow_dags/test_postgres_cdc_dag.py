"""PostgreSQL CDC under Airflow: scheduled runs against concurrent writers, and a refused backfill.

Real PostgreSQL, real broker, real Airflow (dag.test in a child process). A trigger logs every
write (tests/support/cdc_history.py); the topic must hold that history exactly: each change once,
in commit order per key, over consecutive runs with writes during and between them, including a
transaction of 20,000 changes and deletes. A backfill cannot be served from the log: it fails
naming why and the fix, and copies nothing.
"""

from __future__ import annotations

import json
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from kopycat_airflow.local import LocalAirflow
from tests.support.cdc import connector_props, execute
from tests.support.cdc_history import SCHEMA, Writer, changes, history, per_key
from tests.support.kafka import consume_all, create_topic

pytestmark = [pytest.mark.integration, pytest.mark.timeout(2400)]

DAG_ID = "t_cdc"


def _dag_file(folder: Path, config: dict[str, str]) -> None:
    """Hourly data intervals, one connector task group (plan, then the one CDC copy task)."""
    (folder / f"{DAG_ID}.py").write_text(f'''
import datetime as dt
import pendulum
from airflow.sdk import DAG
from airflow.timetables.interval import CronDataIntervalTimetable
from kopycat_airflow.task_group import connector_task_group

with DAG({DAG_ID!r}, schedule=CronDataIntervalTimetable("0 * * * *", timezone="UTC"),
         start_date=pendulum.datetime(2026, 1, 1, tz="UTC"), catchup=False):
    connector_task_group({json.dumps(config)}, retry_delay=dt.timedelta(seconds=1))
''')


def _copied(run: Any) -> int:
    assert run["state"] == "success", run.get("log")
    [copy] = run.tasks("copy")
    return int(copy["result"]["records"])


def test_scheduled_runs_copy_every_change_once_in_commit_order_and_a_backfill_is_refused(
        local_airflow: LocalAirflow, postgres_url: str, bootstrap_servers: str) -> None:
    run = uuid.uuid4().hex[:8]
    name, prefix, slot = f"cdc-dag-{run}", f"dag{run}", f"slot_dag_{run}"
    topic = create_topic(bootstrap_servers, f"{prefix}.public.items")
    execute(postgres_url, *SCHEMA, f'CREATE PUBLICATION "pub_{slot}" FOR TABLE items',
            f"SELECT pg_create_logical_replication_slot('{slot}', 'pgoutput')")  # the history starts here
    _dag_file(local_airflow.dags_folder, {
        **connector_props(postgres_url, name, prefix, slot), "snapshot.mode": "no_data",
        "key.converter.schemas.enable": "false", "value.converter.schemas.enable": "false"})
    writer = Writer(postgres_url, seed=33)
    writer.write(100)
    copied = []
    writer.start()  # writes during every run but the last, and between all of them
    try:
        copied.append(_copied(local_airflow.run_dag(DAG_ID, "2026-11-21T01:00:00Z")))
        writer.large(10_000)  # one transaction of 20,000 changes
        copied.append(_copied(local_airflow.run_dag(DAG_ID, "2026-11-21T02:00:00Z")))
        writer.delete_every(7)
        copied.append(_copied(local_airflow.run_dag(DAG_ID, "2026-11-21T03:00:00Z")))
    finally:
        writer.halt()
    copied.append(_copied(local_airflow.run_dag(DAG_ID, "2026-11-21T04:00:00Z")))  # what the writer left

    expected, seen = history(postgres_url), changes(bootstrap_servers, topic, committed_only=False)
    assert Counter(op for _, _, op in expected)["d"] > 1_000 and len(expected) > 25_000
    assert Counter(seen) == Counter(expected) and len(seen) == len(expected)  # 0 lost, 0 duplicates
    assert per_key(seen) == per_key(expected), "a key's changes arrived out of commit order"
    tombstones = Counter(op for _, _, op in expected)["d"]
    assert all(n > 0 for n in copied[:3]) and sum(copied) == len(expected) + tombstones, copied
    records = len(consume_all(bootstrap_servers, topic))

    backfill = local_airflow.run_dag(DAG_ID, "2026-11-20T05:00:00Z", conf={"kopycat_window": True})
    assert backfill["state"] == "failed"
    [copy] = backfill.tasks("copy")
    assert copy["state"] == "failed" and copy["try_number"] == 1 and copy["result"] is None  # not retried
    log = Path(backfill["log"]).read_text()
    assert "PostgreSQL CDC cannot copy the past window" in log and "snapshot.mode=initial" in log
    assert len(consume_all(bootstrap_servers, topic)) == records  # nothing copied
    print(f"cdc dag: {len(seen)} changes in runs of {copied} records, 0 lost, 0 duplicates; backfill refused")

"""dlt's sql_database as a source connector against the real broker, run as a user runs it: ``kopycat run``.

Two tables on SQLite (dlt's sqlalchemy backend: dict rows) and on the suite's PostgreSQL (the
pyarrow backend: Arrow tables), each with an incremental cursor, split over two tasks. Two runs
with new rows between: the second writes only the new rows (keys once each, duplicates = 0), and
the state stored in the offsets topic is dlt's incremental state with the last cursor value.
"""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from dlt.common import json as dlt_json

from tests.support.kafka import consume_records
from tests.support.sql import create_stamped_tables, insert_stamped

T0 = dt.datetime(2026, 3, 1, 8, 0)
TABLES = ("orders", "customers")


def _properties(path: Path, props: dict[str, str]) -> Path:
    path.write_text("".join(f"{key}={value}\n" for key, value in props.items()))
    return path


def _kopycat_run(worker: Path, connector: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kopycat.cli", "run", str(worker), str(connector), "--no-progress"],
                          capture_output=True, text=True, timeout=300)


def _naive_utc(value: dt.datetime) -> dt.datetime:
    return value if value.tzinfo is None else value.astimezone(dt.UTC).replace(tzinfo=None)


@pytest.mark.parametrize(("database", "backend"), [("sqlite", "sqlalchemy"), ("postgres", "pyarrow")])
def test_two_runs_copy_each_row_once_and_store_dlts_incremental_state(
        database: str, backend: str, request: pytest.FixtureRequest, tmp_path: Path, worker: dict[str, str],
        bootstrap_servers: str, topic_name: str) -> None:
    url = f"sqlite:///{tmp_path / 'shop.db'}" if database == "sqlite" else request.getfixturevalue("postgres_url")
    engine, metadata = create_stamped_tables(url, TABLES, 5, T0)
    name = f"{topic_name}-dlt"
    worker_file = _properties(tmp_path / "worker.properties", {
        **worker, "key.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter": "org.apache.kafka.connect.json.JsonConverter"})
    connector_file = _properties(tmp_path / "dlt.properties", {
        "name": name, "connector.class": "kopycat.connectors.dlt.DltSourceConnector", "tasks.max": "2",
        "dlt.source": "dlt.sources.sql_database:sql_database", "dlt.args.credentials": url,
        "dlt.args.table_names": json.dumps(list(TABLES)), "dlt.args.backend": backend,
        "dlt.incremental": "orders:updated_at,customers:updated_at", "topic.prefix": f"{topic_name}."})
    try:
        first = _kopycat_run(worker_file, connector_file)
        assert first.returncode == 0, first.stderr[-3000:]
        assert "task 0: 5 records" in first.stdout and "task 1: 5 records" in first.stdout, first.stdout

        for table in TABLES:
            insert_stamped(engine, metadata.tables[table], 6, 3, T0)
        second = _kopycat_run(worker_file, connector_file)
        assert second.returncode == 0, second.stderr[-3000:]
        assert "task 0: 3 records" in second.stdout and "task 1: 3 records" in second.stdout, second.stdout
    finally:
        engine.dispose()

    for table in TABLES:
        stored = consume_records(bootstrap_servers, f"{topic_name}.{table}")
        keys = [json.loads(m.key())["payload"]["id"] for m in stored]
        assert keys == list(range(1, 9)) and max(Counter(keys).values()) == 1
        first_value = json.loads(stored[0].value())["payload"]
        assert first_value["label"] == f"{table}-1"
        assert first_value["updated_at"] == (T0 + dt.timedelta(minutes=1)).replace(tzinfo=dt.UTC).timestamp() * 1000

    offsets = [(json.loads(m.key()), m.value()) for m in consume_records(bootstrap_servers,
                                                                          worker["offset.storage.topic"])]
    for table in TABLES:
        ours = [json.loads(value) for key, value in offsets
                if key == [name, {"dlt_source": "sql_database", "resource": table}]]
        state: dict[str, Any] = dlt_json.typed_loads(ours[-1]["state"])
        assert _naive_utc(state["incremental"]["updated_at"]["last_value"]) == T0 + dt.timedelta(minutes=8)

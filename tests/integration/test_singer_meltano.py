"""Meltano's real PostgreSQL plugins through the Singer connectors, each in its own venv.

``meltanolabs-tap-postgres`` pins an SQLAlchemy Airflow cannot take, so the plugins live in venvs
of their own (:mod:`kopycat.dev.singer_plugins`; .ci/bootstrap installs them). tap-postgres
copies a table of the suite's PostgreSQL with INCREMENTAL replication on its key: two runs with
inserts between copy only the new rows (and the bookmark's row, which the tap's inclusive
bookmark reads again), and the state in connect-offsets is the one the tap
emits. target-postgres, as a sink, loads a topic into a table: its rows equal the topic's.
"""

from __future__ import annotations

import decimal
import json
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import psycopg
import pytest

from kopycat.dev.postgres import SUPERUSER, LocalPostgres
from kopycat.dev.singer_plugins import plugin_executable
from kopycat.runtime.bounded_plan import plan_bounded_run
from kopycat.runtime.bounded_run import run_planned_task
from tests.support.kafka import committed_offsets, consume_records, create_topic
from tests.support.singer_sink import produce_orders

pytestmark = pytest.mark.timeout(900)

TAP = "meltanolabs-tap-postgres==0.10.0"
TARGET = "meltanolabs-target-postgres==0.8.1"


@pytest.fixture
def database(postgres_server: LocalPostgres) -> dict[str, Any]:
    """A fresh database's connection settings, as both plugins take them."""
    name = f"singer_{uuid.uuid4().hex[:10]}"
    postgres_server.create_database(name)
    return {"host": "127.0.0.1", "port": postgres_server.port, "user": SUPERUSER, "password": "unused",
            "database": name, "dsn": postgres_server.dsn(name)}


def _execute(dsn: str, *statements: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as connection:
        for statement in statements:
            connection.execute(statement)


def _settings(prefix: str, database: dict[str, Any]) -> dict[str, str]:
    return {f"{prefix}{key}": str(value) for key, value in database.items() if key != "dsn"}


def _incremental_catalog(tap: Path, database: dict[str, Any], tmp_path: Path) -> Path:
    """tap-postgres's discovered catalog with public-orders alone selected, INCREMENTAL on id."""
    config = tmp_path / "tap.json"
    config.write_text(json.dumps({k: v for k, v in database.items() if k != "dsn"}))
    done = subprocess.run([str(tap), "--config", str(config), "--discover"], capture_output=True, text=True,
                          check=True, timeout=300)
    catalog = json.loads(done.stdout)
    for stream in catalog["streams"]:
        top = next(entry for entry in stream["metadata"] if entry["breadcrumb"] == [])
        top["metadata"]["selected"] = stream["tap_stream_id"] == "public-orders"
        top["metadata"].update({"replication-method": "INCREMENTAL", "replication-key": "id"})
    path = tmp_path / "catalog.json"
    path.write_text(json.dumps(catalog))
    return path


def _properties(path: Path, props: dict[str, str]) -> Path:
    path.write_text("".join(f"{key}={value}\n" for key, value in props.items()))
    return path


def _kopycat_run(worker: Path, connector: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kopycat.cli", "run", str(worker), str(connector), "--no-progress"],
                          capture_output=True, text=True, timeout=600)


def test_tap_postgres_incremental_runs_copy_only_new_rows_and_store_the_taps_state(
        database: dict[str, Any], worker: dict[str, str], bootstrap_servers: str, topic_name: str,
        tmp_path: Path) -> None:
    tap = plugin_executable(TAP, "tap-postgres")
    _execute(database["dsn"], "CREATE TABLE orders (id bigint PRIMARY KEY, customer text NOT NULL, amount numeric)",
             "INSERT INTO orders SELECT i, 'c' || i, i / 100.0 FROM generate_series(1, 20) i")
    catalog = _incremental_catalog(tap, database, tmp_path)
    worker_file = _properties(tmp_path / "worker.properties", {
        **worker, "key.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter": "org.apache.kafka.connect.json.JsonConverter"})
    connector = {"name": f"{topic_name}-pg", "connector.class": "kopycat.connectors.singer.SingerSourceConnector",
                 "singer.tap.executable": str(tap), "singer.tap.catalog": str(catalog),
                 **_settings("singer.tap.config.", database), "topic.prefix": f"{topic_name}."}
    connector_file = _properties(tmp_path / "tap.properties", connector)

    first = _kopycat_run(worker_file, connector_file)
    assert first.returncode == 0, first.stderr[-3000:]
    assert "task 0: 20 records" in first.stdout, first.stdout
    _execute(database["dsn"], "INSERT INTO orders SELECT i, 'c' || i, i / 100.0 FROM generate_series(21, 30) i")
    second = _kopycat_run(worker_file, connector_file)
    assert second.returncode == 0, second.stderr[-3000:]
    # the 10 new rows, and row 20 again: the SDK's SQL taps resume at replication_key >= the bookmark
    # (inclusive, so rows sharing the bookmark's value are never skipped); nothing older comes back
    assert "task 0: 11 records" in second.stdout, second.stdout

    topic = f"{topic_name}.public-orders"
    values = [json.loads(m.value())["payload"] for m in consume_records(bootstrap_servers, topic)]
    assert [v["id"] for v in values] == [*range(1, 21), *range(20, 31)]
    assert values[25] == {"id": 25, "customer": "c25", "amount": 0.25}
    tap_run = subprocess.run([str(tap), "--config", str(tmp_path / "tap.json"), "--catalog", str(catalog)],
                             capture_output=True, text=True, check=True, timeout=300)
    emitted = [json.loads(line)["value"] for line in tap_run.stdout.splitlines() if '"STATE"' in line]
    offsets = [(json.loads(m.key()), json.loads(m.value())) for m in consume_records(
        bootstrap_servers, worker["offset.storage.topic"])]
    stored = [value for key, value in offsets if key == [connector["name"], {"tap": "tap-postgres"}]]
    assert json.loads(stored[-1]["state"]) == emitted[-1]
    assert emitted[-1]["bookmarks"]["public-orders"]["replication_key_value"] == 30


def test_target_postgres_as_a_sink_loads_rows_equal_to_the_topic(
        database: dict[str, Any], bootstrap_servers: str, tmp_path: Path) -> None:
    target = plugin_executable(TARGET, "target-postgres")
    topic = f"orders_{uuid.uuid4().hex[:8]}"  # the stream name is the table name: no '-' (schema-table)
    create_topic(bootstrap_servers, topic, 2)
    produce_orders(bootstrap_servers, topic, range(300))
    connector = {"name": f"pg-{topic}", "connector.class": "kopycat.connectors.singer.SingerSinkConnector",
                 "topics": topic, "singer.target.executable": str(target),
                 **_settings("singer.target.config.", database), "singer.target.config.default_target_schema": "public",
                 "singer.target.config.add_record_metadata": "false", "singer.target.config.activate_version": "false",
                 "key.converter": "org.apache.kafka.connect.json.JsonConverter",
                 "value.converter": "org.apache.kafka.connect.json.JsonConverter"}
    worker = {"bootstrap.servers": bootstrap_servers}
    [planned] = plan_bounded_run(connector, worker)
    assert run_planned_task(connector, planned, worker).error is None

    with psycopg.connect(database["dsn"]) as connection:
        rows = connection.execute(f'SELECT id, customer, amount FROM public."{topic}" ORDER BY id').fetchall()
    assert [row[0] for row in rows] == list(range(300))
    assert rows[123][1:] == ("c26", decimal.Decimal("1.23"))
    assert committed_offsets(bootstrap_servers, f"connect-pg-{topic}", topic, 2) == {0: 150, 1: 150}

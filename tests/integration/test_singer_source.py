"""A Singer tap as a source connector against the real broker, run as a user runs it: ``kopycat run``.

tap-orders (tests/support, built with singer-sdk) reads a SQLite table incrementally. Two runs
with new rows between: the second writes only the new rows; the state stored in the offsets topic
is the last STATE the tap wrote; the topic holds the tap's records (keys, values, schemas as
JsonConverter writes them). A tap that exits non-zero fails the run with its stderr. The tap's
database setting comes through a config provider, as a secret would.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.kafka import consume_records
from tests.support.singer import order_rows, tap_executable

EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def _properties(path: Path, props: dict[str, str]) -> Path:
    path.write_text("".join(f"{key}={value}\n" for key, value in props.items()))
    return path


def _kopycat_run(worker: Path, connector: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kopycat.cli", "run", str(worker), str(connector), "--no-progress"],
                          capture_output=True, text=True, timeout=300)


def _tap_output(tap: Path, database: Path, tmp_path: Path) -> list[dict[str, Any]]:
    """The tap's own messages for the whole table, run without the connector."""
    config = tmp_path / "direct.json"
    config.write_text(json.dumps({"database": str(database), "page_size": 2}))
    done = subprocess.run([str(tap), "--config", str(config)], capture_output=True, text=True, check=True)
    return [json.loads(line) for line in done.stdout.splitlines()]


def _as_json_converter_writes(record: dict[str, Any]) -> dict[str, Any]:
    """A tap record as JsonConverter's payload: Timestamp ms, Date days, decimals as numbers."""
    updated = dt.datetime.fromisoformat(record["updated_at"])
    shipped = record["shipped_on"]
    return {**record, "updated_at": (updated - EPOCH) // dt.timedelta(milliseconds=1),
            "shipped_on": None if shipped is None else (dt.date.fromisoformat(shipped) - EPOCH.date()).days,
            "amount": record["amount"], "price_exact": float(record["price_exact"])}


@pytest.fixture
def setup(tmp_path: Path, worker: dict[str, str], topic_name: str) -> dict[str, Any]:
    from tests.support.singer_orders_tap import insert_orders

    database = tmp_path / "orders.db"
    insert_orders(str(database), order_rows(range(1, 8)))
    tap = tap_executable(tmp_path)
    secrets = _properties(tmp_path / "secrets.properties", {"database": str(database)})
    worker_file = _properties(tmp_path / "worker.properties", {
        **worker, "config.providers": "file",
        "config.providers.file.class": "org.apache.kafka.common.config.provider.FileConfigProvider",
        "key.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter.decimal.format": "NUMERIC"})
    connector = {"name": f"{topic_name}-singer", "connector.class": "kopycat.connectors.singer.SingerSourceConnector",
                 "singer.tap.executable": str(tap), "singer.tap.config.database": f"${{file:{secrets}:database}}",
                 "singer.tap.config.page_size": "2", "topic.prefix": f"{topic_name}."}
    return {"database": database, "tap": tap, "worker": worker_file, "connector": connector,
            "topic": f"{topic_name}.orders"}


def test_two_runs_copy_each_row_once_and_store_the_taps_last_state(
        setup: dict[str, Any], worker: dict[str, str], bootstrap_servers: str, tmp_path: Path) -> None:
    from tests.support.singer_orders_tap import insert_orders

    connector_file = _properties(tmp_path / "singer.properties", setup["connector"])
    first = _kopycat_run(setup["worker"], connector_file)
    assert first.returncode == 0, first.stderr[-3000:]
    assert "task 0: 7 records" in first.stdout, first.stdout

    insert_orders(str(setup["database"]), order_rows(range(8, 11)))
    second = _kopycat_run(setup["worker"], connector_file)
    assert second.returncode == 0, second.stderr[-3000:]
    assert "task 0: 3 records" in second.stdout, second.stdout

    messages = _tap_output(setup["tap"], setup["database"], tmp_path)
    tap_records = [m["record"] for m in messages if m["type"] == "RECORD"]
    stored = consume_records(bootstrap_servers, setup["topic"])
    keys = [json.loads(m.key()) for m in stored]
    values = [json.loads(m.value()) for m in stored]
    assert [k["payload"] for k in keys] == [{"id": r["id"]} for r in tap_records]
    assert [v["payload"] for v in values] == [_as_json_converter_writes(r) for r in tap_records]
    fields = {f["field"]: f for f in values[0]["schema"]["fields"]}
    assert keys[0]["schema"] == {"type": "struct", "optional": False,
                                 "fields": [{"type": "int64", "optional": False, "field": "id"}]}
    assert fields["updated_at"] == {"type": "int64", "optional": False, "version": 1, "field": "updated_at",
                                    "name": "org.apache.kafka.connect.data.Timestamp"}
    assert fields["shipped_on"]["name"] == "org.apache.kafka.connect.data.Date" and fields["shipped_on"]["optional"]
    assert fields["amount"]["parameters"] == {"scale": "2"}
    assert fields["price_exact"]["parameters"] == {"scale": "9"}
    assert fields["customer"]["type"] == "struct" and fields["tags"]["items"] == {"type": "string", "optional": False}

    offsets = [(json.loads(m.key()), m.value()) for m in consume_records(bootstrap_servers, worker[
        "offset.storage.topic"])]
    ours = [json.loads(value) for key, value in offsets if key == [setup["connector"]["name"], {"tap": "tap-orders"}]]
    assert json.loads(ours[-1]["state"]) == [m["value"] for m in messages if m["type"] == "STATE"][-1]


def test_a_tap_exiting_non_zero_fails_the_run_with_its_stderr_tail(setup: dict[str, Any], tmp_path: Path) -> None:
    connector_file = _properties(tmp_path / "failing.properties",
                                 {**setup["connector"], "singer.tap.config.fail_after": "3"})
    failed = _kopycat_run(setup["worker"], connector_file)
    assert failed.returncode != 0
    output = failed.stdout + failed.stderr
    assert "exited with code 1" in output and "the source went away after 3 rows" in output, output[-3000:]


def test_decimal_values_round_trip_through_base64_as_kafka_connect_writes_them(
        setup: dict[str, Any], bootstrap_servers: str, tmp_path: Path) -> None:
    worker_file = Path(setup["worker"])
    worker_file.write_text(worker_file.read_text().replace("value.converter.decimal.format=NUMERIC\n", ""))
    done = _kopycat_run(worker_file, _properties(tmp_path / "singer.properties", setup["connector"]))
    assert done.returncode == 0, done.stderr[-3000:]
    payload = json.loads(consume_records(bootstrap_servers, setup["topic"])[0].value())["payload"]
    assert int.from_bytes(base64.b64decode(payload["amount"]), "big", signed=True) == 125  # 1.25 at scale 2

"""`kopycat standalone` with ``openlineage.*`` sends the run events the Airflow operators send.

A JDBC source reads two SQLite tables through ReplaceField (a rename and a drop) into Kafka; the worker
writes its events with openlineage-python's file transport; after SIGTERM the test reads them back and
checks the datasets (named by the OpenLineage naming spec), the schema facets and the column lineage.
A connector whose task fails ends its run with FAIL when it is removed, its trace the error message.
"""

from __future__ import annotations

import datetime as dt
import json
import signal
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from kopycat.runtime.lineage_events import LineageEmitter
from kopycat.runtime.worker import Worker
from kopycat.storage.offset_backing_store import MemoryOffsetStore
from tests.support.kafka import consume_all, create_topic
from tests.support.sql import create_stamped_tables
from tests.support.standalone import start_worker, write_props

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

ROWS = 7


def _fields(dataset: dict[str, Any]) -> dict[str, str]:
    return {f["name"]: f.get("type") for f in dataset["facets"].get("schema", {}).get("fields", [])}


def _wait_for_rows(bootstrap: str, topics: list[str], log: Path, process: Any) -> None:
    deadline = time.monotonic() + 180
    while any(len(consume_all(bootstrap, topic)) < ROWS for topic in topics):
        assert process.poll() is None, f"worker exited: {log.read_text()[-3000:]}"
        assert time.monotonic() < deadline, log.read_text()[-3000:]
        time.sleep(0.5)


def test_a_standalone_jdbc_source_reports_tables_topics_schemas_and_column_lineage(
        tmp_path: Path, bootstrap_servers: str) -> None:
    tag = uuid.uuid4().hex[:6]
    db = tmp_path / "shop.db"
    tables = ["orders", "refunds"]
    engine, _ = create_stamped_tables(f"sqlite:///{db}", tables, ROWS, dt.datetime(2026, 11, 20))
    engine.dispose()
    prefix = f"sl{tag}_"
    topics = [create_topic(bootstrap_servers, prefix + table) for table in tables]
    events = tmp_path / "openlineage.jsonl"
    worker = write_props(tmp_path / "worker.properties", {
        "bootstrap.servers": bootstrap_servers, "offset.storage.file.filename": str(tmp_path / "offsets"),
        "offset.flush.interval.ms": "200", "openlineage.transport.type": "file",
        "openlineage.transport.log_file_path": str(events), "openlineage.transport.append": "true",
        "openlineage.namespace": "shop-standalone"})
    connector = write_props(tmp_path / "shop.properties", {
        "name": f"shop-{tag}", "connector.class": "io.confluent.connect.jdbc.JdbcSourceConnector",
        "connection.url": f"sqlite:///{db}", "mode": "incrementing", "incrementing.column.name": "id",
        "table.whitelist": ",".join(tables), "topic.prefix": prefix, "tasks.max": "1", "poll.interval.ms": "200",
        "transforms": "rf", "transforms.rf.type": "org.apache.kafka.connect.transforms.ReplaceField$Value",
        "transforms.rf.renames": "label:name", "transforms.rf.exclude": "updated_at"})
    log = tmp_path / "worker.log"
    process = start_worker(worker, connector, log)
    try:
        _wait_for_rows(bootstrap_servers, topics, log, process)
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(60) == 0, log.read_text()[-3000:]

    copied = [json.loads(value or b"null")["payload"] for value in consume_all(bootstrap_servers, topics[0])]
    assert [sorted(row) for row in copied] == [["id", "name"]] * ROWS  # the fields the lineage names

    found = [json.loads(line) for line in events.read_text().splitlines() if line.strip()]
    assert [(e["eventType"], e["job"]["namespace"], e["job"]["name"]) for e in found] == [
        ("START", "shop-standalone", f"shop-{tag}"), ("COMPLETE", "shop-standalone", f"shop-{tag}")]
    start, complete = found
    assert start["run"]["runId"] == complete["run"]["runId"]
    namespace, kafka = f"sqlite:{db}", f"kafka://{bootstrap_servers.split(',')[0]}"
    for event in found:
        inputs = {(d["namespace"], d["name"]): d for d in event["inputs"]}
        outputs = {(d["namespace"], d["name"]): d for d in event["outputs"]}
        assert sorted(inputs) == [(namespace, table) for table in tables]
        assert sorted(outputs) == [(kafka, prefix + table) for table in tables]
        for table in tables:
            assert _fields(inputs[(namespace, table)]) == {  # SQLite's INTEGER is 64 bits
                "id": "int64", "label": "string", "updated_at": "org.apache.kafka.connect.data.Timestamp"}
            topic = outputs[(kafka, prefix + table)]
            assert _fields(topic) == {"id": "int64", "name": "string"}  # renamed, updated_at dropped
            lineage = topic["facets"]["columnLineage"]["fields"]
            assert {out: [(f["namespace"], f["name"], f["field"]) for f in spec["inputFields"]]
                    for out, spec in lineage.items()} == {"id": [(namespace, table, "id")],
                                                          "name": [(namespace, table, "label")]}


def test_a_connector_whose_task_failed_ends_its_run_with_fail_and_the_trace(
        tmp_path: Path, bootstrap_servers: str) -> None:
    events = tmp_path / "openlineage.jsonl"
    props = {"bootstrap.servers": bootstrap_servers, "value.converter": "org.apache.kafka.connect.json.JsonConverter",
             "openlineage.transport.type": "file", "openlineage.transport.log_file_path": str(events),
             "openlineage.transport.append": "true"}
    emitter = LineageEmitter.from_worker_props(props)
    with Worker(props, MemoryOffsetStore(), run_listener=emitter) as worker:
        name = worker.add_connector({
            "name": "bad", "connector.class": "tests.support.counting.CountingSourceConnector", "topic": "x",
            "total": "10", "transforms": "boom", "transforms.boom.type": "ExtractField$Value",
            "transforms.boom.field": "missing"})
        deadline = time.monotonic() + 60
        while worker.status(name)["tasks"][0]["state"] != "FAILED":
            assert time.monotonic() < deadline, worker.status(name)
            time.sleep(0.2)
        worker.remove_connector(name)
        worker.add_connector({"name": "fine", "connector.class": "tests.support.counting.CountingSourceConnector",
                              "topic": f"fine-{uuid.uuid4().hex[:6]}", "total": "3"})
    assert emitter is not None
    emitter.close()

    found = [json.loads(line) for line in events.read_text().splitlines() if line.strip()]
    assert [(e["eventType"], e["job"]["namespace"], e["job"]["name"]) for e in found] == [
        ("START", "kopycat", "bad"), ("FAIL", "kopycat", "bad"), ("START", "kopycat", "fine"),
        ("COMPLETE", "kopycat", "fine")]  # the worker's stop ends the second run
    assert "ExtractField" in found[1]["run"]["facets"]["errorMessage"]["stackTrace"]


def test_a_jdbc_source_finding_a_new_table_ends_its_run_and_starts_one_with_the_new_datasets(
        tmp_path: Path, bootstrap_servers: str) -> None:
    """The connector's table monitor sees ``refunds`` appear and asks for reconfiguration: the run that
    copied ``orders`` completes, and a new run starts whose datasets name both tables and topics."""
    tag = uuid.uuid4().hex[:6]
    db = tmp_path / "shop.db"
    engine, _ = create_stamped_tables(f"sqlite:///{db}", ["orders"], ROWS, dt.datetime(2026, 11, 20))
    prefix = f"sr{tag}_"
    topics = [create_topic(bootstrap_servers, prefix + table) for table in ("orders", "refunds")]
    events = tmp_path / "openlineage.jsonl"
    worker = write_props(tmp_path / "worker.properties", {
        "bootstrap.servers": bootstrap_servers, "offset.storage.file.filename": str(tmp_path / "offsets"),
        "offset.flush.interval.ms": "200", "openlineage.transport.type": "file",
        "openlineage.transport.log_file_path": str(events), "openlineage.transport.append": "true"})
    connector = write_props(tmp_path / "shop.properties", {
        "name": f"shop-{tag}", "connector.class": "io.confluent.connect.jdbc.JdbcSourceConnector",
        "connection.url": f"sqlite:///{db}", "mode": "incrementing", "incrementing.column.name": "id",
        "topic.prefix": prefix, "tasks.max": "1", "poll.interval.ms": "200", "table.poll.interval.ms": "500"})
    log = tmp_path / "worker.log"
    process = start_worker(worker, connector, log)
    try:
        _wait_for_rows(bootstrap_servers, topics[:1], log, process)
        create_stamped_tables(f"sqlite:///{db}", ["refunds"], ROWS, dt.datetime(2026, 11, 21))[0].dispose()
        _wait_for_rows(bootstrap_servers, topics, log, process)
    finally:
        engine.dispose()
        process.send_signal(signal.SIGTERM)
        assert process.wait(60) == 0, log.read_text()[-3000:]

    assert len(consume_all(bootstrap_servers, topics[0])) == ROWS  # the new run resumed orders, no duplicates
    found = [json.loads(line) for line in events.read_text().splitlines() if line.strip()]
    assert [(e["eventType"], e["job"]["name"]) for e in found] == [
        ("START", f"shop-{tag}"), ("COMPLETE", f"shop-{tag}"), ("START", f"shop-{tag}"), ("COMPLETE", f"shop-{tag}")]
    first, second = found[:2], found[2:]
    assert first[0]["run"]["runId"] == first[1]["run"]["runId"] != second[0]["run"]["runId"] == second[1]["run"][
        "runId"]
    namespace, kafka = f"sqlite:{db}", f"kafka://{bootstrap_servers.split(',')[0]}"

    def datasets(event: dict[str, Any]) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
        return (sorted((d["namespace"], d["name"]) for d in event["inputs"]),
                sorted((d["namespace"], d["name"]) for d in event["outputs"]))

    for event in first:
        assert datasets(event) == ([(namespace, "orders")], [(kafka, topics[0])])
    for event in second:
        assert datasets(event) == ([(namespace, "orders"), (namespace, "refunds")],
                                   [(kafka, topics[0]), (kafka, topics[1])])

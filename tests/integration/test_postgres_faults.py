"""PostgreSQL ends a JDBC connector's backend (``pg_terminate_backend``) in the middle of a copy.

What a failover, an administrator or ``idle_in_transaction_session_timeout`` does to a connector:
its connection dies mid-query. Under ``kopycat standalone``, the JDBC source is cut in the middle of
a read and the JDBC sink inside its transaction (rows and offsets commit together in the target
database). The rule: the task recovers by itself (a new connection, the read or the transaction
again from the committed offsets), or fails with a clear error and its rerun completes; 0 rows lost,
and for the sink 0 duplicate rows in its table. Each test asserts the termination landed mid-copy.
"""

from __future__ import annotations

import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import orjson
import pytest
import sqlalchemy as sa
from confluent_kafka import Consumer, TopicPartition

from kopycat.api.data import Schema, SchemaBuilder, Struct
from kopycat.converters.json import JsonConverter
from kopycat.storage.file_offset_store import loads_offsets
from kopycat.storage.offset_codec import decode_value
from tests.support.crashes import Worker, standalone_workers
from tests.support.kafka import consume_records, create_topic, produce
from tests.support.sql import query_rows
from tests.support.standalone import write_props

pytestmark = pytest.mark.timeout(1200)

ROWS = 300_000
JSON = {"key.converter": "org.apache.kafka.connect.json.JsonConverter", "key.converter.schemas.enable": "false",
        "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter.schemas.enable": "false"}
EVENT = (SchemaBuilder.struct().name("event").field("event_id", Schema.INT64_SCHEMA)
         .field("payload", Schema.STRING_SCHEMA).build())


@pytest.fixture
def workers() -> Iterator[Callable[[Path, Path, Path], Worker]]:
    with standalone_workers() as make:
        yield make


def terminate_when(url: str, worker: Worker, landed: Callable[[], int], total: int, table: str,
                   in_transaction: bool) -> tuple[int, int]:
    """Terminate the connector's backends on the test database whose statement names ``table`` and
    that are busy (a read running, or a transaction left open), or with ``in_transaction`` inside a
    transaction (a write), as soon as one is found while ``landed()`` is above 0. ``landed()`` just
    after the termination and the number of backends terminated."""
    wanted = "xact_start IS NOT NULL" if in_transaction else "state <> 'idle'"
    busy = sa.text("SELECT array_agg(pid) FROM pg_stat_activity WHERE datname = current_database() "
                   "AND pid <> pg_backend_pid() AND backend_type = 'client backend' "
                   f"AND query ILIKE '%{table}%' AND {wanted}")
    terminate = sa.text("SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM unnest(:pids) AS pid")
    deadline = time.monotonic() + 300
    engine = sa.create_engine(url, isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as connection:
            # a tight loop on one connection: a sink's transaction lasts a fraction of a second, and the
            # source's read about a second
            attempts = 0
            while True:
                pids = connection.execute(busy).scalar_one()
                if pids and landed() > 0 and (ended := connection.execute(terminate, {"pids": pids}).scalar_one()):
                    return landed(), ended
                attempts += 1
                if attempts % 200 == 0:
                    assert worker.processes[-1].poll() is None, f"worker exited: {worker.tail()}"
                    assert landed() < total, "the copy ended before a termination landed in it"
                    assert time.monotonic() < deadline, f"no backend to terminate mid-copy: {worker.tail()}"
                time.sleep(0.002)
    finally:
        engine.dispose()


def test_a_jdbc_source_whose_backend_is_terminated_mid_read_loses_no_row(
        bootstrap_servers: str, postgres_url: str,
        workers: Callable[[Path, Path, Path], Worker], tmp_path: Path) -> None:
    run = uuid.uuid4().hex[:8]
    engine = sa.create_engine(postgres_url)
    with engine.begin() as connection:
        connection.execute(sa.text("CREATE TABLE items (id BIGSERIAL PRIMARY KEY, label TEXT NOT NULL)"))
        # rows of 300 bytes: the result is far larger than the socket's buffers, so the backend is
        # still sending it while the first rows reach the topic
        connection.execute(sa.text(f"INSERT INTO items (label) SELECT 'item ' || n || repeat('x', 300) "
                                   f"FROM generate_series(1, {ROWS}) n"))
    engine.dispose()
    topic, offsets = f"pg{run}-items", tmp_path / "connect.offsets"
    worker = workers(
        write_props(tmp_path / "worker.properties", {
            "bootstrap.servers": bootstrap_servers, "offset.storage.file.filename": str(offsets),
            "offset.flush.interval.ms": "500", **JSON}),
        write_props(tmp_path / "connector.properties", {
            "name": f"pg-source-{run}",
            "connector.class": "kopycat.connectors.jdbc.source_connector.JdbcSourceConnector",
            "connection.url": postgres_url, "mode": "incrementing", "incrementing.column.name": "id",
            "topic.prefix": f"pg{run}-", "record.key.mode": "primary_key", "batch.max.rows": "1000",
            "table.whitelist": "items"}),
        tmp_path / "worker.log")

    def committed_id() -> int:
        if not offsets.exists():
            return 0
        stored = loads_offsets(offsets.read_bytes(), str(offsets)).values()
        return max((decode_value(v).get("incrementing", 0) for v in stored if v is not None), default=0)

    watermarks = Consumer({"bootstrap.servers": bootstrap_servers, "group.id": f"check-{run}"})

    def copied() -> int:  # one consumer kept open: a few milliseconds a call, so the read is caught running
        return watermarks.get_watermark_offsets(TopicPartition(topic, 0), timeout=30)[1]

    create_topic(bootstrap_servers, topic, 1)
    worker.start()
    try:
        at_kill, ended = terminate_when(postgres_url, worker, copied, ROWS, "", in_transaction=False)
    finally:
        watermarks.close()
    worker.run_to(committed_id, ROWS)
    ids = Counter(orjson.loads(m.key())["id"] for m in consume_records(bootstrap_servers, topic))
    assert 0 < at_kill < ROWS, f"the termination did not land mid-copy: {at_kill} of {ROWS} rows in the topic"
    assert set(ids) == set(range(1, ROWS + 1)), f"{ROWS - len(ids)} rows lost"
    assert worker.saw_error("closed the connection", "terminating connection"), "the task never lost its connection"
    print(f"JDBC source, {ended} backend(s) terminated: {at_kill} of {ROWS} rows in the topic just after the "
          f"termination; 0 lost, {sum(ids.values()) - ROWS} duplicates; worker reruns: {len(worker.failures)}")


def test_a_jdbc_sink_whose_backend_is_terminated_inside_its_transaction_writes_each_row_once(
        bootstrap_servers: str, topic_name: str, postgres_url: str,
        workers: Callable[[Path, Path, Path], Worker], tmp_path: Path) -> None:
    create_topic(bootstrap_servers, topic_name, 1)
    values = JsonConverter()
    values.configure({"schemas.enable": True}, is_key=False)
    produce(bootstrap_servers, topic_name, [values.from_connect_data(topic_name, EVENT, Struct(EVENT).put(
        "event_id", n).put("payload", f"event {n:06d}")) for n in range(ROWS)])
    worker = workers(
        write_props(tmp_path / "worker.properties", {
            "bootstrap.servers": bootstrap_servers, "offset.storage.file.filename": str(tmp_path / "connect.offsets"),
            "offset.flush.interval.ms": "60000", **JSON, "value.converter.schemas.enable": "true",
            "key.converter": "org.apache.kafka.connect.storage.StringConverter"}),
        write_props(tmp_path / "connector.properties", {
            "name": f"pg-sink-{uuid.uuid4().hex[:6]}", "topics": topic_name,
            "connector.class": "kopycat.connectors.jdbc.sink_connector.JdbcSinkConnector",
            "connection.url": postgres_url, "insert.mode": "insert", "pk.mode": "none", "auto.create": "true",
            "table.name.format": "events", "batch.size": "2000"}),
        tmp_path / "worker.log")

    def count() -> int:
        try:
            return query_rows(postgres_url, "SELECT count(*) FROM events")[0][0]
        except sa.exc.ProgrammingError:  # the table is not there yet
            return 0

    worker.start()
    at_kill, ended = terminate_when(postgres_url, worker, count, ROWS, "events", in_transaction=True)
    worker.run_to(count, ROWS)
    total, distinct, low, high = query_rows(
        postgres_url, "SELECT count(*), count(DISTINCT event_id), min(event_id), max(event_id) FROM events")[0]
    assert 0 < at_kill < ROWS, f"the termination did not land mid-copy: {at_kill} of {ROWS} rows in the table"
    assert (total, distinct, low, high) == (ROWS, ROWS, 0, ROWS - 1)
    assert query_rows(postgres_url, "SELECT sum(\"offset\") FROM kopycat_offsets")[0][0] == ROWS
    assert worker.saw_error("closed the connection", "terminating connection"), "the task never lost its connection"
    print(f"JDBC sink, {ended} backend(s) terminated inside a transaction: {at_kill} of {ROWS} rows committed "
          f"at the termination; 0 lost, 0 duplicates; worker reruns: {len(worker.failures)}")

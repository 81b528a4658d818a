"""A windowed (backfill) run of the JDBC sink: the window's rows are written again, upserted,
and neither ``kopycat_offsets`` nor the consumer group moves, so the live runs resume where they were.

Records carry explicit timestamps in two hours; one hour-2 record is stored after hour 3's first
records (a late record), so the window must read on past them to find it.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
import sqlalchemy as sa
from confluent_kafka import Producer

from kopycat.api.data import Schema, SchemaBuilder, Struct
from kopycat.api.errors import ConfigError
from kopycat.api.window import TimeWindow
from kopycat.converters.json import JsonConverter
from kopycat.runtime.bounded_plan import plan_bounded_run
from kopycat.runtime.bounded_run import run_planned_task
from kopycat.runtime.bounds import RunSummary
from tests.support.kafka import committed_offsets, create_topic
from tests.support.sql import query_rows

HOUR = 3_600_000
H1 = 1_767_225_600_000  # 2026-01-01T00:00Z
H2, H3 = H1 + HOUR, H1 + 2 * HOUR
KEY = SchemaBuilder.struct().name("event_key").field("id", Schema.INT64_SCHEMA).build()
VALUE = (SchemaBuilder.struct().name("event").field("id", Schema.INT64_SCHEMA)
         .field("hour", Schema.INT32_SCHEMA).build())
JSON = {"key.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter": "org.apache.kafka.connect.json.JsonConverter"}


def stamped_events() -> list[tuple[int, int]]:
    """(id, timestamp) in produce order: 20 of hour 1, 20 of hour 2, 20 of hour 3 with id 45
    (hour 2) stored among them."""
    events = [(n, H1 + n * 1000) for n in range(20)] + [(n, H2 + n * 1000) for n in range(20, 45)]
    events += [(n, H3 + n * 1000) for n in range(46, 56)] + [(45, H2 + 45 * 1000)]
    return events + [(n, H3 + n * 1000) for n in range(56, 66)]


def produce(bootstrap: str, topic: str, events: list[tuple[int, int]]) -> None:
    keys, values = JsonConverter(), JsonConverter()
    keys.configure({"schemas.enable": True}, is_key=True)
    values.configure({"schemas.enable": True}, is_key=False)
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    for n, stamp in events:
        producer.produce(topic, partition=n % 2, timestamp=stamp,
                         key=keys.from_connect_data(topic, KEY, Struct(KEY).put("id", n)),
                         value=values.from_connect_data(topic, VALUE, Struct(VALUE).put("id", n).put(
                             "hour", (stamp - H1) // HOUR + 1)))
    assert producer.flush(30) == 0


def run_all(props: dict[str, str], worker: dict[str, str], window: TimeWindow | None = None) -> list[RunSummary]:
    return [run_planned_task(props, planned, worker, window=window) for planned in plan_bounded_run(props, worker)]


def test_a_window_upserts_its_rows_again_and_moves_no_offsets(
        bootstrap_servers: str, topic_name: str, tmp_path: Path) -> None:
    create_topic(bootstrap_servers, topic_name, 2)
    events = stamped_events()
    produce(bootstrap_servers, topic_name, events)
    url = f"sqlite:///{tmp_path / 'reporting.db'}"
    name = f"jdbc-window-{uuid.uuid4().hex[:8]}"
    props = {"name": name, "connector.class": "io.confluent.connect.jdbc.JdbcSinkConnector", "topics": topic_name,
             "connection.url": url, "insert.mode": "upsert", "pk.mode": "record_key", "auto.create": "true",
             "table.name.format": "events", **JSON}
    worker = {"bootstrap.servers": bootstrap_servers}
    run_all(props, worker)
    offsets_sql = f"SELECT topic, partition, \"offset\" FROM kopycat_offsets WHERE connector = '{name}'"
    stored = sorted(query_rows(url, offsets_sql))
    group = committed_offsets(bootstrap_servers, f"connect-{name}", topic_name, 2)
    assert query_rows(url, "SELECT count(*) FROM events") == [(len(events),)]
    engine = sa.create_engine(url)
    with engine.begin() as conn:  # hour 2 lost downstream
        conn.execute(sa.text("DELETE FROM events WHERE hour = 2"))
    engine.dispose()

    summaries = run_all(props, worker, TimeWindow(H2, H3))

    hour2 = [n for n, stamp in events if H2 <= stamp < H3]
    assert query_rows(url, "SELECT id FROM events WHERE hour = 2 ORDER BY id") == [(n,) for n in sorted(hour2)]
    assert 45 in hour2 and query_rows(url, "SELECT count(*) FROM events") == [(len(events),)]
    assert sum(s.records for s in summaries) == len(hour2)
    assert sorted(query_rows(url, offsets_sql)) == stored  # the live resume point did not move
    assert committed_offsets(bootstrap_servers, f"connect-{name}", topic_name, 2) == group

    summaries = run_all(props, worker)  # the next live run: nothing new, nothing re-copied
    assert sum(s.records for s in summaries) == 0


def test_a_window_into_plain_inserts_is_refused_before_writing(
        bootstrap_servers: str, topic_name: str, tmp_path: Path) -> None:
    create_topic(bootstrap_servers, topic_name, 2)
    produce(bootstrap_servers, topic_name, stamped_events())
    url = f"sqlite:///{tmp_path / 'reporting.db'}"
    props = {"name": f"jdbc-window-{uuid.uuid4().hex[:8]}",
             "connector.class": "io.confluent.connect.jdbc.JdbcSinkConnector",
             "topics": topic_name, "connection.url": url, "insert.mode": "insert", "auto.create": "true",
             "table.name.format": "events", **JSON}
    with pytest.raises(ConfigError, match=r"insert\.mode.*upsert") as refused:
        run_all(props, {"bootstrap.servers": bootstrap_servers}, TimeWindow(H2, H3))
    assert refused.value.key == "insert.mode"
    assert not sa.inspect(sa.create_engine(url)).has_table("events")

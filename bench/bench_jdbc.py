"""PostgreSQL -> Kafka and Kafka -> PostgreSQL, one task: the JDBC connectors against their limits.

A table of N rows (1,000,000 by default, ``--rows`` to change) of ~100 bytes (id BIGINT primary
key, two INTEGERs, two TEXTs, a NUMERIC(12, 2) and a TIMESTAMP) in the shared PostgreSQL
(``kopycat dev postgres``), moved through the shared broker, one partition:

- *source* (table -> topic): Kopycat's JdbcSourceConnector (Confluent's ``JdbcSourceConnector``),
  ``tasks.max=1``, in ``bulk`` and in ``incrementing`` mode (on ``id``), through
  ``Kopycat.run_once`` with ``Bounds(max_records=N)``. Values go through JsonConverter with
  schemas (Kafka Connect's default), no keys. Its limit is the slower of two anchors:
  ``COPY table TO STDOUT`` read through psycopg (the server's fastest way out: no parsing) and
  a raw confluent-kafka producer sending N values of the connector's mean record size
  (bench_raw_kafka's fair producer: Kopycat's source producer settings, metadata fetched before
  the clock). Goal: >= 0.5x of min(read limit, produce limit), the limit's spread beside. The two
  anchors and the two modes run ``--rounds`` times each (3 by default), taking turns, each into a
  new topic deleted after it, and each one's median run counts (``bench.common.median_rounds``);
  an untimed incrementing run first gives the record size and the sink's input.
- *sink* (topic -> table): that untimed run's topic (the records are produced once, by the
  source) into an empty copy of the table with JdbcSinkConnector (Confluent's
  ``JdbcSinkConnector``), ``insert.mode=upsert``, ``pk.mode=record_value``, ``pk.fields=id``,
  ``Bounds(end_offsets=N)``; against ``COPY ... FROM STDIN`` of the same rows through psycopg
  (from a file an untimed COPY TO wrote). Both copies must then equal the table (EXCEPT).

Times: anchors from the first call to the last row (COPY FROM: to its commit; producer: from
after its creation to its flush); Kopycat around ``run_once`` (connector start, table reflection, client creation and
the final commit included), RunSummary.duration_s shown next to it. CPU is this process's, all
threads: PostgreSQL's and the broker's work is in neither. Peak RSS: this process's during
each mover (VmHWM, reset before it). ``python -m bench.bench_jdbc --profile [--rows N]`` runs
the Kopycat source (incrementing) and sink once more under cProfile (CPU µs per row).
"""

from __future__ import annotations

import contextlib
import tempfile
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
from confluent_kafka import Consumer
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from bench.bench_raw_kafka import raw_produce as fair_produce
from bench.bench_raw_kafka import warm_up
from bench.common import (
    ROUNDS,
    BenchResult,
    Measure,
    Span,
    check_count,
    checked_summary,
    delete_topic,
    measure_row,
    median_rounds,
    parse_into,
    print_results,
    profiled,
    rounds_lines,
    shared_broker,
    shared_postgres,
)
from kopycat.api.records import TopicPartition
from kopycat.connectors.jdbc.sink_connector import JdbcSinkConnector
from kopycat.connectors.jdbc.source_connector import JdbcSourceConnector
from kopycat.dev.postgres import LocalPostgres
from kopycat.embedded import Kopycat
from kopycat.runtime.bounds import Bounds, RunSummary
from kopycat.runtime.task_factory import build_sink_runner, build_source_runner
from kopycat.runtime.task_parts import TaskId
from kopycat.storage.offset_backing_store import MemoryOffsetStore

ROWS = 1_000_000
SOURCE_GOAL = 0.5
TABLE = "bench_rows"
SINK_TABLE = "bench_sink_kopycat"
COPY_TABLE = "bench_sink_copy"
SOURCE_CLASS = "kopycat.connectors.jdbc.source_connector.JdbcSourceConnector"
SINK_CLASS = "kopycat.connectors.jdbc.sink_connector.JdbcSinkConnector"
JSON_CONVERTER = "org.apache.kafka.connect.json.JsonConverter"
JSON_WITH_SCHEMAS = {"key.converter": JSON_CONVERTER, "key.converter.schemas.enable": "true",
                     "value.converter": JSON_CONVERTER, "value.converter.schemas.enable": "true"}
WORKER = {"offset.flush.interval.ms": "60000"}
TIMEOUT_S = 3600.0
CHUNK_BYTES = 1 << 20

CREATE_TABLE = """CREATE TABLE {name} (id BIGINT PRIMARY KEY, customer_id INTEGER NOT NULL,
    quantity INTEGER NOT NULL, status TEXT NOT NULL, label TEXT NOT NULL,
    amount NUMERIC(12, 2) NOT NULL, created TIMESTAMP NOT NULL)"""
FILL_TABLE = """INSERT INTO {name}
    SELECT n, n % 10007, n % 97, (ARRAY['new', 'paid', 'shipped', 'returned'])[n % 4 + 1],
           'order ' || lpad(n::text, 9, '0') || ' for customer ' || (n % 10007) || ' via the web shop',
           (n % 10000000) / 100.0, TIMESTAMP '2024-01-01' + n * INTERVAL '1 second'
    FROM generate_series(1, {rows}) AS n"""


@dataclass(frozen=True)
class Options:
    rows: int = ROWS
    profile: bool = False
    rounds: int = ROUNDS


def parse_options(argv: Sequence[str]) -> Options:
    """``--rows N`` (default 1,000,000), ``--rounds N`` and ``--profile`` (only with ``python -m bench.bench_jdbc``)."""
    return parse_into(Options, argv, bench="jdbc", doc=__doc__, size=("--rows", ROWS, "rows in the table"),
                      switch=("--profile", "run the Kopycat source and sink under cProfile instead of the bench"))


# ------------------------------------------------------------------ the database


@dataclass(frozen=True)
class Database:
    """One fresh database of the shared server: libpq DSN for psycopg, SQLAlchemy URL for Kopycat."""

    dsn: str
    url: str


def prepare(server: LocalPostgres, rows: int) -> Database:
    """A new database with the filled, vacuumed table and two empty tables of its shape.

    VACUUM FREEZE sets the hint bits now, so neither the anchor nor the connector pays for
    them on its first read.
    """
    name = f"bench_jdbc_{uuid.uuid4().hex[:8]}"
    url = server.create_database(name)
    database = Database(server.dsn(name), url)
    with psycopg.connect(database.dsn, autocommit=True) as conn:
        for table in (TABLE, SINK_TABLE, COPY_TABLE):
            conn.execute(CREATE_TABLE.format(name=table).encode())
        conn.execute(FILL_TABLE.format(name=TABLE, rows=int(rows)).encode())
        conn.execute(f"VACUUM (FREEZE, ANALYZE) {TABLE}".encode())
    return database


def copy_out(database: Database, path: Path | None = None) -> Measure:
    """``COPY table TO STDOUT``, each row's bytes dropped (or written to ``path``): the read limit.

    In text format libpq hands out one row per chunk, so chunks are rows.
    """
    rows = 0
    with (psycopg.connect(database.dsn) as conn, conn.cursor() as cursor,
          path.open("wb") if path else contextlib.nullcontext() as out):
        write = out.write if out else None
        with Span() as span, cursor.copy(f"COPY {TABLE} TO STDOUT".encode()) as copy:
            for chunk in copy:
                rows += 1
                if write:
                    write(chunk)
    return Measure.of(f"COPY {TABLE} TO STDOUT (psycopg)", rows, span)


def copy_in(database: Database, path: Path, rows: int) -> Measure:
    """``COPY ... FROM STDIN`` of the file copy_out wrote, in 1 MiB chunks, then commit."""
    with psycopg.connect(database.dsn) as conn, conn.cursor() as cursor, path.open("rb") as source:
        with Span() as span:
            with cursor.copy(f"COPY {COPY_TABLE} FROM STDIN".encode()) as copy:
                while chunk := source.read(CHUNK_BYTES):
                    copy.write(chunk)
            conn.commit()
        check_count(f"rows COPY wrote to {COPY_TABLE}", cursor.rowcount, rows)
    return Measure.of(f"COPY {COPY_TABLE} FROM STDIN (psycopg)", rows, span)


def check_copy(database: Database, table: str, rows: int) -> None:
    """``table`` holds exactly the source table's rows (no more, none different)."""
    with psycopg.connect(database.dsn) as conn:
        count = conn.execute(f"SELECT count(*) FROM {table}".encode()).fetchone()
        differ = conn.execute(f"SELECT count(*) FROM (SELECT * FROM {TABLE} EXCEPT "
                              f"SELECT * FROM {table}) AS d".encode()).fetchone()
    check_count(f"rows in {table}", count[0] if count else -1, rows)
    check_count(f"rows of {TABLE} missing or different in {table}", differ[0] if differ else -1, 0)


# ------------------------------------------------------------------ Kafka


def raw_produce(bootstrap: str, topic: str, rows: int, size: int) -> Measure:
    """``rows`` values of ``size`` bytes by bench_raw_kafka's fair producer: the produce limit."""
    return fair_produce(bootstrap, topic, rows, b"x" * size, f"raw confluent-kafka Producer, {size} B values")


def new_topic(admin: AdminClient, topic: str) -> str:
    """A one-partition topic (the source's topic is ``topic.prefix`` + table, so it is made here)."""
    admin.create_topics([NewTopic(topic, num_partitions=1)])[topic].result(30)
    return topic


def end_offset(bootstrap: str, topic: str) -> int:
    watcher = Consumer({"bootstrap.servers": bootstrap, "group.id": uuid.uuid4().hex})
    try:
        return int(watcher.get_watermark_offsets(KafkaTopicPartition(topic, 0), timeout=30)[1])
    finally:
        watcher.close()


# ------------------------------------------------------------------ Kopycat


def source_props(database: Database, mode: str, prefix: str) -> dict[str, str]:
    """One task on the one table; a poll interval long enough that bulk never reads it twice."""
    props = {"name": f"{prefix}source", "connector.class": SOURCE_CLASS,
             "connection.url": database.url, "mode": mode, "tasks.max": "1",
             "table.whitelist": TABLE, "topic.prefix": prefix, "poll.interval.ms": "3600000",
             **JSON_WITH_SCHEMAS}
    if mode == "incrementing":
        props["incrementing.column.name"] = "id"
    return props


def sink_props(database: Database, topic: str, table: str) -> dict[str, str]:
    return {"name": f"{topic}-sink", "connector.class": SINK_CLASS, "topics": topic,
            "tasks.max": "1", "connection.url": database.url, "insert.mode": "upsert",
            "pk.mode": "record_value", "pk.fields": "id", "table.name.format": table,
            **JSON_WITH_SCHEMAS}


def kopycat_source(bootstrap: str, admin: AdminClient, database: Database, mode: str,
                   rows: int) -> tuple[Measure, str, RunSummary]:
    """One bounded run of ``rows`` records into a new one-partition topic; its topic too."""
    prefix = f"bench-jdbc-{mode}-{uuid.uuid4().hex[:8]}-"
    topic = new_topic(admin, prefix + TABLE)
    with (Kopycat(bootstrap, worker_props=WORKER, offset_store=MemoryOffsetStore()) as kc,
          Span() as span):  # the worker's start is not timed: its run is
        summaries = kc.run_once(source_props(database, mode, prefix), Bounds(max_records=rows),
                                timeout_s=TIMEOUT_S)
    summary = checked_summary(summaries, f"Kopycat JDBC source ({mode})", rows)
    check_count(f"end offset of {topic}", end_offset(bootstrap, topic), rows)
    return Measure.of(f"Kopycat JdbcSource {mode}", rows, span, summary.duration_s), topic, summary


def source_round(bootstrap: str, admin: AdminClient, database: Database, mode: str, rows: int) -> Measure:
    """One timed source run (checked), its topic deleted after."""
    measure, topic, _ = kopycat_source(bootstrap, admin, database, mode, rows)
    delete_topic(admin, topic)
    return measure


def produce_round(bootstrap: str, admin: AdminClient, rows: int, size: int, bench: str = "jdbc") -> Measure:
    """One raw producer run into a new topic (``bench-<bench>-raw-...``), deleted after."""
    topic = new_topic(admin, f"bench-{bench}-raw-{uuid.uuid4().hex[:8]}")
    measure = raw_produce(bootstrap, topic, rows, size)
    delete_topic(admin, topic)
    return measure


def checked_copy_out(database: Database, rows: int) -> Measure:
    read = copy_out(database)
    check_count(f"rows COPY read from {TABLE}", read.count, rows)
    return read


def kopycat_sink(bootstrap: str, database: Database, topic: str, rows: int) -> Measure:
    """The topic's first ``rows`` records upserted into SINK_TABLE, one bounded run."""
    bounds = Bounds(end_offsets={TopicPartition(topic, 0): rows})
    with (Kopycat(bootstrap, worker_props=WORKER, offset_store=MemoryOffsetStore()) as kc,
          Span() as span):
        summaries = kc.run_once(sink_props(database, topic, SINK_TABLE), bounds,
                                timeout_s=TIMEOUT_S)
    summary = checked_summary(summaries, "Kopycat JDBC sink (upsert)", rows)
    return Measure.of("Kopycat JdbcSink upsert", rows, span, summary.duration_s)


# ------------------------------------------------------------------ report


@dataclass(frozen=True)
class Source:
    """The source side's measures: the two anchors and the two Kopycat modes."""

    read: Measure
    produce: Measure
    bulk: Measure
    incrementing: Measure
    row_bytes: float     # mean COPY text line, newline included
    record_bytes: int    # mean record Kopycat produced (RunSummary.bytes / records)

    @property
    def limit(self) -> float:
        """The slower of the two physical limits: the source cannot beat either."""
        return min(self.read.rate, self.produce.rate)


def _header(title: str) -> str:
    return (f"{title}\n  {'mover':<46} {'rows/s':>10} {'wall s':>8} {'CPU s':>7} "
            f"{'RSS MiB':>8} {'summary s':>10}")


def table(source: Source, sink: Measure, copy: Measure) -> str:
    """Both directions: each mover's rate, times and peak RSS, then the ratios asked for."""
    rows = source.read.count
    limit = "read" if source.read.rate <= source.produce.rate else "produce"
    return "\n".join([
        _header(f"PostgreSQL -> Kafka (source): {rows:,} rows, {source.row_bytes:.0f} B as COPY "
                f"text, {source.record_bytes} B as JSON records with schemas; one task"),
        *(measure_row(m) for m in (source.read, source.produce, source.bulk, source.incrementing)),
        *rounds_lines([source.read, source.produce, source.bulk, source.incrementing]),
        (f"  limit min(read, produce) {source.limit:,.0f} rows/s ({limit}); Kopycat/limit: "
         f"bulk {source.bulk.rate / source.limit:.2f}, incrementing "
         f"{source.incrementing.rate / source.limit:.2f} (goal >= {SOURCE_GOAL})"),
        _header(f"Kafka -> PostgreSQL (sink, upsert on id): {rows:,} rows; one task"),
        measure_row(copy), measure_row(sink),
        f"  Kopycat/COPY FROM {sink.rate / copy.rate:.2f}"])


def results(source: Source, sink: Measure, copy: Measure) -> list[BenchResult]:
    """The anchors, each source mode against the limit (with the goal) and the sink against COPY."""
    unit = "rows/s"
    limit_spread = min(source.read, source.produce, key=lambda m: m.rate).spread  # the limiting anchor's
    return [BenchResult("jdbc_pg_copy_to_stdout", source.read.rate, unit=unit, spread=source.read.spread),
            BenchResult(f"jdbc_raw_produce_{source.record_bytes}B", source.produce.rate, unit=unit,
                        spread=source.produce.spread),
            BenchResult("jdbc_source_bulk_vs_limit", source.bulk.rate, source.limit, unit=unit,
                        goal=SOURCE_GOAL, spread=source.bulk.spread, anchor_spread=limit_spread),
            BenchResult("jdbc_source_incrementing_vs_limit", source.incrementing.rate,
                        source.limit, unit=unit, goal=SOURCE_GOAL, spread=source.incrementing.spread,
                        anchor_spread=limit_spread),
            BenchResult("jdbc_pg_copy_from_stdin", copy.rate, unit=unit),
            BenchResult("jdbc_sink_upsert_vs_copy_from", sink.rate, copy.rate, unit=unit)]


def run(argv: Sequence[str] = ()) -> list[BenchResult]:
    """The bench (``python -m bench jdbc [--rows N]``); with ``--profile`` the cProfile report."""
    options = parse_options(argv)
    rows = options.rows
    if options.profile:
        print(profile(rows), flush=True)
        return []
    bootstrap = shared_broker().bootstrap_servers
    admin = AdminClient({"bootstrap.servers": bootstrap})
    database = prepare(shared_postgres(), rows)
    warm_up(bootstrap, admin)
    with tempfile.TemporaryDirectory(prefix="kopycat-bench-jdbc-") as workdir:
        dump = Path(workdir) / f"{TABLE}.copy"
        check_count(f"rows of {TABLE} dumped", copy_out(database, dump).count, rows)  # warms the cache
        # Untimed: the sink's input topic, and the record size the raw producer sends.
        _, topic, summary = kopycat_source(bootstrap, admin, database, "incrementing", rows)
        record_bytes = round(summary.bytes / summary.records)
        read, bulk, incrementing, produce = median_rounds(
            [lambda: checked_copy_out(database, rows), lambda: source_round(bootstrap, admin, database, "bulk", rows),
             lambda: source_round(bootstrap, admin, database, "incrementing", rows),
             lambda: produce_round(bootstrap, admin, rows, record_bytes)], options.rounds)
        sink = kopycat_sink(bootstrap, database, topic, rows)
        check_copy(database, SINK_TABLE, rows)
        copy = copy_in(database, dump, rows)
        check_copy(database, COPY_TABLE, rows)
        source = Source(read, produce, bulk, incrementing, dump.stat().st_size / rows, record_bytes)
    print(table(source, sink, copy), flush=True)
    return results(source, sink, copy)


# ------------------------------------------------------------------ profile


def _profiled(label: str, runner: Any, rows: int) -> str:
    """The run under cProfile (time waiting on the database is left out), its summary checked."""
    summary, report = profiled(label, runner.run, rows, unit="rows")
    checked_summary([summary], label, rows)
    return report


def profile(rows: int) -> str:
    """The incrementing source and the upsert sink, each task run in this thread under cProfile.

    Built as the worker builds them (connector start, task_configs, the task factory), since
    cProfile sees only the thread it runs in and run_once runs tasks in the worker's threads.
    """
    bootstrap = shared_broker().bootstrap_servers
    admin = AdminClient({"bootstrap.servers": bootstrap})
    database = prepare(shared_postgres(), rows)
    warm_up(bootstrap, admin)
    worker = {"bootstrap.servers": bootstrap, **WORKER}
    prefix = f"bench-jdbc-profile-{uuid.uuid4().hex[:8]}-"
    topic = new_topic(admin, prefix + TABLE)
    props = source_props(database, "incrementing", prefix)
    source = JdbcSourceConnector()
    source.start(props)
    [task_props] = source.task_configs(1)
    runner = build_source_runner(TaskId(props["name"], 0), source.task_class(), task_props, props,
                                 worker, MemoryOffsetStore(), Bounds(max_records=rows))
    report = [_profiled("Kopycat JdbcSource incrementing", runner, rows)]
    source.stop()
    props = sink_props(database, topic, SINK_TABLE)
    sink = JdbcSinkConnector()
    sink.start(props)
    [task_props] = sink.task_configs(1)
    runner = build_sink_runner(TaskId(props["name"], 0), sink.task_class(), task_props, props,
                               worker, Bounds(end_offsets={TopicPartition(topic, 0): rows}),
                               assignment=[TopicPartition(topic, 0)])
    report.append(_profiled("Kopycat JdbcSink upsert", runner, rows))
    sink.stop()
    check_copy(database, SINK_TABLE, rows)
    return "\n".join(report)


if __name__ == "__main__":
    print_results(run)

"""PostgreSQL CDC -> Kafka, one task: Kopycat's PostgresConnector against its limits and Debezium's.

The bench_jdbc table (N rows, 200,000 by default, ``--rows``; ~100 bytes: a BIGINT key, two
INTEGERs, two TEXTs, a NUMERIC(12, 2), a TIMESTAMP) in the shared PostgreSQL (``wal_level=logical``),
one-partition topics on the shared broker, JsonConverter with schemas on both sides:

- *snapshot* (``snapshot.mode=initial`` on a new slot, N ``r`` events): Kopycat's bounded run
  (``Kopycat.run_once``, connector start and final commit included) against ``COPY table TO
  STDOUT`` (the read limit, bench_jdbc's) and the raw producer sending N values of Kopycat's mean
  record size (the produce limit); Debezium 3.6.1 (``snapshot.mode=initial_only``) in a real
  Kafka Connect worker, timed from its connector's creation to the topic's N-th record.
- *streaming* (N updates in transactions of 1,000 rows, made once, before the clock, after
  every slot was created): Kopycat (``snapshot.mode=no_data`` on its own slot, a bounded run to
  the WAL's end) against a bare ``pg_logical_slot_peek_binary_changes`` loop over pgoutput through
  a psycopg server-side cursor (the read limit: decoding on the server, no parsing here) and the
  raw producer; Debezium (``snapshot.mode=no_data`` on its own slot, same timing as above).
- *small transactions* (N updates again, 1 to 5 per transaction as OLTP commits them, on slots
  made after the streaming phase's updates): the same movers and anchors as *streaming*.

Goals: >= 0.5x of min(read, produce) and >= 1.0x Debezium, per task. Kopycat and the anchors run
``--rounds`` times taking turns (median counts); Debezium once per phase (its worker starts once,
for the whole bench). ``--no-debezium`` leaves Debezium out. Every copy is checked by its topic's
end offset; slots are dropped at the end.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import psycopg
from confluent_kafka.admin import AdminClient

from bench.bench_jdbc import TABLE, Database, checked_copy_out, end_offset, new_topic, prepare, produce_round
from bench.bench_raw_kafka import warm_up
from bench.common import (
    BenchResult,
    Measure,
    Span,
    check_count,
    delete_topic,
    median_rounds,
    rounds_lines,
    shared_broker,
    shared_postgres,
    size_and_switch,
)
from kopycat.dev.jars import ensure_jars
from kopycat.dev.kafka_connect import ConnectRestError, LocalKafkaConnect
from kopycat.embedded import Kopycat
from kopycat.runtime.bounds import Bounds
from kopycat.storage.offset_backing_store import MemoryOffsetStore

ROWS = 200_000
GOAL_LIMIT = 0.5
GOAL_DEBEZIUM = 1.0
UPDATE_BATCH = 1_000
SMALL_TRANSACTIONS = 5  # the small phase's transactions hold 1, 2, ... this many updates in turn
CONNECTOR = "io.debezium.connector.postgresql.PostgresConnector"
JSON_CONVERTER = "org.apache.kafka.connect.json.JsonConverter"
JSON_WITH_SCHEMAS = {"key.converter": JSON_CONVERTER, "key.converter.schemas.enable": "true",
                     "value.converter": JSON_CONVERTER, "value.converter.schemas.enable": "true"}
PUBLICATION = "bench_cdc"
TIMEOUT_S = 3600.0


@dataclass(frozen=True)
class Options:
    rows: int
    rounds: int
    debezium: bool


def parse_options(argv: Sequence[str]) -> Options:
    """``--rows N`` (default 200,000), ``--rounds N``, ``--no-debezium``."""
    args = size_and_switch(argv, bench="cdc", doc=__doc__, size=("--rows", ROWS, "rows snapshotted, then updated"),
                           switch=("--no-debezium", "leave Debezium's Kafka Connect worker out"), rounds=True)
    return Options(rows=args.rows, rounds=args.rounds, debezium=not args.no_debezium)


# ------------------------------------------------------------------ the database


def sql(database: Database, *statements: str) -> None:
    with psycopg.connect(database.dsn, autocommit=True) as conn:
        for statement in statements:
            conn.execute(statement.encode())


def new_slot(database: Database, label: str) -> str:
    """A pgoutput slot created now: it decodes every commit from here on."""
    slot = f"bench_{label}_{uuid.uuid4().hex[:8]}"
    sql(database, f"SELECT pg_create_logical_replication_slot('{slot}', 'pgoutput')")
    return slot


def drop_slot(database: Database, slot: str) -> None:
    """Drop ``slot`` once no reader holds it (a stopped Connect task lets go within seconds)."""
    deadline = time.monotonic() + 60
    with psycopg.connect(database.dsn, autocommit=True) as conn:
        while True:
            row = conn.execute("SELECT active FROM pg_replication_slots WHERE slot_name = %s", (slot,)).fetchone()
            if row is None:
                return
            if not row[0] or time.monotonic() > deadline:
                conn.execute("SELECT pg_drop_replication_slot(%s)", (slot,))
                return
            time.sleep(0.5)


def update_all(database: Database, rows: int) -> None:
    """``rows`` updates, ``UPDATE_BATCH`` per transaction: what the streaming phase copies.

    Committed synchronously: logical decoding reads only flushed WAL, so the bare peek sees every one."""
    with psycopg.connect(database.dsn, autocommit=True) as conn:
        conn.execute(b"SET synchronous_commit = on")
        for first in range(1, rows + 1, UPDATE_BATCH):
            conn.execute(f"UPDATE {TABLE} SET quantity = quantity + 1 WHERE id BETWEEN %s AND %s".encode(),
                         (first, min(first + UPDATE_BATCH - 1, rows)))


def update_in_small_transactions(database: Database, rows: int) -> None:
    """``rows`` updates, 1 to :data:`SMALL_TRANSACTIONS` per transaction, committed in a server-side
    loop (asynchronously; a synchronous commit after them, of a logical message pgoutput does not
    send, flushes all of them: logical decoding reads flushed WAL only)."""
    with psycopg.connect(database.dsn, autocommit=True) as conn:
        conn.execute(b"SET synchronous_commit = off")
        conn.execute(f"""DO $$ DECLARE first bigint := 1; size int := 1; BEGIN
            WHILE first <= {rows} LOOP
                UPDATE {TABLE} SET quantity = quantity + 1 WHERE id BETWEEN first AND LEAST(first + size - 1, {rows});
                COMMIT;
                first := first + size; size := size % {SMALL_TRANSACTIONS} + 1;
            END LOOP; END $$""".encode())
        conn.execute(b"SET synchronous_commit = on")  # a commit that wrote WAL flushes every one before it
        conn.execute(b"SELECT pg_logical_emit_message(true, 'bench_cdc', 'flush')")


def peek_read(database: Database, slot: str, changes: int) -> Measure:
    """The bare logical-decoding read: every pgoutput message to the WAL's end, changes counted."""
    seen = 0
    with psycopg.connect(database.dsn) as conn, Span() as span:
        cursor = conn.cursor(name="bench_peek")
        cursor.execute("SELECT data FROM pg_logical_slot_peek_binary_changes(%s, NULL, NULL, 'proto_version', "
                       "'1', 'publication_names', %s)", (slot, PUBLICATION))
        while rows := cursor.fetchmany(2000):
            seen += sum(1 for (data,) in rows if data[0:1] in (b"I", b"U", b"D"))
        cursor.close()
    check_count(f"changes peeked from {slot}", seen, changes)
    return Measure.of("pg_logical_slot_peek_binary_changes (psycopg)", seen, span)


# ------------------------------------------------------------------ the movers


def connector_props(database: Database, name: str, prefix: str, slot: str, mode: str) -> dict[str, str]:
    info = psycopg.conninfo.conninfo_to_dict(database.dsn)
    return {"name": name, "connector.class": CONNECTOR, "tasks.max": "1",
            "database.hostname": str(info["host"]), "database.port": str(info["port"]),
            "database.user": str(info["user"]), "database.dbname": str(info["dbname"]),
            "topic.prefix": prefix, "plugin.name": "pgoutput", "slot.name": slot,
            "publication.name": PUBLICATION, "table.include.list": f"public.{TABLE}", "snapshot.mode": mode,
            **JSON_WITH_SCHEMAS}


def kopycat_run(bootstrap: str, admin: AdminClient, database: Database, slot: str, mode: str,
                records: int) -> tuple[Measure, int]:
    """One bounded run on ``slot`` into a new topic (deleted after); the measure and mean record bytes."""
    prefix = f"bench-cdc-{uuid.uuid4().hex[:8]}"
    topic = new_topic(admin, f"{prefix}.public.{TABLE}")
    props = connector_props(database, f"{prefix}-kopycat", prefix, slot, mode)
    with Kopycat(bootstrap, offset_store=MemoryOffsetStore()) as kc, Span() as span:
        [summary] = kc.run_once(props, Bounds(max_seconds=TIMEOUT_S), timeout_s=TIMEOUT_S)
    if summary is None or summary.error is not None:
        raise RuntimeError(f"Kopycat CDC ({mode}) failed: {summary.error if summary else 'no summary'}")
    check_count(f"Kopycat CDC ({mode}) records", summary.records, records)
    check_count(f"end offset of {topic}", end_offset(bootstrap, topic), records)
    delete_topic(admin, topic)
    phase = "snapshot" if mode == "initial" else "streaming"
    return Measure.of(f"Kopycat PostgresConnector {phase}", records, span, summary.duration_s), \
        round(summary.bytes / max(summary.records, 1))


def debezium_run(connect: LocalKafkaConnect, bootstrap: str, admin: AdminClient, database: Database,
                 slot: str, mode: str, records: int) -> Measure:
    """Debezium's connector on ``slot``, from its creation to the topic's ``records``-th record."""
    prefix = f"bench-dbz-{uuid.uuid4().hex[:8]}"
    topic = new_topic(admin, f"{prefix}.public.{TABLE}")
    name = f"{prefix}-debezium"
    with Span() as span:
        connect.create_connector(name, connector_props(database, name, prefix, slot, mode))
        wait_for_end(bootstrap, topic, records, lambda: task_failure(connect, name))
    connect.delete_connector(name)
    delete_topic(admin, topic)
    phase = "snapshot" if mode == "initial_only" else "streaming"
    return Measure.of(f"Debezium 3.6.1 PostgresConnector {phase}", records, span)


def task_failure(connect: LocalKafkaConnect, name: str) -> str | None:
    """The connector's status when it or a task FAILED; None while it runs or has no status yet."""
    try:
        status = connect.connector_status(name)
    except ConnectRestError as exc:
        if exc.status == 404:
            return None
        raise
    return str(status) if "FAILED" in str(status) else None


def wait_for_end(bootstrap: str, topic: str, records: int, failure: Callable[[], str | None]) -> None:
    """Until ``topic`` holds ``records`` records (the status is read every second)."""
    deadline, checked = time.monotonic() + TIMEOUT_S, time.monotonic()
    while (end := end_offset(bootstrap, topic)) < records:
        if time.monotonic() > checked + 1.0:
            checked, failed = time.monotonic(), failure()
            if failed is not None or checked > deadline:
                raise RuntimeError(f"Debezium wrote {end:,} of {records:,} records to {topic}: {failed}")
        time.sleep(0.1)
    check_count(f"end offset of {topic}", end, records)


# ------------------------------------------------------------------ the bench


@dataclass(frozen=True)
class Phase:
    """One phase's measures: the two limits, Kopycat, and Debezium (None when left out)."""

    name: str
    unit: str
    read: Measure
    produce: Measure
    kopycat: Measure
    debezium: Measure | None

    @property
    def limit(self) -> float:
        return min(self.read.rate, self.produce.rate)

    def lines(self) -> list[str]:
        movers = [self.read, self.produce, self.kopycat, *([self.debezium] if self.debezium else [])]
        out = [f"{self.name}: {self.kopycat.count:,} {self.unit.split('/')[0]}; one task",
               *(f"  {m.mover:<48} {m.rate:>10,.0f} {self.unit} {m.wall_s:>8.2f} s" for m in movers),
               *rounds_lines(movers),
               f"  Kopycat/min(read, produce) {self.kopycat.rate / self.limit:.2f} (goal >= {GOAL_LIMIT})"]
        if self.debezium is not None:
            out.append(f"  Kopycat/Debezium {self.kopycat.rate / self.debezium.rate:.2f} (goal >= {GOAL_DEBEZIUM})")
        return out

    def results(self, key: str) -> list[BenchResult]:
        limit_spread = min(self.read, self.produce, key=lambda m: m.rate).spread
        out = [BenchResult(f"cdc_{key}_raw_read", self.read.rate, unit=self.unit, spread=self.read.spread),
               BenchResult(f"cdc_{key}_raw_produce", self.produce.rate, unit=self.unit, spread=self.produce.spread),
               BenchResult(f"cdc_{key}_vs_limit", self.kopycat.rate, self.limit, unit=self.unit, goal=GOAL_LIMIT,
                           spread=self.kopycat.spread, anchor_spread=limit_spread)]
        if self.debezium is not None:
            out.append(BenchResult(f"cdc_{key}_vs_debezium", self.kopycat.rate, self.debezium.rate,
                                   unit=self.unit, goal=GOAL_DEBEZIUM, spread=self.kopycat.spread))
        return out


def run(argv: Sequence[str] = ()) -> list[BenchResult]:
    """``python -m bench cdc [--rows N] [--rounds N] [--no-debezium]``."""
    options = parse_options(argv)
    rows, rounds = options.rows, options.rounds
    bootstrap = shared_broker().bootstrap_servers
    admin = AdminClient({"bootstrap.servers": bootstrap})
    database = prepare(shared_postgres(), rows)
    sql(database, f"CREATE PUBLICATION {PUBLICATION} FOR TABLE {TABLE}")
    warm_up(bootstrap, admin)
    connect = LocalKafkaConnect(bootstrap, name="bench-debezium",
                                extra_settings={"plugin.path": str(ensure_jars("debezium").parent)}) \
        if options.debezium else None
    slots: list[str] = []

    def slot(label: str) -> str:
        slots.append(new_slot(database, label))
        return slots[-1]

    def stream_phase(name: str, stream_slots: list[str], raw_slot: str, dbz_slot: str) -> Phase:
        """The WAL's last ``rows`` updates, read on each slot: the bare read, the producer, Kopycat, Debezium."""
        left = iter(stream_slots)
        read, produce, kopycat = median_rounds(
            [lambda: peek_read(database, raw_slot, rows), lambda: produce_round(bootstrap, admin, rows, size, "cdc"),
             lambda: kopycat_run(bootstrap, admin, database, next(left), "no_data", rows)[0]], rounds)
        debezium = debezium_run(connect, bootstrap, admin, database, dbz_slot, "no_data", rows) if connect else None
        return Phase(name, "changes/s", read, produce, kopycat, debezium)
    try:
        if connect is not None:
            connect.start()
        _, size = kopycat_run(bootstrap, admin, database, slot("warm"), "initial", rows)  # untimed: record size
        read, produce, kopycat = median_rounds(
            [lambda: checked_copy_out(database, rows), lambda: produce_round(bootstrap, admin, rows, size, "cdc"),
             lambda: kopycat_run(bootstrap, admin, database, slot("snap"), "initial", rows)[0]], rounds)
        dbz_snap = f"bench_dbz_snap_{uuid.uuid4().hex[:8]}"  # Debezium creates it, as it would in use
        slots.append(dbz_snap)
        debezium = debezium_run(connect, bootstrap, admin, database, dbz_snap, "initial_only", rows) \
            if connect else None
        snapshot = Phase("PostgreSQL -> Kafka, initial snapshot", "rows/s", read, produce, kopycat, debezium)

        stream_slots = [slot("stream") for _ in range(rounds)]
        raw_slot, dbz_slot = slot("raw"), slot("dbz_stream") if connect else ""
        update_all(database, rows)
        streaming = stream_phase("PostgreSQL -> Kafka, streaming updates", stream_slots, raw_slot, dbz_slot)

        stream_slots = [slot("small") for _ in range(rounds)]
        raw_slot, dbz_slot = slot("raw_small"), slot("dbz_small") if connect else ""
        update_in_small_transactions(database, rows)
        small = stream_phase("PostgreSQL -> Kafka, 1-5 updates per transaction", stream_slots, raw_slot, dbz_slot)
    finally:
        if connect is not None:
            connect.stop()
        for name in slots:
            drop_slot(database, name)
    print("\n".join(snapshot.lines() + streaming.lines() + small.lines()), flush=True)
    return snapshot.results("snapshot") + streaming.results("streaming") + small.results("small_transactions")

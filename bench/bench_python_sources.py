"""SQLite -> Kafka through Python sources: the Singer and dlt source connectors against the tool's own rate.

One SQLite table of N rows (500,000 by default, ``--rows`` to change; a tenth under ``--quick``; at
200,000 a dlt run took 1-1.5 s, too short to steady against a shared machine and a task's start),
the ``orders`` table of the Singer tests' tap (id, an ISO date-time ``updated_at``, a customer name
and email, two decimals as text, a date, a JSON list of tags, a note), copied to the shared broker,
one partition, one task, values through JsonConverter with schemas (Kafka Connect's default):

- *Singer*: Kopycat's SingerSourceConnector running tap-orders (singer-sdk, bench/singer_tap.py:
  10,000-row pages, singer-sdk's STATE every 10,000 records) with ``singer.tap.config.file``; its
  anchor is the same tap's own output, ``tap --config config.json > /dev/null``, a child process
  timed from spawn to exit (the connector's time includes the same tap start-up).
- *dlt*: Kopycat's DltSourceConnector over ``dlt.sources.sql_database:sql_database`` with
  ``backend="pyarrow"`` and with the default backend (sqlalchemy: dict rows); each one's anchor is
  dlt iterating the same source in this process with no Kafka (``for item in source``: the dicts
  counted, the Arrow tables' ``num_rows`` summed), the source built inside the clock as the
  connector builds it inside its run.
- *produce*: per source, bench_raw_kafka's fair raw producer loop (Kopycat's source producer settings,
  metadata fetched before the clock) sending that source's own records: the key and value bytes
  JsonConverter with schemas wrote in an untimed Kopycat run of it (consumed once, before any
  round, so the bytes are built outside the clock).
- *JDBC*: Kopycat's JdbcSourceConnector (Confluent's ``JdbcSourceConnector``) on the same table,
  ``incrementing`` on ``id``: what the Python sources are read against (no goal).

Goal (issue #36): each Kopycat source at least 0.8x of min(its tool's own rate, produce): Kopycat
must not be the bottleneck behind a tap. A tool that reads faster than Kafka takes its records is
limited by the producer, not by Kopycat (dlt's pyarrow backend hands over Arrow tables faster than
one producer sends their JSON records), so the goal is read against the slower of the two limits,
as the JDBC and CDC benches read theirs against min(read, produce); Kopycat/own is printed beside
it. Every anchor and mover runs ``--rounds`` times (3 by default), taking
turns, each Kopycat and produce run into a new topic deleted after it; each one's median run counts
(``bench.common.median_rounds``), spreads beside. Kopycat is timed around ``run_once`` (connector
start, tap or source start, the final commit included), RunSummary.duration_s beside it; each run
must write exactly N records (the summary and the topic's end offset). CPU and peak RSS are this
process's (the tap's, for its anchor; the tap under the connector is a child not counted, nor is the
task process Kopycat runs each task in); every RSS in this process counts the produce anchors' records,
held here for all rounds.
``python -m bench.bench_python_sources --profile [--rows N]`` runs the three Python sources' tasks
once more under cProfile (CPU µs per record, this thread only: not the tap's process).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import sqlite3
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from confluent_kafka.admin import AdminClient

from bench.bench_jdbc import end_offset, new_topic
from bench.bench_raw_kafka import CONSUME_BATCH, assigned_consumer, produce_records, warm_up
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
    num_text,
    parse_into,
    print_results,
    profiled,
    rounds_lines,
    run_child,
    shared_broker,
)
from kopycat.connectors.dlt.source_connector import DltSourceConnector
from kopycat.connectors.singer.source_connector import SingerSourceConnector
from kopycat.embedded import Kopycat
from kopycat.runtime.bounds import Bounds
from kopycat.runtime.task_factory import build_source_runner
from kopycat.runtime.task_parts import TaskId
from kopycat.storage.offset_backing_store import MemoryOffsetStore

ROWS = 500_000
GOAL = 0.8
TABLE = "orders"
PAGE_SIZE = 10_000
TAP_SCRIPT = Path(__file__).with_name("singer_tap.py")
SINGER_CLASS = "kopycat.connectors.singer.SingerSourceConnector"
DLT_CLASS = "kopycat.connectors.dlt.DltSourceConnector"
JDBC_CLASS = "kopycat.connectors.jdbc.source_connector.JdbcSourceConnector"
SQL_DATABASE = "dlt.sources.sql_database:sql_database"
BACKENDS = ("sqlalchemy", "pyarrow")  # sqlalchemy is sql_database's default: it is not passed
JSON_CONVERTER = "org.apache.kafka.connect.json.JsonConverter"
JSON_WITH_SCHEMAS = {"key.converter": JSON_CONVERTER, "key.converter.schemas.enable": "true",
                     "value.converter": JSON_CONVERTER, "value.converter.schemas.enable": "true"}
WORKER = {"offset.flush.interval.ms": "60000"}
TIMEOUT_S = 3600.0
START = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)

CREATE_TABLE = """CREATE TABLE orders (id INTEGER PRIMARY KEY, updated_at TEXT NOT NULL, customer_name TEXT,
    customer_email TEXT, amount TEXT, price_exact TEXT, shipped_on TEXT, tags TEXT, note TEXT)"""


@dataclass(frozen=True)
class Options:
    rows: int = ROWS
    profile: bool = False
    rounds: int = ROUNDS


def parse_options(argv: Sequence[str]) -> Options:
    """``--rows N`` (default 500,000), ``--rounds N`` and ``--profile``."""
    return parse_into(Options, argv, bench="python_sources", doc=__doc__, size=("--rows", ROWS, "rows in the table"),
                      switch=("--profile", "run the Singer and dlt source tasks under cProfile instead"))


# ------------------------------------------------------------------ the table and the tap


def order_rows(rows: int) -> Iterator[tuple[Any, ...]]:
    """Rows as tap-orders reads them: a unique, growing ``updated_at``; null email and note for odd ids."""
    for i in range(1, rows + 1):
        odd = i % 2 == 1
        yield (i, _stamp(i), f"customer {i % 10007}", None if odd else f"c{i}@example.com",
               f"{i * 1.25:.2f}", f"{i}.123456789", None if i % 3 == 0 else f"2026-02-{i % 28 + 1:02d}",
               json.dumps(["a", "b"][: i % 3]), None if odd else f"note {i} via the web shop")


def _stamp(i: int) -> str:
    """The i-th second after 2026-01-01T00:00:00Z as ISO text (a fixed offset: text order is time order)."""
    return (START + dt.timedelta(seconds=i)).isoformat()


def fill(database: Path, rows: int) -> None:
    """The table with ``rows`` rows, in one transaction."""
    with sqlite3.connect(database) as connection:
        connection.execute(CREATE_TABLE)
        connection.executemany(f"INSERT INTO {TABLE} VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", order_rows(rows))
    connection.close()


def tap_executable(directory: Path) -> Path:
    """``tap-orders`` in ``directory``: bench/singer_tap.py run by this interpreter, with the repository root
    on PYTHONPATH (the tap is the tests' tap, imported from tests.support)."""
    path = directory / "tap-orders"
    root = TAP_SCRIPT.resolve().parent.parent
    path.write_text(f'#!/bin/sh\nPYTHONPATH="{root}${{PYTHONPATH:+:$PYTHONPATH}}" exec "{sys.executable}" '
                    f'"{TAP_SCRIPT}" "$@"\n')
    path.chmod(0o755)
    return path


def tap_config(directory: Path, database: Path) -> Path:
    path = directory / "tap-config.json"
    path.write_text(json.dumps({"database": str(database), "page_size": PAGE_SIZE}))
    return path


def tap_records(tap: Path, config: Path, out: Path, err: Path) -> int:
    """The RECORD messages of one untimed tap run written to ``out``: the anchor's runs go to /dev/null."""
    child = run_child([str(tap), "--config", str(config)], os.environ, out, err, TIMEOUT_S)
    _check_exit(child.code, err)
    with out.open() as lines:
        return sum(1 for line in lines if json.loads(line).get("type") == "RECORD")


def _check_exit(code: int, err: Path) -> None:
    if code != 0:
        raise RuntimeError(f"tap-orders exited with {code}: {err.read_text()[-2000:]}")


def tap_to_devnull(tap: Path, config: Path, err: Path, rows: int) -> Measure:
    """``tap --config config.json > /dev/null`` from spawn to exit: the tap's own rate."""
    child = run_child([str(tap), "--config", str(config)], os.environ, Path(os.devnull), err, TIMEOUT_S)
    _check_exit(child.code, err)
    return Measure("tap-orders > /dev/null", rows, child.wall_s, child.cpu_s, child.peak_rss_mib)


# ------------------------------------------------------------------ dlt on its own


def dlt_source(url: str, backend: str) -> Any:
    """sql_database over the table; the default backend (sqlalchemy) is not passed."""
    from dlt.sources.sql_database import sql_database

    extra = {} if backend == "sqlalchemy" else {"backend": backend}
    return sql_database(credentials=url, table_names=[TABLE], **extra)


def items_rows(item: Any) -> int:
    """Rows in one item dlt yields: an Arrow table's ``num_rows``, 1 for a dict row."""
    return int(getattr(item, "num_rows", 1))


def dlt_own(url: str, backend: str, rows: int) -> Measure:
    """dlt iterating sql_database with no pipeline and no Kafka: every item consumed, rows counted."""
    with Span() as span:
        count = sum(items_rows(item) for item in dlt_source(url, backend))
    check_count(f"rows dlt ({backend}) read", count, rows)
    return Measure(f"dlt sql_database {backend}, own iteration", count, span.wall_s, span.cpu_s, span.rss_mib)


# ------------------------------------------------------------------ Kopycat


def singer_props(tap: Path, config: Path, prefix: str) -> dict[str, str]:
    """The tap's settings from a file: ``singer.tap.config.<key>`` keys would cost an extra ``--about`` run."""
    return {"name": f"{prefix}singer", "connector.class": SINGER_CLASS, "singer.tap.executable": str(tap),
            "singer.tap.config.file": str(config), "topic.prefix": prefix, **JSON_WITH_SCHEMAS}


def dlt_props(url: str, backend: str, prefix: str) -> dict[str, str]:
    props = {"name": f"{prefix}dlt", "connector.class": DLT_CLASS, "tasks.max": "1", "dlt.source": SQL_DATABASE,
             "dlt.args.credentials": url, "dlt.args.table_names": json.dumps([TABLE]), "topic.prefix": prefix,
             **JSON_WITH_SCHEMAS}
    if backend != "sqlalchemy":
        props["dlt.args.backend"] = backend
    return props


def jdbc_props(url: str, prefix: str) -> dict[str, str]:
    """One task, ``incrementing`` on id, a poll interval long enough that the table is read once."""
    return {"name": f"{prefix}jdbc", "connector.class": JDBC_CLASS, "connection.url": url, "mode": "incrementing",
            "incrementing.column.name": "id", "tasks.max": "1", "table.whitelist": TABLE, "topic.prefix": prefix,
            "poll.interval.ms": "3600000", **JSON_WITH_SCHEMAS}


def kopycat_run(bootstrap: str, admin: AdminClient, mover: str, props_for: Callable[[str], dict[str, str]],
                rows: int) -> tuple[Measure, str]:
    """One bounded run into a new one-partition topic (checked: N records, end offset N); the topic."""
    prefix = f"bench-py-{uuid.uuid4().hex[:8]}-"
    topic = new_topic(admin, prefix + TABLE)
    with (Kopycat(bootstrap, worker_props=WORKER, offset_store=MemoryOffsetStore()) as kc,
          Span() as span):  # the worker's start is not timed: the run is
        summaries = kc.run_once(props_for(prefix), Bounds(max_records=rows), timeout_s=TIMEOUT_S)
    summary = checked_summary(summaries, mover, rows)
    check_count(f"end offset of {topic}", end_offset(bootstrap, topic), rows)
    return Measure.of(mover, rows, span, summary.duration_s), topic


def kopycat_round(bootstrap: str, admin: AdminClient, mover: str, props_for: Callable[[str], dict[str, str]],
                  rows: int) -> Measure:
    """One timed run (:func:`kopycat_run`), its topic deleted after."""
    measure, topic = kopycat_run(bootstrap, admin, mover, props_for, rows)
    delete_topic(admin, topic)
    return measure


# ------------------------------------------------------------------ the produce limit


Record = tuple[bytes | None, bytes]


def topic_records(bootstrap: str, topic: str, count: int) -> list[Record]:
    """The key and value bytes of ``topic``'s first ``count`` records (one partition), in order."""
    consumer = assigned_consumer(bootstrap, topic)
    records: list[Record] = []
    deadline = time.monotonic() + TIMEOUT_S
    try:
        while len(records) < count and time.monotonic() < deadline:
            records += [(m.key(), m.value() or b"") for m in consumer.consume(CONSUME_BATCH, timeout=1.0)
                        if m.error() is None]
    finally:
        consumer.close()
    check_count(f"records read back from {topic}", len(records), count)
    return records


def source_records(bootstrap: str, admin: AdminClient, mover: str, props_for: Callable[[str], dict[str, str]],
                   rows: int) -> list[Record]:
    """What one untimed Kopycat run of a source wrote (its topic deleted after): the produce anchor's input."""
    _, topic = kopycat_run(bootstrap, admin, mover, props_for, rows)
    records = topic_records(bootstrap, topic, rows)
    delete_topic(admin, topic)
    return records


def produce_round(bootstrap: str, admin: AdminClient, name: str, records: Sequence[Record]) -> Measure:
    """The fair raw producer sending ``records`` into a new one-partition topic, deleted after."""
    topic = new_topic(admin, f"bench-py-raw-{uuid.uuid4().hex[:8]}")
    measure = produce_records(bootstrap, topic, records, f"raw Producer, {name} records")
    check_count(f"records produced to {topic}", measure.count, len(records))
    delete_topic(admin, topic)
    return measure


# ------------------------------------------------------------------ report


@dataclass(frozen=True)
class Pair:
    """A Kopycat source, its tool's own run over the same rows and the raw producer of its records."""

    name: str
    kopycat: Measure
    own: Measure
    produce: Measure

    @property
    def ratio(self) -> float:
        """Kopycat against the tool alone (no goal: a tool faster than Kafka cannot be matched)."""
        return self.kopycat.rate / self.own.rate

    @property
    def limit(self) -> Measure:
        """The slower of the tool's own run and the raw producer: what Kopycat cannot beat."""
        return min(self.own, self.produce, key=lambda m: m.rate)

    @property
    def limited_ratio(self) -> float:
        """Kopycat against :attr:`limit`: the goal's ratio."""
        return self.kopycat.rate / self.limit.rate

    def ratio_lines(self, jdbc: Measure) -> list[str]:
        """Kopycat/own, then Kopycat/min(own, produce) with the goal, each with its spreads."""
        spread = num_text(self.kopycat.spread, ".0%")
        limit = "own" if self.limit is self.own else "produce"
        return [f"  {self.name}: Kopycat/own {self.ratio:.2f} (spreads {spread} / {num_text(self.own.spread, '.0%')})"
                f", Kopycat/JDBC source {self.kopycat.rate / jdbc.rate:.2f}",
                f"  {self.name}: Kopycat/min(own, produce) {self.limited_ratio:.2f} (goal >= {GOAL}; limit "
                f"{limit}; spreads {spread} / {num_text(self.limit.spread, '.0%')})"]


def table(pairs: Sequence[Pair], jdbc: Measure) -> str:
    """Each mover's rate, times and peak RSS, its rounds, then the ratios asked for."""
    movers = [m for pair in pairs for m in (pair.own, pair.produce, pair.kopycat)] + [jdbc]
    return "\n".join([
        f"SQLite -> Kafka through Python sources: {jdbc.count:,} rows of {TABLE}; one task, JSON with schemas",
        f"  {'mover':<46} {'rows/s':>10} {'wall s':>8} {'CPU s':>7} {'RSS MiB':>8} {'summary s':>10}",
        *(measure_row(m) for m in movers),
        *rounds_lines(movers),
        *(line for pair in pairs for line in pair.ratio_lines(jdbc))])


def results(pairs: Sequence[Pair], jdbc: Measure) -> list[BenchResult]:
    """Per source: its tool's own rate and its records' raw produce (anchors), Kopycat against the own
    rate, against the slower of the two (the goal) and against JDBC."""
    unit = "rows/s"
    lines = [BenchResult("py_jdbc_source_sqlite", jdbc.rate, unit=unit, spread=jdbc.spread)]
    for pair in pairs:
        lines += [BenchResult(f"py_{pair.name}_own", pair.own.rate, unit=unit, spread=pair.own.spread),
                  BenchResult(f"py_{pair.name}_raw_produce", pair.produce.rate, unit=unit,
                              spread=pair.produce.spread),
                  BenchResult(f"py_{pair.name}_source_vs_own", pair.kopycat.rate, pair.own.rate, unit=unit,
                              spread=pair.kopycat.spread, anchor_spread=pair.own.spread),
                  BenchResult(f"py_{pair.name}_source_vs_limit", pair.kopycat.rate, pair.limit.rate, unit=unit,
                              goal=GOAL, spread=pair.kopycat.spread, anchor_spread=pair.limit.spread),
                  BenchResult(f"py_{pair.name}_source_vs_jdbc_source", pair.kopycat.rate, jdbc.rate, unit=unit,
                              spread=pair.kopycat.spread, anchor_spread=jdbc.spread)]
    return lines


# ------------------------------------------------------------------ run


@dataclass(frozen=True)
class Setup:
    """The filled database, the tap and its config, in a temporary directory."""

    workdir: Path
    database: Path
    tap: Path
    config: Path
    rows: int

    @property
    def url(self) -> str:
        return f"sqlite:///{self.database}"


def prepare(workdir: Path, rows: int) -> Setup:
    """The table filled, then read once by the tap and by dlt, untimed: the page cache and dlt's imports
    warmed, the counts checked."""
    database = workdir / "orders.db"
    fill(database, rows)
    setup = Setup(workdir, database, tap_executable(workdir), tap_config(workdir, database), rows)
    records = tap_records(setup.tap, setup.config, workdir / "tap.out", workdir / "tap.err")
    check_count("RECORD messages tap-orders wrote", records, rows)
    (workdir / "tap.out").unlink()
    for backend in BACKENDS:  # dlt's imports and first reflection: seconds that would fall on one round
        dlt_own(setup.url, backend, rows)
    return setup


def run(argv: Sequence[str] = ()) -> list[BenchResult]:
    """The bench (``python -m bench python_sources [--rows N]``); with ``--profile`` the cProfile report."""
    options = parse_options(argv)
    with tempfile.TemporaryDirectory(prefix="kopycat-bench-py-") as workdir:
        setup = prepare(Path(workdir), options.rows)
        if options.profile:
            print(profile(setup), flush=True)
            return []
        pairs, jdbc = measure(setup, options.rounds)
    print(table(pairs, jdbc), flush=True)
    return results(pairs, jdbc)


@dataclass(frozen=True)
class Source:
    """One Python source: its name in the results, its tool's own run and Kopycat's connector for it."""

    name: str
    own: Callable[[], Measure]
    mover: str
    props_for: Callable[[str], dict[str, str]]


def sources(setup: Setup) -> list[Source]:
    """The Singer tap and sql_database on each backend."""
    err = setup.workdir / "tap.err"
    found = [Source("singer", partial(tap_to_devnull, setup.tap, setup.config, err, setup.rows),
                    "Kopycat SingerSource tap-orders", partial(singer_props, setup.tap, setup.config))]
    return found + [Source(f"dlt_{backend}", partial(dlt_own, setup.url, backend, setup.rows),
                           f"Kopycat DltSource sql_database {backend}", partial(dlt_props, setup.url, backend))
                    for backend in BACKENDS]


def measure(setup: Setup, rounds: int) -> tuple[list[Pair], Measure]:
    """Every anchor and Kopycat source, ``rounds`` times taking turns, after one untimed Kopycat run per
    source whose records the produce anchor sends."""
    bootstrap = shared_broker().bootstrap_servers
    admin = AdminClient({"bootstrap.servers": bootstrap})
    warm_up(bootstrap, admin)
    rows, movers, found = setup.rows, [], sources(setup)
    for source in found:
        records = source_records(bootstrap, admin, source.mover, source.props_for, rows)
        movers += [source.own, partial(produce_round, bootstrap, admin, source.name, records),
                   partial(kopycat_round, bootstrap, admin, source.mover, source.props_for, rows)]
    movers.append(partial(kopycat_round, bootstrap, admin, "Kopycat JdbcSource incrementing",
                          partial(jdbc_props, setup.url), rows))
    *measured, jdbc = median_rounds(movers, rounds)
    triples = [measured[i:i + 3] for i in range(0, len(measured), 3)]
    return [Pair(source.name, kopycat, own, produce)
            for source, (own, produce, kopycat) in zip(found, triples, strict=True)], jdbc


# ------------------------------------------------------------------ profile


def profile(setup: Setup) -> str:
    """The Singer task and both dlt tasks, each run in this thread under cProfile.

    Built as the worker builds them (connector start, task_configs, the task factory), since
    cProfile sees only the thread it runs in and run_once runs tasks in the worker's threads.
    """
    bootstrap = shared_broker().bootstrap_servers
    admin = AdminClient({"bootstrap.servers": bootstrap})
    warm_up(bootstrap, admin)
    worker = {"bootstrap.servers": bootstrap, **WORKER}
    runs = [("Kopycat SingerSource tap-orders", SingerSourceConnector(),
             lambda p: singer_props(setup.tap, setup.config, p))]
    runs += [(f"Kopycat DltSource sql_database {backend}", DltSourceConnector(), partial(dlt_props, setup.url, backend))
             for backend in BACKENDS]
    reports = []
    for label, connector, props_for in runs:
        prefix = f"bench-py-profile-{uuid.uuid4().hex[:8]}-"
        topic = new_topic(admin, prefix + TABLE)
        props = props_for(prefix)
        connector.start(props)
        [task_props] = connector.task_configs(1)
        runner = build_source_runner(TaskId(props["name"], 0), connector.task_class(), task_props, props,
                                     worker, MemoryOffsetStore(), Bounds(max_records=setup.rows))
        summary, report = profiled(label, runner.run, setup.rows)
        checked_summary([summary], label, setup.rows)
        connector.stop()
        delete_topic(admin, topic)
        reports.append(report)
    return "\n".join(reports)


if __name__ == "__main__":
    print_results(run)

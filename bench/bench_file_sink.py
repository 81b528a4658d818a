"""Kafka -> Parquet files, one task: Kopycat's storage sink against its two physical limits.

N records (1,000,000 by default, ``--records`` to change) of an order STRUCT of ten fields
(id int64, customer and country strings, quantity int32, price Decimal(10, 2) with
``connect.decimal.precision=10``, discount float64, created Timestamp, day Date, active boolean,
note optional string), written with Kopycat's JsonConverter (schemas enabled: Kafka Connect's
envelope) to a fresh topic of two partitions on the shared broker, record n to partition n % 2
(untimed). The consume limit and Kopycat then run ``--rounds`` times each (3 by default), taking
turns, and each one's median run counts (``bench.common.median_rounds``; every round is printed and
checked). Then, once each:

- *consume limit*: bench_raw_kafka's fair consumer (Kopycat's sink consumer settings, with
  ``fetch.queue.backoff.ms``) assigned both partitions, reading all N messages with
  ``consume(5000)`` under Kopycat's collector setting; clock from after the assignment to the Nth
  message;
- *write limit*: the same N rows already in memory as a pyarrow Table (built untimed from the
  Python values, schema ``kopycat.api.arrow.to_arrow_schema`` of the record schema), one timed
  ``pyarrow.parquet.write_table`` to a local temp dir (snappy, the sink's row group size and its
  choice of dictionary columns, ``parquet_dictionary.dictionary_columns``, which is part of the
  write: without it the limit would encode every column twice and be slower than the sink's own);
- *Kopycat*: FileSinkConnector (Confluent's HDFS/S3 sink model) to ``file://`` a temp dir,
  ``tasks.max=1`` (both partitions), ``flush.size=100000``, planned and run as an Airflow copy
  task does (``plan_bounded_run`` snapshots the end offsets, ``run_planned_task`` runs the task
  in this thread to them and commits), each round into a fresh store under a new connector name.
  Timed around ``run_planned_task`` (task start, consumer creation and the final commit included;
  RunSummary.duration_s is shown next to it, and the crossover fits this whole time). Its ratio
  to the limit is over its *copy* (RunSummary.duration_s less start_s: from the consumer made,
  assigned and the group's offsets read to the final commit, the files written), so both
  clocks start at the same point: the consume limit's starts once its consumer is made and
  assigned, and a start-up of a fixed ~0.1-0.2 s, no per-record cost, is not read as a lower
  rate. Each round's files are read back with pyarrow: N
  rows, every id once, equal to the in-memory table. Their count is shown (the same in every
  round), not checked: a bounded run commits every open file at each offset commit
  (``offset.flush.interval.ms``, 60 s), so a long run cuts more files than N / flush.size;
- *Spark*: the bulk sink's job (include/spark/kafka_to_files.py, built by ``spark_export_job``,
  ``local[2]``) over the same offset ranges into its own ``file://`` temp dir. Timed around the
  whole ``spark-submit``: JVM and SparkSession start, schema peek and group commit included, as a
  user pays them; "summary s" is the job's own time, the sum of the Spark jobs' durations as
  DAGScheduler logs them ("Job n finished ... took"). The files are checked as Kopycat's are.
- *crossover*: Kopycat and Spark again over the first N/5 orders only (end offsets cut: order n
  is offset n // 2 of partition n % 2), into fresh stores, checked likewise. Each mover's time is
  fitted through its two runs as t = fixed + n / rate; the line under the table gives both fits
  and the n above which Spark is faster, or says it never is on this machine. Well below the
  default N, Spark's per-record part is within the jitter of its start-up (seconds on a shared
  machine), and so is its fitted rate.

Goal: Kopycat's copy >= 0.5x of min(consume limit, write limit). CPU is this process's, all threads
(the broker's is in none); peak RSS is this process's during each mover (VmHWM, reset before).
Spark runs in child processes: its CPU is the spark-submit process tree's (``os.wait4``'s rusage:
the JVM plus the Python driver and workers it reaped), its RSS the peak of the tree's largest
single process (``ru_maxrss``, in practice the driver JVM), not the sum of them; Linux counts
this process's RSS at the spawn into it, a floor well under the JVM's peak.
``python -m bench file_sink --profile [--records N]`` runs the Kopycat sink under cProfile
instead (CPU µs per record, top 25 by cumulative time).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import os
import re
import tempfile
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from bench.bench_raw_kafka import PRODUCER_SETTINGS, warm_up
from bench.bench_raw_kafka import raw_consume as fair_consume
from bench.common import (
    ROUNDS,
    BenchResult,
    Measure,
    Span,
    check_count,
    measure_row,
    median_rounds,
    parse_into,
    print_results,
    profiled,
    rounds_lines,
    run_child,
    shared_broker,
)
from kopycat.api.arrow import PRECISION_PARAMETER, to_arrow_schema
from kopycat.api.data import Date, Decimal, Schema, SchemaBuilder, Struct, Timestamp
from kopycat.api.records import TopicPartition
from kopycat.connectors.files.committed_files import TEMP_DIR
from kopycat.connectors.files.parquet_dictionary import dictionary_columns
from kopycat.connectors.files.record_formats import ROW_GROUP_ROWS
from kopycat.connectors.files.spark_export import OffsetRange, parse_result, spark_export_job
from kopycat.converters.json import JsonConverter
from kopycat.runtime.bounded_plan import PlannedTask, plan_bounded_run
from kopycat.runtime.bounded_run import run_planned_task
from kopycat.runtime.bounds import RunSummary

RECORDS = 1_000_000
PARTITIONS = 2
FLUSH_SIZE = 100_000
CODEC = "snappy"
GOAL = 0.5
CHUNK = 10_000
TIMEOUT_S = 600.0
SINK_CLASS = "kopycat.connectors.files.FileSinkConnector"
JSON_CONVERTER = "org.apache.kafka.connect.json.JsonConverter"
JSON_WITH_SCHEMAS = {"key.converter": JSON_CONVERTER, "key.converter.schemas.enable": "true",
                     "value.converter": JSON_CONVERTER, "value.converter.schemas.enable": "true"}
WORKER = {"offset.flush.interval.ms": "60000"}  # Kafka Connect's default commit interval
SMALLER = 5  # the crossover's second runs copy the first N / SMALLER orders
SPARK_MASTER = "local[2]"
SPARK_JOB_TOOK = re.compile(r"Job \d+ finished: .*, took ([\d.]+) (ms|s)$", re.MULTILINE)  # DAGScheduler's line

PRICE = Decimal.builder(2).parameter(PRECISION_PARAMETER, "10").build()
ORDER = (SchemaBuilder.struct().name("kopycat.bench.Order")
         .field("id", Schema.INT64_SCHEMA).field("customer", Schema.STRING_SCHEMA)
         .field("country", Schema.STRING_SCHEMA).field("quantity", Schema.INT32_SCHEMA)
         .field("price", PRICE).field("discount", Schema.FLOAT64_SCHEMA)
         .field("created", Timestamp.SCHEMA).field("day", Date.SCHEMA)
         .field("active", Schema.BOOLEAN_SCHEMA).field("note", Schema.OPTIONAL_STRING_SCHEMA)
         .build())
COUNTRIES = ("DE", "FR", "NL", "PL", "SE", "ES", "IT", "US", "BR", "JP", "IN")
BASE = dt.datetime(2026, 11, 1, tzinfo=dt.UTC)


@dataclass(frozen=True)
class Options:
    records: int = RECORDS
    profile: bool = False
    rounds: int = ROUNDS


def parse_options(argv: Sequence[str]) -> Options:
    """``--records N`` (default 1,000,000), ``--rounds N`` and ``--profile`` (the cProfile report instead)."""
    return parse_into(Options, argv, bench="file_sink", doc=__doc__,
                      size=("--records", RECORDS, "records in the topic"),
                      switch=("--profile", "run the Kopycat sink under cProfile instead of the bench"))


# ------------------------------------------------------------------ the records


def order_row(n: int) -> tuple[Any, ...]:
    """Order n's field values in ORDER's field order (Python values: Decimal, datetime, date)."""
    created = BASE + dt.timedelta(seconds=n)
    return (n, f"customer-{n % 10007:05d}", COUNTRIES[n % len(COUNTRIES)], n % 97 + 1,
            Decimal.from_unscaled(n * 7919 % 10_000_000, 2), (n % 20) / 100, created,
            created.date(), n % 3 != 0, None if n % 4 else f"gift wrap for order {n}")


def order_struct(row: Sequence[Any]) -> Struct:
    struct = Struct(ORDER)
    for field, value in zip(ORDER.fields, row, strict=True):
        struct.put(field, value)
    return struct


def order_table(records: int) -> pa.Table:
    """The N rows as one pyarrow Table of ORDER's Arrow schema, built column by column."""
    schema = to_arrow_schema(ORDER)
    batches = []
    for start in range(0, records, CHUNK):
        columns = zip(*(order_row(n) for n in range(start, min(records, start + CHUNK))),
                      strict=True)
        arrays = [pa.array(column, type=field.type) for field, column in zip(schema, columns,
                                                                              strict=True)]
        batches.append(pa.RecordBatch.from_arrays(arrays, schema=schema))
    return pa.Table.from_batches(batches, schema=schema)


def new_topic(admin: AdminClient, prefix: str) -> str:
    topic = f"{prefix}-{uuid.uuid4().hex[:8]}"
    admin.create_topics([NewTopic(topic, num_partitions=PARTITIONS)])[topic].result(30)
    return topic


def produce_orders(bootstrap: str, topic: str, records: int) -> int:
    """N orders in JsonConverter's envelope, order n to partition n % 2; the bytes produced."""
    converter = JsonConverter()
    converter.configure({"schemas.enable": "true"}, is_key=False)
    producer = Producer({"bootstrap.servers": bootstrap, **PRODUCER_SETTINGS})
    total = 0
    for start in range(0, records, CHUNK):
        ids = range(start, min(records, start + CHUNK))
        structs = [order_struct(order_row(n)) for n in ids]
        values = converter.from_connect_data_batch(topic, ORDER, structs)
        for n, value in zip(ids, values, strict=True):
            producer.produce(topic, value, partition=n % PARTITIONS)
            total += len(value or b"")
        producer.poll(0)
    if producer.flush(120) != 0:
        raise RuntimeError(f"the producer left orders to {topic} undelivered after 120 s")
    return total


def first_orders(end_offsets: Mapping[TopicPartition, int], records: int) -> dict[TopicPartition, int]:
    """End offsets that stop after the first ``records`` orders (order n is offset n // 2 of partition n % 2)."""
    cut = {tp: min(end, (records - tp.partition + PARTITIONS - 1) // PARTITIONS) for tp, end in end_offsets.items()}
    check_count("orders below the cut end offsets", sum(cut.values()), records)
    return cut


# ------------------------------------------------------------------ the anchors


def raw_consume(bootstrap: str, topic: str, records: int) -> Measure:
    """All N messages through bench_raw_kafka's fair consumer, assigned both partitions: the consume limit.

    Assigned, not subscribed, as the bounded sink run is: no group join in either clock.
    """
    return fair_consume(bootstrap, topic, records, "raw confluent-kafka Consumer (consume only)")


def write_limit(table: pa.Table, directory: Path) -> Measure:
    """``pyarrow.parquet.write_table`` of the in-memory rows: the write limit."""
    path = directory / "write-limit.parquet"
    with Span() as span:
        pq.write_table(table, path, compression=CODEC, row_group_size=ROW_GROUP_ROWS,
                       use_dictionary=dictionary_columns(table))
    check_count(f"rows in {path}", pq.ParquetFile(path).metadata.num_rows, table.num_rows)
    return Measure.of(f"pyarrow.parquet.write_table ({CODEC}, 1 file)", table.num_rows, span)


# ------------------------------------------------------------------ Kopycat


def sink_props(name: str, topic: str, store_url: str) -> dict[str, str]:
    """One task for both partitions, Parquet (snappy) every FLUSH_SIZE records of a partition."""
    return {"name": name, "connector.class": SINK_CLASS, "topics": topic, "tasks.max": "1",
            "store.url": store_url, "format.class": "parquet", "parquet.codec": CODEC,
            "flush.size": str(FLUSH_SIZE), **JSON_WITH_SCHEMAS}


def plan_sink(bootstrap: str, topic: str, store: Path,
              records: int) -> tuple[dict[str, str], dict[str, str], PlannedTask]:
    """Connector props, worker props and the one planned task, its end offsets checked."""
    props = sink_props(f"bench-file-sink-{uuid.uuid4().hex[:8]}", topic, store.as_uri())
    worker = {"bootstrap.servers": bootstrap, **WORKER}
    [planned] = plan_bounded_run(props, worker)
    check_count(f"records planned from {topic}", sum(planned.end_offsets.values()), records)
    return props, worker, planned


def _summary(summary: RunSummary, records: int) -> RunSummary:
    if summary.error is not None:
        raise RuntimeError(f"the Kopycat file sink failed: {summary.error}")
    check_count("records the Kopycat file sink copied", summary.records, records)
    return summary


def kopycat_sink(props: Mapping[str, str], worker: Mapping[str, str], planned: PlannedTask,
                 records: int) -> Measure:
    """The bounded run of the one planned sink task, in this thread."""
    with Span() as span:
        summary = run_planned_task(props, planned, worker)
    _summary(summary, records)
    return Measure.of_run(f"Kopycat FileSink (parquet, flush.size {FLUSH_SIZE})", records, span, summary)


def kopycat_first(bootstrap: str, topic: str, store: Path, records: int,
                  first: Mapping[TopicPartition, int]) -> Measure:
    """Kopycat's sink over the first orders only: planned as usual, then its end offsets cut to ``first``."""
    props, worker, planned = plan_sink(bootstrap, topic, store, records)
    cut = dataclasses.replace(planned, end_offsets={f"{tp.topic}:{tp.partition}": end for tp, end in first.items()})
    return kopycat_sink(props, worker, cut, sum(first.values()))


def committed_files(store: Path) -> list[Path]:
    """The Parquet files the sink committed (not those under its temporary directory)."""
    return sorted(p for p in store.rglob("*.parquet") if TEMP_DIR not in p.parts)


def check_files(store: Path, expected: pa.Table) -> int:
    """The committed files hold exactly ``expected``'s rows (each id once); their count."""
    files = committed_files(store)
    table = pa.concat_tables(pq.read_table(path) for path in files) if files else None
    rows = 0 if table is None else table.num_rows
    check_count(f"rows in the {len(files)} files under {store}", rows, expected.num_rows)
    if table is None:
        return 0
    check_count("distinct ids in the files", pc.count_distinct(table.column("id")).as_py(), rows)
    if not table.sort_by("id").equals(expected, check_metadata=False):
        raise RuntimeError(f"the files under {store} hold other values than the orders produced")
    return len(files)


# ------------------------------------------------------------------ Spark


def spark_job_seconds(log: str) -> float | None:
    """The Spark jobs' own time: the sum of DAGScheduler's "Job n finished ... took"; None if not logged."""
    took = [float(value) / (1000 if unit == "ms" else 1) for value, unit in SPARK_JOB_TOOK.findall(log)]
    return sum(took) if took else None


def _log_end(text: str, lines: int = 30) -> str:
    kept = [line for line in text.splitlines() if " INFO " not in line and not line.startswith("\t")]
    return "\n".join(kept[-lines:])


def spark_export_measure(bootstrap: str, end_offsets: Mapping[TopicPartition, int], store: Path) -> Measure:
    """The Spark export job (local[2]) over ``[0, end)`` of each partition into ``store``.

    Run as ``run_spark_export`` runs it (``job.command()``, ``job.env``), but reaped here for its
    rusage and with its log kept for the jobs' own time. Its result must account for every record.
    """
    ranges = [OffsetRange(tp.topic, tp.partition, 0, end) for tp, end in sorted(end_offsets.items())]
    records = sum(end_offsets.values())
    job = spark_export_job(ranges, store_url=store.as_uri(), connector_name=f"bench-spark-{uuid.uuid4().hex[:8]}",
                           bootstrap_servers=bootstrap, master=SPARK_MASTER)
    out, err = store.with_name(f"{store.name}.out"), store.with_name(f"{store.name}.err")
    child = run_child(job.command(), {**os.environ, **job.env}, out, err, TIMEOUT_S)
    if child.code != 0:
        raise RuntimeError(f"spark-submit of {job.name} exited with {child.code} after {child.wall_s:.0f} s "
                           f"(killed at {TIMEOUT_S:.0f} s); the end of its log:\n{_log_end(err.read_text())}\n"
                           f"{_log_end(out.read_text())}")
    result = parse_result(out.read_text())
    check_count(f"rows {job.name} reports in its {len(result.files)} files", sum(f.rows for f in result.files),
                records)
    return Measure(f"Spark export job ({SPARK_MASTER}, spark-submit)", records, child.wall_s, child.cpu_s,
                   child.peak_rss_mib, spark_job_seconds(err.read_text() + out.read_text()))


# ------------------------------------------------------------------ report


@dataclass(frozen=True)
class Fit:
    """A mover's time as a fixed cost plus a per-record one, t = fixed_s + n / rate, through two runs."""

    fixed_s: float
    rate: float

    @classmethod
    def through(cls, small: Measure, large: Measure) -> Fit | None:
        """None when the larger run was not slower (noise on a shared machine): no per-record cost to fit."""
        if large.count <= small.count or large.wall_s <= small.wall_s:
            return None
        rate = (large.count - small.count) / (large.wall_s - small.wall_s)
        return cls(large.wall_s - large.count / rate, rate)

    def __str__(self) -> str:
        return f"{self.fixed_s:.1f} s + n / {self.rate:,.0f}/s"


@dataclass(frozen=True)
class Report:
    """The run's measures and what the bench checked."""

    consume: Measure
    write: Measure
    kopycat: Measure
    spark: Measure
    record_bytes: float   # mean JSON record, envelope included
    files: tuple[int, ...]  # files the Kopycat sink committed, per round
    spark_files: int      # files the Spark job committed
    kopycat_small: Measure  # the crossover's runs over the first N / SMALLER orders
    spark_small: Measure

    @property
    def limit(self) -> float:
        """The slower physical limit: the sink can beat neither reading nor writing."""
        return min(self.consume.rate, self.write.rate)

    @property
    def limited_by(self) -> str:
        return "consume" if self.consume.rate <= self.write.rate else "write"

    @property
    def fits(self) -> tuple[Fit | None, Fit | None]:
        """Kopycat's and Spark's t = fixed + n / rate."""
        return Fit.through(self.kopycat_small, self.kopycat), Fit.through(self.spark_small, self.spark)


def crossover(report: Report) -> str:
    """Both fits and the volume above which Spark's lower per-record cost pays for its start-up."""
    kopycat, spark = report.fits
    runs = f"runs of {report.kopycat.count:,} and {report.kopycat_small.count:,} records"
    if kopycat is None or spark is None:
        slow = "Kopycat's" if kopycat is None else "Spark's"
        return f"  crossover not measurable: {slow} larger run was not slower ({runs})"
    return f"  crossover (t = fixed + n / rate, {runs}): Kopycat {kopycat}, Spark {spark}; {_verdict(kopycat, spark)}"


def _verdict(kopycat: Fit, spark: Fit) -> str:
    gap = spark.fixed_s - kopycat.fixed_s  # Spark's extra start-up
    saved = 1 / kopycat.rate - 1 / spark.rate  # per record, by Spark
    if gap <= 0 and saved >= 0:
        return "Spark is faster at any volume"
    if saved > 0:
        return f"Spark is faster above {gap / saved:,.0f} records"
    if gap < 0:
        return f"Spark is faster only below {gap / saved:,.0f} records"
    return (f"Spark is not faster at any volume on this machine: its per-record rate {spark.rate:,.0f} "
            f"< Kopycat's {kopycat.rate:,.0f}")


def table(report: Report) -> str:
    """Each mover's rate, times and peak RSS, the limit, the ratio, the files checked, the crossover."""
    records = report.kopycat.count
    ratio = report.kopycat.copy_rate / report.limit
    return "\n".join([
        (f"Kafka -> Parquet files: {records:,} records in {PARTITIONS} partitions, "
         f"{report.record_bytes:.0f} B as JSON with schemas; one task"),
        (f"  {'mover':<46} {'records/s':>10} {'wall s':>8} {'CPU s':>7} {'RSS MiB':>8} "
         f"{'summary s':>10}"),
        measure_row(report.consume), measure_row(report.write), measure_row(report.kopycat), measure_row(report.spark),
        *rounds_lines([report.consume, report.kopycat]),
        *copy_line(report.kopycat),
        (f"  limit min(consume, write) {report.limit:,.0f} records/s ({report.limited_by}); "
         f"Kopycat/limit {ratio:.2f} (goal >= {GOAL})"),
        (f"  Kopycat committed {'/'.join(map(str, report.files))} files (per round): {records:,} rows "
         f"read back each, ids unique, values as produced"),
        (f"  Spark committed {report.spark_files} files: {records:,} rows read back, ids unique, "
         f"values as produced"),
        crossover(report)])


def copy_line(kopycat: Measure) -> list[str]:
    """Kopycat's copy alone, read against the limit: its clock starts where the raw consumer's does."""
    if kopycat.copy_s is None or kopycat.duration_s is None:
        return []
    start_s = kopycat.duration_s - kopycat.copy_s
    return [f"  Kopycat copy {kopycat.copy_rate:,.0f} records/s: {kopycat.copy_s:.2f} s of its "
            f"{kopycat.duration_s:.2f} s run after {start_s:.2f} s of start "
            f"(consumer made and assigned, group offsets read, task started)"]


def results(report: Report) -> list[BenchResult]:
    """The two anchors, the sink against the slower of them (with the goal), Spark against it
    too and, when both fits exist, Spark's per-record rate against Kopycat's."""
    limiting = report.consume if report.consume.rate <= report.write.rate else report.write
    found = [BenchResult("file_sink_raw_consume", report.consume.rate, spread=report.consume.spread),
             BenchResult("file_sink_parquet_write_table", report.write.rate, spread=report.write.spread),
             BenchResult("file_sink_parquet_vs_limit", report.kopycat.copy_rate, report.limit,
                         goal=GOAL, spread=report.kopycat.spread, anchor_spread=limiting.spread),
             BenchResult("file_sink_spark_vs_limit", report.spark.rate, report.limit)]
    kopycat, spark = report.fits
    if kopycat is not None and spark is not None:
        found.append(BenchResult("file_sink_spark_per_record_vs_kopycat", spark.rate, kopycat.rate))
    return found


def check_stores(work: Path, rows: pa.Table, small: int) -> tuple[tuple[int, ...], int]:
    """Each store holds its orders (the smaller runs' the first ``small``); the file counts of the
    Kopycat rounds' and of Spark's N-record stores."""
    for name in ("kopycat-small", "spark-small"):
        check_files(work / name, rows.slice(0, small))
    rounds = tuple(check_files(store, rows) for store in sorted(work.glob("kopycat-round-*")))
    return rounds, check_files(work / "spark", rows)


def kopycat_round(bootstrap: str, topic: str, work: Path, rows: pa.Table) -> Measure:
    """One timed Kopycat sink run of the whole topic into a store of its own (checked with the others)."""
    store = work / f"kopycat-round-{uuid.uuid4().hex[:8]}"
    props, worker, planned = plan_sink(bootstrap, topic, store, rows.num_rows)
    return kopycat_sink(props, worker, planned, rows.num_rows)


def run(argv: Sequence[str] = ()) -> list[BenchResult]:
    """The bench (``python -m bench file_sink [--records N]``); ``--profile``: cProfile report."""
    options = parse_options(argv)
    records = options.records
    if options.profile:
        print(profile(records), flush=True)
        return []
    bootstrap = shared_broker().bootstrap_servers
    admin = AdminClient({"bootstrap.servers": bootstrap})
    warm_up(bootstrap, admin)
    topic = new_topic(admin, "bench-file-sink")
    record_bytes = produce_orders(bootstrap, topic, records) / records
    rows = order_table(records)
    with tempfile.TemporaryDirectory(prefix="kopycat-bench-file-sink-") as workdir:
        work = Path(workdir)
        (work / "anchor").mkdir()
        consume, kopycat = median_rounds([lambda: raw_consume(bootstrap, topic, records),
                                          lambda: kopycat_round(bootstrap, topic, work, rows)], options.rounds)
        _, _, planned = plan_sink(bootstrap, topic, work / "kopycat", records)
        ends = planned.end_offsets_by_partition()
        first = first_orders(ends, max(1, records // SMALLER))
        kopycat_small = kopycat_first(bootstrap, topic, work / "kopycat-small", records, first)
        spark = spark_export_measure(bootstrap, ends, work / "spark")
        spark_small = spark_export_measure(bootstrap, first, work / "spark-small")
        write = write_limit(rows, work / "anchor")
        files, spark_files = check_stores(work, rows, sum(first.values()))
    report = Report(consume, write, kopycat, spark, record_bytes, files, spark_files, kopycat_small, spark_small)
    print(table(report), flush=True)
    return results(report)


# ------------------------------------------------------------------ profile


def profile(records: int) -> str:
    """The Kopycat sink task once, run in this thread (run_planned_task does) under cProfile."""
    bootstrap = shared_broker().bootstrap_servers
    admin = AdminClient({"bootstrap.servers": bootstrap})
    warm_up(bootstrap, admin)
    topic = new_topic(admin, "bench-file-sink-profile")
    produce_orders(bootstrap, topic, records)
    with tempfile.TemporaryDirectory(prefix="kopycat-bench-file-sink-") as workdir:
        store = Path(workdir) / "store"
        props, worker, planned = plan_sink(bootstrap, topic, store, records)
        summary, report = profiled(f"Kopycat FileSink (parquet, flush.size {FLUSH_SIZE})",
                                   lambda: run_planned_task(props, planned, worker), records)
        _summary(summary, records)
        check_files(store, order_table(records))
    return report


if __name__ == "__main__":
    print_results(run)

"""Kafka offset ranges to committed Parquet files, with Spark: Kopycat's bulk sink (DESIGN.md §4).

Runnable by hand with spark-submit (the helpers in kopycat.connectors.files.spark_export build
this command; jars from ``python -m kopycat.dev.jars spark-kafka``)::

    SPARK_LOCAL_IP=127.0.0.1 PYSPARK_PYTHON=.venv/bin/python \\
    .venv/bin/spark-submit --master 'local[2]' --conf spark.ui.enabled=false \\
      --jars "$(ls ~/.cache/kopycat/spark-kafka-4.2.0/libs/*.jar | paste -sd,)" \\
      include/spark/kafka_to_files.py \\
      --ranges '{"orders": {"0": [0, 1000], "1": [0, 800]}}' \\
      --store-url file:///tmp/lake --topics-dir topics \\
      --connector-name orders-export --bootstrap-servers 127.0.0.1:9092

Options:
  --ranges JSON|FILE         offsets per topic-partition, ``[start, end)``: inline JSON or a file
  --store-url URL            file:///dir, hdfs://..., s3a://bucket/prefix (s3a endpoint and
                             credentials as ``--conf spark.hadoop.fs.s3a.*``; see s3a_conf())
  --topics-dir DIR           directory under the store holding one directory per topic (topics)
  --connector-name NAME      names the job; the consumer group committed is ``connect-NAME``
  --group-id GROUP           the consumer group to commit instead (a consumer.override.group.id)
  --bootstrap-servers HOSTS  the Kafka cluster
  --run-id ID                names this run's temporary directory (default: random)
  --behavior-on-null-values  fail (default) or ignore tombstones
  --parquet-codec CODEC      snappy (default), gzip, zstd, lz4, none
  --kafka-option K=V         a setting of Spark's Kafka source consumer (repeatable, e.g.
                             security.protocol=SSL); given to it as ``kafka.K``
  --client-option K=V        a confluent-kafka setting of the driver's clients (repeatable)

What it does, per topic, in the order Confluent's storage connectors follow:

1. lists the committed files under ``<store>/<topics dir>/<topic>`` and starts every range
   after the greatest committed offset, so a retried run writes nothing twice;
2. reads the rest with Spark's Kafka source in batch mode (``assign`` with
   ``startingOffsets``/``endingOffsets``), one Spark partition per Kafka partition;
3. decodes the values (Kafka Connect's JsonConverter envelopes) with Kopycat's JsonConverter in
   ``mapInArrow`` into the value struct's columns, typed by ``kopycat.api.arrow``;
4. writes Parquet into ``<topic>/+tmp/<run id>/``, then renames each part file to
   ``<topic>/partition=<p>/<topic>+<p>+<first offset>+<last offset>.parquet`` through Hadoop's
   FileSystem and deletes the temporary directory;
5. commits the consumer group ``connect-<connector name>`` to the ranges' ends (never back).

The last line on stdout is the result, one JSON object (``spark_export.ExportResult``); logs
go to stderr. Exit status 1 on failure, with the reason in the last log line.
"""

from __future__ import annotations

import argparse
import logging
import re
import sys
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, KafkaError
from confluent_kafka import TopicPartition as KafkaTopicPartition
from kopycat.api.arrow import to_arrow_schema
from kopycat.api.data import Schema, Type
from kopycat.api.errors import ConnectError, DataError
from kopycat.api.records import TopicPartition
from kopycat.connectors.files.committed_files import TEMP_DIR, committed_name
from kopycat.connectors.files.spark_export import (
    NULL_VALUES_FAIL,
    NULL_VALUES_IGNORE,
    ExportedFile,
    ExportResult,
    OffsetRange,
    TopicDecoder,
    ranges_from_json,
    resume_ranges,
    spark_arrow_schema,
    spark_offsets,
)
from kopycat.converters.json import JsonConverter
from pyspark import AccumulatorParam
from pyspark.errors import PythonException
from pyspark.sql import SparkSession
from pyspark.sql.pandas.types import from_arrow_schema

log = logging.getLogger("kopycat.spark.export")

EXTENSION = "parquet"
_PART_FILE = re.compile(r"^part-(\d+)-.*\.parquet$")


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="kafka_to_files.py", description=__doc__.splitlines()[0])
    parser.add_argument("--ranges", required=True)
    parser.add_argument("--store-url", required=True)
    parser.add_argument("--topics-dir", default="topics")
    parser.add_argument("--connector-name", required=True)
    parser.add_argument("--group-id", default=None)
    parser.add_argument("--bootstrap-servers", required=True)
    parser.add_argument("--run-id", default=None)
    parser.add_argument("--behavior-on-null-values", choices=(NULL_VALUES_FAIL, NULL_VALUES_IGNORE),
                        default=NULL_VALUES_FAIL)
    parser.add_argument("--parquet-codec", default="snappy")
    parser.add_argument("--kafka-option", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--client-option", action="append", default=[], metavar="KEY=VALUE")
    args = parser.parse_args(argv)
    args.run_id = args.run_id or uuid.uuid4().hex
    for name in ("kafka_option", "client_option"):
        pairs = [option.partition("=") for option in getattr(args, name)]
        bad = [key for key, sep, _ in pairs if not sep or not key]
        if bad:
            parser.error(f"--{name.replace('_', '-')} takes KEY=VALUE, got {bad[0]!r}")
        setattr(args, name, {key: value for key, _, value in pairs})
    return args


def read_ranges(value: str) -> list[OffsetRange]:
    """``--ranges``: inline JSON when it starts with ``{``, else a local file holding it."""
    return ranges_from_json(value if value.lstrip().startswith("{") else Path(value).read_text())


class _StatsParam(AccumulatorParam):  # type: ignore[type-arg]
    """Merges TopicDecoder's per-Spark-partition stats: ``{partition id: [p, first, last, rows]}``."""

    def zero(self, value: dict[int, list[int]]) -> dict[int, list[int]]:
        return {}

    def addInPlace(self, value1: dict[int, list[int]], value2: dict[int, list[int]]) -> dict[int, list[int]]:
        value1.update(value2)
        return value1


class Store:
    """The store through Hadoop's FileSystem (file://, hdfs://, s3a://), driven over py4j."""

    def __init__(self, spark: SparkSession, store_url: str, topics_dir: str) -> None:
        self._jvm = spark.sparkContext._jvm
        self.root = f"{store_url.rstrip('/')}/{topics_dir.strip('/')}"
        self._fs = self._path(self.root).getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())

    def _path(self, url: str) -> Any:
        return self._jvm.org.apache.hadoop.fs.Path(url)

    def topic_dir(self, topic: str) -> str:
        return f"{self.root}/{topic}"

    def committed_names(self, topic: str) -> list[str]:
        """Base names of the files under the topic's directory; ``+tmp`` and hidden files left out.

        Hidden files (``.x.crc`` of Hadoop's local filesystem, ``_SUCCESS``) are not data, as
        Hadoop's and Spark's readers treat them.
        """
        top = self._path(self.topic_dir(topic))
        if not self._fs.exists(top):
            return []
        names, files = [], self._fs.listFiles(top, True)
        while files.hasNext():
            path = files.next().getPath()
            name = path.getName()
            if f"/{TEMP_DIR}/" not in path.toUri().getPath() and not name.startswith((".", "_")):
                names.append(name)
        return names

    def stale_temp_dirs(self, topic: str, run_id: str) -> list[str]:
        temp = self._path(f"{self.topic_dir(topic)}/{TEMP_DIR}")
        if not self._fs.exists(temp):
            return []
        return [s.getPath().toString() for s in self._fs.listStatus(temp) if s.getPath().getName() != run_id]

    def part_files(self, directory: str) -> dict[int, str]:
        """Spark's part files in ``directory`` by the Spark partition that wrote them."""
        parts: dict[int, str] = {}
        for status in self._fs.listStatus(self._path(directory)):
            match = _PART_FILE.match(status.getPath().getName())
            if match:
                parts[int(match.group(1))] = status.getPath().toString()
        return parts

    def commit(self, source: str, destination: str) -> None:
        """Rename ``source`` to its committed name; the name must not exist yet."""
        target = self._path(destination)
        if self._fs.exists(target):
            raise ConnectError(f"{destination} exists already; another export wrote the same offsets. "
                               f"Run one export per connector at a time")
        self._fs.mkdirs(target.getParent())
        if not self._fs.rename(self._path(source), target):
            raise ConnectError(f"Renaming {source} to {destination} failed; the file stays in {TEMP_DIR} "
                               f"and a rerun writes it again")

    def delete(self, url: str) -> None:
        self._fs.delete(self._path(url), True)


class Kafka:
    """The driver's confluent-kafka side: watermarks, the schema peek and the group commit."""

    def __init__(self, bootstrap_servers: str, options: dict[str, str]) -> None:
        self.config = {"bootstrap.servers": bootstrap_servers, "enable.auto.commit": False, **options}

    def consumer(self, group: str) -> Consumer:
        return Consumer({**self.config, "group.id": group, "enable.partition.eof": True})

    def check_bounds(self, ranges: Sequence[OffsetRange]) -> None:
        """Fail early, naming the partition, on ranges Kafka no longer (or does not yet) hold."""
        consumer = self.consumer(f"kopycat-export-check-{uuid.uuid4().hex}")
        try:
            for r in ranges:
                low, high = consumer.get_watermark_offsets(KafkaTopicPartition(r.topic, r.partition), 30)
                if r.end > high:
                    raise ConnectError(f"The range {r.topic}[{r.partition}] [{r.start}, {r.end}) ends after "
                                       f"the partition's end offset {high}; plan ranges from end offsets")
                if r.start < low:
                    raise ConnectError(f"The range {r.topic}[{r.partition}] [{r.start}, {r.end}) starts "
                                       f"before the earliest offset {low} (deleted by retention); the "
                                       f"records in between are lost: re-plan from offset {low}")
        finally:
            consumer.close()

    def value_schema(self, topic: str, ranges: Sequence[OffsetRange], null_values: str) -> Schema | None:
        """The value schema of the first non-null record in ``ranges``; None when there is none."""
        consumer = self.consumer(f"kopycat-export-peek-{uuid.uuid4().hex}")
        try:
            for r in ranges:
                found = _first_value(consumer, r, null_values)
                if found is not None:
                    offset, value = found
                    try:
                        return JsonConverter().to_connect_data(topic, value).schema
                    except DataError as exc:
                        raise DataError(f"Record {topic}[{r.partition}]@{offset} is not a JsonConverter "
                                        f"envelope (schemas.enable=true): {exc}") from exc
            return None
        finally:
            consumer.close()

    def commit_group(self, group: str, ranges: Sequence[OffsetRange]) -> dict[TopicPartition, int]:
        """Commit each range's end unless the group is there or further already; the offsets after."""
        consumer = self.consumer(group)
        try:
            wanted = [KafkaTopicPartition(r.topic, r.partition, r.end) for r in ranges]
            current = {(tp.topic, tp.partition): tp.offset for tp in consumer.committed(wanted, timeout=30)}
            forward = [tp for tp in wanted if tp.offset > current[(tp.topic, tp.partition)]]
            if forward:
                for tp in consumer.commit(offsets=forward, asynchronous=False) or []:
                    if tp.error:
                        raise ConnectError(f"Committing {group} at {tp.topic}[{tp.partition}]={tp.offset} failed: "
                                           f"{tp.error}; the files are committed, a rerun commits the offsets")
            return {TopicPartition(tp.topic, tp.partition): max(tp.offset, current[(tp.topic, tp.partition)])
                    for tp in wanted}
        finally:
            consumer.close()


def _first_value(consumer: Consumer, r: OffsetRange, null_values: str) -> tuple[int, bytes] | None:
    """``(offset, value)`` of the first non-null record of ``r``; None when it holds none."""
    consumer.assign([KafkaTopicPartition(r.topic, r.partition, r.start)])
    while True:
        message = consumer.poll(30)
        if message is None:
            raise ConnectError(f"No record of {r.topic}[{r.partition}] arrived within 30 s from offset {r.start}")
        if message.error():
            if message.error().code() == KafkaError._PARTITION_EOF:
                return None
            raise ConnectError(f"Reading {r.topic}[{r.partition}] failed: {message.error()}")
        if message.offset() >= r.end:
            return None
        if message.value() is not None:
            return message.offset(), message.value()
        if null_values == NULL_VALUES_FAIL:
            raise DataError(f"Record {r.topic}[{r.partition}]@{message.offset()} has a null value (a "
                            f"tombstone); run with --behavior-on-null-values ignore to skip tombstones")


def export_topic(spark: SparkSession, store: Store, args: argparse.Namespace, topic: str,
                 ranges: list[OffsetRange], schema: Schema) -> list[ExportedFile]:
    """Steps 2-4 for one topic: read, decode, write to ``+tmp/<run id>``, rename to committed names."""
    if schema.type is not Type.STRUCT:
        raise DataError(f"Topic {topic} has {schema.type.name} values; Parquet columns come from a STRUCT "
                        f"value schema")
    arrow_schema = to_arrow_schema(schema)
    stats = spark.sparkContext.accumulator({}, _StatsParam())
    decoder = TopicDecoder(topic, arrow_schema, stats, args.behavior_on_null_values)
    temp = f"{store.topic_dir(topic)}/{TEMP_DIR}/{args.run_id}"
    frame = (spark.read.format("kafka").option("kafka.bootstrap.servers", args.bootstrap_servers)
             .options(**{f"kafka.{k}": v for k, v in args.kafka_option.items()})
             .options(**spark_offsets(ranges)).load().select("value", "partition", "offset"))
    (frame.mapInArrow(decoder, from_arrow_schema(spark_arrow_schema(arrow_schema)))
     .write.mode("errorifexists").option("compression", args.parquet_codec).parquet(temp))
    files = _commit_parts(store, topic, temp, stats.value)
    store.delete(temp)
    return files


def _commit_parts(store: Store, topic: str, temp: str, stats: dict[int, list[int]]) -> list[ExportedFile]:
    parts, files = store.part_files(temp), []
    seen: set[int] = set()
    for spark_partition, (partition, first, last, rows) in sorted(stats.items()):
        if rows == 0:
            continue  # every record was a skipped tombstone: no file
        if spark_partition not in parts or partition in seen:
            raise ConnectError(f"Spark wrote {sorted(parts)} for partitions {sorted(stats)} of {topic}; "
                               f"expected one part file per Kafka partition (is minPartitions set?)")
        seen.add(partition)
        name = committed_name(topic, partition, first, last, EXTENSION)
        destination = f"{store.topic_dir(topic)}/partition={partition}/{name}"
        store.commit(parts[spark_partition], destination)
        files.append(ExportedFile(topic, partition, first, last, rows, destination))
        log.info("committed %s (%s rows)", destination, rows)
    return files


def run(spark: SparkSession, args: argparse.Namespace) -> ExportResult:
    store = Store(spark, args.store_url, args.topics_dir)
    kafka = Kafka(args.bootstrap_servers, args.client_option)
    group = args.group_id or f"connect-{args.connector_name}"
    requested = read_ranges(args.ranges)
    files: list[ExportedFile] = []
    read: list[OffsetRange] = []
    skipped: list[OffsetRange] = []
    offsets: dict[TopicPartition, int] = {}
    for topic in sorted({r.topic for r in requested}):
        topic_ranges = [r for r in requested if r.topic == topic]
        names = store.committed_names(topic)
        log.info("%s: %s files under %s", topic, len(names), store.topic_dir(topic))
        to_read, done = resume_ranges(topic_ranges, names)
        skipped += done
        for stale in store.stale_temp_dirs(topic, args.run_id):
            log.warning("%s holds files of an unfinished run, never read as committed; delete it when "
                        "no export runs", stale)
        to_read = [r for r in to_read if not r.empty]
        if to_read:
            kafka.check_bounds(to_read)
            log.info("%s: reading %s", topic, ", ".join(f"[{r.partition}] [{r.start}, {r.end})" for r in to_read))
            schema = kafka.value_schema(topic, to_read, args.behavior_on_null_values)
            if schema is not None:
                files += export_topic(spark, store, args, topic, to_read, schema)
            read += to_read
        offsets.update(kafka.commit_group(group, topic_ranges))
        log.info("%s: group %s committed", topic, group)
    return ExportResult(args.connector_name, args.run_id, files, read, skipped, offsets)


def _kopycat_error(trace: str) -> str | None:
    """The last Kopycat error line of a Python worker's traceback (``kopycat.api.errors.X: ...``)."""
    lines = [line for line in trace.splitlines() if line.startswith("kopycat.api.errors.")]
    return lines[-1].split(".", 3)[-1] if lines else None


def _log_to_stderr() -> None:
    """Kopycat's log lines on stderr beside Spark's (pyspark may have configured the root logger)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s", "%y/%m/%d %H:%M:%S"))
    kopycat = logging.getLogger("kopycat")
    kopycat.addHandler(handler)
    kopycat.setLevel(logging.INFO)
    kopycat.propagate = False


def main(argv: Sequence[str] | None = None) -> int:
    _log_to_stderr()
    args = parse_args(argv)
    spark = (SparkSession.builder.appName(f"kopycat-export-{args.connector_name}")
             .config("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MILLIS").getOrCreate())
    try:
        result = run(spark, args)
    except (ConnectError, OSError) as exc:
        log.error("export %s failed: %s", args.connector_name, exc)
        return 1
    except PythonException as exc:  # a decoder error in a Python worker, inside Spark's trace
        reason = _kopycat_error(str(exc))
        if reason is None:
            raise
        log.error("export %s failed: %s", args.connector_name, reason)
        return 1
    finally:
        spark.stop()
    sys.stdout.write(result.to_json_line() + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())

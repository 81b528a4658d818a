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
  --client-option K=V        a setting of the driver's confluent-kafka clients (repeatable; Java
                             security keys are translated by kopycat.kafka.librdkafka_config)
  --options-file PATH        a JSON file {"kafka": {K: V}, "client": {K: V}} of more such settings:
                             the ones holding secrets (sasl.jaas.config, store passwords), which
                             never go on the command line (kopycat.connectors.files.spark_options)
  --partitioner JSON         the storage sink's partitioner keys (partitioner.class, path.format,
                             partition.duration.ms, timezone, locale, timestamp.extractor=Record);
                             default: the default layout ``partition=<n>``
  --window START_MS,END_MS   a backfill: copy the records stamped in [START_MS, END_MS) that lie
                             before each partition's live position and overwrite the window's
                             directories (time-based layout only)

What it does, per topic, in the order Confluent's storage connectors follow:

1. rolls back a round of files an interrupted run (this job or the Python sink) left half
   committed (its manifest ``+tmp/<topic>+<p>.round.json``), lists the committed files under
   ``<store>/<topics dir>/<topic>`` and starts every range after the greatest committed offset,
   so a retried run writes nothing twice (a window is read from its given start instead, and
   ends at each partition's live position: after its committed files, else the group's offset);
2. reads the rest with Spark's Kafka source in batch mode (``assign`` with
   ``startingOffsets``/``endingOffsets``), one Spark partition per Kafka partition;
3. decodes the values (Kafka Connect's JsonConverter envelopes, or Confluent Avro values with
   ``--value-converter io.confluent.connect.avro.AvroConverter``: the writer schemas of the
   topic's value subject fetched from the registry once here, see
   ``kopycat.connectors.files.spark_converter``) with Kopycat's converter in ``mapInArrow`` into
   the value struct's columns, typed by ``kopycat.api.arrow``; a time-based layout places each record with the
   Python sink's TimeBasedPartitioner on its Kafka timestamp,
   a window drops the records stamped outside it;
4. writes Parquet into ``<topic>/+tmp/<run id>/`` (time-based: one part file per Kafka partition
   and directory, rows in offset order), then renames each part file to
   ``<topic>/<directory>/<topic>+<p>+<first offset>+<last offset>.parquet`` through Hadoop's
   FileSystem (several files of one partition as one round, under a manifest, as the Python sink
   commits them) and deletes the temporary directory; a window first deletes the partition's
   committed files in the window's directories below the offset it stopped at (this commit
   protocol is ``kopycat.connectors.files.spark_commit``'s);
5. commits the consumer group ``connect-<connector name>`` to the ranges' ends (never back); a
   windowed run commits nothing (the driver's Kafka calls are ``kopycat.connectors.files.spark_kafka``'s).

The last line on stdout is the result, one JSON object (``spark_export.ExportResult``), also written
to ``--result-file`` when given (a path on the driver's machine); logs go to stderr. Exit status 1
on failure, with the reason in the last log line.
"""

from __future__ import annotations

import argparse
import json
import logging
import re
import sys
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple
from urllib.parse import urlparse

from pyspark import AccumulatorParam
from pyspark.errors import PythonException
from pyspark.sql import SparkSession
from pyspark.sql.pandas.types import from_arrow_schema

from kopycat.api.arrow import to_arrow_schema
from kopycat.api.data import Schema, Type
from kopycat.api.errors import ConfigError, ConnectError, DataError
from kopycat.api.records import TopicPartition
from kopycat.api.window import TimeWindow
from kopycat.connectors.files.committed_files import TEMP_DIR
from kopycat.connectors.files.partition_writer import round_manifest_name
from kopycat.connectors.files.spark_commit import Piece, check_inside, commit_pieces, roll_back_rounds
from kopycat.connectors.files.spark_converter import JSON_CONVERTER, ExportConverter, plan_converter
from kopycat.connectors.files.spark_decoder import DIR_COLUMN, OFFSET_COLUMN, TopicDecoder, decode_dir
from kopycat.connectors.files.spark_export import (
    NULL_VALUES_FAIL,
    NULL_VALUES_IGNORE,
    ExportedFile,
    ExportResult,
    OffsetRange,
    check_layout,
    end_at_live_positions,
    live_positions,
    ranges_from_json,
    resume_ranges,
    spark_offsets,
    spark_partitioner,
)
from kopycat.connectors.files.spark_kafka import ExportKafka
from kopycat.connectors.files.spark_options import OPTIONS_FILE_FLAG, read_options_file

log = logging.getLogger("kopycat.spark.export")

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
    parser.add_argument("--value-converter", default=JSON_CONVERTER, metavar="CLASS")
    parser.add_argument("--value-converter-option", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--partitioner", default=None, metavar="JSON")
    parser.add_argument("--window", default=None, metavar="START_MS,END_MS")
    parser.add_argument("--result-file", default=None, metavar="PATH")
    parser.add_argument(OPTIONS_FILE_FLAG, default=None, metavar="PATH")
    args = parser.parse_args(argv)
    args.run_id = args.run_id or uuid.uuid4().hex
    try:
        args.partitioner = json.loads(args.partitioner) if args.partitioner else {}
    except ValueError as exc:
        parser.error(f"--partitioner takes a JSON object of partitioner keys: {exc}")
    if not isinstance(args.partitioner, dict):
        parser.error(f"--partitioner takes a JSON object of partitioner keys, got {args.partitioner!r}")
    if args.window is not None:
        start, sep, end = args.window.partition(",")
        if not (sep and start.strip().lstrip("-").isdigit() and end.strip().lstrip("-").isdigit()):
            parser.error(f"--window takes START_MS,END_MS (epoch ms), got {args.window!r}")
        args.window = TimeWindow(int(start), int(end))
    for name in ("kafka_option", "client_option", "value_converter_option"):
        pairs = [option.partition("=") for option in getattr(args, name)]
        bad = [key for key, sep, _ in pairs if not sep or not key]
        if bad:
            parser.error(f"--{name.replace('_', '-')} takes KEY=VALUE, got {bad[0]!r}")
        setattr(args, name, {key: value for key, _, value in pairs})
    if args.options_file:
        try:
            from_file = read_options_file(args.options_file)
        except ConfigError as exc:
            parser.error(str(exc))
        args.kafka_option = {**from_file["kafka"], **args.kafka_option}
        args.client_option = {**from_file["client"], **args.client_option}
        args.value_converter_option = {**from_file["converter"], **args.value_converter_option}
    return args


def read_ranges(value: str) -> list[OffsetRange]:
    """``--ranges``: inline JSON when it starts with ``{``, else a local file holding it."""
    return ranges_from_json(value if value.lstrip().startswith("{") else Path(value).read_text())


class _StatsParam(AccumulatorParam):  # type: ignore[type-arg]
    """Merges TopicDecoder's per-Spark-partition stats: ``{partition id: {"partition", ..., "dirs"}}``."""

    def zero(self, value: dict[int, dict[str, Any]]) -> dict[int, dict[str, Any]]:
        return {}

    def addInPlace(self, value1: dict[int, dict[str, Any]],
                   value2: dict[int, dict[str, Any]]) -> dict[int, dict[str, Any]]:
        value1.update(value2)
        return value1


class Layout(NamedTuple):
    """Where records go: the default layout or time buckets (``partitioner``), and a backfill ``window``.

    ``window_dirs`` are the encoded directories the window overwrites, from the storage sink's
    own ``window_partitions``; checked when parsed, before anything is read or written.
    """

    partitioner: dict[str, str]
    window: TimeWindow | None
    window_dirs: list[str]
    time_based: bool

    @classmethod
    def of(cls, args: argparse.Namespace) -> Layout:
        props = {str(k): str(v) for k, v in args.partitioner.items()}
        dirs = check_layout(props, args.window)
        return cls(props, args.window, dirs, spark_partitioner(props) is not None)


class Store:
    """The store through Hadoop's FileSystem (file://, hdfs://, s3a://), driven over py4j."""

    def __init__(self, spark: SparkSession, store_url: str, topics_dir: str) -> None:
        self._jvm = spark.sparkContext._jvm
        self.url = store_url.rstrip("/")
        self.root = f"{self.url}/{topics_dir.strip('/')}"
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

    def names_in(self, directory: str) -> list[str]:
        """Base names of the files directly in ``directory`` (none when it does not exist)."""
        path = self._path(directory)
        if not self._fs.exists(path):
            return []
        return [s.getPath().getName() for s in self._fs.listStatus(path) if s.isFile()]

    def stale_temp_dirs(self, topic: str, run_id: str) -> list[str]:
        temp = self._path(f"{self.topic_dir(topic)}/{TEMP_DIR}")
        if not self._fs.exists(temp):
            return []
        return [s.getPath().toString() for s in self._fs.listStatus(temp) if s.getPath().getName() != run_id]

    def part_files(self, directory: str) -> dict[tuple[int, str | None], str]:
        """Spark's part files below ``directory``: by (Spark partition, directory of a time-based write).

        A time-based write puts them in ``<DIR_COLUMN>=<hex>/``; the default one directly in
        ``directory`` (directory None).
        """
        parts: dict[tuple[int, str | None], str] = {}
        files = self._fs.listFiles(self._path(directory), True)
        while files.hasNext():
            path = files.next().getPath()
            match = _PART_FILE.match(path.getName())
            if not match:
                continue
            parent = path.getParent().getName()
            encoded = decode_dir(parent[len(DIR_COLUMN) + 1:]) if parent.startswith(f"{DIR_COLUMN}=") else None
            parts[(int(match.group(1)), encoded)] = path.toString()
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

    def exists(self, url: str) -> bool:
        return bool(self._fs.exists(self._path(url)))

    def delete(self, url: str) -> None:
        self._fs.delete(self._path(url), True)

    def read_text(self, url: str) -> str:
        stream = self._fs.open(self._path(url))
        try:
            return str(self._jvm.org.apache.commons.io.IOUtils.toString(stream, "UTF-8"))
        finally:
            stream.close()

    def write_text(self, url: str, text: str) -> None:
        stream = self._fs.create(self._path(url), True)
        try:
            stream.write(bytearray(text.encode()))
        finally:
            stream.close()

    # The Python sink's store names files by their path below its root (local or HDFS path,
    # bucket/key on S3); a round manifest holds such paths, so either mover rolls back the other's.

    def python_path(self, url: str) -> str:
        """``url`` (below the store URL) as the Python sink's store names it."""
        return _python_root(self.url) + url[len(self.url):]

    def url_of(self, python_path: str) -> str:
        root = _python_root(self.url)
        if not python_path.startswith(f"{root}/"):
            raise ConnectError(f"A round manifest names {python_path}, which is not below the store {self.url} "
                               f"({root}); it was written for another store.url: move it out of {TEMP_DIR}")
        return self.url + python_path[len(root):]

    def manifest(self, topic: str, partition: int) -> str:
        """The partition's round manifest, where the Python sink's ``round_manifest_path`` puts it."""
        return f"{self.topic_dir(topic)}/{TEMP_DIR}/{round_manifest_name(TopicPartition(topic, partition))}"


def _python_root(store_url: str) -> str:
    """The Python sink's store root of a Spark store URL: the path, with the bucket first on s3a."""
    parsed = urlparse(store_url)
    path = parsed.path.rstrip("/")
    return f"{parsed.netloc}{path}" if parsed.scheme in ("s3a", "s3") else (path or "/")


def export_topic(spark: SparkSession, store: Store, args: argparse.Namespace, layout: Layout, topic: str,
                 ranges: list[OffsetRange], schema: Schema,
                 converter: ExportConverter) -> tuple[list[ExportedFile], int]:
    """Steps 2-4 for one topic: read, decode, write to ``+tmp/<run id>``, commit; (files, records filtered)."""
    if schema.type is not Type.STRUCT:
        raise DataError(f"Topic {topic} has {schema.type.name} values; Parquet columns come from a STRUCT "
                        f"value schema")
    stats = spark.sparkContext.accumulator({}, _StatsParam())
    window = (layout.window.start_ms, layout.window.end_ms) if layout.window else None
    decoder = TopicDecoder(topic, to_arrow_schema(schema), stats, args.behavior_on_null_values,
                           layout.partitioner if layout.time_based else None, window, converter)
    temp = f"{store.topic_dir(topic)}/{TEMP_DIR}/{args.run_id}"
    frame = (spark.read.format("kafka").option("kafka.bootstrap.servers", args.bootstrap_servers)
             .options(**{f"kafka.{k}": v for k, v in args.kafka_option.items()})
             .options(**spark_offsets(ranges)).load()
             .select("value", "partition", "offset", "timestamp", "timestampType"))
    decoded = frame.mapInArrow(decoder, from_arrow_schema(decoder.output_schema()))
    if layout.time_based:  # one part file per (Kafka partition, directory), rows in offset order
        writer = (decoded.sortWithinPartitions(DIR_COLUMN, OFFSET_COLUMN).drop(OFFSET_COLUMN)
                  .write.partitionBy(DIR_COLUMN))
    else:
        writer = decoded.write
    writer.mode("errorifexists").option("compression", args.parquet_codec).parquet(temp)
    pieces = _pieces(store, topic, temp, stats.value, layout.time_based)
    ends = check_inside(topic, pieces, ranges)
    files = commit_pieces(store, topic, pieces, layout, ends)
    store.delete(temp)
    return files, sum(s["filtered"] for s in stats.value.values())


def _pieces(store: Store, topic: str, temp: str, stats: dict[int, dict[str, Any]], time_based: bool) -> list[Piece]:
    """The part files Spark wrote, matched to the rows the decoder counted (one per partition and directory)."""
    parts, pieces = store.part_files(temp), []
    seen: set[tuple[int, str]] = set()
    for spark_partition, tally in sorted(stats.items()):
        for directory, (first, last, rows) in sorted(tally["dirs"].items()):
            source = parts.get((spark_partition, directory if time_based else None))
            if source is None or (tally["partition"], directory) in seen:
                raise ConnectError(f"Spark wrote {sorted(parts, key=str)} for {topic}, but the decoder counted "
                                   f"{sorted((i, d) for i, t in stats.items() for d in t['dirs'])}; expected "
                                   f"one part file per Kafka partition and directory (is minPartitions set?)")
            seen.add((tally["partition"], directory))
            pieces.append(Piece(tally["partition"], directory, first, last, rows, source))
    return pieces


def run(spark: SparkSession, args: argparse.Namespace) -> ExportResult:
    layout = Layout.of(args)  # a bad layout or window fails here, before anything is read or written
    store = Store(spark, args.store_url, args.topics_dir)
    kafka = ExportKafka(args.bootstrap_servers, args.client_option)
    group = args.group_id or f"connect-{args.connector_name}"
    requested = read_ranges(args.ranges)
    files: list[ExportedFile] = []
    read: list[OffsetRange] = []
    skipped: list[OffsetRange] = []
    offsets: dict[TopicPartition, int] = {}
    filtered = 0
    if layout.window is not None:
        log.info("windowed run [%d, %d): overwriting %s; the group %s does not move", layout.window.start_ms,
                 layout.window.end_ms, ", ".join(layout.window_dirs) or "no directory", group)
    for topic in sorted({r.topic for r in requested}):
        topic_ranges = [r for r in requested if r.topic == topic]
        roll_back_rounds(store, topic, [r.partition for r in topic_ranges])
        names = store.committed_names(topic)
        log.info("%s: %s files under %s", topic, len(names), store.topic_dir(topic))
        if layout.window is None:
            to_read, done = resume_ranges(topic_ranges, names)
        else:
            group_offsets = kafka.committed(group, topic_ranges)  # a window never moves them: read once
            to_read, done = window_ranges_now(topic_ranges, names, group_offsets), []
        skipped += done
        for stale in store.stale_temp_dirs(topic, args.run_id):
            log.warning("%s holds files of an unfinished run, never read as committed; delete it when "
                        "no export runs", stale)
        to_read = [r for r in to_read if not r.empty]
        if to_read:
            kafka.check_bounds(to_read)
            log.info("%s: reading %s", topic, ", ".join(f"[{r.partition}] [{r.start}, {r.end})" for r in to_read))
            converter = plan_converter(args.value_converter, args.value_converter_option, topic)
            schema = kafka.value_schema(topic, to_read, args.behavior_on_null_values, layout.window, converter)
            if schema is not None:
                written, left_out = export_topic(spark, store, args, layout, topic, to_read, schema, converter)
                files += written
                filtered += left_out
            read += to_read
        if layout.window is None:
            offsets.update(kafka.commit_group(group, topic_ranges))
            log.info("%s: group %s committed", topic, group)
        else:
            offsets.update(group_offsets)
    return ExportResult(args.connector_name, args.run_id, files, read, skipped, offsets, filtered, layout.window)


def window_ranges_now(ranges: list[OffsetRange], names: Sequence[str],
                      group_offsets: Mapping[TopicPartition, int]) -> list[OffsetRange]:
    """A window's ``ranges``, each ending at the partition's live position as the store and group show it now.

    The plan ended them there already; this run checks again, so a job run by hand or after a
    live run never commits past where the live runs resume (files, else the group's offset; a
    partition with neither keeps the end it was given, chosen by the plan from ``auto.offset.reset``).
    """
    live = live_positions([r.topic_partition for r in ranges], names, group_offsets)
    capped = end_at_live_positions(ranges, live)
    for given, r in zip(sorted(ranges), capped, strict=True):
        if r.end < given.end:
            log.info("windowed run: %s-%d ends at its live position %d, not %d", r.topic, r.partition, r.end,
                     given.end)
    return capped


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
    line = result.to_json_line() + "\n"
    sys.stdout.write(line)
    sys.stdout.flush()
    if args.result_file:
        Path(args.result_file).write_text(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())

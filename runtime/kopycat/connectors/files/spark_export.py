"""The Spark bulk export: Kafka offset ranges to committed Parquet files (DESIGN.md §4).

``include/spark/kafka_to_files.py`` is the job; this module is everything about it that does
not need a SparkSession, shared by the job, the Airflow operator and the tests, so each format
is defined once:

- the ranges the job copies are :mod:`spark_ranges`' (exported here too: :class:`OffsetRange`,
  :func:`ranges_to_json`, :func:`resume_ranges` ...);
- the decoding that runs inside Spark's ``mapInArrow`` is :mod:`spark_decoder`'s;
- what is committed and deleted once Spark has written (the rounds, a window's overwrite) is
  :mod:`spark_commit`'s, and the driver's own Kafka calls (range checks, schema peek, group
  commit) :mod:`spark_kafka`'s;
- the layout: the default one (``partition=<n>``) or the time buckets of the Kafka record
  timestamp, placed by the Python sink's own :class:`TimeBasedPartitioner` (no second Joda
  implementation), and a backfill window checked by the sink's own ``window_partitions``
  (:func:`spark_partitioner`, :func:`check_layout`);
- the spark-submit invocation (:func:`spark_export_job`, :func:`s3a_conf`; its secret Kafka settings
  in a private file, :mod:`spark_options`) and the job's result, one JSON line on stdout
  (:class:`ExportResult`, :func:`parse_result`).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import uuid
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Final

from kopycat.api.errors import ConfigError, ConnectError
from kopycat.api.records import TopicPartition
from kopycat.api.window import TimeWindow
from kopycat.connectors.files.file_sink import window_partitions
from kopycat.connectors.files.partitioner_config import (
    DIRECTORY_DELIM_CONFIG,
    PARTITIONER_CLASS_CONFIG,
    PARTITIONER_CONFIG,
)
from kopycat.connectors.files.partitioners import DefaultPartitioner, TimeBasedPartitioner, partitioner_from_config
from kopycat.connectors.files.spark_options import OPTIONS_FILE_FLAG, is_secret_key, options_file
from kopycat.connectors.files.spark_ranges import (
    OffsetRange,
    end_at_live_positions,
    live_positions,
    ranges_from_json,
    ranges_to_json,
    resume_ranges,
    spark_offsets,
)
from kopycat.connectors.files.timestamp_extractors import (
    TIMESTAMP_EXTRACTOR_CONFIG,
    RecordTimestampExtractor,
    WallclockTimestampExtractor,
)

__all__ = [
    "KAFKA_JAR_SET",
    "S3A_JAR_SET",
    "JOB_PATH",
    "RESULT_KEY",
    "ExportResult",
    "ExportedFile",
    "OffsetRange",
    "SparkExportJob",
    "check_layout",
    "end_at_live_positions",
    "live_positions",
    "parse_result",
    "partitioner_props",
    "ranges_from_json",
    "ranges_to_json",
    "resume_ranges",
    "run_spark_export",
    "s3a_conf",
    "spark_export_job",
    "spark_offsets",
    "spark_partitioner",
]

JOB_PATH: Final = Path(__file__).resolve().parents[4] / "include" / "spark" / "kafka_to_files.py"
KAFKA_JAR_SET: Final = "spark-kafka"
"""Spark's Kafka source and kafka-clients: every export needs them."""
S3A_JAR_SET: Final = "spark-s3a"
"""hadoop-aws and the AWS SDK v2 modules it uses: only exports to ``s3a://`` need them."""
RESULT_KEY: Final = "kopycat.spark.export"
"""First key of the result line, so it is found among whatever else reaches stdout."""
NULL_VALUES_FAIL, NULL_VALUES_IGNORE = "fail", "ignore"


# ---------------------------------------------------------------- layout and window

_OTHER_WAY: Final = "or export with the Python storage sink (CopyTaskOperator)"


def partitioner_props(props: Mapping[str, Any]) -> dict[str, str]:
    """The partitioner keys of a sink config (Confluent's ``PartitionerConfig``), as the job takes them."""
    return {key: str(props[key]) for key in PARTITIONER_CONFIG.names() if props.get(key) is not None}


def spark_partitioner(props: Mapping[str, Any]) -> TimeBasedPartitioner | None:
    """The time-based partitioner ``props`` configure, None for the default layout; else a ConfigError.

    The job places records with the Python sink's own partitioner, so a directory is exactly what
    the storage sink prints for the record. Only what every Spark task computes the same way from
    the Kafka record is taken: the Kafka timestamp (``timestamp.extractor=Record``), not the wall
    clock (each task would write the directory of its own run time) nor a value field (it would
    need every value decoded into records first). ``directory.delim`` stays ``/``: files are found
    below ``<topic>/``, as the Python sink looks for them.
    """
    props = {k: str(v) for k, v in props.items() if v is not None}
    partitioner = partitioner_from_config(props)
    if partitioner.delim != "/":
        raise ConfigError.for_key(DIRECTORY_DELIM_CONFIG, partitioner.delim,
                                  f"the Spark export finds committed files below <topic>/: drop the key, {_OTHER_WAY}")
    if isinstance(partitioner, DefaultPartitioner):
        return None
    if not isinstance(partitioner, TimeBasedPartitioner):
        raise ConfigError.for_key(PARTITIONER_CLASS_CONFIG, props.get(PARTITIONER_CLASS_CONFIG),
                                  "the Spark export writes the default layout (partition=<n>) or time buckets "
                                  "(TimeBasedPartitioner, HourlyPartitioner, DailyPartitioner) of the Kafka "
                                  f"record timestamp: use one of those, {_OTHER_WAY}")
    if type(partitioner.extractor) is not RecordTimestampExtractor:
        why = ("the wall clock would put each Spark task's records in the directory of the time it ran"
               if isinstance(partitioner.extractor, WallclockTimestampExtractor)
               else "a value field would need every value decoded into records first")
        raise ConfigError.for_key(TIMESTAMP_EXTRACTOR_CONFIG, props.get(TIMESTAMP_EXTRACTOR_CONFIG, "Wallclock"),
                                  f"the Spark export places records by their Kafka timestamp only ({why}): set "
                                  f"timestamp.extractor=Record, {_OTHER_WAY}")
    return partitioner


def check_layout(props: Mapping[str, Any], window: TimeWindow | None) -> list[str]:
    """Check a layout (:func:`spark_partitioner`) and window; the encoded directories the window overwrites.

    The window is checked by the storage sink's own ``window_partitions`` (time-based on record
    time, whole buckets, a ``path.format`` as fine as the buckets), so the Spark export and the
    Python sink accept the same backfills. No window: no directory.
    """
    partitioner = spark_partitioner(props)
    if window is None:
        return []
    return window_partitions(partitioner or DefaultPartitioner(), window, props)


# ---------------------------------------------------------------- the job's result

@dataclass(frozen=True, slots=True)
class ExportedFile:
    """One file the job committed: offsets ``start_offset..end_offset`` (inclusive) as ``rows`` rows."""

    topic: str
    partition: int
    start_offset: int
    end_offset: int
    rows: int
    path: str


@dataclass(frozen=True)
class ExportResult:
    """What a run did: the files it committed and the consumer group offsets it left.

    ``read`` are the ranges it read (behind earlier runs' files), ``skipped`` the requested
    ranges earlier runs had already committed in full, ``committed_offsets`` the group
    ``connect-<connector>``'s offset (next offset to read) per partition after the run. A
    windowed run (``window``, ``[start_ms, end_ms)``) reads its ranges up to each partition's
    live position (``read``), commits no group (``committed_offsets`` are the group's untouched
    offsets) and counts the records it read but left out, stamped outside the window, as
    ``filtered``.
    """

    connector: str
    run_id: str
    files: list[ExportedFile]
    read: list[OffsetRange]
    skipped: list[OffsetRange]
    committed_offsets: dict[TopicPartition, int]
    filtered: int = 0
    window: TimeWindow | None = None

    def to_json_line(self) -> str:
        offsets: dict[str, dict[str, int]] = {}
        for tp, offset in sorted(self.committed_offsets.items()):
            offsets.setdefault(tp.topic, {})[str(tp.partition)] = offset
        return json.dumps({RESULT_KEY: 1, "connector": self.connector, "run_id": self.run_id,
                           "files": [asdict(f) for f in self.files],
                           "read": json.loads(ranges_to_json(self.read)),
                           "skipped": json.loads(ranges_to_json(self.skipped)),
                           "committed_offsets": offsets, "filtered": self.filtered,
                           "window": [self.window.start_ms, self.window.end_ms] if self.window else None},
                          separators=(",", ":"))

    @classmethod
    def from_json_line(cls, line: str) -> ExportResult:
        data = json.loads(line)

        def ranges(nested: dict[str, Any]) -> list[OffsetRange]:
            return ranges_from_json(json.dumps(nested)) if nested else []
        return cls(connector=data["connector"], run_id=data["run_id"],
                   files=[ExportedFile(**f) for f in data["files"]],
                   read=ranges(data["read"]), skipped=ranges(data["skipped"]),
                   committed_offsets={TopicPartition(topic, int(p)): offset
                                      for topic, partitions in data["committed_offsets"].items()
                                      for p, offset in partitions.items()},
                   filtered=data.get("filtered", 0),
                   window=TimeWindow(*data["window"]) if data.get("window") else None)


def parse_result(output: str) -> ExportResult:
    """The result in a job's stdout (its last line starting with the result key)."""
    marker = f'{{"{RESULT_KEY}":'
    for line in reversed(output.splitlines()):
        if line.startswith(marker):
            return ExportResult.from_json_line(line)
    raise ConnectError(f"The Spark export job printed no result line (one starting with {marker}); "
                       f"it failed before committing, see its log. Last output: {output[-500:]!r}")


# ---------------------------------------------------------------- spark-submit

@dataclass(frozen=True)
class SparkExportJob:
    """One spark-submit of the job, in the pieces SparkSubmitOperator takes.

    ``SparkSubmitOperator(application=job.application, application_args=job.application_args,
    conf=job.conf, jars=",".join(job.jars), name=job.name, env_vars=job.env)``, or
    :meth:`command` for a subprocess.
    """

    application: str
    application_args: list[str]
    conf: dict[str, str]
    jars: list[str]
    master: str
    name: str
    env: dict[str, str]
    ranges: list[OffsetRange] = field(default_factory=list)
    """What the job is asked to copy (before it skips what the store holds already)."""
    secret_options: dict[str, dict[str, str]] = field(default_factory=dict, repr=False)
    """Kafka settings holding secrets, by set (``kafka``, ``client``): never on the command line (:meth:`staged`)."""

    def command(self, spark_submit: str | None = None) -> list[str]:
        cmd = [spark_submit or _spark_submit(), "--master", self.master, "--name", self.name]
        if self.jars:
            cmd += ["--jars", ",".join(self.jars)]
        for key, value in self.conf.items():
            cmd += ["--conf", f"{key}={value}"]
        return [*cmd, self.application, *self.application_args]

    def writing_result_to(self, path: str) -> SparkExportJob:
        """This job, also writing its result line to ``path`` on the driver's machine: for a submitter
        that does not read spark-submit's stdout itself (the Spark provider's hook logs it)."""
        return replace(self, application_args=[*self.application_args, "--result-file", path])

    @contextmanager
    def staged(self) -> Iterator[SparkExportJob]:
        """This job ready to submit: its :attr:`secret_options` in a private file (``--options-file``),
        removed when the block ends; submit it inside the block (:mod:`spark_options`)."""
        with options_file(self.secret_options) as path:
            yield self if path is None else replace(self, application_args=[*self.application_args,
                                                                             OPTIONS_FILE_FLAG, path])

    def redacted_command(self, spark_submit: str | None = None) -> list[str]:
        """:meth:`command` with secret values (keys naming a secret, password, token ...) hidden."""
        return [_redact(arg) for arg in self.command(spark_submit)]


def spark_export_job(ranges: Iterable[OffsetRange], *, store_url: str, connector_name: str,
                     bootstrap_servers: str, topics_dir: str = "topics", master: str = "local[2]",
                     conf: Mapping[str, str] | None = None,
                     kafka_options: Mapping[str, str] | None = None,
                     client_options: Mapping[str, str] | None = None,
                     null_values: str = NULL_VALUES_FAIL, run_id: str | None = None,
                     parquet_codec: str = "snappy", python: str = sys.executable,
                     jars_root: Path | None = None, group_id: str | None = None,
                     partitioner: Mapping[str, str] | None = None,
                     window: TimeWindow | None = None, value_converter: str | None = None,
                     value_converter_options: Mapping[str, str] | None = None) -> SparkExportJob:
    """The spark-submit that exports ``ranges`` to ``<store_url>/<topics_dir>``.

    ``kafka_options`` go to Spark's Kafka source (as ``kafka.<key>``), ``client_options`` to the
    driver's confluent-kafka clients (schema peek, group commit), both Java keys; those holding a
    secret only through :meth:`SparkExportJob.staged`'s file, never the command line; ``group_id`` is the group the job
    commits when not ``connect-<connector_name>``; ``partitioner`` the sink's partitioner keys
    (:func:`partitioner_props`; none: the default layout) and ``window`` a backfill window, both
    checked here (:func:`check_layout`) before anything runs; ``conf`` adds Spark conf, e.g.
    :func:`s3a_conf`. ``value_converter`` is the values' converter class (JsonConverter when None,
    or Confluent's AvroConverter), its ``value.converter.*`` keys unprefixed in
    ``value_converter_options`` (secrets such as ``basic.auth.user.info`` through the private file).
    Jars come from the ``spark-kafka`` set, plus the ``spark-s3a`` set when the
    store is ``s3a://`` (include/jars/<set>/pom.xml, fetched on first use; ``jars_root/<set>``
    instead when given). A ``local`` master gets ``SPARK_LOCAL_IP=127.0.0.1`` and the jars on the
    driver's class path instead of ``--jars``: its executor lives in the driver's JVM, and
    ``--jars`` would copy every jar into a temp dir on each run.
    """
    if null_values not in (NULL_VALUES_FAIL, NULL_VALUES_IGNORE):
        raise ConfigError.for_key("behavior.on.null.values", null_values, "use fail or ignore")
    ranges = list(ranges)
    if not ranges:
        raise ConfigError.for_key("ranges", "[]", "the export needs at least one offset range")
    args = ["--ranges", ranges_to_json(ranges), "--store-url", store_url, "--topics-dir", topics_dir,
            "--connector-name", connector_name, "--bootstrap-servers", bootstrap_servers,
            "--run-id", run_id or uuid.uuid4().hex, "--behavior-on-null-values", null_values]
    if parquet_codec != "snappy":
        args += ["--parquet-codec", parquet_codec]
    check_layout(partitioner or {}, window)
    if partitioner and spark_partitioner(partitioner) is not None:
        args += ["--partitioner", json.dumps(dict(partitioner), separators=(",", ":"), sort_keys=True)]
    if window is not None:
        args += ["--window", f"{window.start_ms},{window.end_ms}"]
    if group_id:
        args += ["--group-id", group_id]
    if value_converter:
        args += ["--value-converter", value_converter]
    secret: dict[str, dict[str, str]] = {}
    for flag, kind, options in (("--kafka-option", "kafka", kafka_options), ("--client-option", "client",
                                                                             client_options),
                                ("--value-converter-option", "converter", value_converter_options)):
        for key, value in (options or {}).items():
            if is_secret_key(key):
                secret.setdefault(kind, {})[key] = str(value)
            else:
                args += [flag, f"{key}={value}"]
    env = {"PYSPARK_PYTHON": python, "PYSPARK_DRIVER_PYTHON": python}
    spark_conf = {"spark.ui.enabled": "false", "spark.pyspark.python": python,
                  "spark.pyspark.driver.python": python}
    jars = _jars(jars_root, store_url)
    if master.startswith("local"):
        env["SPARK_LOCAL_IP"] = "127.0.0.1"
        spark_conf["spark.driver.extraClassPath"] = os.pathsep.join(jars)
        jars = []
    return SparkExportJob(application=str(JOB_PATH), application_args=args,
                          conf={**spark_conf, **(conf or {})}, jars=jars, master=master,
                          name=f"kopycat-export-{connector_name}", env=env, ranges=ranges, secret_options=secret)


def s3a_conf(endpoint_url: str, access_key: str, secret_key: str, *, region: str = "us-east-1",
             path_style: bool = True) -> dict[str, str]:
    """Spark conf for an S3-compatible endpoint (``spark.hadoop.fs.s3a.*``; path style for moto/MinIO)."""
    return {"spark.hadoop.fs.s3a.endpoint": endpoint_url,
            "spark.hadoop.fs.s3a.endpoint.region": region,
            "spark.hadoop.fs.s3a.access.key": access_key,
            "spark.hadoop.fs.s3a.secret.key": secret_key,
            "spark.hadoop.fs.s3a.aws.credentials.provider":
                "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider",
            "spark.hadoop.fs.s3a.path.style.access": str(path_style).lower(),
            "spark.hadoop.fs.s3a.connection.ssl.enabled": str(endpoint_url.startswith("https")).lower()}


def run_spark_export(job: SparkExportJob, *, spark_submit: str | None = None,
                     timeout: float | None = None) -> ExportResult:
    """Run ``job`` with spark-submit and return its result; a failure raises ConnectError with the log's end."""
    with job.staged() as staged:
        done = subprocess.run(staged.command(spark_submit), env={**os.environ, **job.env}, capture_output=True,
                              text=True, timeout=timeout, check=False)
    if done.returncode != 0:  # spark-submit passes the Python driver's stderr to its stdout
        raise ConnectError(f"The Spark export {job.name} failed (exit {done.returncode}); the end of its "
                           f"log:\n{_log_tail(done.stderr)}\n{_log_tail(done.stdout)}")
    return parse_result(done.stdout)


def _jars(jars_root: Path | None, store_url: str) -> list[str]:
    sets = [KAFKA_JAR_SET, S3A_JAR_SET] if store_url.startswith("s3a://") else [KAFKA_JAR_SET]
    if jars_root is None:
        from kopycat.dev.jars import ensure_jars

        dirs = [ensure_jars(name) for name in sets]
    else:
        dirs = [jars_root / name for name in sets]
    return [str(jar) for directory in dirs for jar in sorted(directory.glob("*.jar"))]


def _spark_submit() -> str:
    beside = Path(sys.executable).parent / "spark-submit"
    return str(beside) if beside.exists() else "spark-submit"


def _redact(arg: str) -> str:
    key, sep, _ = arg.partition("=")
    return f"{key}=*********(redacted)" if sep and is_secret_key(key) else arg


def _log_tail(stderr: str, lines: int = 40) -> str:
    """The job's stderr without Spark's INFO/WARN chatter, last ``lines`` lines."""
    chatter = re.compile(r"^\d\d/\d\d/\d\d \d\d:\d\d:\d\d (INFO|WARN) ")
    kept = [line for line in stderr.splitlines() if not chatter.match(line)]
    return "\n".join(kept[-lines:])

"""From a storage sink's connector config to the Spark export job that does its work in bulk.

A user who exports with the Python storage sink (``FileSinkConnector``) can hand a big backlog to
Spark without writing a second config: the same ``store.url``, ``topics.dir``, ``name`` and
``topics`` give the offset ranges and the job, and both write the same committed names, so the
Python sink and the Spark job can take turns on one export (DESIGN.md §4). Kafka Connect has no
bulk path; the ranges follow its sink semantics: a partition starts at the consumer group
``connect-<name>``'s committed offset (else at the log start), and the job then skips whatever
the store already holds (:func:`kopycat.connectors.files.spark_export.resume_ranges`).

Spark writes Parquet in the default layout (``<topics.dir>/<topic>/partition=<n>/``) or in the
time buckets of a ``TimeBasedPartitioner`` (Hourly, Daily) on the Kafka record timestamp
(``timestamp.extractor=Record``), each record in the directory the Python sink prints for it;
other partitioners, extractors and formats are refused before anything runs.

A windowed (backfill) plan (:class:`~kopycat.api.window.TimeWindow`) reads what the Python sink's
windowed runs read (see kopycat.runtime.run_range.BackfillWindow), or to the planned end when
sooner; the job overwrites the window's directories and commits no group.
The window is checked as the storage sink checks it (``file_sink.window_partitions``).
"""

from __future__ import annotations

import logging
import posixpath
from collections.abc import Mapping, Sequence
from typing import Any

from confluent_kafka import Consumer
from confluent_kafka import TopicPartition as KafkaTopicPartition

from kopycat.api.errors import ConfigError
from kopycat.api.records import TopicPartition
from kopycat.api.window import TimeWindow
from kopycat.connectors.files.committed_files import split_temp_paths
from kopycat.connectors.files.record_formats import FORMAT_CLASS_CONFIG, FORMAT_CLASSES, PARQUET_CODEC_CONFIG
from kopycat.connectors.files.sink_config import SCHEMA_COMPATIBILITY_CONFIG, FileSinkSettings, parse_file_sink_config
from kopycat.connectors.files.spark_converter import converter_options
from kopycat.connectors.files.spark_export import (
    NULL_VALUES_FAIL,
    NULL_VALUES_IGNORE,
    OffsetRange,
    SparkExportJob,
    check_layout,
    end_at_live_positions,
    live_positions,
    partitioner_props,
    spark_export_job,
)
from kopycat.connectors.files.store import (
    S3_PART_SIZE_CONFIG,
    S3_REGION_CONFIG,
    StoreLocation,
    locate_store,
    s3_key_pair,
)
from kopycat.connectors.files.store_factory import open_store
from kopycat.group_offsets import consumer_committed
from kopycat.kafka import (
    SINK_CONSUMER_DEFAULTS,
    client_config,
    client_security_settings,
    consumer_group_id,
    resets_to_latest,
)
from kopycat.runtime.config_transformer import resolve_connector_config
from kopycat.runtime.run_range import offsets_at

__all__ = ["export_ranges", "live_window_ends", "plan_spark_export", "spark_store", "window_ranges"]

log = logging.getLogger(__name__)



def plan_spark_export(props: Mapping[str, Any], worker_props: Mapping[str, Any],
                      end_offsets: Mapping[TopicPartition, int], *, master: str,
                      run_id: str | None = None, window: TimeWindow | None = None) -> SparkExportJob:
    """The spark-submit that copies every partition of ``end_offsets`` up to its planned end.

    ``end_offsets`` are the sink plan's snapshot (:func:`kopycat.runtime.bounded_plan.plan_bounded_run`),
    so a DAG run exports a known range however much arrives meanwhile. With ``window`` (a
    backfill) the ranges run from the window's first offsets to the live positions
    (:func:`window_ranges`) instead of from the group's; the config and window are checked before
    Kafka or the store is asked anything. Config placeholders (``${file:...}``) are resolved here
    with the worker's providers: this is where the export's clients and job are made.

    The job's Kafka clients are the sink's consumer: its security settings (``consumer.*`` and
    ``consumer.override.*``, Java keys) go to Spark's Kafka source as ``kafka.<key>`` and to the
    driver's confluent-kafka clients, the secrets among them through a private file only.
    """
    [props] = resolve_connector_config(worker_props, props)
    settings = _check_exportable(props, window)
    values = settings.values
    name = str(props.get("name") or "")
    url, conf = spark_store(values)
    null_values = NULL_VALUES_IGNORE if settings.ignore_null_values else NULL_VALUES_FAIL
    bootstrap = str(worker_props.get("bootstrap.servers") or "")
    if not bootstrap:
        raise ConfigError.for_key("bootstrap.servers", "", "the worker config must name the Kafka cluster")
    if window is None:
        ranges = export_ranges(name, worker_props, props, end_offsets)
    else:
        ranges = window_ranges(name, worker_props, props, end_offsets, window)
    security = {key: str(value) for key, value in client_security_settings(worker_props, props, "consumer").items()}
    converter_props = props if "value.converter" in props else {
        **{k: v for k, v in worker_props.items() if k.startswith("value.converter")}, **props}
    value_converter, converter_keys = converter_options(converter_props)
    return spark_export_job(ranges, store_url=url, connector_name=name, bootstrap_servers=bootstrap,
                            kafka_options=security, client_options=security,
                            topics_dir=settings.topics_dir, master=master, conf=conf, null_values=null_values,
                            run_id=run_id, parquet_codec=str(values.get(PARQUET_CODEC_CONFIG) or "snappy"),
                            group_id=consumer_group_id(name, props), partitioner=partitioner_props(props),
                            window=window, value_converter=value_converter,
                            value_converter_options=converter_keys)


def export_ranges(connector_name: str, worker_props: Mapping[str, Any], props: Mapping[str, Any],
                  end_offsets: Mapping[TopicPartition, int]) -> list[OffsetRange]:
    """Each partition from the sink group's offset (``connect-<name>``, else the log start) to its end.

    A committed offset below the log start (records deleted by retention) starts at the log
    start, with a warning naming what was lost, as a sink with ``auto.offset.reset=earliest``.
    """
    partitions = sorted(end_offsets)
    if not partitions:
        return []
    consumer = Consumer(client_config(worker_props, props, "consumer",
                                      forced={"group.id": consumer_group_id(connector_name, props),
                                              "enable.auto.commit": False}))
    try:
        committed = {TopicPartition(tp.topic, tp.partition): tp.offset for tp in consumer_committed(
            consumer, [KafkaTopicPartition(tp.topic, tp.partition) for tp in partitions], 30)}
        ranges = []
        for tp in partitions:
            low, _ = consumer.get_watermark_offsets(KafkaTopicPartition(tp.topic, tp.partition), timeout=30)
            start = committed.get(tp, -1)
            if 0 <= start < low:
                log.warning("Connector %s: %s-%d offsets %d..%d were deleted by retention before export; "
                            "starting at %d", connector_name, tp.topic, tp.partition, start, low - 1, low)
            start = max(start, low)
            ranges.append(OffsetRange(tp.topic, tp.partition, min(start, end_offsets[tp]), end_offsets[tp]))
        return ranges
    finally:
        consumer.close()


def window_ranges(connector_name: str, worker_props: Mapping[str, Any], props: Mapping[str, Any],
                  end_offsets: Mapping[TopicPartition, int], window: TimeWindow) -> list[OffsetRange]:
    """Each partition from its first record stamped at/after the window's start to its live position
    (:func:`live_window_ends`), or the planned end when sooner (see
    kopycat.runtime.run_range.BackfillWindow). A partition whose first offset is not before it is
    left empty.
    """
    partitions = sorted(end_offsets)
    if not partitions:
        return []
    config = client_config(worker_props, props, "consumer", defaults=SINK_CONSUMER_DEFAULTS,
                           forced={"group.id": consumer_group_id(connector_name, props), "enable.auto.commit": False})
    consumer = Consumer(config)
    try:
        starts = offsets_at(consumer, partitions, window.start_ms, 30, f"{connector_name} (Spark export)")
        live = live_window_ends(consumer, props, partitions, resets_to_latest(config))
    finally:
        consumer.close()
    ranges = end_at_live_positions([OffsetRange(tp.topic, tp.partition, min(starts[tp], end_offsets[tp]),
                                                end_offsets[tp]) for tp in partitions], live)
    for r in ranges:
        if r.end < end_offsets[r.topic_partition]:
            log.info("Connector %s: the window copies %s-%d up to its live position %d (planned end %d)",
                     connector_name, r.topic, r.partition, r.end, end_offsets[r.topic_partition])
    return ranges


def live_window_ends(consumer: Consumer, props: Mapping[str, Any], partitions: Sequence[TopicPartition],
                     latest: bool) -> dict[TopicPartition, int]:
    """Where a live run of each partition resumes: the end of a windowed run's range (see
    kopycat.runtime.run_range.BackfillWindow); the store's committed files stand in for the seeks
    the sink's ``open`` asks for, and with ``latest`` (``auto.offset.reset``) a partition the group
    has no offset for is left out.
    """
    live = live_positions(partitions, _committed_names(props, sorted({tp.topic for tp in partitions})),
                          {TopicPartition(tp.topic, tp.partition): tp.offset for tp in consumer_committed(
                              consumer, [KafkaTopicPartition(tp.topic, tp.partition) for tp in partitions], 30)})
    if latest:
        return live
    for tp in partitions:
        if tp not in live:
            live[tp] = consumer.get_watermark_offsets(KafkaTopicPartition(tp.topic, tp.partition), timeout=30)[0]
    return live


def _committed_names(props: Mapping[str, Any], topics: Sequence[str]) -> list[str]:
    """Base names of the committed files below the topics' directories (``+tmp`` left out), as the sink lists them."""
    settings = parse_file_sink_config({k: str(v) for k, v in props.items() if v is not None})
    store = open_store(settings.values)
    return [posixpath.basename(path) for topic in topics
            for path in split_temp_paths(store.list_files(store.path(settings.topics_dir, topic)))[0]]


def spark_store(values: Mapping[str, Any]) -> tuple[str, dict[str, str]]:
    """``store.url`` as Spark names it (``s3://`` is Hadoop's ``s3a://``) and the Hadoop conf it needs."""
    location = locate_store(values)
    if location.scheme != "s3":
        return location.url.rstrip("/"), {}
    return f"s3a://{location.root}", _s3a_conf(values, location)


def _s3a_conf(values: Mapping[str, Any], location: StoreLocation) -> dict[str, str]:
    """The connector's S3 keys as ``spark.hadoop.fs.s3a.*``; no keys means the AWS default chain.

    ``s3.part.size`` becomes s3a's ``multipart.size``, so both movers upload files in the same parts.
    """
    conf: dict[str, str] = {}
    part_size = values.get(S3_PART_SIZE_CONFIG)
    if part_size:
        conf["spark.hadoop.fs.s3a.multipart.size"] = str(int(part_size))
    region = str(values.get(S3_REGION_CONFIG) or "")
    if region:
        conf["spark.hadoop.fs.s3a.endpoint.region"] = region
    if location.endpoint:
        conf["spark.hadoop.fs.s3a.endpoint"] = location.endpoint
        conf["spark.hadoop.fs.s3a.path.style.access"] = "true"  # MinIO, moto, on-premise S3
        conf["spark.hadoop.fs.s3a.connection.ssl.enabled"] = str(location.endpoint.startswith("https")).lower()
    key_pair = s3_key_pair(values)
    if key_pair:
        conf["spark.hadoop.fs.s3a.access.key"], conf["spark.hadoop.fs.s3a.secret.key"] = key_pair
        conf["spark.hadoop.fs.s3a.aws.credentials.provider"] = "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider"
    return conf


def _check_exportable(props: Mapping[str, Any], window: TimeWindow | None) -> FileSinkSettings:
    """The parsed sink settings, if Spark writes what the Python sink would; else a ConfigError.

    The layout and the window are checked by :func:`~kopycat.connectors.files.spark_export.check_layout`,
    the job's own check, so a plan and a job run by hand refuse the same configs.
    """
    settings = parse_file_sink_config({k: str(v) for k, v in props.items() if v is not None})
    values = settings.values
    check_layout(props, window)
    if FORMAT_CLASSES.get(str(values[FORMAT_CLASS_CONFIG])) != "parquet":
        raise ConfigError.for_key(FORMAT_CLASS_CONFIG, values[FORMAT_CLASS_CONFIG],
                                  "the Spark export writes Parquet only: use format.class=parquet, or export "
                                  "with the Python storage sink (CopyTaskOperator)")
    if settings.schema_compatibility != "NONE":
        raise ConfigError.for_key(SCHEMA_COMPATIBILITY_CONFIG, settings.schema_compatibility,
                                  "the Spark export writes one schema per file and does not project records: "
                                  "use schema.compatibility=NONE, or export with the Python storage sink "
                                  "(CopyTaskOperator)")
    return settings

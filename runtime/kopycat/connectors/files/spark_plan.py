"""From a storage sink's connector config to the Spark export job that does its work in bulk.

A user who exports with the Python storage sink (``FileSinkConnector``) can hand a big backlog to
Spark without writing a second config: the same ``store.url``, ``topics.dir``, ``name`` and
``topics`` give the offset ranges and the job, and both write the same committed names, so the
Python sink and the Spark job can take turns on one export (DESIGN.md §4). Kafka Connect has no
bulk path; the ranges follow its sink semantics: a partition starts at the consumer group
``connect-<name>``'s committed offset (else at the log start), and the job then skips whatever
the store already holds (:func:`kopycat.connectors.files.spark_export.resume_ranges`).

Spark writes the default layout only (``<topics.dir>/<topic>/partition=<n>/``) and Parquet;
other partitioners and formats are refused before anything runs.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from confluent_kafka import Consumer
from confluent_kafka import TopicPartition as KafkaTopicPartition

from kopycat.api.errors import ConfigError
from kopycat.api.records import TopicPartition
from kopycat.connectors.files.partitioners import PARTITIONER_CLASS_CONFIG
from kopycat.connectors.files.record_formats import FORMAT_CLASS_CONFIG, FORMAT_CLASSES, PARQUET_CODEC_CONFIG
from kopycat.connectors.files.sink_config import SCHEMA_COMPATIBILITY_CONFIG, FileSinkSettings, parse_file_sink_config
from kopycat.connectors.files.spark_export import (
    NULL_VALUES_FAIL,
    NULL_VALUES_IGNORE,
    OffsetRange,
    SparkExportJob,
    spark_export_job,
)
from kopycat.connectors.files.store import (
    S3_PART_SIZE_CONFIG,
    S3_REGION_CONFIG,
    StoreLocation,
    locate_store,
    s3_key_pair,
)
from kopycat.kafka import client_config, consumer_group_id

__all__ = ["export_ranges", "plan_spark_export", "spark_store"]

log = logging.getLogger(__name__)

_DEFAULT_PARTITIONERS = ("DefaultPartitioner", "io.confluent.connect.storage.partitioner.DefaultPartitioner")


def plan_spark_export(props: Mapping[str, Any], worker_props: Mapping[str, Any],
                      end_offsets: Mapping[TopicPartition, int], *, master: str,
                      run_id: str | None = None) -> SparkExportJob:
    """The spark-submit that copies every partition of ``end_offsets`` up to its planned end.

    ``end_offsets`` are the sink plan's snapshot (:func:`kopycat.runtime.bounded_plan.plan_bounded_run`),
    so a DAG run exports a known range however much arrives meanwhile.
    """
    settings = _check_exportable(props)
    values = settings.values
    name = str(props.get("name") or "")
    url, conf = spark_store(values)
    null_values = NULL_VALUES_IGNORE if settings.ignore_null_values else NULL_VALUES_FAIL
    ranges = export_ranges(name, worker_props, props, end_offsets)
    bootstrap = str(worker_props.get("bootstrap.servers") or "")
    if not bootstrap:
        raise ConfigError.for_key("bootstrap.servers", "", "the worker config must name the Kafka cluster")
    return spark_export_job(ranges, store_url=url, connector_name=name, bootstrap_servers=bootstrap,
                            topics_dir=settings.topics_dir, master=master, conf=conf, null_values=null_values,
                            run_id=run_id, parquet_codec=str(values.get(PARQUET_CODEC_CONFIG) or "snappy"),
                            group_id=consumer_group_id(name, props))


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
        committed = {TopicPartition(tp.topic, tp.partition): tp.offset for tp in consumer.committed(
            [KafkaTopicPartition(tp.topic, tp.partition) for tp in partitions], timeout=30)}
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


def _check_exportable(props: Mapping[str, Any]) -> FileSinkSettings:
    """The parsed sink settings, if Spark writes what the Python sink would; else a ConfigError."""
    settings = parse_file_sink_config({k: str(v) for k, v in props.items() if v is not None})
    values = settings.values
    partitioner = str(values.get(PARTITIONER_CLASS_CONFIG) or "DefaultPartitioner")
    if partitioner not in _DEFAULT_PARTITIONERS:
        raise ConfigError.for_key(PARTITIONER_CLASS_CONFIG, partitioner,
                                  "the Spark export writes the default layout (partition=<n>) only: drop the key, "
                                  "or export with the Python storage sink (CopyTaskOperator)")
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

"""A storage sink's config as the Spark export reads it: its store in Hadoop's terms, and what Spark cannot do."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kopycat.api.errors import ConfigError
from kopycat.api.records import TopicPartition
from kopycat.api.window import TimeWindow
from kopycat.connectors.files.file_sink import window_partitions
from kopycat.connectors.files.partitioners import partitioner_from_config
from kopycat.connectors.files.spark_export import OffsetRange, check_layout, partitioner_props, spark_export_job
from kopycat.connectors.files.spark_plan import plan_spark_export, spark_store

SINK = {"name": "lake", "connector.class": "io.confluent.connect.s3.S3SinkConnector", "topics": "orders",
        "format.class": "parquet", "flush.size": "1000"}


def test_a_local_or_hdfs_store_keeps_its_url_and_needs_no_conf() -> None:
    assert spark_store({"store.url": "file:///data/lake/"}) == ("file:///data/lake", {})
    assert spark_store({"store.url": "hdfs://nn:8020/lake"}) == ("hdfs://nn:8020/lake", {})


def test_an_s3_store_becomes_s3a_with_the_connectors_endpoint_region_and_keys() -> None:
    url, conf = spark_store({"store.url": "s3://bucket/exports", "s3.endpoint.url": "http://127.0.0.1:9000",
                             "s3.region": "eu-west-1", "aws.access.key.id": "AKIA",
                             "aws.secret.access.key": "s3cr3t", "s3.part.size": "8388608"})
    assert url == "s3a://bucket/exports"
    assert conf == {"spark.hadoop.fs.s3a.endpoint": "http://127.0.0.1:9000",
                    "spark.hadoop.fs.s3a.endpoint.region": "eu-west-1",
                    "spark.hadoop.fs.s3a.multipart.size": "8388608",
                    "spark.hadoop.fs.s3a.path.style.access": "true",
                    "spark.hadoop.fs.s3a.connection.ssl.enabled": "false",
                    "spark.hadoop.fs.s3a.access.key": "AKIA", "spark.hadoop.fs.s3a.secret.key": "s3cr3t",
                    "spark.hadoop.fs.s3a.aws.credentials.provider":
                        "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider"}


def test_confluents_bucket_key_with_an_endpoint_url_names_the_same_s3a_store() -> None:
    url, conf = spark_store({"store.url": "https://s3.example.com", "s3.bucket.name": "bucket"})
    assert url == "s3a://bucket"
    assert conf["spark.hadoop.fs.s3a.endpoint"] == "https://s3.example.com"
    assert conf["spark.hadoop.fs.s3a.connection.ssl.enabled"] == "true"
    assert "spark.hadoop.fs.s3a.access.key" not in conf  # no keys: the AWS default credential chain


HOURLY = {"partitioner.class": "io.confluent.connect.storage.partitioner.TimeBasedPartitioner",
          "path.format": "'year'=YYYY/'month'=MM/'day'=dd/'hour'=HH", "partition.duration.ms": "3600000",
          "locale": "en", "timezone": "UTC", "timestamp.extractor": "Record"}
HOUR_MS = 3_600_000
H0 = 1_795_132_800_000  # 2026-11-20T00:00:00Z, an hour (and day) boundary


@pytest.mark.parametrize(("key", "value", "hint", "extra"), [
    ("partitioner.class", "io.confluent.connect.storage.partitioner.FieldPartitioner", "time buckets",
     {"partition.field.name": "id"}),
    ("timestamp.extractor", "Wallclock", "the wall clock would put", HOURLY),
    ("timestamp.extractor", "RecordField", "a value field would need", HOURLY),
    ("directory.delim", "_", "below <topic>/", {}),
    ("format.class", "json", "Parquet only", {}),
    ("format.class", "avro", "Parquet only", {}),
    ("schema.compatibility", "BACKWARD", "does not project records", {}),
])
def test_what_only_the_python_sink_writes_is_refused_naming_the_key_and_the_way_out(
        key: str, value: str, hint: str, extra: dict[str, str]) -> None:
    props = {**SINK, "store.url": "file:///lake", **extra, key: value}
    with pytest.raises(ConfigError) as raised:
        plan_spark_export(props, {"bootstrap.servers": "127.0.0.1:9"}, {}, master="local[2]")
    message = str(raised.value)
    assert key in message and repr(value) in message and hint in message and "CopyTaskOperator" in message


def test_a_time_based_layout_on_the_kafka_timestamp_goes_to_the_job_as_the_sinks_partitioner_keys(
        tmp_path: Path) -> None:
    props = {**SINK, "store.url": "file:///lake", "flush.size": "5", **HOURLY}
    keys = partitioner_props(props)
    assert keys == HOURLY
    window = TimeWindow(H0, H0 + HOUR_MS)
    job = spark_export_job([OffsetRange("orders", 0, 0, 10)], store_url="file:///lake", connector_name="lake",
                           bootstrap_servers="b:9092", jars_root=tmp_path, partitioner=keys, window=window)
    args = job.application_args
    assert json.loads(args[args.index("--partitioner") + 1]) == HOURLY
    assert args[args.index("--window") + 1] == f"{H0},{H0 + HOUR_MS}"
    default = spark_export_job([OffsetRange("orders", 0, 0, 10)], store_url="file:///lake", connector_name="lake",
                               bootstrap_servers="b:9092", jars_root=tmp_path, partitioner=partitioner_props(SINK))
    assert "--partitioner" not in default.application_args and "--window" not in default.application_args
    with pytest.raises(ConfigError, match="kopycat.window.start.ms"):
        spark_export_job([OffsetRange("orders", 0, 0, 10)], store_url="file:///lake", connector_name="lake",
                         bootstrap_servers="b:9092", jars_root=tmp_path, partitioner=keys,
                         window=TimeWindow(H0 + 1, H0 + HOUR_MS))


@pytest.mark.parametrize(("window", "extra", "key", "value", "fix"), [
    (TimeWindow(H0 + 1, H0 + HOUR_MS), HOURLY, "kopycat.window.start.ms", H0 + 1, "bucket boundaries"),
    (TimeWindow(H0, H0 + HOUR_MS + 60_000), HOURLY, "kopycat.window.end.ms", H0 + HOUR_MS + 60_000,
     "bucket boundaries"),
    (TimeWindow(H0, H0 + HOUR_MS), {**HOURLY, "path.format": "'year'=YYYY/'month'=MM/'day'=dd"}, "path.format",
     "'year'=YYYY/'month'=MM/'day'=dd", "as fine as partition.duration.ms"),
    (TimeWindow(H0, H0 + HOUR_MS), {}, "partitioner.class", None, "TimeBasedPartitioner"),
    (TimeWindow(H0, H0 + HOUR_MS), {**HOURLY, "timestamp.extractor": "Wallclock"}, "timestamp.extractor",
     "Wallclock", "timestamp.extractor=Record"),
], ids=["start-inside-a-bucket", "end-inside-a-bucket", "path-coarser-than-buckets", "default-layout",
        "wallclock"])
def test_a_window_the_export_cannot_overwrite_whole_is_refused_before_kafka_is_asked(
        window: TimeWindow, extra: dict[str, str], key: str, value: object, fix: str) -> None:
    props = {**SINK, "store.url": "file:///lake", **extra}
    with pytest.raises(ConfigError) as raised:  # the broker address is a dead port: a lookup would fail otherwise
        plan_spark_export(props, {"bootstrap.servers": "127.0.0.1:9"}, {TopicPartition("orders", 0): 10},
                          master="local[2]", window=window)
    message = str(raised.value)
    assert f"Invalid value {value!r} for configuration {key}" in message and fix in message


def test_a_window_of_whole_buckets_is_planned_with_its_directories_checked_by_the_sinks_rule() -> None:
    window = TimeWindow(H0, H0 + 2 * HOUR_MS)
    assert check_layout(HOURLY, window) == ["year=2026/month=11/day=20/hour=00", "year=2026/month=11/day=20/hour=01"]
    assert check_layout(HOURLY, window) == window_partitions(partitioner_from_config(HOURLY), window, HOURLY)
    assert check_layout(HOURLY, None) == []

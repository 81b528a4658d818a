"""A storage sink's config as the Spark export reads it: its store in Hadoop's terms, and what Spark cannot do."""

from __future__ import annotations

import pytest

from kopycat.api.errors import ConfigError
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


@pytest.mark.parametrize(("key", "value", "hint"), [
    ("partitioner.class", "io.confluent.connect.storage.partitioner.TimeBasedPartitioner", "default layout"),
    ("format.class", "json", "Parquet only"),
    ("format.class", "avro", "Parquet only"),
    ("schema.compatibility", "BACKWARD", "does not project records"),
])
def test_what_only_the_python_sink_writes_is_refused_naming_the_key_and_the_way_out(
        key: str, value: str, hint: str) -> None:
    props = {**SINK, "store.url": "file:///lake", key: value,
             "path.format": "'year'=YYYY", "partition.duration.ms": "3600000", "locale": "en", "timezone": "UTC"}
    with pytest.raises(ConfigError) as raised:
        plan_spark_export(props, {"bootstrap.servers": "127.0.0.1:9"}, {}, master="local[2]")
    message = str(raised.value)
    assert key in message and value in message and hint in message and "CopyTaskOperator" in message

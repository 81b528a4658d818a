"""The Spark bulk export against a real broker, local Spark (spark-submit) and real stores.

JSON-with-schema records (Kafka Connect's JsonConverter wire format) over 3 partitions go to
Parquet through include/spark/kafka_to_files.py. Reading every committed file back with pyarrow
must give each id exactly once, typed as kopycat.api.arrow says, each file holding exactly the
offsets its name says; the group ``connect-<name>`` must sit at the ranges' ends; and a rerun
must never write an offset twice (the rerun after an interrupted run is tested through Airflow,
in tests/integration/airflow_dags/test_spark_export_dag.py).

Spark is slow on 2 shared cores (each spark-submit takes 30-50 s), so the tests are few and each
checks a lot.
"""

from __future__ import annotations

import decimal
import io
import uuid
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from kopycat.api.records import TopicPartition
from kopycat.connectors.files.committed_files import TEMP_DIR, committed_name
from kopycat.connectors.files.spark_export import (
    ExportResult,
    OffsetRange,
    run_spark_export,
    s3a_conf,
    spark_export_job,
)
from kopycat.dev.s3 import ACCESS_KEY, REGION, SECRET_KEY, LocalS3
from tests.support.kafka import committed_offsets
from tests.support.orders import (
    BASE,
    PARTITIONS,
    assert_every_id_once,
    local_store,
    produce_orders,
    read_committed,
)

pytestmark = pytest.mark.timeout(3600)  # two spark-submits: about 80 s on a quiet machine

SPARK_TIMEOUT_S = 1500


def assert_group_at_ends(bootstrap: str, name: str, ranges: list[OffsetRange], result: ExportResult) -> None:
    ends = {r.partition: r.end for r in ranges}
    assert committed_offsets(bootstrap, f"connect-{name}", ranges[0].topic, PARTITIONS) == ends
    assert result.committed_offsets == {TopicPartition(r.topic, r.partition): r.end for r in ranges}


def test_an_export_writes_every_offset_once_as_typed_parquet_and_a_rerun_adds_nothing(
        bootstrap_servers: str, topic_name: str, tmp_path: Path) -> None:
    count, name = 6_000, f"export-{uuid.uuid4().hex[:8]}"
    ranges = produce_orders(bootstrap_servers, topic_name, count)
    lake = tmp_path / "lake"
    job = spark_export_job(ranges, store_url=f"file://{lake}", connector_name=name,
                           bootstrap_servers=bootstrap_servers)

    result = run_spark_export(job, timeout=SPARK_TIMEOUT_S)

    files = read_committed(*local_store(lake / "topics" / topic_name), topic=topic_name)
    assert_every_id_once(files, count)
    assert sorted(files) == [committed_name(topic_name, r.partition, 0, r.end - 1, "parquet") for r in ranges]
    assert [(f.partition, f.start_offset, f.end_offset, f.rows) for f in result.files] == [
        (r.partition, 0, r.end - 1, r.end) for r in ranges]
    assert result.read == ranges and result.skipped == []
    assert_group_at_ends(bootstrap_servers, name, ranges, result)
    assert not list((lake / "topics" / topic_name / TEMP_DIR).glob("*")), "the run's temp dir is left"
    first_row = pq.read_table(lake / "topics" / topic_name / "partition=0" / min(files)).slice(0, 1)
    assert first_row.to_pylist() == [{"id": 0, "name": "customer 0", "amount": decimal.Decimal("0.00"),
                                      "day": BASE.date(), "ts": BASE, "note": "note 0"}]

    again = run_spark_export(job, timeout=SPARK_TIMEOUT_S)

    assert again.files == [] and again.read == [] and again.skipped == ranges
    assert read_committed(*local_store(lake / "topics" / topic_name), topic=topic_name) == files
    assert_group_at_ends(bootstrap_servers, name, ranges, again)


def test_an_export_to_s3a_commits_through_hadoop_aws_and_leaves_no_temp_objects(
        bootstrap_servers: str, topic_name: str, s3_server: LocalS3, s3_bucket: str) -> None:
    count, name, run_id = 3_000, f"export-{uuid.uuid4().hex[:8]}", uuid.uuid4().hex
    ranges = produce_orders(bootstrap_servers, topic_name, count)
    job = spark_export_job(ranges, store_url=f"s3a://{s3_bucket}/exports", connector_name=name,
                           bootstrap_servers=bootstrap_servers, run_id=run_id,
                           conf=s3a_conf(s3_server.endpoint_url, ACCESS_KEY, SECRET_KEY, region=REGION))
    assert SECRET_KEY not in " ".join(job.redacted_command())

    result = run_spark_export(job, timeout=SPARK_TIMEOUT_S)

    client = s3_server.client()
    keys = [o["Key"] for o in client.list_objects_v2(Bucket=s3_bucket).get("Contents", [])]
    assert not [k for k in keys if f"/{TEMP_DIR}/{run_id}" in k]

    def open_object(key: str) -> pa.Table:
        return pq.read_table(io.BytesIO(client.get_object(Bucket=s3_bucket, Key=key)["Body"].read()))
    files = read_committed(lambda: sorted(k for k in keys if k.endswith(".parquet")), open_object, topic_name)
    assert_every_id_once(files, count)
    assert [f.path for f in result.files] == [f"s3a://{s3_bucket}/exports/topics/{topic_name}/partition={r.partition}/"
                                              f"{committed_name(topic_name, r.partition, 0, r.end - 1, 'parquet')}"
                                              for r in ranges]
    assert_group_at_ends(bootstrap_servers, name, ranges, result)

"""Lineage names datasets as OpenLineage's naming spec does and follows ReplaceField's renames and drops."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import sqlalchemy as sa

from kopycat.runtime.lineage import (
    FieldRef,
    add_written_fields,
    jdbc_source_lineage,
    kafka_namespace,
    storage_sink_lineage,
)

REPLACE = {"transforms": "rf", "transforms.rf.type": "org.apache.kafka.connect.transforms.ReplaceField$Value",
           "transforms.rf.renames": "label:name", "transforms.rf.exclude": "updated_at"}


def test_a_sqlite_table_maps_to_its_topic_through_replace_field(tmp_path: Path) -> None:
    db = tmp_path / "shop.db"
    engine = sa.create_engine(f"sqlite:///{db}")
    metadata = sa.MetaData()
    sa.Table("orders", metadata, sa.Column("id", sa.Integer, primary_key=True), sa.Column("label", sa.String(40)),
             sa.Column("updated_at", sa.DateTime, nullable=False))
    metadata.create_all(engine)
    engine.dispose()
    props = {"name": "shop", "connection.url": f"sqlite:///{db}", "mode": "incrementing",
             "incrementing.column.name": "id", "topic.prefix": "shop_", **REPLACE}

    lineage = jdbc_source_lineage(props, '"orders"', "127.0.0.1:9092,127.0.0.1:9093")

    [table], [topic] = lineage.inputs, lineage.outputs
    assert (table.namespace, table.name) == (f"sqlite:{db}", "orders")
    assert [name for name, _ in table.fields] == ["id", "label", "updated_at"]
    assert (topic.namespace, topic.name) == ("kafka://127.0.0.1:9092", "shop_orders")
    assert [name for name, _ in topic.fields] == ["id", "name"]
    assert topic.column_lineage == {"id": [FieldRef(f"sqlite:{db}", "orders", "id")],
                                    "name": [FieldRef(f"sqlite:{db}", "orders", "label")]}


def test_storage_sinks_name_the_bucket_the_namenode_or_the_local_directory() -> None:
    def outputs(url: str) -> list[tuple[str, str]]:
        lineage = storage_sink_lineage({"store.url": url, "topics": "a, b"}, "PLAINTEXT://k:9092")
        assert [(d.namespace, d.name) for d in lineage.inputs] == [("kafka://k:9092", "a"), ("kafka://k:9092", "b")]
        return [(d.namespace, d.name) for d in lineage.outputs]

    assert outputs("s3://lake/raw") == [("s3://lake", "raw/topics/a"), ("s3://lake", "raw/topics/b")]
    hdfs = "hdfs://nn:8020"
    assert outputs(f"{hdfs}/data") == [(hdfs, "/data/topics/a"), (hdfs, "/data/topics/b")]
    assert outputs("file:///srv/lake") == [("file", "/srv/lake/topics/a"), ("file", "/srv/lake/topics/b")]
    assert kafka_namespace("host:1") == "kafka://host:1"


def test_an_exports_directories_get_the_columns_of_the_parquet_files_it_wrote(tmp_path: Path) -> None:
    written = tmp_path / "lake" / "topics" / "a" / "partition=0" / "a+0+0000000000+0000000001.parquet"
    written.parent.mkdir(parents=True)
    pq.write_table(pa.table({"id": pa.array([1, 2], pa.int64()), "name": ["x", "y"]}), written)
    props = {"store.url": f"file://{tmp_path / 'lake'}", "topics": "a,b"}
    lineage = storage_sink_lineage(props, "k:9092")

    add_written_fields(lineage, props, [f"file:{written}", f"file:{tmp_path}/lake/topics/a/notes.txt"])

    assert [(d.name, d.fields) for d in lineage.outputs] == [
        (f"{tmp_path}/lake/topics/a", [("id", "int64"), ("name", "string")]),
        (f"{tmp_path}/lake/topics/b", [])]  # nothing written there in this run

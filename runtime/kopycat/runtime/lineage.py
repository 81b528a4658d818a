"""What a connector reads and writes, named by the OpenLineage naming spec: datasets, schemas, column lineage.

Kafka Connect has no lineage of its own; this follows OpenLineage's dataset naming so a lineage backend
joins Kopycat's jobs with whatever else reads the same topics and tables:

- Kafka: namespace ``kafka://host:port`` (the first bootstrap server), name the topic;
- PostgreSQL: ``postgres://host:port``, ``db.schema.table``; SQLite: ``sqlite:`` + the file's path,
  name the table;
- S3: ``s3://bucket``, the key prefix; HDFS: ``hdfs://namenode:port``, the path; local files: ``file``,
  the path (a storage sink's directory for a topic: ``<store>/<topics.dir>/<topic>``).

Schemas are the Connect schemas where they are known without reading data: a JDBC table's columns as
the source maps them (:func:`~kopycat.connectors.jdbc.source_task.describe_table`); once an export has
written, its directories' columns are those of the Parquet files it committed (:func:`add_written_fields`).
Column lineage (JDBC source: table column -> topic field) follows the value through the SMT chain: a transformation
that declares :meth:`~kopycat.api.transforms.Transformation.value_field_lineage` (ReplaceField's
renames and drops) changes the fields; one that declares nothing is taken as leaving them as they are.

Nothing here imports Airflow or OpenLineage's client: :mod:`kopycat.runtime.lineage_events` turns these
into OpenLineage datasets with facets, for the operators (:mod:`kopycat_airflow.lineage`) and the
standalone worker alike.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlparse

import pyarrow as pa
import pyarrow.parquet as pq

from kopycat.api.data import Schema
from kopycat.connectors.files.store import locate_store
from kopycat.connectors.files.store_factory import open_store
from kopycat.connectors.jdbc.connection import connect_engine, database_url
from kopycat.connectors.jdbc.source_config import TABLES_CONFIG, SourceSettings
from kopycat.connectors.jdbc.source_task import describe_table
from kopycat.connectors.jdbc.table_monitor import TableId, parse_tables
from kopycat.transforms.chain import TransformationChain

__all__ = ["DatasetRef", "FieldRef", "Lineage", "add_written_fields", "connector_lineage", "field_type",
           "jdbc_source_lineage", "kafka_namespace", "sink_topics", "storage_sink_lineage", "value_fields_after"]


@dataclass(frozen=True)
class FieldRef:
    """A field of a dataset: the source of one output field in column lineage."""

    namespace: str
    name: str
    field: str


@dataclass
class DatasetRef:
    """One dataset: OpenLineage ``namespace`` and ``name``, its fields (name, type) when known, and per
    output field the input fields it comes from."""

    namespace: str
    name: str
    fields: list[tuple[str, str]] = field(default_factory=list)
    column_lineage: dict[str, list[FieldRef]] = field(default_factory=dict)


@dataclass
class Lineage:
    inputs: list[DatasetRef] = field(default_factory=list)
    outputs: list[DatasetRef] = field(default_factory=list)


def kafka_namespace(bootstrap_servers: str) -> str:
    """``kafka://host:port`` of the first bootstrap server (OpenLineage names a cluster by one broker)."""
    first = str(bootstrap_servers).split(",")[0].strip()
    return f"kafka://{first.split('://')[-1]}"


def field_type(schema: Schema) -> str:
    """A Connect schema as a schema facet's type: its logical name, else its type (``int32``, ``string``)."""
    return str(schema.name or schema.type.name.lower())


def value_fields_after(props: Mapping[str, Any], fields: Sequence[str]) -> dict[str, list[str]]:
    """The value's top-level fields after the connector's SMT chain, each with the fields it comes from."""
    current = {name: [name] for name in fields}
    chain = TransformationChain.from_props(props)
    try:
        for stage in chain.stages:
            declared = stage.transformation.value_field_lineage(list(current))
            if declared is not None:
                current = {out: [src for name in inputs for src in current.get(name, [])]
                           for out, inputs in declared.items()}
    finally:
        chain.close()
    return current


def _jdbc_namespace(props: Mapping[str, Any]) -> tuple[str, str]:
    """The namespace and the name prefix (``db.``) of the JDBC source's database."""
    url = database_url(props)
    if url.get_backend_name() == "sqlite":
        return f"sqlite:{url.database or ''}", ""
    backend = "postgres" if url.get_backend_name() == "postgresql" else url.get_backend_name()
    port = url.port or {"postgres": 5432, "mysql": 3306}.get(backend, "")
    return f"{backend}://{url.host}:{port}", f"{url.database}." if url.database else ""


def jdbc_source_lineage(props: Mapping[str, Any], tables: str, bootstrap_servers: str) -> Lineage:
    """The JDBC source's tables (``tables``: a task config's value, quoted names) with their columns, and
    the topics they go to with column lineage. A query-mode source (no tables) names none."""
    settings = SourceSettings.parse(props)
    namespace, prefix = _jdbc_namespace(settings.values)
    kafka = kafka_namespace(bootstrap_servers)
    lineage = Lineage()
    engine = connect_engine(settings.values, create_sqlite_file=False)
    try:
        with engine.connect() as connection:
            for table_id in parse_tables(tables) if tables else []:
                described = describe_table(connection, table_id, settings)
                schema = described.mapping.schema
                name = prefix + _qualified(table_id, connection.dialect.name)
                columns = [(f.name, field_type(f.schema)) for f in schema.fields]
                lineage.inputs.append(DatasetRef(namespace, name, columns))
                types = dict(columns)
                after = value_fields_after(props, [c for c, _ in columns])
                lineage.outputs.append(DatasetRef(
                    kafka, settings.topic_prefix + table_id.table,
                    [(out, types.get(srcs[0], "") if len(srcs) == 1 else "") for out, srcs in after.items()],
                    {out: [FieldRef(namespace, name, src) for src in srcs] for out, srcs in after.items()}))
    finally:
        engine.dispose()
    return lineage


def _qualified(table_id: TableId, dialect: str) -> str:
    if dialect == "postgresql":
        return f"{table_id.schema or 'public'}.{table_id.table}"
    return ".".join(part for part in (table_id.schema, table_id.table) if part)


def sink_topics(props: Mapping[str, Any]) -> list[str]:
    """The topics a sink names in ``topics`` (``topics.regex`` names no dataset before a run)."""
    return [t.strip() for t in str(props.get("topics") or "").split(",") if t.strip()]


def storage_sink_lineage(props: Mapping[str, Any], bootstrap_servers: str,
                         topics: Sequence[str] | None = None) -> Lineage:
    """A storage sink's (or Spark export's) topics and the directory each is written under."""
    location = locate_store(props)
    topics_dir = str(props.get("topics.dir") or "topics").strip("/")
    kafka = kafka_namespace(bootstrap_servers)
    lineage = Lineage()
    for topic in topics if topics is not None else sink_topics(props):
        lineage.inputs.append(DatasetRef(kafka, topic))
        if location.scheme == "s3":
            bucket, _, prefix = location.root.partition("/")
            key = "/".join(p for p in (prefix, topics_dir, topic) if p)
            lineage.outputs.append(DatasetRef(f"s3://{bucket}", key))
        elif location.scheme == "hdfs":
            lineage.outputs.append(DatasetRef(f"hdfs://{location.authority}",
                                              "/".join((location.root.rstrip("/"), topics_dir, topic))))
        else:
            lineage.outputs.append(DatasetRef("file", "/".join((location.root.rstrip("/"), topics_dir, topic))))
    return lineage


def connector_lineage(props: Mapping[str, Any], worker_props: Mapping[str, Any],
                      task_configs: Iterable[Mapping[str, Any]]) -> Lineage:
    """The lineage of a connector's planned tasks (``task_configs``): a JDBC source's tables and topics;
    a storage sink's topics and directories; nothing for other connectors."""
    bootstrap = str(worker_props.get("bootstrap.servers") or "")
    lineage = Lineage()
    if str(props.get("connector.class", "")).endswith("JdbcSourceConnector"):
        for config in task_configs:
            found = jdbc_source_lineage(props, str(config.get(TABLES_CONFIG) or ""), bootstrap)
            lineage.inputs += found.inputs
            lineage.outputs += found.outputs
    elif props.get("store.url"):
        lineage = storage_sink_lineage(props, bootstrap)
    return lineage


def add_written_fields(lineage: Lineage, props: Mapping[str, Any], files: Sequence[str]) -> None:
    """Give each output directory of a storage sink's ``lineage`` the columns (name, Arrow type) of the first
    Parquet file in ``files`` written under it: a footer read from the store ``props`` name. ``files`` are
    as the Spark job reports them (``file:/...``, ``hdfs://nn/...``, ``s3a://bucket/key``)."""
    store = None
    for source, output in zip(lineage.inputs, lineage.outputs, strict=True):
        written = next((f for f in files if f"/{source.name}/" in f and f.endswith(".parquet")), None)
        if written is None:
            continue
        store = store or open_store(props)
        parsed = urlparse(written)
        path = f"{parsed.netloc}{parsed.path}" if parsed.scheme in ("s3", "s3a") else parsed.path
        schema = pq.read_schema(pa.BufferReader(store.read_bytes(path)))
        output.fields = [(f.name, str(f.type)) for f in schema]

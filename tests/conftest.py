"""Fixtures for real services: Kafka brokers, PostgreSQL, moto S3, a Schema Registry, HDFS, a Spark cluster.

Nothing here is a fake.

Services are session-scoped (started once, on first use) and hand each test its own topic,
database or bucket, so tests never see each other's data.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from kopycat.dev.hdfs import LocalHdfs
from kopycat.dev.kafka_broker import LocalKafkaBroker
from kopycat.dev.kafka_connect import LocalKafkaConnect
from kopycat.dev.postgres import LocalPostgres
from kopycat.dev.s3 import LocalS3
from kopycat.dev.schema_registry import LocalSchemaRegistry
from kopycat.dev.secured_kafka import SecuredKafkaBroker
from kopycat.dev.spark_cluster import LocalSparkCluster

INTEGRATION_DIR = Path(__file__).parent / "integration"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Everything under tests/integration is marked `integration` (select with -m)."""
    for item in items:
        if INTEGRATION_DIR in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.integration)


@pytest.fixture(scope="session")
def kafka_broker() -> Iterator[LocalKafkaBroker]:
    """The main Kafka broker (Apache Kafka 4.x, KRaft) for the whole test session."""
    with LocalKafkaBroker(name="kafka-a") as broker:
        yield broker


@pytest.fixture(scope="session")
def kafka_broker_b() -> Iterator[LocalKafkaBroker]:
    """A second, independent broker: the other cluster in mirroring tests."""
    with LocalKafkaBroker(name="kafka-b") as broker:
        yield broker


@pytest.fixture(scope="session")
def secured_kafka() -> Iterator[SecuredKafkaBroker]:
    """A secured broker (SASL_SSL with PLAIN/SCRAM, mTLS, ACLs and a throwaway CA) for the session."""
    with SecuredKafkaBroker(name="kafka-secured") as broker:
        yield broker


@pytest.fixture(scope="session")
def secured_kafka_b() -> Iterator[SecuredKafkaBroker]:
    """A second secured broker with its own CA: the other cluster when mirroring between secured clusters,
    so a client wired to the wrong cluster fails its TLS handshake instead of passing unnoticed."""
    with SecuredKafkaBroker(name="kafka-secured-b") as broker:
        yield broker


@pytest.fixture
def bootstrap_servers(kafka_broker: LocalKafkaBroker) -> str:
    return kafka_broker.bootstrap_servers


@pytest.fixture
def topic_name(request: pytest.FixtureRequest) -> str:
    """A topic name no other test uses."""
    return f"t-{request.node.name[:40].replace('[', '-').replace(']', '')}-{uuid.uuid4().hex[:8]}"


@pytest.fixture(params=["process", "thread"])
def task_isolation(request: pytest.FixtureRequest) -> str:
    """The worker's ``task.isolation``: tests of the worker's semantics hold with tasks in processes and threads."""
    return str(request.param)


@pytest.fixture
def worker(bootstrap_servers: str, topic_name: str) -> dict[str, str]:
    """Worker properties with this test's own config, status and offsets topics: other tests'
    connectors are not seen (no DAG, no status) and this test's are not seen elsewhere."""
    return {"bootstrap.servers": bootstrap_servers,
            "config.storage.topic": f"{topic_name}-configs", "config.storage.replication.factor": "1",
            "status.storage.topic": f"{topic_name}-status", "status.storage.replication.factor": "1",
            "status.storage.partitions": "1", "offset.storage.topic": f"{topic_name}-offsets",
            "offset.storage.replication.factor": "1", "offset.storage.partitions": "1"}


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[LocalPostgres]:
    with LocalPostgres(name="pg-test") as server:
        yield server


@pytest.fixture
def postgres_url(postgres_server: LocalPostgres) -> str:
    """A SQLAlchemy URL of a fresh, empty PostgreSQL database for this test."""
    return postgres_server.create_database(f"test_{uuid.uuid4().hex[:12]}")


@pytest.fixture(scope="session")
def s3_server() -> Iterator[LocalS3]:
    with LocalS3() as server:
        yield server


@pytest.fixture
def s3_bucket(s3_server: LocalS3) -> str:
    """A fresh, empty bucket on the moto S3 server, for this test."""
    bucket = f"kopycat-{uuid.uuid4().hex[:12]}"
    s3_server.client().create_bucket(Bucket=bucket)
    return bucket


@pytest.fixture(scope="session")
def schema_registry() -> Iterator[str]:
    """A real Schema Registry (Apicurio, in memory) for the session: Confluent's API URL."""
    with LocalSchemaRegistry(name="schema-registry-test") as registry:
        yield registry.url


@pytest.fixture(scope="session")
def schema_registry_tls() -> Iterator[LocalSchemaRegistry]:
    """A second registry serving HTTPS only, its certificate signed by a throwaway CA
    (``registry.url`` is https; ``registry.tls_config()`` gives the keys that trust it)."""
    with LocalSchemaRegistry(name="schema-registry-tls-test", tls=True) as registry:
        yield registry


@pytest.fixture(scope="session")
def hdfs_server() -> Iterator[LocalHdfs]:
    """A real HDFS (Hadoop's MiniDFSCluster: a NameNode and a DataNode) for the session."""
    with LocalHdfs(name="hdfs-test") as hdfs:
        yield hdfs


@pytest.fixture(scope="session")
def hdfs_url(hdfs_server: LocalHdfs) -> str:
    """The session's HDFS, ``hdfs://127.0.0.1:PORT``; its WebHDFS address is ``hdfs_server.webhdfs_url``.

    Tests write below a directory of their own name (``{hdfs_url}/{topic_name}``).
    """
    return hdfs_server.url


@pytest.fixture(scope="session")
def spark_cluster() -> Iterator[LocalSparkCluster]:
    """A Spark standalone cluster for the session: a master and two 1-core, 512m workers on 127.0.0.1."""
    with LocalSparkCluster() as cluster:
        yield cluster


@pytest.fixture(scope="session")
def kafka_connect(kafka_broker: LocalKafkaBroker) -> Iterator[LocalKafkaConnect]:
    """A real Kafka Connect worker (Apache Kafka 4.x, distributed mode) on the main broker.

    Its internal topics are its own (``kafka_connect.offsets_topic`` and so on); tests name
    their connectors uniquely, since the worker lives for the whole session.
    """
    with LocalKafkaConnect(kafka_broker.bootstrap_servers) as connect:
        yield connect

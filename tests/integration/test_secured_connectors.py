"""Every connector family on the secured broker, configured exactly as a Kafka Connect user configures it.

One secured broker per session (fixture ``secured_kafka``); worker.properties with Java keys (the JAAS
line, a JKS trust store) at the top level and under ``producer.``/``consumer.``/``admin.``; the offsets,
config and status topics on the same cluster. ``kopycat run`` runs as a user runs it (a child process):
rows in equal rows out, and no password appears in its output or in the argv of it or its children.
"""

from __future__ import annotations

import re
import sqlite3
import time
import uuid
from pathlib import Path
from typing import Any

import orjson
import pyarrow.parquet as pq
import pytest
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
)

from kopycat.dev.secured_kafka import RESTRICTED_USER, SecuredKafkaBroker
from tests.support.secured import (
    FILE_CONFIG_PROVIDER,
    Watched,
    assert_absent,
    assert_no_secret_in_run,
    consume_secured,
    kopycat,
    rest_worker,
    stored_connector_records,
    worker_properties,
    write_lines,
    write_properties,
)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]

ROWS = 500
JDBC_SOURCE = "io.confluent.connect.jdbc.JdbcSourceConnector"
JDBC_SINK = "io.confluent.connect.jdbc.JdbcSinkConnector"
STORAGE_SINK = "io.confluent.connect.hdfs.HdfsSinkConnector"


def _secrets(broker: SecuredKafkaBroker) -> tuple[str, str]:
    return broker.passwords["admin"], broker.store_password


def _payloads(broker: SecuredKafkaBroker, topic: str, *, committed_only: bool = False) -> list[Any]:
    """The payloads of the JsonConverter envelopes in ``topic``."""
    return [orjson.loads(m.value())["payload"] for m in consume_secured(broker, topic, committed_only=committed_only)]


def _source_rows(path: Path) -> list[tuple[int, str, float]]:
    rows = [(i, f"order {i}", i * 1.25) for i in range(1, ROWS + 1)]
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, label TEXT NOT NULL, amount REAL NOT NULL)")
        db.executemany("INSERT INTO orders VALUES (?, ?, ?)", rows)
    return rows


def _jdbc_source_into_topic(tmp_path: Path, broker: SecuredKafkaBroker, topic: str) -> tuple[Path, list[tuple]]:
    """Rows of a SQLite table copied to ``<topic>-orders`` by the JDBC source over SASL_SSL/SCRAM."""
    rows = _source_rows(tmp_path / "source.db")
    worker = write_properties(tmp_path / "worker.properties",
                              worker_properties(broker.java_sasl_settings(mechanism="SCRAM-SHA-512"), topic))
    source = write_properties(tmp_path / "source.properties", {
        "name": f"{topic}-source", "connector.class": JDBC_SOURCE, "connection.url": f"sqlite:///{tmp_path}/source.db",
        "mode": "incrementing", "incrementing.column.name": "id", "table.whitelist": "orders",
        "topic.prefix": f"{topic}-", "tasks.max": "1"})
    produced = kopycat("run", str(worker), str(source), "--no-progress")
    assert produced.returncode == 0, produced.stderr[-3000:]
    again = kopycat("run", str(worker), str(source), "--no-progress")  # resumes from the secured offsets topic
    assert again.returncode == 0 and "task 0: 0 records" in again.stdout, again.stdout + again.stderr[-3000:]
    for run in (produced, again):
        assert_no_secret_in_run(run, *_secrets(broker))
    return worker, rows


def test_jdbc_source_and_jdbc_sink_over_sasl_ssl_scram_copy_every_row_exactly(
        tmp_path: Path, secured_kafka: SecuredKafkaBroker, topic_name: str) -> None:
    worker, rows = _jdbc_source_into_topic(tmp_path, secured_kafka, topic_name)
    values = _payloads(secured_kafka, f"{topic_name}-orders")
    assert [(v["id"], v["label"], v["amount"]) for v in values] == rows
    offsets = consume_secured(secured_kafka, f"{topic_name}-offsets")
    assert offsets and all(f"{topic_name}-source".encode() in (m.key() or b"") for m in offsets)

    sink = write_properties(tmp_path / "sink.properties", {
        "name": f"{topic_name}-sink", "connector.class": JDBC_SINK, "connection.url": f"sqlite:///{tmp_path}/sink.db",
        "topics": f"{topic_name}-orders", "insert.mode": "insert", "pk.mode": "none", "auto.create": "true",
        "table.name.format": "orders", "tasks.max": "1"})
    consumed = kopycat("run", str(worker), str(sink), "--no-progress")
    assert consumed.returncode == 0, consumed.stderr[-3000:]
    assert_no_secret_in_run(consumed, *_secrets(secured_kafka))
    with sqlite3.connect(tmp_path / "sink.db") as db:
        copied = db.execute("SELECT id, label, amount FROM orders ORDER BY id").fetchall()
    assert copied == rows


def test_the_storage_sink_over_sasl_ssl_writes_every_record_once_to_parquet(
        tmp_path: Path, secured_kafka: SecuredKafkaBroker, topic_name: str) -> None:
    worker, rows = _jdbc_source_into_topic(tmp_path, secured_kafka, topic_name)
    store = tmp_path / "store"
    sink = write_properties(tmp_path / "storage.properties", {
        "name": f"{topic_name}-files", "connector.class": STORAGE_SINK, "topics": f"{topic_name}-orders",
        "store.url": f"file://{store}", "format.class": "parquet", "flush.size": "120", "tasks.max": "1"})
    for _ in range(2):  # the second run finds nothing new: the group's offsets are on the secured cluster
        run = kopycat("run", str(worker), str(sink), "--no-progress")
        assert run.returncode == 0, run.stderr[-3000:]
        assert_no_secret_in_run(run, *_secrets(secured_kafka))
    files = [path for path in store.rglob("*.parquet") if "+tmp" not in path.parts]
    assert files, f"no file under {store}"
    ids = sorted(i for path in files for i in pq.read_table(path).column("id").to_pylist())
    assert ids == [row[0] for row in rows]


def _acls(principal: str, *bindings: tuple[ResourceType, str, AclOperation]) -> list[AclBinding]:
    return [AclBinding(kind, name, ResourcePatternType.PREFIXED if kind != ResourceType.BROKER else
                       ResourcePatternType.LITERAL, principal, "*", operation, AclPermissionType.ALLOW)
            for kind, name, operation in bindings]


def _grant(broker: SecuredKafkaBroker, acls: list[AclBinding]) -> None:
    admin = AdminClient(broker.librdkafka_sasl_settings())
    for future in admin.create_acls(acls).values():
        future.result(30)
    time.sleep(1)  # the authorizer applies new ACLs from the metadata log


def test_an_exactly_once_source_needs_the_kip_618_acls_and_with_them_copies_exactly(
        tmp_path: Path, secured_kafka: SecuredKafkaBroker, topic_name: str) -> None:
    principal = f"User:{RESTRICTED_USER}"
    _grant(secured_kafka, _acls(principal, (ResourceType.TOPIC, topic_name, AclOperation.ALL),
                                (ResourceType.GROUP, topic_name, AclOperation.ALL)))
    lines = [f"line-{i}" for i in range(400)]
    source_file = write_lines(tmp_path / "in.txt", lines)
    client = secured_kafka.java_sasl_settings(RESTRICTED_USER, "SCRAM-SHA-512")
    worker = write_properties(tmp_path / "worker.properties", worker_properties(
        client, topic_name, **{"exactly.once.source.support": "enabled"}))
    source = write_properties(tmp_path / "source.properties", {
        "name": f"{topic_name}-eos", "connector.class": "FileStreamSource", "file": str(source_file),
        "topic": topic_name, "exactly.once.support": "required"})
    secrets = (secured_kafka.passwords[RESTRICTED_USER], secured_kafka.store_password)

    refused = kopycat("run", str(worker), str(source), "--no-progress")
    assert refused.returncode != 0
    errors = [line for line in refused.stderr.splitlines() if line.startswith("kopycat run: ")]
    assert len(errors) == 1, refused.stderr[-3000:]
    assert "TransactionalId" in errors[0] and "IdempotentWrite" in errors[0] and "KIP-618" in errors[0], errors[0]
    assert_no_secret_in_run(refused, *secrets)
    metadata = AdminClient(secured_kafka.librdkafka_sasl_settings()).list_topics(timeout=30)
    if topic_name in metadata.topics:
        assert consume_secured(secured_kafka, topic_name) == [], "a refused transactional run wrote records"

    _grant(secured_kafka, _acls(principal, (ResourceType.TRANSACTIONAL_ID, f"{topic_name}-group", AclOperation.WRITE),
                                (ResourceType.TRANSACTIONAL_ID, f"{topic_name}-group", AclOperation.DESCRIBE),
                                (ResourceType.BROKER, "kafka-cluster", AclOperation.IDEMPOTENT_WRITE)))
    copied = kopycat("run", str(worker), str(source), "--no-progress")
    assert copied.returncode == 0, copied.stderr[-3000:]
    assert_no_secret_in_run(copied, *secrets)
    assert _payloads(secured_kafka, topic_name, committed_only=True) == lines


def _provided_secrets(tmp_path: Path, broker: SecuredKafkaBroker) -> tuple[Path, dict[str, str]]:
    """The SASL JAAS line and the store password in a properties file, and the client settings that
    read them through Kafka's FileConfigProvider."""
    client = broker.java_sasl_settings(mechanism="SCRAM-SHA-512")
    secrets_file = write_properties(tmp_path / "secrets.properties", {
        "jaas": client["sasl.jaas.config"], "truststore.password": client["ssl.truststore.password"]})
    return secrets_file, {**client, "sasl.jaas.config": f"${{file:{secrets_file}:jaas}}",
                          "ssl.truststore.password": f"${{file:{secrets_file}:truststore.password}}"}


def test_kopycat_rest_on_the_secured_cluster_stores_connectors_and_shows_no_password(
        tmp_path: Path, secured_kafka: SecuredKafkaBroker, topic_name: str) -> None:
    secrets_file, client = _provided_secrets(tmp_path, secured_kafka)
    worker = write_properties(tmp_path / "worker.properties",
                              worker_properties(client, topic_name, **FILE_CONFIG_PROVIDER))
    log, name, decoy = tmp_path / "rest.log", f"{topic_name}-rest", f"decoy-{uuid.uuid4().hex}"
    secrets = (*_secrets(secured_kafka), decoy)
    config = {"connector.class": "FileStreamSource", "file": str(tmp_path / "in.txt"), "topic": topic_name,
              "producer.override.sasl.jaas.config": client["sasl.jaas.config"],
              "producer.override.ssl.truststore.password": client["ssl.truststore.password"],
              "producer.override.ssl.key.password": decoy}
    with rest_worker(worker, log) as rest:
        responses = rest.create_and_read(name, config, (
            f"/connectors/{name}", f"/connectors/{name}/config", f"/connectors/{name}/status",
            f"/connectors/{name}/tasks", "/connectors?expand=info&expand=status"))
        shown = responses[2].json()
        assert shown["producer.override.ssl.key.password"] == "[hidden]", shown
        assert shown["producer.override.sasl.jaas.config"] == "[hidden]", shown
        assert responses[3].json()["name"] == name
        rest.assert_hides(secrets, responses)
    assert_absent(secrets, "the REST worker's log", log.read_text().splitlines())
    stored = stored_connector_records(secured_kafka, topic_name, name)
    assert_absent(_secrets(secured_kafka), "a connect-configs record", (m.value() or b"" for m in stored))
    topics = AdminClient(secured_kafka.librdkafka_sasl_settings()).list_topics(timeout=30).topics
    assert {f"{topic_name}-configs", f"{topic_name}-status"} <= topics.keys()


README = Path(__file__).parents[2] / "docs" / "how-to" / "secured-clusters.md"
README_SECTION = "# Connect to a secured cluster"
CLOUD_HOST = "pkc-4r297.europe-west1.gcp.confluent.cloud:9092"


def _readme_block(index: int, language: str = "properties") -> str:
    """The ``index``-th fenced ``language`` block of the docs' secured-cluster page."""
    section = README.read_text().split(README_SECTION, 1)[1].split("\n## ", 1)[0]
    return section.split(f"```{language}\n")[index + 1].split("```", 1)[0]


def _with_fixture_ca(lines: str, broker: SecuredKafkaBroker, tmp_path: Path) -> dict[str, str]:
    """A README worker file plus what only the fixture needs: its private CA (clouds use public ones),
    and a local offsets file."""
    props = dict(line.split("=", 1) for line in lines.splitlines() if line and not line.startswith("#"))
    for prefix in ("", "producer.", "consumer."):
        props[f"{prefix}ssl.truststore.location"] = str(broker.certificates.truststore_jks)
        props[f"{prefix}ssl.truststore.password"] = broker.certificates.truststore_password
    props["offset.storage.file.filename"] = str(tmp_path / "offsets")
    return props


def _file_to_topic(tmp_path: Path, worker: dict[str, str], topic: str, lines: list[str]) -> Watched:
    source = write_properties(tmp_path / "readme-source.properties", {
        "name": f"{topic}-readme", "connector.class": "FileStreamSource",
        "file": str(write_lines(tmp_path / "readme.txt", lines)), "topic": topic})
    return kopycat("run", str(write_properties(tmp_path / "readme-worker.properties", worker)), str(source),
                   "--no-progress")


def test_the_readmes_confluent_cloud_worker_file_runs_against_the_secured_broker(
        tmp_path: Path, secured_kafka: SecuredKafkaBroker, topic_name: str) -> None:
    password = secured_kafka.passwords["admin"]
    block = (_readme_block(0).replace(CLOUD_HOST, secured_kafka.bootstrap_servers)
             .replace('username="API_KEY"', 'username="admin"'))
    worker = _with_fixture_ca(block.replace('password="API_SECRET"', f'password="{password}"'), secured_kafka,
                              tmp_path)
    assert worker["ssl.endpoint.identification.algorithm"] == "https" and worker["sasl.mechanism"] == "PLAIN"
    lines = [f"readme-{i}" for i in range(50)]
    copied = _file_to_topic(tmp_path, worker, topic_name, lines)
    assert copied.returncode == 0, copied.stderr[-3000:]
    assert_no_secret_in_run(copied, password, secured_kafka.store_password)
    assert _payloads(secured_kafka, topic_name) == lines

    wrong = _with_fixture_ca(block.replace('password="API_SECRET"', 'password="not-the-secret"'), secured_kafka,
                             tmp_path)
    wrong["kopycat.auth.failure.timeout.ms"] = "3000"  # the documented line, sooner
    failed = _file_to_topic(tmp_path, wrong, f"{topic_name}-bad", lines)
    [line] = [line for line in failed.stderr.splitlines() if line.startswith("kopycat run: ")]
    documented = _readme_block(0, "text").strip().replace(CLOUD_HOST, secured_kafka.bootstrap_servers)
    assert re.fullmatch(re.escape(documented).replace(r"after\ 20\ s", r"after\ \d+\ s"), line), line
    assert_no_secret_in_run(failed, "not-the-secret", secured_kafka.store_password)


def test_the_readmes_mtls_worker_file_with_a_pkcs12_key_store_runs_against_the_secured_broker(
        tmp_path: Path, secured_kafka: SecuredKafkaBroker, topic_name: str) -> None:
    client = secured_kafka.certificates.client
    secrets_file = write_properties(tmp_path / "secrets.properties", {"keystore.password": client.password})
    block = (_readme_block(1).replace("b-1.mycluster.kafka.eu-west-1.amazonaws.com:9094",
                                      secured_kafka.ssl_bootstrap_servers)
             .replace("/etc/kopycat/client.p12", str(client.pkcs12))
             .replace("/etc/kopycat/secrets.properties", str(secrets_file)))
    worker = _with_fixture_ca(block, secured_kafka, tmp_path)
    for prefix in ("producer.", "consumer."):  # "the same under producer. and consumer."
        worker.update({f"{prefix}{key}": value for key, value in list(worker.items())
                       if key.startswith(("security.", "ssl.keystore.", "ssl.key."))})
    lines = [f"mtls-{i}" for i in range(50)]
    copied = _file_to_topic(tmp_path, worker, topic_name, lines)
    assert copied.returncode == 0, copied.stderr[-3000:]
    assert_no_secret_in_run(copied, client.password)
    assert _payloads(secured_kafka, topic_name) == lines

"""The Spark export from the secured broker over SASL_SSL/SCRAM, configured as a Kafka Connect user does.

Worker keys are Java (a JAAS line, a JKS trust store under ``consumer.``); the plan hands them to
Spark's Kafka source (``kafka.*``) and to the job's confluent-kafka clients, which commit the
group. The spark-submit command the export runs is captured: no password may be in it, the job's
private options file must be gone after it, and the job's whole log must not hold a password either.
"""

from __future__ import annotations

import subprocess
import uuid
from pathlib import Path
from typing import Any

import pytest

from kopycat.api.records import TopicPartition
from kopycat.connectors.files import spark_export
from kopycat.connectors.files.spark_plan import plan_spark_export
from kopycat.dev.secured_kafka import SecuredKafkaBroker
from tests.support.kafka import committed_offsets
from tests.support.orders import PARTITIONS, assert_every_id_once, local_store, produce_orders, read_committed

pytestmark = pytest.mark.timeout(1800)

SPARK_TIMEOUT_S = 1200


def test_a_spark_export_over_sasl_ssl_scram_copies_the_topic_and_keeps_passwords_off_argv_and_log(
        secured_kafka: SecuredKafkaBroker, topic_name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _export_and_check(secured_kafka, secured_kafka.java_sasl_settings(mechanism="SCRAM-SHA-512"),
                      (secured_kafka.passwords["admin"], secured_kafka.store_password), topic_name, tmp_path,
                      monkeypatch)


def test_a_spark_export_over_oauthbearer_logs_in_with_kafkas_login_callback_handler_and_hides_the_secret(
        secured_kafka: SecuredKafkaBroker, topic_name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Spark's Kafka source (kafka-clients' ``OAuthBearerLoginCallbackHandler``) and the job's librdkafka
    clients (OIDC) both fetch tokens from the fixture's identity provider."""
    issued_before = secured_kafka.identity_provider.issued
    _export_and_check(secured_kafka, secured_kafka.java_oauth_settings(),
                      (secured_kafka.oauth_client_secret, secured_kafka.store_password), topic_name, tmp_path,
                      monkeypatch)
    assert secured_kafka.identity_provider.issued >= issued_before + 2, "a client did not log in with a token"


def _export_and_check(secured_kafka: SecuredKafkaBroker, java: dict[str, str], secrets: tuple[str, ...],
                      topic_name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Export a topic of orders with the consumer settings ``java``; check the data, the committed
    group, and that no secret reached argv, the options file after the job, or the job's log."""
    admin = secured_kafka.librdkafka_sasl_settings()
    count, name = 3_000, f"secured-export-{uuid.uuid4().hex[:8]}"
    ranges = produce_orders(secured_kafka.bootstrap_servers, topic_name, count, client=admin)
    worker = {"bootstrap.servers": java["bootstrap.servers"],
              **{f"consumer.{k}": v for k, v in java.items() if k != "bootstrap.servers"}}
    lake = tmp_path / "lake"
    props = {"name": name, "connector.class": "io.confluent.connect.s3.S3SinkConnector", "topics": topic_name,
             "store.url": f"file://{lake}", "format.class": "parquet", "flush.size": "1000"}
    job = plan_spark_export(props, worker, {r.topic_partition: r.end for r in ranges}, master="local[2]")
    runs: list[tuple[list[str], Any]] = []
    real_run = subprocess.run

    def recording_run(command: list[str], **kwargs: Any) -> Any:
        done = real_run(command, **kwargs)
        runs.append((list(command), done))
        return done
    monkeypatch.setattr(spark_export.subprocess, "run", recording_run)

    result = spark_export.run_spark_export(job, timeout=SPARK_TIMEOUT_S)

    files = read_committed(*local_store(lake / "topics" / topic_name), topic=topic_name)
    assert_every_id_once(files, count)
    assert result.committed_offsets == {TopicPartition(r.topic, r.partition): r.end for r in ranges}
    assert committed_offsets(secured_kafka.bootstrap_servers, f"connect-{name}", topic_name, PARTITIONS,
                             client=admin) == {r.partition: r.end for r in ranges}
    [(command, done)] = runs
    assert not any(secret in argument for argument in command for secret in secrets), "a password is in argv"
    options = Path(command[command.index("--options-file") + 1])
    assert not options.exists() and not options.parent.exists(), "the options file outlived the job"
    assert "kafka.security.protocol" not in " ".join(command)  # options are the job's, not spark-submit's conf
    assert "--kafka-option" in command and "security.protocol=SASL_SSL" in command
    log = done.stdout + done.stderr
    assert "ConsumerConfig values" in log or "kopycat.spark.export" in log  # the job's log was captured
    assert not any(secret in log for secret in secrets), "a password is in the job's log"

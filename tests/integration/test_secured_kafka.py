"""Kopycat against a secured cluster, configured exactly as a Kafka Connect user configures it.

Real secured broker (:class:`~kopycat.dev.secured_kafka.SecuredKafkaBroker`); worker.properties with
Java keys: a JAAS line, JKS trust and key stores. ``kopycat run`` runs as a user runs it (a child
process); every line it prints, its log included, is checked for the passwords.
"""

from __future__ import annotations

import logging
import subprocess
import sys
import time
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from kopycat.client_security import AuthenticationFailedError
from kopycat.dev.secured_kafka import RESTRICTED_USER, SecuredKafkaBroker
from kopycat.properties import load_config_file
from kopycat.runtime.run_once import run_connector_once
from tests.support.secured import librdkafka_threads, wait_for_librdkafka_threads

pytestmark = pytest.mark.integration

_LINES = [f"line-{i}" for i in range(300)]


def _kopycat(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kopycat.cli", *args], capture_output=True, text=True, timeout=300)


def _write(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(f"{line}\n" for line in lines))
    return path


def _worker(tmp_path: Path, client: dict[str, str], topic: str, *, offsets_topic: bool = True) -> Path:
    """A worker.properties as Kafka Connect's: the same security keys at the top level (the worker's own
    clients) and under producer./consumer. (the tasks' clients)."""
    security = {k: v for k, v in client.items() if k != "bootstrap.servers"}
    lines = [f"bootstrap.servers={client['bootstrap.servers']}",
             "key.converter=org.apache.kafka.connect.storage.StringConverter",
             "value.converter=org.apache.kafka.connect.storage.StringConverter"]
    if offsets_topic:
        lines += [f"offset.storage.topic={topic}-offsets", "offset.storage.partitions=1",
                  "offset.storage.replication.factor=1"]
    else:
        lines.append(f"offset.storage.file.filename={tmp_path / 'offsets'}")
    for prefix in ("", "producer.", "consumer."):
        lines += [f"{prefix}{key}={value}" for key, value in security.items()]
    return _write(tmp_path / "worker.properties", lines)


def _assert_no_secret(run: subprocess.CompletedProcess[str], *secrets: str) -> None:
    for line in (run.stdout + run.stderr).splitlines():
        for secret in secrets:
            assert secret not in line, "a password reached the output"


def _error_line(run: subprocess.CompletedProcess[str]) -> str:
    """The one line the CLI prints for a failure (librdkafka's own log lines may follow it)."""
    lines = [line for line in run.stderr.splitlines() if line.startswith("kopycat run: ")]
    assert len(lines) == 1, run.stderr[-3000:]
    return lines[0]


def _copy_file_through_topic(tmp_path: Path, client: dict[str, str], topic: str, *secrets: str) -> None:
    source_file = _write(tmp_path / "in.txt", _LINES)
    worker = _worker(tmp_path, client, topic)
    source = _write(tmp_path / "source.properties", [
        f"name={topic}-source", "connector.class=FileStreamSource", f"file={source_file}", f"topic={topic}"])
    sink_file = tmp_path / "out.txt"
    sink = _write(tmp_path / "sink.properties", [
        f"name={topic}-sink", "connector.class=FileStreamSink", f"file={sink_file}", f"topics={topic}"])
    produced = _kopycat("run", str(worker), str(source), "--no-progress")
    assert produced.returncode == 0, produced.stderr[-3000:]
    assert "task 0: 300 records" in produced.stdout, produced.stdout
    again = _kopycat("run", str(worker), str(source), "--no-progress")  # offsets on the secured topic
    assert again.returncode == 0 and "task 0: 0 records" in again.stdout, again.stdout + again.stderr[-3000:]
    consumed = _kopycat("run", str(worker), str(sink), "--no-progress")
    assert consumed.returncode == 0, consumed.stderr[-3000:]
    assert sink_file.read_text().splitlines() == _LINES
    for run in (produced, again, consumed):
        _assert_no_secret(run, *secrets)


def test_file_source_to_topic_to_file_sink_over_sasl_ssl_scram_with_a_jks_truststore(
        tmp_path: Path, secured_kafka: SecuredKafkaBroker, topic_name: str) -> None:
    client = secured_kafka.java_sasl_settings(mechanism="SCRAM-SHA-512")
    assert client["ssl.truststore.location"].endswith(".jks")
    _copy_file_through_topic(tmp_path, client, topic_name, secured_kafka.passwords["admin"],
                             secured_kafka.store_password)


def test_file_source_to_topic_to_file_sink_over_mutual_tls_with_jks_stores(
        tmp_path: Path, secured_kafka: SecuredKafkaBroker, topic_name: str) -> None:
    client = secured_kafka.java_mtls_settings()
    assert client["ssl.keystore.location"].endswith(".jks")
    _copy_file_through_topic(tmp_path, client, topic_name, secured_kafka.store_password)


def test_a_wrong_password_fails_within_a_minute_with_one_line_naming_cluster_and_mechanism(
        tmp_path: Path, secured_kafka: SecuredKafkaBroker, topic_name: str) -> None:
    client = secured_kafka.java_sasl_settings(mechanism="SCRAM-SHA-256", password="not-the-password")
    worker = _worker(tmp_path, client, topic_name)
    source = _write(tmp_path / "source.properties", [
        f"name={topic_name}", "connector.class=FileStreamSource", f"file={_write(tmp_path / 'in.txt', _LINES)}",
        f"topic={topic_name}"])
    started = time.monotonic()
    failed = _kopycat("run", str(worker), str(source), "--no-progress")
    assert time.monotonic() - started < 60
    assert failed.returncode != 0
    last = _error_line(failed)
    assert secured_kafka.bootstrap_servers in last and "SCRAM-SHA-256" in last, failed.stderr[-3000:]
    assert "sasl.jaas.config" in last, last
    _assert_no_secret(failed, "not-the-password", secured_kafka.store_password)


def test_an_unknown_ca_fails_within_a_minute_naming_the_truststore(
        tmp_path: Path, secured_kafka: SecuredKafkaBroker, topic_name: str) -> None:
    from kopycat.dev.certificates import make_certificates

    other = make_certificates(tmp_path / "other-ca", password="changeit")
    client = {**secured_kafka.java_sasl_settings(), "ssl.truststore.location": str(other.truststore_jks),
              "ssl.truststore.password": "changeit"}
    worker = _worker(tmp_path, client, topic_name)
    source = _write(tmp_path / "source.properties", [
        f"name={topic_name}", "connector.class=FileStreamSource", f"file={_write(tmp_path / 'in.txt', _LINES)}",
        f"topic={topic_name}"])
    started = time.monotonic()
    failed = _kopycat("run", str(worker), str(source), "--no-progress")
    assert time.monotonic() - started < 60
    last = _error_line(failed)
    assert failed.returncode != 0 and secured_kafka.bootstrap_servers in last, failed.stderr[-3000:]
    assert "ssl.truststore.location" in last, last


def test_a_user_without_acls_reading_a_topic_gets_one_line_naming_the_topic_and_the_operation(
        tmp_path: Path, secured_kafka: SecuredKafkaBroker, topic_name: str) -> None:
    admin = AdminClient(secured_kafka.librdkafka_sasl_settings())
    admin.create_topics([NewTopic(topic_name, 1, 1)])[topic_name].result(30)
    client = secured_kafka.java_sasl_settings(RESTRICTED_USER, "PLAIN")
    worker = _worker(tmp_path, client, topic_name, offsets_topic=False)
    sink = _write(tmp_path / "sink.properties", [
        f"name={topic_name}", "connector.class=FileStreamSink", f"file={tmp_path / 'out.txt'}", f"topics={topic_name}"])
    failed = _kopycat("run", str(worker), str(sink), "--no-progress")
    line = _error_line(failed)
    assert failed.returncode != 0
    assert f"topic '{topic_name}'" in line and "Read" in line and "authoriz" in line.lower(), line
    _assert_no_secret(failed, secured_kafka.passwords[RESTRICTED_USER], secured_kafka.store_password)


def test_a_user_without_acls_gets_one_line_naming_the_offsets_topic_it_may_not_create(
        tmp_path: Path, secured_kafka: SecuredKafkaBroker, topic_name: str) -> None:
    client = secured_kafka.java_sasl_settings(RESTRICTED_USER, "SCRAM-SHA-512")
    worker = _worker(tmp_path, client, topic_name)
    source = _write(tmp_path / "source.properties", [
        f"name={topic_name}", "connector.class=FileStreamSource", f"file={_write(tmp_path / 'in.txt', _LINES)}",
        f"topic={topic_name}"])
    failed = _kopycat("run", str(worker), str(source), "--no-progress")
    line = _error_line(failed)
    assert failed.returncode != 0
    assert f"topic '{topic_name}-offsets'" in line and "Create operation" in line, line
    _assert_no_secret(failed, secured_kafka.passwords[RESTRICTED_USER], secured_kafka.store_password)


def test_no_log_record_of_an_in_process_run_carries_a_password(
        tmp_path: Path, secured_kafka: SecuredKafkaBroker, topic_name: str, caplog: pytest.LogCaptureFixture) -> None:
    source_file = _write(tmp_path / "in.txt", _LINES)
    worker = load_config_file(str(_worker(tmp_path, secured_kafka.java_sasl_settings(mechanism="PLAIN"), topic_name)))
    wrong = {**worker, "sasl.jaas.config": worker["sasl.jaas.config"].replace(
        secured_kafka.passwords["admin"], "wrong-password"), "kopycat.auth.failure.timeout.ms": "2000"}
    source = {"name": topic_name, "connector.class": "FileStreamSource", "file": str(source_file), "topic": topic_name}
    with caplog.at_level(logging.DEBUG):
        summaries = run_connector_once(source, worker)
        with pytest.raises(AuthenticationFailedError):
            run_connector_once(source, wrong)
    assert [s.records for s in summaries] == [300]
    secrets = (secured_kafka.passwords["admin"], secured_kafka.store_password, "wrong-password")
    assert caplog.records
    for record in caplog.records:
        text = record.getMessage()
        assert not any(secret in text for secret in secrets), f"a password reached the log ({record.name})"


def test_a_refused_login_leaves_no_client_retrying_while_the_error_is_kept(
        tmp_path: Path, secured_kafka: SecuredKafkaBroker, topic_name: str) -> None:
    client = secured_kafka.java_sasl_settings(mechanism="SCRAM-SHA-256", password="not-the-password")
    worker = load_config_file(str(_worker(tmp_path, client, topic_name)))
    worker["kopycat.auth.failure.timeout.ms"] = "2000"
    source = {"name": topic_name, "connector.class": "FileStreamSource",
              "file": str(_write(tmp_path / "in.txt", _LINES)), "topic": topic_name}
    before = librdkafka_threads()
    with pytest.raises(AuthenticationFailedError) as failed:  # kept, as a task keeps its failure
        run_connector_once(source, worker)
    wait_for_librdkafka_threads(before, "the refused run")
    assert secured_kafka.bootstrap_servers in str(failed.value) and "SCRAM-SHA-256" in str(failed.value)

"""A DAG copying to the secured broker through an Airflow connection, as Airflow users keep secrets.

The connection (``AIRFLOW_CONN_<ID>`` JSON, as a secrets backend hands it) holds the SCRAM user (or
the OAuth client id) in its login, the password (or the OAuth client secret) in its password field
and the rest as Java keys in its extra. A FileStreamSource copies a file to a topic over SASL_SSL
(SCRAM-SHA-512 or OAUTHBEARER) in a ``dag.test`` run: the topic must hold the file's lines exactly,
and no password nor client secret may reach the run's log, any task log file, XCom or a rendered
template field.
The hook's ``test_connection`` answers for a good and a wrong password.
"""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, TopicPartition

from kopycat.dev.secured_kafka import ADMIN_USER, OAUTH_CLIENT, SecuredKafkaBroker
from kopycat.jaas import jaas_config
from kopycat_airflow.hooks.kopycat import TEST_CONNECTION_TIMEOUT_S, KopycatHook
from kopycat_airflow.local import LocalAirflow
from tests.support.secured import librdkafka_threads, wait_for_librdkafka_threads

pytestmark = [pytest.mark.integration, pytest.mark.timeout(1200)]

LINES = [f"line-{i}" for i in range(200)]


def _connection(broker: SecuredKafkaBroker, topic: str, *, password: str | None = None,
                conn_type: str = "kopycat", mechanism: str = "SCRAM-SHA-512") -> str:
    """The connection as ``AIRFLOW_CONN_*`` JSON: login/password fields (for OAUTHBEARER the OAuth client
    id and secret), Java keys in the extra."""
    if mechanism == "OAUTHBEARER":
        java = {**broker.java_oauth_settings(), "sasl.oauthbearer.scope": "kafka"}
        login, known = OAUTH_CLIENT, broker.oauth_client_secret
    else:
        java, login, known = broker.java_sasl_settings(ADMIN_USER, mechanism), ADMIN_USER, broker.passwords[ADMIN_USER]
    extra = {key: value for key, value in java.items() if key != "sasl.jaas.config"}
    extra.update({"offset.storage.topic": f"{topic}-offsets", "offset.storage.partitions": "1",
                  "offset.storage.replication.factor": "1", "kopycat.auth.failure.timeout.ms": "5000"})
    if conn_type == "kafka":
        extra = {"config": extra}
    return json.dumps({"conn_type": conn_type, "login": login,
                       "password": known if password is None else password, "extra": extra})


def _topic_lines(broker: SecuredKafkaBroker, topic: str) -> list[str]:
    consumer = Consumer({**broker.librdkafka_sasl_settings(), "group.id": f"check-{uuid.uuid4().hex}",
                         "enable.partition.eof": True})
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        lines: list[str] = []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            message = consumer.poll(1)
            if message is None:
                continue
            if message.error():
                return lines
            lines.append(json.loads(message.value()))
        raise AssertionError(f"timed out reading {topic}")
    finally:
        consumer.close()


def _texts(home: Path, run: dict[str, Any]) -> list[tuple[str, str]]:
    """The run's log and every task log file under the Airflow home, with their names."""
    paths = [Path(run["log"]), *(p for p in (home / "logs").rglob("*") if p.is_file())]
    return [(str(p), p.read_text(encoding="utf-8", errors="replace")) for p in paths if p.exists()]


@pytest.mark.parametrize(("conn_type", "mechanism"), [
    ("kopycat", "SCRAM-SHA-512"), ("kafka", "SCRAM-SHA-512"), ("kopycat", "OAUTHBEARER")])
def test_a_dag_copies_a_file_over_sasl_ssl_through_a_connection_and_no_password_reaches_logs_or_xcom(
        local_airflow: LocalAirflow, secured_kafka: SecuredKafkaBroker, topic_name: str, tmp_path: Path,
        conn_type: str, mechanism: str) -> None:
    conn_id = f"secured_{uuid.uuid4().hex[:8]}"
    local_airflow.extra_env[f"AIRFLOW_CONN_{conn_id.upper()}"] = _connection(secured_kafka, topic_name,
                                                                             conn_type=conn_type, mechanism=mechanism)
    issued_before = secured_kafka.identity_provider.issued
    source = tmp_path / "input.txt"
    source.write_text("".join(f"{line}\n" for line in LINES))
    config = {"name": f"{topic_name}-src", "connector.class": "FileStreamSource", "file": str(source),
              "topic": topic_name, "value.converter": "org.apache.kafka.connect.json.JsonConverter",
              "value.converter.schemas.enable": "false"}
    (local_airflow.dags_folder / "t_secured.py").write_text(f'''
import pendulum
from airflow.sdk import DAG
from kopycat_airflow.task_group import connector_task_group

with DAG("t_secured", schedule=None, start_date=pendulum.datetime(2026, 1, 1, tz="UTC"), catchup=False):
    connector_task_group({json.dumps(config)}, kopycat_conn_id={conn_id!r}, copy_retries=0)
''')

    run = local_airflow.run_dag("t_secured")

    assert run["state"] == "success", run.get("log")
    assert [copied["records"] for copied in run.results("copy")] == [len(LINES)]
    assert _topic_lines(secured_kafka, topic_name) == LINES
    if mechanism == "OAUTHBEARER":
        assert secured_kafka.identity_provider.issued > issued_before, "no token was fetched: OAUTHBEARER unused"
    secrets = (secured_kafka.passwords[ADMIN_USER], secured_kafka.store_password, secured_kafka.oauth_client_secret)
    xcom = json.dumps([task["result"] for task in run["tasks"]])
    assert not any(secret in xcom for secret in secrets), "a password reached XCom"
    rendered = json.dumps([task["rendered"] for task in run["tasks"] if task["rendered"]])
    assert "connector_config" in rendered
    assert not any(secret in rendered for secret in secrets), "a password reached the rendered template fields"
    texts = _texts(local_airflow.home, run)
    assert texts
    for name, text in texts:
        assert not any(secret in text for secret in secrets), f"a password reached {name}"


def test_the_hooks_test_connection_logs_in_and_says_in_one_line_when_the_password_is_wrong(
        secured_kafka: SecuredKafkaBroker, topic_name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AIRFLOW_CONN_SECURED_GOOD", _connection(secured_kafka, topic_name))
    monkeypatch.setenv("AIRFLOW_CONN_SECURED_WRONG", _connection(secured_kafka, topic_name, password="wrong-pw"))

    ok, message = KopycatHook("secured_good").test_connection()
    assert ok, message

    before = librdkafka_threads()
    started = time.monotonic()
    ok, message = KopycatHook("secured_wrong").test_connection()
    assert time.monotonic() - started < TEST_CONNECTION_TIMEOUT_S + 10
    wait_for_librdkafka_threads(before, "the refused test_connection")
    assert not ok and "\n" not in message
    assert secured_kafka.bootstrap_servers in message and "SCRAM-SHA-512" in message, message
    assert "wrong-pw" not in message


def test_the_rendered_template_fields_of_a_connector_config_show_no_password(
        local_airflow: LocalAirflow, secured_kafka: SecuredKafkaBroker, topic_name: str, tmp_path: Path) -> None:
    """The JAAS line's password is in a key Airflow's masker does not know (``sasl.jaas.config``); the store
    password comes through ``${airflow:variable:...}``. The UI's rendered fields show neither."""
    conn_id, variable = f"secured_{uuid.uuid4().hex[:8]}", f"store_{uuid.uuid4().hex[:8]}"
    local_airflow.extra_env[f"AIRFLOW_CONN_{conn_id.upper()}"] = _connection(secured_kafka, topic_name)
    local_airflow.extra_env[f"AIRFLOW_VAR_{variable.upper()}"] = secured_kafka.store_password
    source = tmp_path / "input.txt"
    source.write_text("".join(f"{line}\n" for line in LINES))
    password = secured_kafka.passwords[ADMIN_USER]
    config = {"name": f"{topic_name}-src", "connector.class": "FileStreamSource", "file": str(source),
              "topic": topic_name, "value.converter": "org.apache.kafka.connect.json.JsonConverter",
              "value.converter.schemas.enable": "false",
              "producer.override.sasl.jaas.config": jaas_config("SCRAM-SHA-512", ADMIN_USER, password),
              "producer.override.ssl.truststore.password": f"${{airflow:variable:{variable}}}"}
    providers = {"config.providers": "airflow",
                 "config.providers.airflow.class": "kopycat_airflow.config_provider.AirflowConfigProvider"}
    (local_airflow.dags_folder / "t_rendered.py").write_text(f'''
import pendulum
from airflow.sdk import DAG
from kopycat_airflow.task_group import connector_task_group

with DAG("t_rendered", schedule=None, start_date=pendulum.datetime(2026, 1, 1, tz="UTC"), catchup=False):
    connector_task_group({json.dumps(config)}, kopycat_conn_id={conn_id!r}, worker_overrides={providers!r},
                         copy_retries=0)
''')

    run = local_airflow.run_dag("t_rendered")

    assert run["state"] == "success", run.get("log")
    assert [copied["records"] for copied in run.results("copy")] == [len(LINES)]
    assert _topic_lines(secured_kafka, topic_name) == LINES
    [plan] = run.tasks("plan")
    shown = plan["rendered"]["connector_config"]
    assert shown["producer.override.sasl.jaas.config"] != config["producer.override.sasl.jaas.config"], shown
    assert shown["name"] == config["name"]  # what is no secret is shown as it is
    rendered = json.dumps([task["rendered"] for task in run["tasks"] if task["rendered"]])
    assert "connector_config" in rendered and "task_config" in rendered
    for secret in (password, secured_kafka.store_password):
        assert secret not in rendered, "a password reached the rendered template fields"

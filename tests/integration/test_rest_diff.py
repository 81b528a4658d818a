"""Kopycat's REST API against the real Kafka Connect worker: the same script, the same answers.

The script (tests/support/rest_diff.py) runs against Kafka Connect 4.1.1 (the session's worker on broker A)
and against what ``kopycat worker`` serves (on broker B, so the two never share a topic or consumer group);
every step must answer the same status code and the same JSON body, but for the differences
``rest_diff.ALLOWED`` names with their reasons.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from kopycat.dev.kafka_broker import LocalKafkaBroker
from kopycat.dev.kafka_connect import LocalKafkaConnect
from kopycat.rest import create_app
from kopycat.rest.worker_server import running_worker
from tests.support.kafka import create_topic
from tests.support.rest_diff import LINES, Exchange, Side, normalize, run_script

pytestmark = [pytest.mark.integration, pytest.mark.timeout(1200)]

STRING_CONVERTER = "org.apache.kafka.connect.storage.StringConverter"


def kafka_side(connect: LocalKafkaConnect, values: dict[str, str]) -> Side:
    def call(method: str, path: str, body: Any) -> tuple[int, Any]:
        data = None if body is None else json.dumps(body).encode()
        deadline = time.monotonic() + 60
        while True:
            request = urllib.request.Request(connect.url + path, data=data, method=method, headers={
                "Content-Type": "application/json", "Accept": "application/json"})
            try:
                with urllib.request.urlopen(request, timeout=120) as response:
                    status, text = response.status, response.read()
            except urllib.error.HTTPError as exc:
                status, text = exc.code, exc.read()
            answer = json.loads(text) if text else None
            # 409 "rebalance in progress" or 500 "a rebalance is expected": no answer yet, as Kafka's clients retry
            rebalancing = status in (409, 500) and "rebalance" in str(answer).lower()
            if not rebalancing or time.monotonic() > deadline:
                return status, answer
            time.sleep(0.5)
    return Side("kafka", call, values)


@pytest.fixture
def kopycat_client(kafka_broker_b: LocalKafkaBroker) -> Iterator[TestClient]:
    """What ``kopycat worker`` serves, on broker B with its own internal topics."""
    run = uuid.uuid4().hex[:8]
    props = {"bootstrap.servers": kafka_broker_b.bootstrap_servers, "group.id": f"kopycat-diff-{run}",
             "config.storage.topic": f"diff-{run}-configs", "config.storage.replication.factor": "1",
             "status.storage.topic": f"diff-{run}-status", "status.storage.replication.factor": "1",
             "offset.storage.topic": f"diff-{run}-offsets", "offset.storage.replication.factor": "1",
             "key.converter": STRING_CONVERTER, "value.converter": STRING_CONVERTER,
             "offset.flush.interval.ms": "1000"}
    with running_worker(props, "127.0.0.1:8083", poll_interval_s=0.3) as herder, \
            TestClient(create_app(herder)) as client:
        yield client


def kopycat_side(client: TestClient, values: dict[str, str]) -> Side:
    def call(method: str, path: str, body: Any) -> tuple[int, Any]:
        response = client.request(method, path, json=body)
        return response.status_code, response.json() if response.content else None
    return Side("kopycat", call, values)


def differences(kafka: list[Exchange], kopycat: list[Exchange]) -> list[str]:
    out = []
    for theirs, ours in zip(kafka, kopycat, strict=True):
        if normalize(theirs) != normalize(ours):
            out.append(f"{theirs.step.method} {theirs.step.path} {json.dumps(theirs.step.body)}\n"
                       f"  kafka:   {theirs.status} {json.dumps(normalize(theirs)[1])}\n"
                       f"  kopycat: {ours.status} {json.dumps(normalize(ours)[1])}")
    return out


def test_kopycat_answers_the_rest_script_as_kafka_connect_does(
        kafka_connect: LocalKafkaConnect, kafka_broker_b: LocalKafkaBroker, kopycat_client: TestClient,
        tmp_path: Path) -> None:
    run = uuid.uuid4().hex[:8]
    source_file = tmp_path / "in.txt"
    source_file.write_text("".join(f"line {i}\n" for i in range(LINES)), encoding="utf-8")
    values = {"src": f"diff-src-{run}", "sink": f"diff-sink-{run}", "file": str(source_file), "topic": f"diff-{run}"}
    create_topic(kafka_connect.bootstrap_servers, values["topic"])
    create_topic(kafka_broker_b.bootstrap_servers, values["topic"])
    kafka_api = kafka_side(kafka_connect, {**values, "out": str(tmp_path / "kafka-out.txt")})
    try:
        kafka = run_script(kafka_api)
    finally:  # the worker lives for the session: leave no connector of a failed script running on it
        for name in (values["src"], values["sink"]):
            kafka_api.call("DELETE", f"/connectors/{name}", None)
    ours = run_script(kopycat_side(kopycat_client, {**values, "out": str(tmp_path / "kopycat-out.txt")}))
    # the sinks copied every line the sources produced: the offsets compared above are data, not chance
    for side in ("kafka", "kopycat"):
        written = (tmp_path / f"{side}-out.txt").read_text(encoding="utf-8").splitlines()
        assert sorted(written) == sorted(f"line {i}" for i in range(LINES) for _ in range(2)), side
    found = differences(kafka, ours)
    assert not found, f"{len(found)} answers differ from Kafka Connect's:\n" + "\n".join(found)

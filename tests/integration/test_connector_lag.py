"""A connector's lag on a real broker: a sink's consumer group and a mirror's stored offsets.

Sink offsets are committed by a consumer of the group, mirror offsets written to the worker's
offset store through the KIP-875 path; the sensor pokes, defers and comes back from its trigger as Airflow would
run them, with the connection read from an ``AIRFLOW_CONN_*`` variable.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from airflow.sdk.exceptions import TaskDeferred
from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from kopycat.kafka import consumer_group_id
from kopycat.runtime.bounded_plan import plan_bounded_run
from kopycat.runtime.bounded_run import run_planned_task
from kopycat.runtime.lag import connector_lag
from kopycat.runtime.offsets_admin import alter_offsets, get_offsets
from kopycat_airflow.sensors.connector import ConnectorSensor
from kopycat_airflow.triggers.connector import ConnectorLagTrigger
from tests.support.kafka import committed_offsets, create_topic, produce

CONN_ID = "kopycat_lag_test"
PER_PARTITION = {0: 10, 1: 7, 2: 5}
LOADING = (KafkaError.NOT_COORDINATOR, KafkaError.COORDINATOR_LOAD_IN_PROGRESS, KafkaError.COORDINATOR_NOT_AVAILABLE)


@pytest.fixture
def kopycat_conn(bootstrap_servers: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """A ``kopycat`` Airflow connection to the test broker, from the environment (no metadata DB)."""
    host, port = bootstrap_servers.split(",")[0].rsplit(":", 1)
    monkeypatch.setenv(f"AIRFLOW_CONN_{CONN_ID.upper()}", json.dumps(
        {"conn_type": "kopycat", "host": host, "port": int(port)}))
    return CONN_ID


def fill(bootstrap: str, topic: str, per_partition: dict[int, int]) -> None:
    for partition, count in per_partition.items():
        produce(bootstrap, topic, [f"p{partition}-{i}".encode() for i in range(count)], partition=partition)


def commit(bootstrap: str, group: str, topic: str, offsets: dict[int, int]) -> None:
    """Commit as the sink runner does: a consumer of the group, synchronously.

    A fresh broker answers NOT_COORDINATOR while it loads the group's ``__consumer_offsets``
    partition: that is retried, as the runner's commits are.
    """
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    deadline = time.monotonic() + 60
    try:
        while True:
            try:
                consumer.commit(offsets=[TopicPartition(topic, p, o) for p, o in offsets.items()],
                                asynchronous=False)
                return
            except KafkaException as exc:
                error = exc.args[0]
                if not (error.retriable() or error.code() in LOADING) or time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
    finally:
        consumer.close()


def first_event(trigger: ConnectorLagTrigger) -> dict[str, Any]:
    """Run the trigger re-made from its serialized form, as the triggerer does, until it fires."""
    classpath, kwargs = trigger.serialize()
    assert classpath.endswith(".ConnectorLagTrigger")

    async def run() -> dict[str, Any]:
        async for event in ConnectorLagTrigger(**kwargs).run():
            return dict(event.payload)
        raise AssertionError("the trigger ended without an event")

    return asyncio.run(asyncio.wait_for(run(), timeout=60))


def test_a_sink_lag_counts_each_partition_from_its_committed_offset_or_its_whole_range(
        bootstrap_servers: str, topic_name: str, kopycat_conn: str) -> None:
    create_topic(bootstrap_servers, topic_name, partitions=3)
    fill(bootstrap_servers, topic_name, PER_PARTITION)
    name = f"export-{uuid.uuid4().hex[:8]}"
    sink = {"name": name, "connector.class": "FileSinkConnector", "topics": topic_name}
    worker = {"bootstrap.servers": bootstrap_servers}
    commit(bootstrap_servers, f"connect-{name}", topic_name, {0: 4, 1: 7})  # partition 2: nothing committed

    lag = connector_lag(sink, worker)
    assert lag.rows() == [
        {"topic": topic_name, "partition": 0, "committed": 4, "end": 10, "lag": 6},
        {"topic": topic_name, "partition": 1, "committed": 7, "end": 7, "lag": 0},
        {"topic": topic_name, "partition": 2, "committed": None, "end": 5, "lag": 5},
    ]
    assert (lag.kind, lag.total, lag.topics) == ("sink", 11, {topic_name: 11})
    by_regex = {"name": name, "connector.class": "FileSinkConnector", "topics.regex": re.escape(topic_name)}
    assert connector_lag(by_regex, worker).rows() == lag.rows()

    caught_up = ConnectorSensor(task_id="caught_up", connector_config=sink, kopycat_conn_id=kopycat_conn)
    new_data = ConnectorSensor(task_id="new_data", connector_config=sink, kopycat_conn_id=kopycat_conn,
                               mode="new_data")
    assert not caught_up.poke(context={})  # type: ignore[arg-type]
    poked = new_data.poke(context={})  # type: ignore[arg-type]
    assert poked.is_done and poked.xcom_value == {"total_lag": 11, "topics": {topic_name: 11}}
    assert first_event(new_data.trigger()) == {"status": "success", "mode": "new_data", "total_lag": 11,
                                               "topics": {topic_name: 11}}

    deferring = ConnectorSensor(task_id="deferring", connector_config=sink, kopycat_conn_id=kopycat_conn,
                                deferrable=True, poke_interval=1, timeout=120)
    with pytest.raises(TaskDeferred) as deferred:
        deferring.execute(context={})  # type: ignore[arg-type]
    assert deferred.value.method_name == "execute_complete"
    commit(bootstrap_servers, f"connect-{name}", topic_name, PER_PARTITION)  # every partition to its end

    assert [row["lag"] for row in connector_lag(sink, worker).rows()] == [0, 0, 0]
    assert caught_up.poke(context={})  # type: ignore[arg-type]
    assert not new_data.poke(context={})  # type: ignore[arg-type]
    event = first_event(deferred.value.trigger)
    assert deferring.execute_complete({}, event) == {"total_lag": 0, "topics": {topic_name: 0}}  # type: ignore[arg-type]


def test_a_sink_with_a_group_override_commits_reads_and_measures_that_group(
        bootstrap_servers: str, topic_name: str, tmp_path: Path) -> None:
    """``consumer.override.group.id`` replaces ``connect-<name>`` everywhere, as in Kafka's Worker."""
    create_topic(bootstrap_servers, topic_name, partitions=2)
    fill(bootstrap_servers, topic_name, {0: 6, 1: 4})
    name = f"export-{uuid.uuid4().hex[:8]}"
    group = f"custom-{name}"
    sink = {"name": name, "connector.class": "FileStreamSink", "topics": topic_name,
            "file": str(tmp_path / "out.txt"), "consumer.override.group.id": group,
            "key.converter": "org.apache.kafka.connect.storage.StringConverter",
            "value.converter": "org.apache.kafka.connect.storage.StringConverter"}
    worker = {"bootstrap.servers": bootstrap_servers}

    summaries = [run_planned_task(sink, planned, worker) for planned in plan_bounded_run(sink, worker)]

    assert sum(s.records for s in summaries) == 10 and len((tmp_path / "out.txt").read_text().splitlines()) == 10
    assert committed_offsets(bootstrap_servers, group, topic_name, 2) == {0: 6, 1: 4}
    assert set(committed_offsets(bootstrap_servers, f"connect-{name}", topic_name, 2).values()) == {-1001}
    assert [(row["committed"], row["lag"]) for row in connector_lag(sink, worker).rows()] == [(6, 0), (4, 0)]
    assert get_offsets(name, worker, sink=True, group=consumer_group_id(name, sink))["offsets"] == [
        {"partition": {"kafka_topic": topic_name, "kafka_partition": p}, "offset": {"kafka_offset": o}}
        for p, o in ((0, 6), (1, 4))]

def test_a_mirror_lag_comes_from_its_stored_source_offsets(bootstrap_servers: str, topic_name: str,
                                                           tmp_path: Path) -> None:
    """One broker is both clusters (aliases b -> a); offsets are stored through KIP-875's PATCH path.

    The worker keeps source offsets in a file here (``get_offsets`` reads the offsets topic the
    same way, through the same store interface), which spares a loaded machine several offset
    topic reads.
    """
    create_topic(bootstrap_servers, topic_name, partitions=3)
    fill(bootstrap_servers, topic_name, {0: 3, 1: 3, 2: 3})
    run = uuid.uuid4().hex[:8]
    name = f"mirror-lag-{run}"
    mirror = {"name": name, "connector.class": "MirrorSourceConnector", "source.cluster.alias": "b",
              "target.cluster.alias": "a", "topics": re.escape(topic_name),
              "source.cluster.bootstrap.servers": bootstrap_servers, "heartbeats.replication.enabled": "false"}
    worker = {"bootstrap.servers": bootstrap_servers, "offset.storage.file.filename": str(tmp_path / "offsets")}

    def offset(partition: int, last_copied: int, cluster: str = "b") -> dict[str, Any]:
        return {"partition": {"cluster": cluster, "partition": partition, "topic": topic_name},
                "offset": {"offset": last_copied}}

    # MM2 stores the last copied offset: partition 0 is done, 1 copied one record, 2 nothing yet
    # (the offset of another source cluster is not this mirror's)
    alter_offsets(name, [offset(0, 2), offset(1, 0), offset(2, 2, cluster="other")], worker)
    lag = connector_lag(mirror, worker)
    assert [(r["partition"], r["committed"], r["end"], r["lag"]) for r in lag.rows()] == [
        (0, 3, 3, 0), (1, 1, 3, 2), (2, None, 3, 3)]
    assert (lag.kind, lag.total) == ("mirror", 5)

    alter_offsets(name, [offset(1, 2), offset(2, 2)], worker)
    fill(bootstrap_servers, topic_name, {1: 2})
    assert connector_lag(mirror, worker).summary() == {"total_lag": 2, "topics": {topic_name: 2}}

"""The sink runner against a real broker: what put() receives and what the group commits."""

from __future__ import annotations

import subprocess
import sys
import uuid
from collections import Counter
from typing import Any

import pytest
from confluent_kafka import Consumer

from kopycat.api.errors import ConnectError
from kopycat.api.records import TopicPartition
from kopycat.runtime.bounds import Bounds, RunSummary, StopReason
from kopycat.runtime.sink_assignment import split_partitions
from kopycat.runtime.task_factory import build_sink_runner
from kopycat.runtime.task_parts import TaskId
from tests.support.collecting import PUT_CALLS, CollectingSinkTask, delivered
from tests.support.kafka import committed_offsets, create_topic, produce

committed = committed_offsets


@pytest.fixture
def topic(bootstrap_servers: str, topic_name: str) -> str:
    return create_topic(bootstrap_servers, topic_name, 3)


def sink_props(topic: str, **extra: Any) -> dict[str, str]:
    return {"name": f"sink-{uuid.uuid4().hex[:8]}",
            "connector.class": "tests.support.collecting.CollectingSinkConnector",
            "topics": topic, "value.converter": "org.apache.kafka.connect.storage.StringConverter",
            "key.converter": "org.apache.kafka.connect.storage.StringConverter",
            **{k: str(v) for k, v in extra.items()}}


def run(bootstrap: str, props: dict[str, str], bounds: Bounds, **kwargs: Any) -> RunSummary:
    worker = {"bootstrap.servers": bootstrap, "offset.flush.interval.ms": "500"}
    runner = build_sink_runner(TaskId(props["name"], 0), CollectingSinkTask, props, props, worker, bounds, **kwargs)
    return runner.run()


def run_to(bootstrap: str, props: dict[str, str], ends: dict[TopicPartition, int]) -> RunSummary:
    """A one-task run to planned ``ends``, assigned its share as the plan deals it."""
    [share] = split_partitions(ends, 1)
    return run(bootstrap, props, Bounds(end_offsets=ends), assignment=share)


def test_subscribed_sink_puts_every_record_once_and_commits_the_group(bootstrap_servers: str, topic: str) -> None:
    values = [f"v{i}".encode() for i in range(3000)]
    produce(bootstrap_servers, topic, values)
    props = sink_props(topic)
    summary = run(bootstrap_servers, props, Bounds(idle_ms=3000))
    got = [r.value for r in delivered(props["name"])]
    assert Counter(got) == Counter(v.decode() for v in values)
    assert summary.records == 3000 and summary.stop_reason is StopReason.CAUGHT_UP
    commits = committed(bootstrap_servers, f"connect-{props['name']}", topic, 3)
    assert sum(commits.values()) == 3000


def test_a_bounded_run_copies_exactly_the_planned_range_then_the_next(bootstrap_servers: str, topic: str) -> None:
    produce(bootstrap_servers, topic, [f"a{i}".encode() for i in range(300)], partition=0)
    produce(bootstrap_servers, topic, [f"b{i}".encode() for i in range(200)], partition=1)
    props = sink_props(topic)
    first_end = {TopicPartition(topic, 0): 300, TopicPartition(topic, 1): 200, TopicPartition(topic, 2): 0}
    produce(bootstrap_servers, topic, [f"late{i}".encode() for i in range(50)], partition=0)
    first = run_to(bootstrap_servers, props, first_end)
    assert first.stop_reason is StopReason.END_OFFSETS
    assert sorted(r.value for r in delivered(props["name"])) == sorted(
        [f"a{i}" for i in range(300)] + [f"b{i}" for i in range(200)])
    assert committed(bootstrap_servers, f"connect-{props['name']}", topic, 2) == {0: 300, 1: 200}
    PUT_CALLS[props["name"]].clear()
    second = run_to(bootstrap_servers, props, {**first_end, TopicPartition(topic, 0): 350})
    assert [r.value for r in delivered(props["name"])] == [f"late{i}" for i in range(50)]
    assert second.offsets[f"{topic}-0"]["before"] == 300 and second.offsets[f"{topic}-0"]["after"] == 350


def test_a_retriable_error_hands_the_same_batch_again_and_each_record_is_put_once(
        bootstrap_servers: str, topic: str) -> None:
    produce(bootstrap_servers, topic, [f"r{i}".encode() for i in range(100)], partition=0)
    props = sink_props(topic, **{"retriable.failures": 2})
    run_to(bootstrap_servers, props, {TopicPartition(topic, p): (100 if p == 0 else 0) for p in range(3)})
    calls = PUT_CALLS[props["name"]]
    assert [ok for _, ok in calls[:3]] == [False, False, True]
    assert calls[0][0] == calls[1][0] == calls[2][0]
    assert Counter(r.value for r in delivered(props["name"])) == Counter(f"r{i}" for i in range(100))


@pytest.mark.parametrize("guarantee", ["at_least_once", "at_most_once"])
def test_a_failed_put_is_put_again_at_least_once_and_never_at_most_once(
        bootstrap_servers: str, topic: str, guarantee: str) -> None:
    produce(bootstrap_servers, topic, [f"m{i}".encode() for i in range(300)], partition=0)
    props = sink_props(topic, **{"delivery.guarantee": guarantee, "fail.on.put": 1})
    ends = {TopicPartition(topic, p): (300 if p == 0 else 0) for p in range(3)}
    with pytest.raises(ConnectError, match="refused the batch"):
        run_to(bootstrap_servers, props, ends)
    [(failed, accepted)] = PUT_CALLS[props["name"]]
    after_failed = failed[-1].kafka_offset + 1
    group = committed(bootstrap_servers, f"connect-{props['name']}", topic, 1)[0]
    assert not accepted and group == (after_failed if guarantee == "at_most_once" else -1001)

    PUT_CALLS[props["name"]].clear()
    run_to(bootstrap_servers, {**props, "fail.on.put": "0"}, ends)
    again = [r.kafka_offset for r in delivered(props["name"])]
    assert again == list(range(after_failed if guarantee == "at_most_once" else 0, 300))
    assert committed(bootstrap_servers, f"connect-{props['name']}", topic, 1)[0] == 300


def test_a_bad_record_with_tolerance_none_fails_naming_topic_partition_and_offset(
        bootstrap_servers: str, topic: str) -> None:
    produce(bootstrap_servers, topic, [b'{"ok":1}', b"not json", b'{"ok":2}'], partition=2)
    props = sink_props(topic, **{"value.converter": "org.apache.kafka.connect.json.JsonConverter",
                                 "value.converter.schemas.enable": "false"})
    with pytest.raises(ConnectError, match=rf"topic '{topic}', partition 2, offset 1"):
        run_to(bootstrap_servers, props, {TopicPartition(topic, 2): 3})
    assert committed(bootstrap_servers, f"connect-{props['name']}", topic, 3)[2] < 0


def test_tolerance_all_sends_the_bad_record_to_the_dead_letter_queue(bootstrap_servers: str, topic: str) -> None:
    produce(bootstrap_servers, topic, [b'{"ok":1}', b"not json", b'{"ok":2}'], partition=2)
    dlq = f"{topic}-dlq"
    props = sink_props(topic, **{"value.converter": "org.apache.kafka.connect.json.JsonConverter",
                                 "value.converter.schemas.enable": "false", "errors.tolerance": "all",
                                 "errors.deadletterqueue.topic.name": dlq,
                                 "errors.deadletterqueue.topic.replication.factor": 1,
                                 "errors.deadletterqueue.context.headers.enable": "true"})
    summary = run_to(bootstrap_servers, props, {TopicPartition(topic, 2): 3})
    assert [r.value for r in delivered(props["name"])] == [{"ok": 1}, {"ok": 2}]
    assert summary.skipped == 1
    assert committed(bootstrap_servers, f"connect-{props['name']}", topic, 3)[2] == 3
    consumer = Consumer({"bootstrap.servers": bootstrap_servers, "group.id": "dlq-check",
                         "auto.offset.reset": "earliest"})
    consumer.subscribe([dlq])
    message = consumer.poll(30)
    consumer.close()
    assert message is not None and message.value() == b"not json"
    headers = dict(message.headers())
    assert headers["__connect.errors.topic"] == topic.encode()
    assert headers["__connect.errors.offset"] == b"1"
    assert headers["__connect.errors.stage"] == b"VALUE_CONVERTER"


def test_a_window_end_stops_each_partition_before_the_first_later_record(bootstrap_servers: str, topic: str) -> None:
    base = 1_700_000_000_000
    produce(bootstrap_servers, topic, [f"w{i}".encode() for i in range(10)], partition=0,
            timestamps=[base + i * 1000 for i in range(10)])
    props = sink_props(topic)
    summary = run(bootstrap_servers, props, Bounds(window_end_ms=base + 6000),
                  assignment=[TopicPartition(topic, 0)])
    assert [r.value for r in delivered(props["name"])] == [f"w{i}" for i in range(6)]
    assert summary.stop_reason is StopReason.END_OFFSETS


def test_a_task_seeking_in_open_starts_there(bootstrap_servers: str, topic: str) -> None:
    produce(bootstrap_servers, topic, [f"s{i}".encode() for i in range(20)], partition=1)
    props = sink_props(topic, **{"seek.to": 15})
    run_to(bootstrap_servers, props, {TopicPartition(topic, 1): 20})
    assert [r.value for r in delivered(props["name"])] == [f"s{i}" for i in range(15, 20)]
    assert committed(bootstrap_servers, f"connect-{props['name']}", topic, 2)[1] == 20


_DEAD_MEMBER = """
import os, sys
from confluent_kafka import Consumer
consumer = Consumer({"bootstrap.servers": sys.argv[1], "group.id": sys.argv[2], "session.timeout.ms": 6000,
                     "auto.offset.reset": "earliest"})
consumer.subscribe([sys.argv[3]])
while not consumer.assignment():
    consumer.poll(0.5)
os._exit(0)  # killed: no LeaveGroup, the member stays until its session times out
"""


def test_a_bounded_run_commits_after_a_killed_subscribed_member_of_its_group_expires(
        bootstrap_servers: str, topic: str) -> None:
    """A subscribed worker of the same connector was killed: its member blocks simple commits until its
    session times out, so the final commit waits that out instead of failing a run whose records are put."""
    produce(bootstrap_servers, topic, [f"v{i}".encode() for i in range(100)], partition=0)
    props = sink_props(topic)
    group = f"connect-{props['name']}"
    subprocess.run([sys.executable, "-c", _DEAD_MEMBER, bootstrap_servers, group, topic], check=True, timeout=120)
    end = {TopicPartition(topic, 0): 100, TopicPartition(topic, 1): 0, TopicPartition(topic, 2): 0}
    summary = run_to(bootstrap_servers, props, end)
    assert summary.stop_reason is StopReason.END_OFFSETS and summary.records == 100
    assert committed(bootstrap_servers, group, topic, 1) == {0: 100}

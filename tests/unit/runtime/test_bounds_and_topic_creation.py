"""Stop conditions of bounded runs, and topic.creation.* groups."""

from __future__ import annotations

import pytest

from kopycat.api.errors import ConfigError
from kopycat.runtime.bounds import Bounds, RunSummary, StopReason, StopWatch
from kopycat.runtime.topic_creation import topic_creation_groups


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_idle_means_caught_up_only_after_idle_ms_without_records() -> None:
    clock = Clock()
    watch = StopWatch(Bounds(idle_ms=500), clock)
    assert watch.after_batch(10) is None
    clock.now += 0.4
    assert watch.after_batch(0) is None
    clock.now += 0.2
    assert watch.after_batch(0) is StopReason.CAUGHT_UP


def test_record_and_time_budgets_stop_at_the_batch_that_crosses_them() -> None:
    clock = Clock()
    watch = StopWatch(Bounds(max_records=25, max_seconds=10), clock)
    assert watch.after_batch(20) is None
    assert watch.after_batch(20) is StopReason.MAX_RECORDS
    timed = StopWatch(Bounds(max_seconds=10), clock)
    clock.now += 10
    assert timed.after_batch(1) is StopReason.MAX_SECONDS


def test_no_bounds_never_stops_and_negative_bounds_are_refused() -> None:
    assert StopWatch(None).after_batch(0) is None and not Bounds().bounded
    with pytest.raises(ConfigError, match="max_records"):
        Bounds(max_records=-1)


def test_topic_creation_is_off_without_default_keys_and_groups_match_in_order() -> None:
    assert topic_creation_groups({"topic": "x"}) is None
    groups = topic_creation_groups({
        "topic.creation.default.partitions": "3", "topic.creation.default.replication.factor": "-1",
        "topic.creation.groups": "compacted",
        "topic.creation.compacted.include": "state-.*", "topic.creation.compacted.exclude": "state-tmp",
        "topic.creation.compacted.partitions": "1", "topic.creation.compacted.cleanup.policy": "compact"})
    assert groups is not None
    compacted, default = groups
    assert compacted.matches("state-a") and not compacted.matches("state-tmp") and not compacted.matches("x")
    assert (compacted.partitions, compacted.replication_factor, compacted.configs) == (
        1, -1, {"cleanup.policy": "compact"})
    assert (default.name, default.partitions) == ("default", 3)


def test_a_missing_or_bad_replication_factor_names_the_key() -> None:
    with pytest.raises(ConfigError, match="topic.creation.default.replication.factor"):
        topic_creation_groups({"topic.creation.default.partitions": "3"})
    with pytest.raises(ConfigError, match="topic.creation.default.partitions"):
        topic_creation_groups({"topic.creation.default.partitions": "0",
                               "topic.creation.default.replication.factor": "1"})


def test_the_topics_a_run_used_are_those_a_source_wrote_or_a_sink_consumed_from() -> None:
    source = RunSummary("src", 0, topics={"orders"},
                        offsets={'{"table":"orders"}': {"partition": {"table": "orders"}, "before": None, "after": 3}})
    assert source.topics_used() == {"orders"}
    sink = RunSummary("sink", 1, offsets={
        "a-0": {"topic": "a", "partition": 0, "before": 5, "after": 9},
        "b-1": {"topic": "b", "partition": 1, "before": 5, "after": 5},  # nothing consumed
        "c-b-0": {"topic": "c-b", "partition": 0, "before": None, "after": 1},
        "d-0": {"topic": "d", "partition": 0, "before": None, "after": None}})
    assert sink.topics_used() == {"a", "c-b"}

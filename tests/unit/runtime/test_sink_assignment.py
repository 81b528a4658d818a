"""How a bounded sink run's partitions are dealt over its tasks (the Airflow plan and run_once alike)."""

from __future__ import annotations

import pytest

from kopycat.api.records import TopicPartition
from kopycat.connectors.files.filestream_sink import FileStreamSinkTask
from kopycat.runtime.bounds import Bounds
from kopycat.runtime.sink_assignment import split_bounded_run, split_partitions
from kopycat.runtime.task_factory import build_sink_runner
from kopycat.runtime.task_parts import TaskId

A0, A1, A2, B0 = TopicPartition("a", 0), TopicPartition("a", 1), TopicPartition("a", 2), TopicPartition("b", 0)
SINK = {"name": "s", "connector.class": "FileStreamSink", "file": "/tmp/out", "topics": "a,b"}
WORKER = {"bootstrap.servers": "127.0.0.1:1"}  # nothing listens: the end-offset split asks no broker


def test_partitions_are_sorted_and_dealt_round_robin_so_no_two_tasks_share_one() -> None:
    assert split_partitions([B0, A2, A0, A1], 2) == [[A0, A2], [A1, B0]]
    assert split_partitions([B0, A2, A0, A1], 3) == [[A0, B0], [A1], [A2]]


def test_tasks_beyond_the_partition_count_get_no_share_and_no_partition_gives_none() -> None:
    assert split_partitions([A1, A0], 5) == [[A0], [A1]]
    assert split_partitions([], 3) == []


def test_planned_end_offsets_are_narrowed_to_each_tasks_partitions_and_the_budgets_kept() -> None:
    bounds = Bounds(end_offsets={A0: 10, A1: 20, A2: 0, B0: 5}, max_records=100, max_seconds=60.0)
    shares = split_bounded_run(SINK, WORKER, bounds, 2)
    assert [share.partitions for share in shares] == [(A0, A2), (A1, B0)]
    assert [dict(share.bounds.end_offsets or {}) for share in shares] == [{A0: 10, A2: 0}, {A1: 20, B0: 5}]
    assert {(share.bounds.max_records, share.bounds.max_seconds) for share in shares} == {(100, 60.0)}


def test_a_sink_runner_to_end_offsets_without_its_share_is_refused_naming_the_fix() -> None:
    bounds = Bounds(end_offsets={A0: 10, A1: 20})
    with pytest.raises(ValueError, match=r"Sink task s-0 runs to end offsets for 2 partition\(s\) but its "
                                         r"assignment is None: pass the task's share .*split_bounded_run"):
        build_sink_runner(TaskId("s", 0), FileStreamSinkTask, SINK, SINK, WORKER, bounds)
    [share, _] = split_bounded_run(SINK, WORKER, bounds, 2)
    runner = build_sink_runner(TaskId("s", 0), FileStreamSinkTask, SINK, SINK, WORKER, share.bounds,
                               assignment=share.partitions)
    assert runner.fixed_assignment == [A0]

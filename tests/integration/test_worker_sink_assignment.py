"""A bounded sink run in the worker splits the topic's partitions over the connector's tasks.

Each task of ``run_once`` copies its own partitions (as the Airflow plan's mapped tasks do): every
record lands once, whatever ``tasks.max``, the bounds (planned end offsets or caught up) and
``task.isolation``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kopycat.api.errors import ConnectError
from kopycat.api.records import TopicPartition
from kopycat.embedded import Kopycat
from kopycat.runtime.bounds import Bounds, RunSummary, StopReason
from kopycat.storage.offset_backing_store import MemoryOffsetStore
from tests.support.kafka import create_topic, produce
from tests.support.per_task_files import task_file

pytestmark = pytest.mark.integration

PARTITIONS = 4
PER_PARTITION = 750
RECORDS = PARTITIONS * PER_PARTITION
STRING = "org.apache.kafka.connect.storage.StringConverter"
TIMEOUT_S = 240.0


def _fill(bootstrap: str, topic: str) -> list[str]:
    """``PER_PARTITION`` records in each partition, valued ``p<partition>-<n>``; the values."""
    create_topic(bootstrap, topic, PARTITIONS)
    values = []
    for partition in range(PARTITIONS):
        mine = [f"p{partition}-{n}" for n in range(PER_PARTITION)]
        produce(bootstrap, topic, [v.encode() for v in mine], partition=partition, keys=False)
        values += mine
    return values


def _bounds(kind: str, topic: str) -> Bounds:
    if kind == "end_offsets":
        return Bounds(end_offsets={TopicPartition(topic, p): PER_PARTITION for p in range(PARTITIONS)})
    return Bounds.caught_up(idle_ms=1_000)


def _run(bootstrap: str, topic: str, out: Path, tasks: int, bounds: Bounds,
         isolation: str) -> list[RunSummary | None]:
    worker = {"value.converter": STRING, "offset.flush.interval.ms": "500", "task.isolation": isolation}
    props = {"name": f"split-{topic}", "connector.class": "tests.support.per_task_files.PerTaskFileStreamSinkConnector",
             "file": str(out), "topics": topic, "tasks.max": str(tasks)}
    with Kopycat(bootstrap, worker_props=worker, offset_store=MemoryOffsetStore()) as kc:
        return kc.run_once(props, bounds, timeout_s=TIMEOUT_S)


def _lines(out: Path, tasks: int) -> list[list[str]]:
    """What each task's file holds (no file: the task wrote nothing)."""
    files = [Path(task_file(str(out), index)) for index in range(tasks)]
    return [f.read_text(encoding="utf-8").splitlines() if f.exists() else [] for f in files]


@pytest.mark.parametrize("bounds_kind", ["end_offsets", "caught_up"])
@pytest.mark.parametrize("tasks", [2, 3])
def test_every_record_is_copied_once_by_the_task_that_owns_its_partition(
        bootstrap_servers: str, topic_name: str, tmp_path: Path, task_isolation: str, tasks: int,
        bounds_kind: str) -> None:
    values = _fill(bootstrap_servers, topic_name)
    out = tmp_path / "out.txt"
    summaries = _run(bootstrap_servers, topic_name, out, tasks, _bounds(bounds_kind, topic_name), task_isolation)

    per_task = _lines(out, tasks)
    copied = [line for lines in per_task for line in lines]
    assert len(copied) == RECORDS and len(set(copied)) == RECORDS  # no duplicates
    assert sorted(copied) == sorted(values)
    assert len(summaries) == tasks and all(s is not None for s in summaries), summaries
    done = [s for s in summaries if s is not None]
    assert sum(s.records for s in done) == RECORDS
    expected_stop = StopReason.END_OFFSETS if bounds_kind == "end_offsets" else StopReason.CAUGHT_UP
    assert {s.stop_reason for s in done} == {expected_stop}
    owned = [set(s.offsets) for s in done]
    assert sum(map(len, owned)) == PARTITIONS  # disjoint ...
    assert set().union(*owned) == {f"{topic_name}-{p}" for p in range(PARTITIONS)}  # ... and covering
    for summary, lines in zip(done, per_task, strict=True):
        written = {int(line.split("-")[0][1:]) for line in lines}
        assert {f"{topic_name}-{p}" for p in written} <= set(summary.offsets), summary.offsets
        assert all(entry["after"] == PER_PARTITION for entry in summary.offsets.values()), summary.offsets


def test_tasks_beyond_the_partition_count_get_no_task(bootstrap_servers: str, topic_name: str,
                                                        tmp_path: Path) -> None:
    values = _fill(bootstrap_servers, topic_name)
    out = tmp_path / "out.txt"
    summaries = _run(bootstrap_servers, topic_name, out, 6, _bounds("end_offsets", topic_name), "thread")

    assert len(summaries) == PARTITIONS and all(s is not None for s in summaries), summaries
    assert [sorted(s.offsets) for s in summaries if s is not None] == [[f"{topic_name}-{p}"] for p in range(PARTITIONS)]
    assert sorted(line for lines in _lines(out, 6) for line in lines) == sorted(values)


def test_a_bounded_sink_whose_partitions_cannot_be_listed_fails_run_once_and_leaves_no_connector(
        tmp_path: Path) -> None:
    nowhere = "127.0.0.1:1"  # nothing listens: listing the topics times out
    props = {"name": "unlisted", "connector.class": "FileStreamSink", "file": str(tmp_path / "out.txt"),
             "topics": "t"}
    with Kopycat(nowhere, offset_store=MemoryOffsetStore()) as kc:
        with pytest.raises(ConnectError, match=f"Could not list the topics of the Kafka cluster at {nowhere}"):
            kc.run_once(props, Bounds.caught_up())
        assert kc.worker.connectors() == []
    assert not (tmp_path / "out.txt").exists()


def test_a_caught_up_run_ends_only_after_putting_every_batch_it_read(bootstrap_servers: str, topic_name: str,
                                                                     tmp_path: Path) -> None:
    """An assigned run converts batches ahead of put, so idleness counts only once none waits to be put.

    The race this guards (the last records read, with every partition's end, in one consume that waited out
    the idle time) is timing-dependent: a bench run of 2,000,000 records once ended with 1 record unput. Here
    a short idle time puts the run's end close to its last batch; every record must still be put."""
    values = _fill(bootstrap_servers, topic_name)
    out = tmp_path / "out.txt"
    summaries = _run(bootstrap_servers, topic_name, out, 2, Bounds.caught_up(idle_ms=200), "thread")

    assert sorted(line for lines in _lines(out, 2) for line in lines) == sorted(values)
    assert sum(s.records for s in summaries if s is not None) == RECORDS

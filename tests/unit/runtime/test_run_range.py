"""RunRange and BackfillWindow: where a sink run starts and ends, what it puts, what it reports;
and the delivery guarantees' order of group commits and puts."""

from __future__ import annotations

from confluent_kafka import Message

from kopycat.api.records import TopicPartition
from kopycat.runtime.bounds import Bounds
from kopycat.runtime.delivery_guarantee import AtLeastOnce, AtMostOnce
from kopycat.runtime.run_range import BackfillWindow, RunRange, partition_runs, run_range

TP = TopicPartition("orders", 0)
OTHER = TopicPartition("orders", 1)
CREATE_TIME = 1


def stamped(tp: TopicPartition, offset: int, timestamp: int) -> Message:
    return Message(topic=tp.topic, partition=tp.partition, offset=offset, value=b"v",
                   timestamp=(CREATE_TIME, timestamp))


def window(ends: dict[TopicPartition, int], *, latest: bool = False) -> BackfillWindow:
    bounds = Bounds(window_start_ms=100, window_end_ms=200)
    backfill = run_range(bounds, "sink-0", 1.0, one_topic=True, live_starts_at_log_end=latest)
    assert isinstance(backfill, BackfillWindow)
    backfill.ends.ends.update(ends)  # as resolved from the log ends
    return backfill


def test_a_live_run_puts_every_message_and_reports_what_the_group_holds() -> None:
    live = run_range(Bounds(end_offsets={TP: 10}), "sink-0", 1.0, one_topic=True, live_starts_at_log_end=False)
    assert type(live) is RunRange and live.commits_group
    batch = [stamped(TP, o, 50) for o in range(3)]
    runs = partition_runs(batch)
    assert live.inside(runs, batch) == (batch, runs)
    assert live.placing([TP], {TP: 7}) == {TP: 7}
    live.before[TP] = 0
    assert live.report(TP, 3, 2) == {"topic": "orders", "partition": 0, "before": 0, "after": 2}


def test_a_window_ends_each_partition_at_its_live_position_and_places_the_consumer_itself() -> None:
    backfill = window({TP: 50, OTHER: 50})
    backfill.group_offsets.update({TP: None, OTHER: 20})
    assert backfill.placing([TP, OTHER], {TP: 30}) == {}  # open()'s seek marks the live position only
    assert backfill.ends.ends == {TP: 30, OTHER: 20}
    assert not backfill.commits_group


def test_a_window_without_a_live_position_reads_to_its_end_only_when_live_runs_start_at_the_log_end() -> None:
    from_start, from_end = window({TP: 50}), window({TP: 50}, latest=True)
    from_start.placing([TP], {})
    from_end.placing([TP], {})
    assert from_start.ends.ends == {TP: 0} and from_end.ends.ends == {TP: 50}


def test_a_window_puts_only_the_messages_stamped_inside_it_and_reports_the_range_it_copied() -> None:
    backfill = window({TP: 50})
    batch = [stamped(TP, 0, 99), stamped(TP, 1, 100), stamped(OTHER, 0, 150), stamped(TP, 2, 200)]
    inside, runs = backfill.inside(partition_runs(batch), batch)
    assert [(m.partition(), m.offset()) for m in inside] == [(0, 1), (1, 0)]
    assert [len(run) for run in runs] == [1, 1]
    backfill.before[TP], backfill.group_offsets[TP] = 5, 40
    assert backfill.report(TP, 9, None) == {"topic": "orders", "partition": 0, "before": 5, "after": 9,
                                            "committed": 40}


def test_at_most_once_commits_past_a_batch_before_it_is_put_and_never_back_behind_it() -> None:
    commits: list[dict[TopicPartition, int]] = []
    batch = [stamped(TP, 4, 0), stamped(TP, 5, 0), stamped(OTHER, 9, 0)]
    AtMostOnce("sink-0").before_put(partition_runs(batch), lambda offsets: commits.append(dict(offsets)))
    AtLeastOnce().before_put(partition_runs(batch), lambda offsets: commits.append(dict(offsets)))
    assert commits == [{TP: 6, OTHER: 10}]
    safe, committed = {TP: 3, OTHER: 10}, {TP: 6, OTHER: 8}
    assert AtLeastOnce().committable(safe, committed) == {TP: 3, OTHER: 10}
    assert AtMostOnce("sink-0").committable(safe, committed) == {OTHER: 10}

"""PlannedEnds: which consumed messages a bounded sink run takes, and when a partition is done; their runs.

A partition whose range ends on a data message is done when that message arrives; waiting for the
end-of-partition event instead costs the broker's fetch.wait.max.ms (500 ms) on every run.
"""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError, Message
from confluent_kafka import TopicPartition as KafkaTopicPartition

from kopycat.api.errors import ConnectError
from kopycat.api.records import TopicPartition
from kopycat.runtime.bounds import Bounds
from kopycat.runtime.run_range import PlannedEnds, partition_runs

TP = TopicPartition("orders", 0)
OTHER = TopicPartition("orders", 1)


class PauseRecorder:
    """The consumer calls PlannedEnds makes: pausing a finished partition, resuming one read again."""

    def __init__(self) -> None:
        self.paused: list[tuple[str, int]] = []
        self.resumed: list[tuple[str, int]] = []

    def pause(self, partitions: list[KafkaTopicPartition]) -> None:
        self.paused += [(p.topic, p.partition) for p in partitions]

    def resume(self, partitions: list[KafkaTopicPartition]) -> None:
        self.resumed += [(p.topic, p.partition) for p in partitions]


def messages(tp: TopicPartition, offsets: range) -> list[Message]:
    return [Message(topic=tp.topic, partition=tp.partition, offset=o, value=b"v%d" % o) for o in offsets]


def end_event(tp: TopicPartition, offset: int) -> Message:
    return Message(topic=tp.topic, partition=tp.partition, offset=offset,
                   error=KafkaError(KafkaError._PARTITION_EOF))


def planned(ends: dict[TopicPartition, int]) -> PlannedEnds:
    planned_ends = PlannedEnds(Bounds(end_offsets=ends), "sink-0", 1.0)
    planned_ends.resolve(None, list(ends))  # type: ignore[arg-type]  (given ends need no consumer)
    return planned_ends


def offsets(runs: list) -> list[tuple[int, int]]:
    return [(m.partition(), m.offset()) for run in runs for m in run]


def test_a_range_ending_on_a_data_message_is_done_when_that_message_arrives() -> None:
    ends, consumer = planned({TP: 5}), PauseRecorder()
    runs = ends.accept(consumer, messages(TP, range(0, 5)))  # type: ignore[arg-type]
    assert offsets(runs) == [(0, o) for o in range(5)]
    assert ends.finished == {TP} and ends.all_reached()
    assert consumer.paused == [("orders", 0)]


def test_messages_at_and_after_the_end_are_left_out() -> None:
    ends, consumer = planned({TP: 5, OTHER: 3}), PauseRecorder()
    runs = ends.accept(consumer, messages(TP, range(3, 8)) + messages(OTHER, range(0, 2)))  # type: ignore[arg-type]
    assert offsets(runs) == [(0, 3), (0, 4), (1, 0), (1, 1)]
    assert ends.finished == {TP} and not ends.all_reached()
    runs = ends.accept(consumer, messages(OTHER, range(2, 4)))  # type: ignore[arg-type]
    assert offsets(runs) == [(1, 2)]
    assert ends.all_reached() and consumer.paused == [("orders", 0), ("orders", 1)]


def test_a_batch_with_end_events_finishes_a_range_on_its_last_data_message() -> None:
    ends, consumer = planned({TP: 5, OTHER: 3}), PauseRecorder()
    batch = [end_event(OTHER, 0), *messages(TP, range(0, 5))]  # OTHER is empty so far: not done
    runs = ends.accept(consumer, batch)  # type: ignore[arg-type]
    assert offsets(runs) == [(0, o) for o in range(5)]
    assert ends.finished == {TP} and OTHER in ends.at_log_end


def test_a_range_ending_in_a_transaction_marker_waits_for_the_end_event() -> None:
    ends, consumer = planned({TP: 6}), PauseRecorder()  # offset 5 is a commit marker, never a message
    assert offsets(ends.accept(consumer, messages(TP, range(0, 5)))) == [(0, o) for o in range(5)]  # type: ignore[arg-type]
    assert not ends.finished
    assert ends.accept(consumer, [end_event(TP, 6)]) == []  # type: ignore[arg-type]
    assert ends.finished == {TP} and consumer.paused == [("orders", 0)]


def test_runs_split_where_the_topic_changes_unless_the_consumer_reads_one_topic() -> None:
    elsewhere = TopicPartition("refunds", 0)
    batch = [*messages(TP, range(3)), *messages(elsewhere, range(2)), *messages(OTHER, range(2)),
             *messages(TP, range(3, 5))]
    runs = partition_runs(batch)
    assert [(r[0].topic(), r[0].partition(), len(r)) for r in runs] == [
        ("orders", 0, 3), ("refunds", 0, 2), ("orders", 1, 2), ("orders", 0, 2)]
    one_topic = [*messages(TP, range(3)), *messages(OTHER, range(2)), *messages(TP, range(3, 5))]
    assert [len(r) for r in partition_runs(one_topic, one_topic=True)] == [3, 2, 2]
    assert [len(r) for r in partition_runs(one_topic)] == [3, 2, 2]


def test_a_partition_read_again_is_open_again_only_if_the_dropped_records_ended_it() -> None:
    """The runner dropped records fetched ahead: TP's end was among them, OTHER's end came before."""
    third = TopicPartition("orders", 2)
    ends, consumer = planned({TP: 5, OTHER: 3, third: 9}), PauseRecorder()
    ends.accept(consumer, messages(OTHER, range(0, 3)))  # type: ignore[arg-type]
    before = frozenset(ends.finished)
    ends.accept(consumer, [*messages(TP, range(0, 5)), end_event(third, 4)])  # type: ignore[arg-type]
    assert ends.finished == {TP, OTHER} and ends.at_log_end == {third}

    ends.accept(consumer, [end_event(OTHER, 3)])  # type: ignore[arg-type]
    ends.read_again(consumer, {TP, OTHER, third}, before, paused=set())  # type: ignore[arg-type]
    assert ends.finished == {OTHER} and not ends.all_reached()
    assert ends.at_log_end == {OTHER}  # still finished and at its end: nothing of it is read again
    assert consumer.resumed == [("orders", 0)]


def test_a_partition_read_again_stays_paused_while_the_task_has_it_paused() -> None:
    ends, consumer = planned({TP: 5}), PauseRecorder()
    ends.accept(consumer, messages(TP, range(0, 5)))  # type: ignore[arg-type]
    ends.read_again(consumer, {TP}, frozenset(), paused={TP})  # type: ignore[arg-type]
    assert ends.finished == set() and consumer.resumed == []


def test_a_batch_of_one_partition_is_one_run_even_when_its_first_and_last_partitions_match_others() -> None:
    single = messages(TP, range(4))
    assert partition_runs(single, one_topic=True) == [single]
    same_ends = [*messages(TP, range(2)), *messages(OTHER, range(1)), *messages(TP, range(2, 4))]
    assert [offsets([r]) for r in partition_runs(same_ends, one_topic=True)] == [
        [(0, 0), (0, 1)], [(1, 0)], [(0, 2), (0, 3)]]


def test_a_consume_error_anywhere_in_a_batch_fails_the_run_naming_its_partition() -> None:
    ends, consumer = planned({TP: 10}), PauseRecorder()
    broken = Message(topic=TP.topic, partition=TP.partition, offset=3,
                     error=KafkaError(KafkaError._TRANSPORT, "broker down"))
    batch = [*messages(TP, range(3)), broken, *messages(TP, range(3, 5))]
    with pytest.raises(ConnectError, match="topic 'orders' partition 0: broker down"):
        ends.accept(consumer, batch)  # type: ignore[arg-type]


def test_a_one_partition_run_takes_each_batch_as_one_run_and_still_stops_at_its_end() -> None:
    ends = PlannedEnds(Bounds(end_offsets={TP: 6}), "sink-0", 1.0, one_topic=True, one_partition=True)
    ends.resolve(None, [TP])  # type: ignore[arg-type]  (given ends need no consumer)
    consumer = PauseRecorder()
    first = messages(TP, range(0, 4))
    assert ends.accept(consumer, first) == [first]  # type: ignore[arg-type]
    runs = ends.accept(consumer, [*messages(TP, range(4, 8)), end_event(TP, 8)])  # type: ignore[arg-type]
    assert offsets(runs) == [(0, 4), (0, 5)] and ends.finished == {TP}
    assert consumer.paused == [("orders", 0)]

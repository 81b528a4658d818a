"""How a sink run orders its group commits and its puts: ``delivery.guarantee``.

Kafka Connect's sinks are at-least-once: ``WorkerSinkTask`` commits the group only with what
``preCommit`` returned, after ``put``. Kopycat adds at-most-once, for destinations where a
duplicate costs more than a loss: the group is committed past a batch before ``put`` sees it.
The runner asks its guarantee what to do before each put (:meth:`AtLeastOnce.before_put`) and
which offsets ``pre_commit`` returned it may commit (:meth:`AtLeastOnce.committable`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from confluent_kafka import KafkaException, Message

from kopycat.api.errors import ConnectError
from kopycat.api.records import TopicPartition

__all__ = ["AtLeastOnce", "AtMostOnce", "GroupCommit"]

GroupCommit = Callable[[Mapping[TopicPartition, int]], None]
"""Commits offsets to the consumer group synchronously; raises KafkaException when it cannot."""


class AtLeastOnce:
    """A batch is put before the group moves past it: a crash puts it again, never loses it."""

    def before_put(self, runs: Sequence[Sequence[Message]], commit: GroupCommit) -> None:
        """Called with a batch's runs of one partition before it is put: nothing to do."""

    def committable(self, safe: Mapping[TopicPartition, int],
                    committed: Mapping[TopicPartition, int]) -> dict[TopicPartition, int]:
        """Of the offsets ``pre_commit`` called safe, those the group does not hold yet."""
        return {tp: offset for tp, offset in safe.items() if committed.get(tp) != offset}


class AtMostOnce(AtLeastOnce):
    """The group moves past a batch before ``put`` sees it, or nothing is put: a crash loses, never repeats."""

    def __init__(self, owner: str) -> None:
        self.owner = owner

    def before_put(self, runs: Sequence[Sequence[Message]], commit: GroupCommit) -> None:
        """Commit the group past the batch's last offset in each partition."""
        positions = {TopicPartition(run[-1].topic(), run[-1].partition()): run[-1].offset() + 1 for run in runs}
        try:
            commit(positions)
        except KafkaException as exc:
            raise ConnectError(f"Task {self.owner} could not commit its consumer group past a batch before put(): "
                               f"{exc}; with delivery.guarantee=at_most_once the batch is not put") from exc

    def committable(self, safe: Mapping[TopicPartition, int],
                    committed: Mapping[TopicPartition, int]) -> dict[TopicPartition, int]:
        """As at-least-once, but never back behind what was committed before a put."""
        return {tp: offset for tp, offset in super().committable(safe, committed).items()
                if not offset < committed.get(tp, -1)}

"""What a running sink task sees: seeks, pause/resume, commit requests (Kafka's ``WorkerSinkTaskContext``).

The task calls these from its own thread (inside ``open``/``put``/``pre_commit``); the runner
applies them between batches, so the consumer is only ever touched by the runner's thread.
"""

from __future__ import annotations

from collections.abc import Mapping

from kopycat.api.errors import ConnectError
from kopycat.api.records import TopicPartition
from kopycat.api.task import SinkTaskContext

__all__ = ["WorkerSinkTaskContext"]


class WorkerSinkTaskContext(SinkTaskContext):
    """Collects a sink task's requests for the runner (not thread-safe: the task's thread only)."""

    def __init__(self, configs: Mapping[str, str]) -> None:
        self._configs = configs
        self.assigned: set[TopicPartition] = set()
        self.paused: set[TopicPartition] = set()
        self.seeks: dict[TopicPartition, int] = {}
        self.pause_changed = False
        self.timeout_ms: int | None = None
        self.commit_requested = False

    @property
    def configs(self) -> Mapping[str, str]:
        return self._configs

    def offset(self, offsets: Mapping[TopicPartition, int]) -> None:
        for partition, offset in offsets.items():
            if offset < 0:
                raise ConnectError(f"Cannot seek {partition.topic}-{partition.partition} to offset "
                                   f"{offset}: offsets are zero or more")
            self.seeks[TopicPartition(*partition)] = offset

    def assignment(self) -> set[TopicPartition]:
        return set(self.assigned)

    def pause(self, *partitions: TopicPartition) -> None:
        self._check_assigned(partitions, "pause")
        self.paused.update(partitions)
        self.pause_changed = True

    def resume(self, *partitions: TopicPartition) -> None:
        self._check_assigned(partitions, "resume")
        self.paused.difference_update(partitions)
        self.pause_changed = True

    def timeout(self, timeout_ms: int) -> None:
        self.timeout_ms = timeout_ms

    def request_commit(self) -> None:
        self.commit_requested = True

    def take_seeks(self) -> dict[TopicPartition, int]:
        seeks, self.seeks = self.seeks, {}
        return seeks

    def _check_assigned(self, partitions: tuple[TopicPartition, ...], action: str) -> None:
        unknown = [p for p in partitions if TopicPartition(*p) not in self.assigned]
        if unknown:
            raise ConnectError(f"Cannot {action} partitions not assigned to this task: {unknown}; "
                               f"assigned: {sorted(self.assigned)}")

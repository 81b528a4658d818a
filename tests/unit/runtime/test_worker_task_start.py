"""WorkerTask's summary tells the start of a run apart from its copy."""

from __future__ import annotations

from functools import partial

import pytest

from kopycat.runtime import worker_task
from kopycat.runtime.bounds import StopReason, StopWatch
from kopycat.runtime.task_parts import TaskId


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class _Task(worker_task.WorkerTask):
    """Starts in 2 clock seconds, copies in 3, commits in 1 more."""

    def __init__(self, clock: _Clock) -> None:
        super().__init__(TaskId("orders", 0), None, kind="sink")
        self.clock = clock

    def initialize_and_start(self) -> None:
        self.clock.now += 2.0

    def execute(self, watch: StopWatch) -> StopReason:
        self.clock.now += 3.0
        return StopReason.END_OFFSETS

    def final_offset_commit(self, failed: bool) -> None:
        self.clock.now += 1.0

    def close(self) -> None:
        """Nothing to release."""


def test_the_summary_holds_the_start_of_the_run_inside_its_duration(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = _Clock()
    monkeypatch.setattr(worker_task, "StopWatch", partial(StopWatch, clock=clock))

    summary = _Task(clock).run()

    assert (summary.start_s, summary.duration_s) == (2.0, 6.0)
    assert summary.to_dict()["start_s"] == 2.0

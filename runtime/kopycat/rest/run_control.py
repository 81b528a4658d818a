"""How the REST API reaches whatever runs the connectors: pause, resume, stop and restart.

Kafka Connect's herder runs the connectors itself, so a target state or a restart takes effect in
the same process. Kopycat's REST server runs none: Airflow does (a DAG per stored connector). The
stores stay the truth (a plan run skips a connector that is not STARTED), and a :class:`RunControl`
makes the runner follow at once: the Airflow plugin pauses the connector's DAG and clears its failed
task instances, and ``kopycat worker``'s :class:`~kopycat.runtime.worker_herder.WorkerHerder`
applies them to the tasks it runs. ``kopycat rest`` alone has no runner to tell, hence
:class:`NoRunControl`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from kopycat.storage.config_backing_store import TargetState

__all__ = ["NoRunControl", "RunControl"]


class RunControl(Protocol):
    """Told by the herder after it wrote a target state or restart statuses to the stores."""

    def target_state_changed(self, name: str, state: TargetState) -> None:
        """The connector ``name`` was paused, resumed or stopped."""

    def restart(self, name: str, *, connector: bool, tasks: Sequence[int]) -> None:
        """Run again the connector itself (its plan) and/or the given task ids of its latest run."""


class NoRunControl:
    """Nothing runs under this server: the stores alone carry pause, stop and restart."""

    def target_state_changed(self, name: str, state: TargetState) -> None:
        return None

    def restart(self, name: str, *, connector: bool, tasks: Sequence[int]) -> None:
        return None

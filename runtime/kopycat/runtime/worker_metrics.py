"""The worker's own metric groups, from what its status store says (Kafka's ``WorkerMetricsGroup``).

``connect-worker-metrics``: ``connector-count``, ``task-count``, and per connector (tag ``connector``)
``connector-total-task-count`` and ``connector-{running,paused,failed,unassigned,destroyed,restarting}-task-count``;
``connector-metrics`` (tag ``connector``): ``status``, the connector's state in lower case, as
Kafka's ``ConnectorMetricsGroup`` reports it. Read only when a scraper asks.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from kopycat.runtime.metrics import GroupValues
from kopycat.storage.connector_status import State
from kopycat.storage.status_backing_store import StatusBackingStore

__all__ = ["WORKER_GROUP", "worker_groups"]

WORKER_GROUP = "connect-worker-metrics"
_COUNTED = (State.RUNNING, State.PAUSED, State.FAILED, State.UNASSIGNED, State.DESTROYED, State.RESTARTING)


def worker_groups(status_store: StatusBackingStore,
                  connectors: Callable[[], Iterable[str]] | None = None) -> Callable[[], list[GroupValues]]:
    """A :class:`~kopycat.runtime.metrics.ConnectMetrics` provider of the worker groups.

    ``connectors`` names the connectors this host runs (a worker's); without it, every connector the
    status store knows (``kopycat rest``, which runs none itself but reports the cluster's).
    """
    def collect() -> list[GroupValues]:
        names = sorted(connectors() if connectors is not None else status_store.connectors())
        groups: list[GroupValues] = []
        tasks = 0
        for name in names:
            states = [t.state for t in status_store.get_all_tasks(name)]
            tasks += len(states)
            values: dict[str, float | str] = {"connector-total-task-count": len(states)}
            for state in _COUNTED:
                values[f"connector-{state.value.lower()}-task-count"] = states.count(state)
            groups.append(GroupValues(WORKER_GROUP, {"connector": name}, values))
            status = status_store.get_connector(name)
            groups.append(GroupValues("connector-metrics", {"connector": name},
                                      {"status": (status.state if status else State.UNASSIGNED).value.lower()}))
        groups.append(GroupValues(WORKER_GROUP, {}, {"connector-count": len(names), "task-count": tasks}))
        return groups
    return collect

"""Bounded runs: how a task learns that its run ends after the final commit (Kopycat's, not Kafka's).

Under Airflow a copy task is a bounded run: it copies a planned range, commits, and stops
(DESIGN.md §4). A sink that holds records back between commits (a storage sink waiting for
``flush.size`` records before it writes a file) must then commit what it holds at the run's
last ``pre_commit``, or each run would end with its tail unwritten until some later run. The
engine marks such runs with one key in the task config::

    if is_bounded_run(props):          # in SinkTask.start(props)
        self.commit_at_every_pre_commit = True

A task that does not look at the key behaves as in a continuous run.

A source task that knows where its planned range ends (MirrorMaker's task snapshots each
partition's end offset; the JDBC source's range is what each table's query of the run returns)
raises :class:`RunComplete` from ``poll()`` once it returned the last record of that range, so
the run commits and ends at once instead of waiting ``idle.ms`` to learn the same from an empty
poll.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

__all__ = ["BOUNDED_RUN_CONFIG", "RunComplete", "is_bounded_run"]

BOUNDED_RUN_CONFIG: Final = "kopycat.run.bounded"


def is_bounded_run(props: Mapping[str, Any]) -> bool:
    """True when the engine runs this task to a bound (an Airflow copy task), not forever."""
    return str(props.get(BOUNDED_RUN_CONFIG, "false")).strip().lower() == "true"


class RunComplete(Exception):  # noqa: N818 - a signal, like StopIteration, not an error
    """Raised by ``SourceTask.poll()`` in a bounded run: every record of the planned range was returned.

    The engine commits what was sent and ends the run (stop reason ``caught_up``). In a
    continuous run it counts as an empty poll, so a task may raise it whenever it is done.
    """

"""A running Airflow copy task's figures so far, as a record of the status topic.

Kafka Connect's workers serve their tasks' metrics live (JMX); an Airflow copy task runs in some
worker process on some host and returns its figures only when it ends (its summary, an XCom). So
that the connectors page shows a task while it copies, the task writes its live summary (records,
Kafka Connect metrics by ``group.metric``) every few seconds to the status topic it already writes its
state to, under its own key ``kopycat-progress-<connector>-<task>``. Any number of Airflow workers
write there and any API server reads it, with no shared disk and no metadata-DB writes per batch;
the topic is compacted, so one record per task is kept.

Each record names its run (``<dag_id>/<run_id>`` in Airflow), so a reader matches it to the run it
shows and ignores an earlier run's last figures. Deleting a connector tombstones its tasks' progress
keys with its statuses (``RestHerder.delete_connector``, as Kafka's ``onDeletion``), so the compacted
topic forgets them; readers show connectors of the config topic only, so a copy task that writes once
more after the delete is not shown either. A Kafka Connect worker reading the same status topic
skips these keys with a warning ("Discarding record with invalid key"), as Kopycat skips keys it
does not know: the statuses themselves are untouched.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Final

from kopycat.api.errors import DataError
from kopycat.storage.internal_topic_codec import parse_task_id

__all__ = ["PROGRESS_PREFIX", "TaskProgress", "decode_progress", "encode_progress", "parse_progress_key",
           "progress_key"]

PROGRESS_PREFIX: Final = "kopycat-progress-"


@dataclass(frozen=True)
class TaskProgress:
    """Task ``task`` of ``connector`` in run ``run`` so far: ``summary`` is a ``RunSummary.to_dict()``
    whose ``metrics`` and ``duration_s`` are the run's until now."""

    connector: str
    task: int
    run: str
    summary: dict[str, Any] = field(default_factory=dict)


def progress_key(connector: str, task: int) -> str:
    return f"{PROGRESS_PREFIX}{connector}-{task}"


def parse_progress_key(key: str) -> tuple[str, int] | None:
    """``(connector, task)`` of a progress key, or None when it is not one."""
    return parse_task_id(key, 2) if key.startswith(PROGRESS_PREFIX) else None


def encode_progress(progress: TaskProgress) -> bytes:
    return json.dumps({"run": progress.run, "summary": progress.summary}, separators=(",", ":"),
                      allow_nan=False).encode()


def decode_progress(connector: str, task: int, value: bytes, topic: str) -> TaskProgress:
    """The record's progress; DataError naming the topic for a value that is not one."""
    try:
        data = json.loads(value)
        return TaskProgress(connector, task, str(data["run"]), dict(data["summary"]))
    except (ValueError, KeyError, TypeError) as exc:
        raise DataError(f"Progress record of task {connector}-{task} on topic '{topic}' is not "
                        f'{{"run": ..., "summary": {{...}}}}: {value[:200]!r} ({exc})') from exc

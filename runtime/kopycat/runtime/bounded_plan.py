"""Plan a bounded run: the connector's task configs, made ready for one Airflow mapped task each.

Kafka Connect plans once and runs forever; an Airflow DAG run plans, then copies a bounded range
(DESIGN.md §4). The plan is where the connector's job is split, and for sinks where the range
is fixed: each sink task gets its own topic-partitions (no consumer-group rebalancing between
mapped tasks) and the end offsets snapshotted now, so a run copies a known range however much
arrives meanwhile (split as the worker's bounded runs are: :mod:`kopycat.runtime.sink_assignment`).
The plan is JSON (Airflow XCom) and holds no passwords: PASSWORD keys are left out of every task
config and put back from the connector config when the task runs, and config placeholders
(``${file:...}``) stay placeholders, resolved only when the task starts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kopycat.api.config import ConfigType
from kopycat.api.records import TopicPartition
from kopycat.runtime.config_transformer import resolve_connector_config, resolve_worker_config
from kopycat.runtime.connector_config import connector_definition
from kopycat.runtime.planning import PlanningContext, plan_connector
from kopycat.runtime.sink_assignment import input_end_offsets, split_partitions
from kopycat.runtime.task_factory import fence_source_tasks
from kopycat.storage.offset_backing_store import OffsetBackingStore
from kopycat.storage.offset_storage_reader_writer import OffsetStorageReaderImpl

__all__ = ["PlannedTask", "plan_bounded_run", "password_keys", "with_passwords"]

# Task config keys that say what a task copies, in the order a label prefers them.
_LABEL_KEYS = ("tables", "table.whitelist", "query", "topics", "task.assigned.partitions", "files", "file",
               "topics.regex")
_LABEL_MAX = 100


@dataclass
class PlannedTask:
    """One task of a bounded run: its config (no passwords), a label, and a sink's planned range.

    ``end_offsets`` maps ``"topic:partition"`` to the offset the run stops at (sinks only).
    """

    index: int
    label: str
    config: dict[str, str]
    end_offsets: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"index": self.index, "label": self.label, "config": dict(self.config),
                "end_offsets": dict(self.end_offsets)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PlannedTask:
        return cls(int(data["index"]), str(data.get("label", "")), dict(data["config"]),
                   {str(k): int(v) for k, v in (data.get("end_offsets") or {}).items()})

    def end_offsets_by_partition(self) -> dict[TopicPartition, int]:
        out = {}
        for text, offset in self.end_offsets.items():
            topic, _, partition = text.rpartition(":")
            out[TopicPartition(topic, int(partition))] = offset
        return out


def plan_bounded_run(connector_props: Mapping[str, Any], worker_props: Mapping[str, Any],
                     offset_store: OffsetBackingStore | None = None) -> list[PlannedTask]:
    """Validate and start the connector, take its task configs, stop it; one PlannedTask each.

    Raises ConfigError (every bad key, with the fix) before anything is copied. For an
    exactly-once source it first fences the earlier transactions of all its task ids, as Kafka's
    leader does before a new generation of tasks.
    """
    worker_props = resolve_worker_config(worker_props)
    reader = OffsetStorageReaderImpl(offset_store, str(connector_props.get("name", ""))) if offset_store else None
    plan = plan_connector(connector_props, PlanningContext(reader), worker_props)
    try:
        secret = password_keys(plan.props)
        configs = [{k: v for k, v in c.items() if k not in secret} for c in plan.task_configs]
        if plan.is_source:
            fence_source_tasks(plan.props, worker_props, max(len(configs), _tasks_max(plan.props)))
            return [PlannedTask(i, _label(c, i), c) for i, c in enumerate(configs)]
        [resolved] = resolve_connector_config(worker_props, plan.props)
        return _plan_sink(resolved, configs, worker_props)
    finally:
        plan.connector.stop()


def _tasks_max(props: Mapping[str, Any]) -> int:
    """``tasks.max``: how many task ids an earlier generation may have used (Kafka fences them all)."""
    try:
        return int(props.get("tasks.max", 1))
    except (TypeError, ValueError):
        return 1


def password_keys(connector_props: Mapping[str, Any]) -> set[str]:
    """The PASSWORD keys of this connector's definition (and any key ending in ``.password``)."""
    definition = connector_definition(connector_props)
    keys = {k.name for k in definition.keys.values() if k.type is ConfigType.PASSWORD}
    return keys | {k for k in connector_props if k.endswith(".password")}


def with_passwords(task_config: Mapping[str, str], connector_props: Mapping[str, Any]) -> dict[str, str]:
    """A planned task config with the connector's passwords put back (the plan left them out)."""
    config = dict(task_config)
    for key in password_keys(connector_props):
        if key in connector_props and key not in config and connector_props[key] is not None:
            config[key] = str(connector_props[key])
    return config


def _plan_sink(props: Mapping[str, Any], configs: Sequence[dict[str, str]],
               worker_props: Mapping[str, Any]) -> list[PlannedTask]:
    """Spread the sink's topic-partitions over its task configs, with end offsets snapshotted now."""
    ends = input_end_offsets(props, worker_props)
    tasks = []
    for index, mine in enumerate(split_partitions(ends, len(configs))):
        end_offsets = {f"{tp.topic}:{tp.partition}": ends[tp] for tp in mine}
        tasks.append(PlannedTask(index, _partitions_label(mine), dict(configs[index]), end_offsets))
    return tasks


def _label(config: Mapping[str, str], index: int) -> str:
    for key in _LABEL_KEYS:
        if config.get(key):
            return _shorten(str(config[key]).replace('"', ""))  # quoted SQL names read better bare
    return f"task {index}"


def _partitions_label(partitions: Sequence[TopicPartition]) -> str:
    by_topic: dict[str, list[int]] = {}
    for tp in partitions:
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    return _shorten(", ".join(f"{t}[{','.join(map(str, ps))}]" for t, ps in by_topic.items()))


def _shorten(text: str) -> str:
    return text if len(text) <= _LABEL_MAX else text[:_LABEL_MAX - 1] + "…"

"""Planning a connector: validation, tasks.max enforcement, task.class in every task config."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from kopycat.api.errors import ConfigError, ConnectError
from kopycat.runtime.connector_config import validate_connector_config
from kopycat.runtime.planning import TASK_CLASS_CONFIG, plan_connector, task_class_of
from tests.support.counting import CountingSourceConnector, CountingSourceTask


class GreedyConnector(CountingSourceConnector):
    """Returns one task config more than it may."""

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self.props) for _ in range(max_tasks + 1)]


def props(**extra: str) -> dict[str, str]:
    return {"name": "c", "connector.class": "tests.support.counting.CountingSourceConnector", "topic": "t", **extra}


def test_a_plan_has_at_most_tasks_max_configs_each_naming_its_task_class() -> None:
    plan = plan_connector(props(**{"tasks.max": "3"}))
    assert len(plan.task_configs) == 3 and plan.is_source
    assert {c[TASK_CLASS_CONFIG] for c in plan.task_configs} == {"tests.support.counting.CountingSourceTask"}
    assert task_class_of(plan.task_configs[0], plan.props) is CountingSourceTask


def test_a_connector_returning_more_than_tasks_max_fails_unless_enforcement_is_off() -> None:
    greedy = props(**{"connector.class": "tests.unit.runtime.test_planning.GreedyConnector", "tasks.max": "2"})
    with pytest.raises(ConnectError, match="generated 3 tasks, which is greater than 2.*tasks.max.enforce"):
        plan_connector(greedy)
    assert len(plan_connector({**greedy, "tasks.max.enforce": "false"}).task_configs) == 3


def test_bad_common_keys_name_the_key_and_value() -> None:
    with pytest.raises(ConfigError, match="tasks.max"):
        plan_connector(props(**{"tasks.max": "zero"}))
    with pytest.raises(ConfigError, match="connector.class"):
        plan_connector({"name": "c"})
    with pytest.raises(ConfigError, match="errors.tolerance"):
        plan_connector(props(**{"errors.tolerance": "some"}))


def test_validate_collects_every_error_in_kafka_connects_shape() -> None:
    response = validate_connector_config(props(**{"tasks.max": "0", "transforms": "x",
                                                  "key.converter": "no.such.Converter"}))
    errors = {c["value"]["name"]: c["value"]["errors"] for c in response["configs"] if c["value"]["errors"]}
    assert response["name"] == "tests.support.counting.CountingSourceConnector"  # Class.getName(), as Kafka
    assert set(errors) >= {"tasks.max", "transforms.x.type", "key.converter"}
    assert response["error_count"] == sum(len(e) for e in errors.values())


def test_a_sink_needs_topics_or_topics_regex_but_not_both() -> None:
    sink = {"name": "s", "connector.class": "FileStreamSink", "file": "/tmp/out"}
    assert "topics" in _errors(validate_connector_config(sink))
    both = _errors(validate_connector_config({**sink, "topics": "a", "topics.regex": "b.*"}))
    assert any("mutually exclusive" in e for e in both["topics"])
    assert _errors(validate_connector_config({**sink, "topics": "a"})) == {}


def _errors(response: Mapping[str, object]) -> dict[str, list[str]]:
    return {c["value"]["name"]: c["value"]["errors"] for c in response["configs"]  # type: ignore[attr-defined]
            if c["value"]["errors"]}

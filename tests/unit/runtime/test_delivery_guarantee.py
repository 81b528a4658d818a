"""``delivery.guarantee``: at_least_once by default, at_most_once where a connector asks, never with exactly-once."""

from __future__ import annotations

import pytest

from kopycat.api.errors import ConfigError
from kopycat.runtime.connector_config import at_most_once
from kopycat.runtime.task_factory import build_source_runner
from kopycat.runtime.task_parts import TaskId
from kopycat.storage.offset_backing_store import MemoryOffsetStore
from tests.support.counting import CountingSourceTask

COUNTING = {"name": "c", "connector.class": "tests.support.counting.CountingSourceConnector", "topic": "t"}
WORKER = {"bootstrap.servers": "127.0.0.1:1"}


def test_at_least_once_is_the_default_and_at_most_once_is_asked_for_in_any_case() -> None:
    assert not at_most_once(COUNTING)
    assert at_most_once({**COUNTING, "delivery.guarantee": "AT_MOST_ONCE"})
    assert not at_most_once({**COUNTING, "delivery.guarantee": "at_least_once"})


def test_an_unknown_guarantee_names_the_key_the_value_and_the_choices() -> None:
    with pytest.raises(ConfigError, match="(?i)one of.*at_least_once, at_most_once") as refused:
        at_most_once({**COUNTING, "delivery.guarantee": "exactly_once"})
    assert refused.value.key == "delivery.guarantee" and "exactly_once" in str(refused.value)


def test_a_source_runner_takes_the_guarantee_and_refuses_it_on_an_exactly_once_worker() -> None:
    props = {**COUNTING, "delivery.guarantee": "at_most_once"}
    runner = build_source_runner(TaskId("c", 0), CountingSourceTask, props, props, WORKER, MemoryOffsetStore())
    assert runner.at_most_once
    runner.parts.close()
    with pytest.raises(ConfigError, match="remove delivery.guarantee") as refused:
        build_source_runner(TaskId("c", 0), CountingSourceTask, props, props,
                            {**WORKER, "exactly.once.source.support": "enabled"}, MemoryOffsetStore())
    assert refused.value.key == "delivery.guarantee"

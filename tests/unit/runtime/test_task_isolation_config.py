"""The worker's ``task.isolation`` key: its default and a bad value's message."""

from __future__ import annotations

import pytest

from kopycat.api.errors import ConfigError
from kopycat.runtime.worker_config import TASK_ISOLATION_CONFIG, WORKER_CONFIG


def test_tasks_run_in_processes_unless_the_worker_says_threads() -> None:
    assert WORKER_CONFIG.parse({})[TASK_ISOLATION_CONFIG] == "process"
    assert WORKER_CONFIG.parse({"task.isolation": "Thread"})[TASK_ISOLATION_CONFIG].lower() == "thread"


def test_an_unknown_task_isolation_names_the_key_the_value_and_the_choices() -> None:
    with pytest.raises(ConfigError) as raised:
        WORKER_CONFIG.parse({"task.isolation": "fork"})
    message = str(raised.value).lower()
    assert all(word in message for word in ("task.isolation", "fork", "process", "thread")), message

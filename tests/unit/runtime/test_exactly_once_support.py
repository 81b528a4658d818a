"""``exactly.once.support=required`` asks the connector first, as Kafka's herder validation does."""

from __future__ import annotations

import pytest

from kopycat.api.errors import ConfigError
from kopycat.runtime.task_factory import exactly_once_enabled

EOS_WORKER = {"bootstrap.servers": "127.0.0.1:1", "exactly.once.source.support": "enabled"}
MIRROR = {"name": "m", "connector.class": "org.apache.kafka.connect.mirror.MirrorSourceConnector",
          "source.cluster.alias": "b", "source.cluster.bootstrap.servers": "127.0.0.1:1",
          "target.cluster.bootstrap.servers": "127.0.0.1:1", "topics": "orders",
          "exactly.once.support": "required"}


def test_a_mirror_reading_uncommitted_records_cannot_require_exactly_once() -> None:
    with pytest.raises(ConfigError, match="consumer.isolation.level=read_committed") as refused:
        exactly_once_enabled(EOS_WORKER, MIRROR)
    assert refused.value.key == "exactly.once.support"
    assert "does not support exactly-once" in str(refused.value)


def test_a_mirror_reading_committed_records_runs_exactly_once() -> None:
    assert exactly_once_enabled(EOS_WORKER, {**MIRROR, "consumer.isolation.level": "read_committed"})
    assert exactly_once_enabled(EOS_WORKER, {**MIRROR, "exactly.once.support": "requested"})


def test_a_connector_that_does_not_answer_cannot_require_exactly_once() -> None:
    counting = {"name": "c", "connector.class": "tests.support.counting.CountingSourceConnector", "topic": "t",
                "exactly.once.support": "required"}
    with pytest.raises(ConfigError, match="does not say whether"):
        exactly_once_enabled(EOS_WORKER, counting)

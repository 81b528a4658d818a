"""DeliveryReports: what Kafka said about produced records reaches error handling with its partition."""

from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka import KafkaError

from kopycat.api.errors import ConnectError
from kopycat.runtime.task_factory import build_source_runner
from kopycat.runtime.task_parts import TaskId
from kopycat.storage.offset_backing_store import MemoryOffsetStore
from tests.support.counting import CountingSourceTask

COUNTING = {"name": "c", "connector.class": "tests.support.counting.CountingSourceConnector", "topic": "t"}
WORKER = {"bootstrap.servers": "127.0.0.1:1"}


class Report:
    """The parts of a confluent-kafka Message a delivery report reads."""

    def __init__(self, topic: str, partition: int | None) -> None:
        self._topic, self._partition = topic, partition

    def topic(self) -> str:
        return self._topic

    def partition(self) -> int | None:
        return self._partition


def reports() -> Any:
    runner = build_source_runner(TaskId("c", 0), CountingSourceTask, COUNTING, COUNTING, WORKER, MemoryOffsetStore())
    return runner.reports


@pytest.mark.parametrize(("partition", "named"), [(0, 0), (3, 3), (None, -1)])
def test_a_refused_record_is_reported_with_its_partition_and_zero_stays_zero(
        partition: int | None, named: int) -> None:
    delivery = reports()
    error = KafkaError(KafkaError.MSG_SIZE_TOO_LARGE)
    delivery.on_delivery_error(error, Report("t", partition))
    assert delivery.errors == [(error, "t", named)]
    with pytest.raises(ConnectError, match=f"topic 't' partition {named}:"):
        delivery.check()
    delivery.parts.close()
